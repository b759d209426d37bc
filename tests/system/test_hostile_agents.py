"""What callers send that no client should, to the agent API, MCP and the read API, over real sockets (Baton and
the stand-in GitHub on 127.0.0.1), and text GitHub's webhooks carry that no column can hold: never a 500. A token
no bearer token can be is 401, a body that is not JSON (or holds `NaN`), an unknown field or text that cannot be
stored is 422 with Baton's error body naming the field, before anything is decided or written to GitHub
(docs/api.md, docs/agents.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from baton.store import tables as t
from support import standin_scene
from support.local_http import HTTP
from support.standin_scene import Scene, opened

scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


def _url(scene: Scene, path: str) -> str:
    return f"{scene.stage.baton_url}{path}"


def _issue(scene: Scene, action: str = "") -> str:
    return f"/api/v1/repos/{scene.full_name}/issues/{scene.number}" + (f"/{action}" if action else "")


def _send(scene: Scene, method: str, path: str, token: bytes | str, body: bytes | None = None) -> httpx.Response:
    headers: dict[str, Any] = {"Authorization": token if isinstance(token, bytes) else f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if path == "/mcp":
        headers["Accept"] = "application/json, text/event-stream"
    return HTTP.request(method, _url(scene, path), content=body, headers=headers)


def _ticket_state(scene: Scene) -> tuple[str, int]:
    ticket = scene.app.state.work.ticket(scene.key)
    return ticket.state.value, ticket.revision


def _opened_issues(scene: Scene) -> int:
    with scene.hub.world.lock:
        return len(scene.repository.issues)


# -- the Authorization header ---------------------------------------------------------------------------------

HOSTILE_TOKENS = {
    "latin-1-bytes": b"Bearer ghp_\xff\xfe",
    "utf-8-letter": "Bearer ghp_tök".encode(),
    "utf-8-symbol": "Bearer ghp_€€€".encode(),
    "a-comma": b"Bearer ghp_a,b",
    "a-quote": b'Bearer "ghp_a"',
    "a-space-inside": b"Bearer ghp_a b",
}

ROUTES = [
    ("POST", "claim", b"{}"),
    ("POST", "deliver", b'{"summary": "done"}'),
    ("POST", "accept", b"{}"),
    ("POST", "create", b'{"title": "A new task"}'),
    ("GET", "tasks", None),
    ("POST", "mcp", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'),
    ("GET", "ticket", None),
    ("GET", "events", None),
]


def _path(scene: Scene, route: str) -> str:
    return {
        "create": f"/api/v1/repos/{scene.full_name}/issues",
        "tasks": f"/api/v1/tasks?repo={scene.full_name}",
        "mcp": "/mcp",
        "ticket": _issue(scene),
        "events": _issue(scene, "events"),
    }.get(route) or _issue(scene, route)


@pytest.mark.parametrize("name", HOSTILE_TOKENS)
def test_an_authorization_header_no_bearer_token_can_be_is_401_on_every_route_that_takes_a_token(
    scene: Scene, name: str
) -> None:
    before, issues, writes = _ticket_state(scene), _opened_issues(scene), scene.writes()
    asked = scene.reads().count("/user")
    for method, route, body in ROUTES:
        answer = _send(scene, method, _path(scene, route), HOSTILE_TOKENS[name], body)
        assert answer.status_code == 401, (route, answer.status_code, answer.text)
        assert answer.headers["WWW-Authenticate"] == "Bearer", route
        said = answer.json()
        if route in ("ticket", "events"):  # the read API's own error body (docs/api.md)
            assert said == {"detail": "Invalid API token."}, route
        else:
            assert said["error"] == "unauthorized" and "RFC 6750" in said["message"], (route, said)
    assert (_ticket_state(scene), _opened_issues(scene), scene.writes()) == (before, issues, writes)
    assert scene.reads().count("/user") == asked  # GitHub was never asked whose it is


# -- bodies -------------------------------------------------------------------------------------------------------


def _invalid(answer: httpx.Response, field: str, said: str) -> None:
    """A 422 with Baton's error body, one of whose problems names `field` and says `said`."""
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert set(body) == {"error", "code", "state", "runner", "revision", "message", "problems"}, body
    assert body["error"] == "invalid" and "detail" not in body
    named = [p for p in body["problems"] if p["field"] == field]
    assert named and said in named[0]["message"], body
    assert field in body["message"] and said in body["message"], body


NOT_JSON = {
    "nan": (b'{"summary": "done", "pr": NaN}', "NaN is not a JSON number"),
    "infinity": (b'{"summary": "done", "pr": Infinity}', "Infinity is not a JSON number"),
    "minus-infinity": (b'{"summary": -Infinity}', "-Infinity is not a JSON number"),
    "nan-in-a-list": (b'{"summary": "done", "tests": [NaN]}', "NaN is not a JSON number"),
    "cut-short": (b'{"summary": "do', "not valid JSON"),
    "trailing-comma": (b'{"summary": "done",}', "not valid JSON"),
    "not-utf-8": ('{"summary": "déjà"}'.encode("latin-1"), "not valid JSON"),
}


@pytest.mark.parametrize("name", NOT_JSON)
def test_a_body_that_is_not_json_is_422_naming_the_problem(scene: Scene, name: str) -> None:
    agent = scene.stage.person("agent-a", "write").token()
    assert _send(scene, "POST", _issue(scene, "claim"), agent).status_code == 200
    before = _ticket_state(scene)
    body, said = NOT_JSON[name]
    for path in (_issue(scene, "deliver"), _issue(scene, "accept"), f"/api/v1/repos/{scene.full_name}/issues"):
        answer = _send(scene, "POST", path, agent, body)
        _invalid(answer, "body", said)
    assert _ticket_state(scene) == before
    delivered = _send(scene, "POST", _issue(scene, "deliver"), agent, b'{"summary": "done", "branch": "cart"}')
    assert delivered.status_code == 200, delivered.text


UNSTORABLE = {
    "nul": ("a\\u0000b", "NUL character"),
    "lone-high-surrogate": ("a\\ud800b", "lone surrogate"),
    "lone-low-surrogate": ("\\udfffb", "lone surrogate"),
}


@pytest.mark.parametrize("name", UNSTORABLE)
def test_text_that_cannot_be_stored_is_422_before_github_opens_an_issue(scene: Scene, name: str) -> None:
    escaped, said = UNSTORABLE[name]
    agent = scene.stage.person("agent-a", "write").token()
    issues, writes = _opened_issues(scene), scene.writes()
    create = f"/api/v1/repos/{scene.full_name}/issues"
    title = _send(scene, "POST", create, agent, f'{{"title": "{escaped}"}}'.encode())
    _invalid(title, "title", said)
    body = _send(scene, "POST", create, agent, f'{{"title": "Cart", "body": "{escaped}"}}'.encode())
    _invalid(body, "body", said)
    assert (_opened_issues(scene), scene.writes()) == (issues, writes)  # GitHub was never asked to open one

    assert _send(scene, "POST", _issue(scene, "claim"), agent).status_code == 200
    before = _ticket_state(scene)
    for action, sent, field in [
        ("deliver", f'{{"summary": "{escaped}"}}', "summary"),
        ("deliver", f'{{"summary": "done", "branch": "cart{escaped}"}}', "branch"),
        ("deliver", f'{{"summary": "done", "tests": ["ok", "{escaped}"]}}', "tests"),
        ("deliver", f'{{"summary": "done", "screenshots": ["{escaped}"]}}', "screenshots"),
        ("accept", f'{{"note": "{escaped}"}}', "note"),
        ("send-back", f'{{"feedback": "{escaped}"}}', "feedback"),
        ("reopen", f'{{"reason": "{escaped}"}}', "reason"),
    ]:
        answer = _send(scene, "POST", _issue(scene, action), agent, sent.encode())
        assert answer.status_code == 422, (action, sent, answer.text)
        problems = answer.json()["problems"]
        assert any(p["field"].startswith(field) for p in problems), (action, problems)
    assert _ticket_state(scene) == before
    # the same texts, storable, are taken as ever
    made = _send(scene, "POST", create, agent, b'{"title": "Cart \\u00e9\\ud83d\\ude00", "body": "fine"}')
    assert made.status_code == 201, made.text


UNKNOWN_FIELDS = [
    ("claim", {"comment": "taking this"}, "comment"),
    ("release", {"reason": "busy"}, "reason"),
    ("deliver", {"summary": "done", "branchh": "cart"}, "branchh"),
    ("accept", {"note": "fine", "verdict": "yes"}, "verdict"),
    ("send-back", {"note": "no"}, "note"),
    ("reopen", {"feedback": "again"}, "feedback"),
    ("create", {"title": "A task", "labels": ["bug"]}, "labels"),
]


def test_an_unknown_field_in_any_body_is_422_naming_it_and_nothing_is_decided(scene: Scene) -> None:
    agent = scene.stage.person("agent-a", "write").token()
    before, issues = _ticket_state(scene), _opened_issues(scene)
    for route, body, field in UNKNOWN_FIELDS:
        answer = _send(scene, "POST", _path(scene, route), agent, json.dumps(body).encode())
        _invalid(answer, field, "unknown field")
    assert (_ticket_state(scene), _opened_issues(scene)) == (before, issues)
    assert _send(scene, "POST", _issue(scene, "claim"), agent, b"{}").status_code == 200


def test_a_body_of_the_wrong_shape_is_422_with_baton_s_error_body(scene: Scene) -> None:
    agent = scene.stage.person("agent-a", "write").token()
    assert _send(scene, "POST", _issue(scene, "claim"), agent).status_code == 200
    _invalid(_send(scene, "POST", _issue(scene, "deliver"), agent, b'{"summary": ""}'), "summary", "at least 1")
    _invalid(_send(scene, "POST", _issue(scene, "deliver"), agent, b'{"summary": "x", "pr": "seven"}'), "pr",
             "integer")  # fmt: skip
    _invalid(_send(scene, "POST", _issue(scene, "deliver"), agent, b"[]"), "body", "dictionary")
    _invalid(_send(scene, "POST", _issue(scene, "deliver"), agent, b"{}"), "summary", "Field required")
    _invalid(_send(scene, "POST", f"/api/v1/repos/{scene.full_name}/issues/0/claim", agent), "number", "greater")
    _invalid(_send(scene, "GET", f"/api/v1/tasks?repo={scene.full_name}&limit=0", agent), "limit", "greater")


# -- webhooks carrying text no column can hold -------------------------------------------------------------------


@pytest.mark.both_engines
def test_webhook_text_holding_nul_or_a_lone_surrogate_is_stored_with_the_character_replaced_and_decided(
    scene: Scene,
) -> None:
    olivia = scene.person("olivia")
    number = olivia.open_issue(scene.full_name, "Cart\x00 empty \ud800state", "Make it\x00 so.\n\n\udfff")
    scene.settle()
    olivia.edit_issue(scene.full_name, number, title="Cart\x00 empty, again")
    # outside the command's own text (a command holding a control character is refused, docs/commands.md)
    scene.comment("agent-b", "Taking it\x00 now \ud800\n\n/claim", number=number)
    scene.settle()
    engine = scene.app.state.work.units.engine
    with engine.connect() as connection:
        deliveries = t.webhook_deliveries
        issues = list(connection.execute(select(deliveries.c.status, deliveries.c.error)
                                         .where(deliveries.c.event == "issues")))  # fmt: skip
        comments = list(connection.execute(select(deliveries.c.status, deliveries.c.error)
                                           .where(deliveries.c.event == "issue_comment")))  # fmt: skip
        title = connection.execute(select(t.tickets.c.title).where(t.tickets.c.number == number)).scalar_one()
    assert issues == [("done", None)] * 3, issues  # the first issue's, and this one's opening and edit
    assert comments == [("done", None)], comments
    assert scene.app.state.work.ticket(replace(scene.key, number=number)).runner == "agent-b"
    assert title == "Cart\ufffd empty, again"
    listed = HTTP.get(_url(scene, f"/api/v1/tasks?repo={scene.full_name}&state=claimed"),
                      headers={"Authorization": f"Bearer {scene.stage.person('agent-a').token()}"})  # fmt: skip
    assert listed.status_code == 200 and "Cart\ufffd empty, again" in [task["title"] for task in listed.json()["tasks"]]


# -- the rate limit -------------------------------------------------------------------------------------------------


def test_reads_with_a_personal_token_count_against_the_documented_rate(database_url: str) -> None:
    # BATON_API_REQUESTS_PER_MINUTE=60: a tenth of it at once (6), then one a second
    with opened(database_url, api_requests_per_minute=60) as scene:
        scene.settle()
        token = scene.stage.person("agent-a", "read").token()
        statuses = [_send(scene, "GET", _issue(scene), token).status_code for _ in range(20)]
        assert statuses[:6] == [200] * 6 and 429 in statuses, statuses
        limited = _send(scene, "GET", _issue(scene, "events"), token)
        assert limited.status_code == 429 and 1 <= int(limited.headers["Retry-After"]) <= 2
        said = limited.json()
        assert said["error"] == "rate_limited" and "@agent-a" in said["message"]
        # one allowance for reads and calls: the agent API is limited for that login too, another login is not
        assert _send(scene, "POST", _issue(scene, "claim"), token).status_code == 429
        other = scene.stage.person("agent-b", "read").token()
        assert _send(scene, "GET", _issue(scene), other).status_code == 200
