"""GitHub Actions OIDC tokens as an agent's credential (docs/agents.md, "An agent in a workflow"): Baton and the
stand-in GitHub on 127.0.0.1, the stand-in issuing the workflow runs' tokens and publishing its keys."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest

from baton.environment.clock import ManualClock
from baton.github.actions_oidc import LEEWAY
from support.keys import app_private_key
from support.local_http import HTTP
from support.standin_scene import Scene, opened, scene_with

AUDIENCE = "https://baton.example.test"
KEYS = "/_services/token/.well-known/jwks"


scene = scene_with(oidc_audience=AUDIENCE)


def _token(scene: Scene, login: str, permission: str = "write", **options: Any) -> str:
    """A token of a run that `login` started in octo/shop (or `repository`), `login` having `permission` there."""
    person = scene.stage.person(login, permission)
    repository = options.pop("repository", scene.full_name)
    return person.actions_token(repository, audience=options.pop("audience", AUDIENCE), **options)


def _post(scene: Scene, token: str, action: str, body: Any = None, *, repository: str | None = None,
          number: int | None = None) -> httpx.Response:  # fmt: skip
    where = f"/api/v1/repos/{repository or scene.full_name}/issues/{number or scene.number}/{action}"
    return HTTP.post(f"{scene.stage.baton_url}{where}", json=body, headers={"Authorization": f"Bearer {token}"})


def _fetched_keys(scene: Scene) -> int:
    with scene.hub.world.lock:
        return sum(1 for call in scene.rest.calls if call.path == KEYS)


def test_a_workflow_run_claims_and_delivers_as_its_actor_and_the_events_record_the_run(scene: Scene) -> None:
    token = _token(scene, "agent-a", run_id=4242)
    claimed = _post(scene, token, "claim")
    assert claimed.status_code == 200, claimed.text
    assert (claimed.json()["state"], claimed.json()["runner"]) == ("claimed", "agent-a")
    delivered = _post(scene, token, "deliver", {"summary": "The empty state is done.", "branch": "empty-state"})
    assert delivered.status_code == 200 and delivered.json()["state"] == "delivered", delivered.text
    workflow_ref = f"{scene.full_name}/.github/workflows/agent.yml@refs/heads/main"
    for event in scene.app.state.work.history(scene.key)[-2:]:
        assert event.actor == "agent-a"
        assert {key: event.data.get(key) for key in ("source", "via", "workflow_ref", "run_id")} == {
            "source": "api", "via": "actions", "workflow_ref": workflow_ref, "run_id": "4242"}  # fmt: skip
    scene.drain()
    assert scene.assignees() == ["agent-a"]

    # The same token lists the tasks and reads the ticket, as the actor's own token would.
    listed = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name, "state": "delivered"},
                      headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert listed.status_code == 200 and [task["issue"] for task in listed.json()["tasks"]] == [scene.number]
    read = HTTP.get(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}",
                    headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert read.status_code == 200 and read.json()["state"] == "delivered", read.text

    # Create-and-claim: the issue is opened and claimed by the actor, the run recorded.
    created = HTTP.post(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues", json={"title": "Totals"},
                        headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert created.status_code == 201 and created.json()["runner"] == "agent-a", created.text
    made = replace(scene.key, number=created.json()["issue"])
    assert scene.app.state.work.history(made)[-1].data.get("workflow_ref") == workflow_ref

    # Claim-next: the run is handed the next ready task as its actor, and the claim records the run.
    third = scene.person("olivia").open_issue(scene.full_name, "Receipts by mail")
    scene.settle()
    handed = HTTP.post(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/tasks/claim",
                       headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert handed.status_code == 200 and handed.json()["issue"] == third, handed.text
    claimed_next = scene.app.state.work.history(replace(scene.key, number=third))[-1]
    assert (claimed_next.actor, claimed_next.data.get("via"), claimed_next.data.get("run_id")) == (
        "agent-a", "actions", "4242")  # fmt: skip

    # Many calls with many tokens: the issuer's keys were fetched once.
    for n in range(5):
        other = _token(scene, f"agent-{n}", "read", run_id=n)
        assert _post(scene, other, "claim").status_code == 409
    assert _fetched_keys(scene) == 1
    # A key the issuer never published: refused, and not fetched again so soon (junk cannot make Baton hammer it).
    for _ in range(3):
        unknown = _post(scene, _token(scene, "agent-b", kid="rotated-away"), "claim")
        assert unknown.status_code == 401 and "unknown issuer key" in unknown.json()["message"], unknown.text
    assert _fetched_keys(scene) == 1


def test_a_token_baton_does_not_take_is_401_saying_why_and_never_echoing_it(scene: Scene) -> None:
    with scene.hub.world.lock:
        scene.hub.world.account("someone")
    elsewhere = scene.hub.world.issuer.token("https://issuer.example.test", scene.full_name, "agent-a",
                                             audience=AUDIENCE)  # another issuer's, with its key  # fmt: skip
    refused = {
        "has expired": _token(scene, "agent-a", expires_in=-600),
        "wrong audience": _token(scene, "agent-a", audience="https://elsewhere.example.test"),
        "does not verify": _token(scene, "agent-a", signed_with=app_private_key()),  # signed by another key
        "unknown issuer key": _token(scene, "agent-a", kid="not-published"),
        "repository not served": _token(scene, "agent-a", repository="someone/elsewhere"),
        "unknown issuer": elsewhere,
        "RS256 only": jwt.encode(_claims(_token(scene, "agent-a")), "a secret shared by whoever holds it", "HS256"),
        "neither a GitHub token nor a JWT": "not.a.jwt",
    }
    for reason, token in refused.items():
        answer = _post(scene, token, "claim")
        assert answer.status_code == 401, (reason, answer.text)
        body = answer.json()
        assert body["error"] == "unauthorized" and reason in body["message"], (reason, body)
        assert "\n" not in body["message"] and token not in answer.text
        assert token.split(".")[2] not in answer.text
    assert scene.app.state.work.ticket(scene.key).state.value == "open"


def _claims(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


def test_the_stand_in_publishes_its_issuers_discovery_document_and_keys(scene: Scene) -> None:
    issuer = _claims(_token(scene, "agent-a"))["iss"]
    found = HTTP.get(f"{issuer}/.well-known/openid-configuration").json()
    assert found["issuer"] == issuer and found["id_token_signing_alg_values_supported"] == ["RS256"]
    [key] = HTTP.get(found["jwks_uri"]).json()["keys"]
    assert (key["kty"], key["alg"], key["kid"]) == ("RSA", "RS256", scene.hub.world.issuer.kid)


def test_a_run_acts_on_its_own_installations_repositories_only(scene: Scene) -> None:
    world = scene.hub.world
    with world.lock:
        elsewhere = world.add_repository(world.install("acme"), "tools")
        elsewhere.permissions["agent-a"] = "write"
        number = world.add_issue(elsewhere, "Lint the tools", world.account("acme-admin")).number
    token = _token(scene, "agent-a")
    foreign = _post(scene, token, "claim", repository="acme/tools", number=number)
    assert foreign.status_code == 404, foreign.text
    assert foreign.json()["message"] == "Baton is not installed on acme/tools, or you cannot read it."
    # Claim-next too: the run is not handed the other installation's task, by repository or by organisation.
    nexts = f"{scene.stage.baton_url}/api/v1/repos/acme/tools/tasks/claim"
    by_repository = HTTP.post(nexts, headers={"Authorization": f"Bearer {token}"})
    assert by_repository.status_code == 404 and by_repository.json()["message"] == foreign.json()["message"]
    in_org = HTTP.post(f"{scene.stage.baton_url}/api/v1/orgs/acme/tasks/claim",
                       headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert in_org.status_code == 404, in_org.text
    assert in_org.json()["message"] == "Baton is not installed on any repository of acme you can read."
    # The person's own token reaches it: it is the run that is bound to its installation.
    own = scene.hub.person("agent-a").token()
    assert _post(scene, own, "claim", repository="acme/tools", number=number).status_code == 200


def test_runners_may_list_the_workflows_whose_runs_run_tasks(scene: Scene) -> None:
    scene.configure(
        "runners:\n  - workflow:octo/shop/.github/workflows/agent.yml\n  - pat\n", by="maria"
    )  # fmt: skip
    scene.stage.person("maria", "maintain")
    other = _post(scene, _token(scene, "agent-a", "write", workflow="other.yml"), "claim")
    assert other.status_code == 403 and other.json()["code"] == "not_permitted", other.text
    assert "workflow:octo/shop/.github/workflows/other.yml" in other.json()["message"]
    nexts = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/tasks/claim"
    unlisted = HTTP.post(nexts, headers={"Authorization": f"Bearer {_token(scene, 'agent-a', workflow='other.yml')}"})
    assert unlisted.status_code == 403 and unlisted.json()["code"] == "not_permitted", unlisted.text
    # A listed workflow's run may run tasks, whoever started it.
    listed = _post(scene, _token(scene, "reed", "read", workflow="agent.yml"), "claim")
    assert listed.status_code == 200 and listed.json()["runner"] == "reed", listed.text
    assert _post(scene, _token(scene, "reed", "read", workflow="agent.yml"), "release").status_code == 200
    # A listed person keeps working with their own token.
    pat = _post(scene, scene.stage.person("pat", "write").token(), "claim")
    assert pat.status_code == 200 and pat.json()["runner"] == "pat", pat.text


def test_without_an_audience_a_workflow_token_is_just_a_token_github_does_not_know(database_url: str) -> None:
    with opened(database_url) as scene:
        scene.settle()
        answer = _post(scene, _token(scene, "agent-a"), "claim")
        assert answer.status_code == 401, answer.text
        assert "GitHub does not accept this token" in answer.json()["message"]
        assert _fetched_keys(scene) == 0
        assert any(call.path == "/user" for call in scene.rest.calls)


def test_the_baton_command_passes_a_workflow_token_as_it_is(scene: Scene) -> None:
    """In a job, `BATON_TOKEN` holds the run's token; dots and all, it reaches Baton unchanged."""
    token = _token(scene, "agent-a", run_id=77)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "GH_", "GITHUB_"))},
           "BATON_URL": scene.stage.baton_url, "BATON_TOKEN": token, "GITHUB_TOKEN": "ghp_not-this-one"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "baton.cli", "claim", f"{scene.full_name}#{scene.number}"], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert token not in done.stdout + done.stderr
    claimed = scene.app.state.work.history(scene.key)[-1]
    assert (claimed.type, claimed.actor, claimed.data.get("run_id")) == ("claimed", "agent-a", "77")


def test_mcp_at_slash_mcp_takes_a_workflow_token(sqlite_url: str) -> None:
    """`/mcp` checks the token as the agent API does, and its tools call the agent API with it, as it is."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with opened(sqlite_url, oidc_audience=AUDIENCE) as scene:
        scene.settle()
        token = _token(scene, "agent-a", run_id=9)

        async def claim() -> Any:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
            async with http, Client(streamable_http_client(f"{scene.stage.baton_url}/mcp", http_client=http)) as mcp:
                return await mcp.call_tool("claim_task", {"repo": scene.full_name, "number": scene.number})

        result = asyncio.run(claim())
        assert not result.is_error, result
        claimed = scene.app.state.work.history(scene.key)[-1]
        assert (claimed.type, claimed.actor, claimed.data.get("via"), claimed.data.get("run_id")) == (
            "claimed", "agent-a", "actions", "9")  # fmt: skip
        expired = HTTP.post(f"{scene.stage.baton_url}/mcp", json={}, headers={
            "Authorization": f"Bearer {_token(scene, 'agent-a', expires_in=-600)}"})  # fmt: skip
        assert expired.status_code == 401 and "has expired" in expired.json()["message"]


def test_an_issuer_that_cannot_be_reached_is_503_not_a_refusal(sqlite_url: str) -> None:
    nowhere = "http://127.0.0.1:9"  # the discard port: nothing answers there
    with opened(sqlite_url, oidc_audience=AUDIENCE, oidc_issuer=nowhere) as scene:
        scene.settle()
        scene.stage.person("agent-a", "write")
        token = scene.hub.world.issuer.token(nowhere, scene.full_name, "agent-a", audience=AUDIENCE)
        for _ in range(2):
            answer = _post(scene, token, "claim")
            assert answer.status_code == 503 and answer.json()["error"] == "unavailable", answer.text
            assert f"{nowhere}/.well-known/jwks" in answer.json()["message"]
        assert scene.app.state.work.ticket(scene.key).state.value == "open"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def timed(database_url: str, clock: ManualClock) -> Iterator[Scene]:
    """The scene, with Baton's time a `ManualClock` the test moves."""
    with opened(database_url, oidc_audience=AUDIENCE, clock=clock) as made:
        made.settle()
        yield made


def _until(clock: ManualClock, claim: Any, *, then: timedelta = timedelta(0)) -> None:
    """Move `clock` to the instant `claim` (seconds since the epoch) names, moved by `then`."""
    clock.advance(datetime.fromtimestamp(int(claim), UTC) + then - clock.now())


def test_a_token_whose_exp_passes_while_its_identity_is_kept_is_refused_once_baton_s_clock_is_past_it(
    timed: Scene, clock: ManualClock
) -> None:  # fmt: skip
    token = _token(timed, "agent-a")
    assert _post(timed, token, "claim").status_code == 200  # checked, and its identity kept
    expires = _claims(token)["exp"]
    _until(clock, expires, then=timedelta(seconds=LEEWAY - 1))  # within the leeway: still taken
    assert _post(timed, token, "release").status_code == 200
    _until(clock, expires, then=timedelta(seconds=LEEWAY))  # the wall clock has not moved: Baton's has
    expired = _post(timed, token, "claim")
    assert expired.status_code == 401, expired.text
    assert expired.json()["message"] == ("Baton does not take this GitHub Actions token: the token has expired: ask "
                                         "the runner for a new one.")  # fmt: skip
    assert timed.app.state.work.ticket(timed.key).state.value == "open"
    # A new token from the runner is taken.
    fresh = _post(timed, _token(timed, "agent-a", expires_in=600), "claim")
    assert fresh.status_code == 200, fresh.text


def test_a_token_not_valid_yet_is_refused_until_baton_s_clock_reaches_its_nbf(timed: Scene, clock: ManualClock) -> None:
    token = _token(timed, "agent-a", not_before=600, expires_in=900)
    starts = _claims(token)["nbf"]
    for step in range(2):  # now, then just before its `nbf`, but for the leeway
        if step:
            _until(clock, starts, then=-timedelta(seconds=LEEWAY + 1))
        early = _post(timed, token, "claim")
        assert early.status_code == 401, early.text
        said = "Baton does not take this GitHub Actions token: the token is not valid yet (`nbf`)."
        assert early.json()["message"] == said
    _until(clock, starts)
    assert _post(timed, token, "claim").status_code == 200
    assert timed.app.state.work.ticket(timed.key).state.value == "claimed"
