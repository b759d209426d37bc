"""A private repository's tickets never leak: whoever cannot read a repository on GitHub gets, from every agent
API route, the read API and every MCP tool, exactly what a repository Baton does not serve gets (404, one body),
whether or not the issue exists. Baton and the stand-in GitHub over real sockets: `octo/shop` is public,
`octo/secret` private, and `octo/nowhere` exists nowhere."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import func, select

from baton.store import tables as t
from support.local_http import HTTP
from support.standin_scene import Scene, scene_with

SECRET, NOWHERE = "octo/secret", "octo/nowhere"
NOT_SERVED = "Baton is not installed on {}, or you cannot read it."
MISSING = 999_999  # no issue of this number anywhere

# route -> (method, path after /api/v1/repos/{repository}, body); `{n}` is the issue number
ROUTES: dict[str, tuple[str, str, Any]] = {
    "claim": ("POST", "/issues/{n}/claim", {}),
    "release": ("POST", "/issues/{n}/release", {}),
    "deliver": ("POST", "/issues/{n}/deliver", {"summary": "Done.", "branch": "empty-state"}),
    "accept": ("POST", "/issues/{n}/accept", {"note": "Fine."}),
    "send-back": ("POST", "/issues/{n}/send-back", {"feedback": "Not yet."}),
    "reopen": ("POST", "/issues/{n}/reopen", {"reason": "Broken again."}),
    "ticket": ("GET", "/issues/{n}", None),
    "events": ("GET", "/issues/{n}/events", None),
}


scene = scene_with(hidden=("secret",))


def _token(scene: Scene, login: str, permission: str | None) -> str:
    """`login`'s own token; `permission` on `octo/secret` (None: none at all, as for anyone outside)."""
    world = scene.hub.world
    with world.lock:
        world.account(login)
        if permission is not None:
            scene.stage.other("secret").permissions[login.lower()] = permission
    token: str = scene.hub.person(login).token()
    return token


def _call(scene: Scene, token: str, route: str, repository: str, number: int) -> httpx.Response:
    method, path, body = ROUTES[route]
    url = f"{scene.stage.baton_url}/api/v1/repos/{repository}{path.format(n=number)}"
    return HTTP.request(method, url, json=body, headers={"Authorization": f"Bearer {token}"})


def _open_calls(scene: Scene, token: str, repository: str) -> dict[str, httpx.Response]:
    """The calls that name no issue: create-and-claim, and the tasks a repository offers."""
    headers = {"Authorization": f"Bearer {token}"}
    base = scene.stage.baton_url
    return {
        "create-and-claim": HTTP.post(
            f"{base}/api/v1/repos/{repository}/issues", json={"title": "New"}, headers=headers
        ),
        "tasks": HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": repository}, headers=headers),
    }


def _as_if(response: httpx.Response, repository: str) -> tuple[int, Any]:
    """The status and body, with `repository`'s name put back where the other repository's name stood."""
    return response.status_code, json.loads(response.text.replace(NOWHERE, repository))


def _secret_ticket(scene: Scene) -> int:
    """An issue of `octo/secret` that wanda (write access) has claimed: a ticket with a state, a runner and a
    revision to leak."""
    with scene.hub.world.lock:
        secret = scene.stage.other("secret")
        number = scene.hub.world.add_issue(secret, "Rotate the signing keys", scene.hub.world.account("octo")).number
    claimed = _call(scene, _token(scene, "wanda", "write"), "claim", SECRET, number)
    assert claimed.status_code == 200 and claimed.json()["runner"] == "wanda", claimed.text
    return number


def _written(scene: Scene) -> tuple[int, int, int]:
    """What Baton has recorded or means to write: tickets, events and outbox rows."""
    with scene.app.state.work.units.engine.connect() as connection:
        return tuple(  # type: ignore[return-value]
            int(connection.execute(select(func.count()).select_from(table)).scalar_one())
            for table in (t.tickets, t.events, t.outbox_items)
        )


def test_every_route_answers_a_caller_who_cannot_read_as_for_a_repository_baton_does_not_serve(scene: Scene) -> None:
    number = _secret_ticket(scene)
    outsider = _token(scene, "mallory", None)
    with scene.hub.world.lock:
        issues_before = len(scene.stage.other("secret").issues)
    written = _written(scene)

    for route in ROUTES:
        for issue in (number, MISSING):  # the issue exists (a claimed ticket), and it does not
            unserved = _call(scene, outsider, route, NOWHERE, issue)
            hidden = _call(scene, outsider, route, SECRET, issue)
            assert unserved.status_code == 404, (route, unserved.text)
            message = unserved.json().get("message") or unserved.json().get("detail")
            assert message == NOT_SERVED.format(NOWHERE), (route, unserved.text)
            assert _as_if(hidden, SECRET) == _as_if(unserved, SECRET), (route, issue, hidden.text)
            assert "wanda" not in hidden.text and "claimed" not in hidden.text
    unserved_calls, hidden_calls = _open_calls(scene, outsider, NOWHERE), _open_calls(scene, outsider, SECRET)
    for route, unserved in unserved_calls.items():
        assert unserved.status_code == 404, (route, unserved.text)
        assert _as_if(hidden_calls[route], SECRET) == _as_if(unserved, SECRET), (route, hidden_calls[route].text)

    # Nothing was decided, recorded or written for the outsider, and no issue was opened.
    assert _written(scene) == written
    with scene.hub.world.lock:
        assert len(scene.stage.other("secret").issues) == issues_before

    # On the public repository the same person reads, and is answered as anyone who reads: the real refusal
    # (readers are not collaborators, the default runners), not the 404.
    public = _call(scene, outsider, "claim", scene.full_name, scene.number)
    assert public.status_code == 403 and public.json()["code"] == "not_permitted", public.text
    assert "runners: collaborators" in public.json()["message"], public.text


@pytest.mark.both_engines
@pytest.mark.parametrize("permission", ["read", "write"])
def test_whoever_reads_the_private_repository_gets_its_real_answers(scene: Scene, permission: str) -> None:
    number = _secret_ticket(scene)
    token = _token(scene, f"reader-{permission}", permission)
    for route in ROUTES:
        there = _call(scene, token, route, SECRET, number)
        assert there.status_code != 404, (route, there.text)  # the ticket exists, and they may see it
        missing = _call(scene, token, route, SECRET, MISSING)
        assert missing.status_code == 404, (route, missing.text)
        assert NOT_SERVED.format(SECRET) not in missing.text, (route, missing.text)  # a missing issue, said so
    refused = _call(scene, token, "claim", SECRET, number)
    assert refused.status_code == 409 and refused.json()["runner"] == "wanda"  # they may read who holds it
    calls = _open_calls(scene, token, SECRET)
    assert calls["tasks"].status_code == 200, calls["tasks"].text
    assert calls["create-and-claim"].status_code == 201, calls["create-and-claim"].text


def _tools(scene: Scene, token: str, repository: str, number: int) -> list[tuple[bool, str, Any]]:
    """Every MCP tool at Baton's `/mcp`, called by `token`'s person on `repository`: (error, text, content)."""
    where = {"repo": repository, "number": number}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_tasks", {"repo": repository}),
        ("claim_task", where),
        ("deliver_task", {**where, "summary": "Done.", "branch": "empty-state"}),
        ("release_task", where),
        ("task_status", where),
    ]

    async def session() -> list[tuple[bool, str, Any]]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{scene.stage.baton_url}/mcp", http_client=http)) as client:
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                said = " ".join(getattr(block, "text", "") for block in result.content)
                results.append((result.is_error, said, result.structured_content))
            return results

    return asyncio.run(session())


def test_every_mcp_tool_answers_a_caller_who_cannot_read_as_for_a_repository_baton_does_not_serve(
    scene: Scene,
) -> None:
    number = _secret_ticket(scene)
    outsider = _token(scene, "mallory", None)
    for issue in (number, MISSING):
        unserved = _tools(scene, outsider, NOWHERE, issue)
        hidden = _tools(scene, outsider, SECRET, issue)
        assert all(error for error, _, _ in unserved), unserved
        assert all(NOT_SERVED.format(NOWHERE) in said for _, said, _ in unserved), unserved
        again = json.loads(json.dumps(unserved).replace(NOWHERE, SECRET))
        assert json.loads(json.dumps(hidden)) == again, hidden
