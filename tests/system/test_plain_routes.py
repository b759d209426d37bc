"""The routes Baton serves as plain ASGI (`baton.web.plain`), the agent API's command routes and the webhook
endpoint, held to their description in /openapi.json over real sockets: each answers only the statuses it documents,
its documented body schema takes a valid body, and a body that schema refuses, the route refuses (422)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from baton.github.webhooks import signature
from support import standin_scene
from support.local_http import HTTP
from support.standin_scene import Scene

ISSUE = "/api/v1/repos/{owner}/{repo}/issues/{number}"
CREATE = "/api/v1/repos/{owner}/{repo}/issues"
WEBHOOKS = "/webhooks/github"
LONG = "x" * 10_001

# Per route (its action; "" for create-and-claim): bodies its rules take, and bodies they refuse.
VALID: dict[str, list[Any]] = {
    "claim": [None, {}],
    "release": [None, {}],
    "deliver": [{"summary": "Done."}, {"summary": "Done.", "branch": "empty-state", "commit": "abcdef1", "pr": 7,
                                      "tests": ["pytest -q"], "screenshots": ["https://example.com/a.png"]}],
    "accept": [None, {}, {"note": "Looks right."}],
    "send-back": [None, {}, {"feedback": "The empty state vanishes on error."}],
    "reopen": [None, {}, {"reason": "It broke again."}],
    "": [{"title": "Trim the logs"}, {"title": "Trim the logs", "body": "They grow."}],
}  # fmt: skip
INVALID: dict[str, list[Any]] = {
    "claim": [{"note": "hi"}, [], "claim", 5],
    "release": [{"x": 1}, [], "release"],
    "deliver": [{}, {"summary": ""}, {"summary": LONG}, {"summary": 5}, {"summary": "Done.", "branch": "a b"},
                {"summary": "Done.", "commit": "xyz"}, {"summary": "Done.", "pr": 0}, {"summary": "Done.", "pr": 7.5},
                {"summary": "Done.", "tests": ["t"] * 21}, {"summary": "Done.", "tests": [""]},
                {"summary": "Done.", "extra": 1}, [], "Done."],
    "accept": [{"note": 5}, {"note": LONG}, {"notes": "x"}, []],
    "send-back": [{"feedback": 5}, {"feedback": LONG}, {"reason": "x"}, "x"],
    "reopen": [{"reason": 5}, {"reason": LONG}, {"note": "x"}, [1]],
    "": [{}, {"title": ""}, {"title": "x" * 257}, {"title": "t", "labels": []}, {"title": "t", "body": LONG}, []],
}  # fmt: skip


scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


def _spec(scene: Scene) -> dict[str, Any]:
    spec: dict[str, Any] = HTTP.get(f"{scene.stage.baton_url}/openapi.json").json()
    return spec


def _documented(spec: dict[str, Any], path: str) -> set[int]:
    return {int(status) for status in spec["paths"][path]["post"]["responses"]}


def _body_schema(spec: dict[str, Any], path: str) -> Draft202012Validator:
    schema = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator({**schema, "components": spec["components"]})


class Caller:
    def __init__(self, scene: Scene, login: str, permission: str = "read") -> None:
        self.scene = scene
        self.token = scene.stage.person(login, permission).token()
        self.answered: list[tuple[str, int]] = []  # (the route's path in /openapi.json, the status)

    def post(self, action: str, number: int | str | None = None, body: Any = None, repo: str | None = None,
             **headers: str) -> httpx.Response:  # fmt: skip
        repository = repo or self.scene.full_name
        where = f"/api/v1/repos/{repository}/issues" + (f"/{number or self.scene.number}/{action}" if action else "")
        sent = {"Authorization": f"Bearer {self.token}", **{k.replace("_", "-"): v for k, v in headers.items()}}
        content = None if body is None else json.dumps(body).encode()
        if content is not None:
            sent["Content-Type"] = "application/json"
        answer = HTTP.post(f"{self.scene.stage.baton_url}{where}", content=content, headers=sent)
        self.answered.append((f"{ISSUE}/{action}" if action else CREATE, answer.status_code))
        return answer


def test_each_plain_route_answers_only_the_statuses_it_documents(scene: Scene) -> None:
    agent, other = Caller(scene, "agent-a"), Caller(scene, "agent-b")
    reader, maria = Caller(scene, "reed"), Caller(scene, "maria", "maintain")
    revision = scene.app.state.work.ticket(scene.key).revision
    for action in ("claim", "release", "deliver", "accept", "send-back", "reopen"):
        agent.post(action, 999_999)  # no such issue
        agent.post(action, body=[])  # not valid
        agent.post(action, If_Match="nineteen")
    agent.post("claim", If_Match=f'"{revision + 5}"')  # stale
    agent.post("claim", Idempotency_Key="k" * 201)
    agent.post("claim")
    other.post("claim")  # taken
    agent.post("deliver", body={"summary": "The empty state is done.", "branch": "empty-state"})
    reader.post("accept", body={"note": "fine"})  # not a reviewer
    maria.post("send-back", body={"feedback": "Not yet."})
    agent.post("deliver", body={"summary": "Now it is.", "branch": "empty-state"})
    maria.post("accept")
    agent.post("reopen", body={"reason": "mine"})
    maria.post("reopen", body={"reason": "It broke again."})
    agent.post("release")
    agent.post("", body={"title": "Trim the logs"})
    agent.post("", body={"title": ""})
    agent.post("", body={"title": "Trim the logs"}, repo="octo/nowhere")
    unsigned = HTTP.post(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}/claim")

    secret = scene.app.state.settings.webhook_secret.get_secret_value().encode()
    hooks: list[int] = []
    for payload, headers in ((b"{}", {}), (b"{}", {"X-GitHub-Event": "ping"}),
                             (b'{"zen": "Keep it logically awesome."}', {"X-GitHub-Event": "ping"})):  # fmt: skip
        signed = {"X-Hub-Signature-256": signature(secret, payload), "X-GitHub-Delivery": f"d-{len(hooks)}",
                  "Content-Type": "application/json", **headers}  # fmt: skip
        hooks.append(HTTP.post(f"{scene.stage.baton_url}{WEBHOOKS}", content=payload, headers=signed).status_code)
    hooks.append(HTTP.post(f"{scene.stage.baton_url}{WEBHOOKS}", content=b"{}").status_code)  # unsigned

    spec = _spec(scene)
    answered = [*agent.answered, *other.answered, *reader.answered, *maria.answered,
                (f"{ISSUE}/claim", unsigned.status_code), *((WEBHOOKS, status) for status in hooks)]  # fmt: skip
    for path, status in answered:
        assert status in _documented(spec, path), (path, status)
    seen = {status for _, status in answered}
    assert {200, 201, 202, 400, 401, 403, 404, 409, 412, 422} <= seen, seen  # the scenario is what it says


@pytest.mark.parametrize("action", list(VALID))
def test_the_documented_body_schema_takes_a_valid_body_and_the_route_refuses_what_it_refuses(
    scene: Scene, action: str
) -> None:
    """Valid bodies go to an issue (or a repository) Baton does not know: 404, decided after the body is taken."""
    spec = _spec(scene)
    schema = _body_schema(spec, f"{ISSUE}/{action}" if action else CREATE)
    agent = Caller(scene, "agent-a")
    for body in VALID[action]:
        if body is not None:
            assert schema.is_valid(body), body
        answer = agent.post(action, 999_999, body, repo="octo/nowhere" if not action else None)
        assert answer.status_code == 404, (body, answer.text)
    for body in INVALID[action]:
        assert not schema.is_valid(body), body
        answer = agent.post(action, 999_999, body)
        assert answer.status_code == 422, (body, answer.text)
        refused = answer.json()
        assert refused["error"] == "invalid" and refused["problems"], refused


def test_a_valid_command_is_served_as_plain_asgi_and_an_invalid_one_by_its_fastapi_declaration(
    scene: Scene,
) -> None:
    api = scene.app.state.agent_api
    served: list[bool] = []
    plainly = api.plainly

    async def recorded(request: Any) -> Any:
        answer = await plainly(request)
        served.append(answer is not None)
        return answer

    api.plainly = recorded
    agent = Caller(scene, "agent-a")
    assert agent.post("claim").status_code == 200
    assert agent.post("release", body={"why": 1}).status_code == 422
    assert agent.post("deliver", number="0", body={"summary": "Done."}).status_code == 422  # the path's number
    assert served == [True, False]  # the number 0 never reached it
