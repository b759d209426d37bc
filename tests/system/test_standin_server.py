"""The stand-in GitHub on its own, in process (httpx's ASGI transport): authentication as GitHub does it,
refusals of requests GitHub's description refuses, injected faults, and the webhooks people cause."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from baton.github.webhooks import verify
from github_standin import shapes
from github_standin.__main__ import prepared
from github_standin.contract import Contract, webhook_problems
from github_standin.inspection import with_inspection
from github_standin.people import Hub
from github_standin.server import Fault, StandIn
from github_standin.serving import Served
from github_standin.world import World
from support.keys import app_key, app_public_key
from support.local_http import HTTP

APP_ID = 77
SECRET = "stand-in secret"


def app_jwt(key: str | None = None, *, iss: str = str(APP_ID), lifetime: int = 540) -> str:
    now = int(time.time())
    return jwt.encode({"iat": now - 60, "exp": now + lifetime, "iss": iss}, key or app_key(), algorithm="RS256")


@pytest.fixture
def hub(contract: Contract) -> Iterator[Hub]:
    world = World(APP_ID, app_public_key())
    with world.lock:
        installation = world.install("octo")
        world.add_repository(installation, "shop")
        other = world.install("elsewhere")
        world.add_repository(other, "secret")
    made = Hub(world, SECRET, contract)
    yield made
    made.close()


def client(hub: Hub) -> TestClient:
    return TestClient(hub.rest.app, base_url="http://github.test")


def token(hub: Hub, installation_id: int | None = None) -> str:
    installation_id = installation_id or next(iter(hub.world.installations))
    with client(hub) as http:
        answer = http.post(
            f"/app/installations/{installation_id}/access_tokens", headers={"Authorization": f"Bearer {app_jwt()}"}
        )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])


def test_an_installation_token_is_minted_for_the_apps_jwt_only(hub: Hub) -> None:
    installation = next(iter(hub.world.installations))
    path = f"/app/installations/{installation}/access_tokens"
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    with client(hub) as http:
        minted = http.post(path, headers={"Authorization": f"Bearer {app_jwt()}"})
        assert minted.status_code == 201
        assert time.strptime(minted.json()["expires_at"], "%Y-%m-%dT%H:%M:%SZ")
        assert http.post(path, headers={"Authorization": f"Bearer {app_jwt(other_key.decode())}"}).status_code == 401
        assert http.post(path, headers={"Authorization": f"Bearer {app_jwt(iss='78')}"}).status_code == 401
        assert http.post(path, headers={"Authorization": f"Bearer {app_jwt(lifetime=3600)}"}).status_code == 401
        assert http.post(path).status_code == 401
        assert http.post("/app/installations/999999/access_tokens",
                         headers={"Authorization": f"Bearer {app_jwt()}"}).status_code == 404  # fmt: skip
        hub.world.installations[installation].suspended = True
        assert http.post(path, headers={"Authorization": f"Bearer {app_jwt()}"}).status_code == 403
    assert hub.all_problems() == []


def test_a_token_reaches_only_its_installations_repositories(hub: Hub) -> None:
    shop = token(hub)
    with client(hub) as http:
        assert http.get("/repos/octo/shop", headers={"Authorization": f"token {shop}"}).status_code == 200
        assert http.get("/repos/elsewhere/secret", headers={"Authorization": f"token {shop}"}).status_code == 404
        assert http.get("/repos/octo/shop").status_code == 401
        assert http.get("/repos/octo/shop", headers={"Authorization": "token ghs_made_up"}).status_code == 401
        hub.world.tokens[shop].expires_at = hub.world.tokens[shop].expires_at.replace(year=2000)
        assert http.get("/repos/octo/shop", headers={"Authorization": f"token {shop}"}).status_code == 401


def test_requests_off_githubs_description_get_githubs_kind_of_refusal(hub: Hub) -> None:
    auth = {"Authorization": f"token {token(hub)}"}
    person = hub.person("maria")
    hub.hook_url = None  # no Baton here: the webhook is recorded, not sent
    number = person.open_issue("octo/shop", "A task")
    with client(hub) as http:
        bad = http.post(f"/repos/octo/shop/issues/{number}/labels", json={"labels": "baton:open"}, headers=auth)
        assert bad.status_code == 422
        assert "issues/add-labels request" in bad.json()["message"]
        assert http.get("/repos/octo/shop/no-such-thing", headers=auth).status_code == 404
        assert http.post("/repos/octo/shop/labels", json={"name": "x", "color": 5}, headers=auth).status_code == 422
        reaction = http.post(f"/repos/octo/shop/issues/{number}/reactions", json={"content": "thumbs"}, headers=auth)
        assert reaction.status_code == 422
    assert any("issues/add-labels request" in problem for problem in hub.rest.problems)


def test_faults_are_injected_into_the_calls_they_name_and_then_stop(hub: Hub) -> None:
    auth = {"Authorization": f"token {token(hub)}"}
    hub.rest.inject(Fault("GET", r"^/repos/octo/shop$", status=502, times=2))
    hub.rest.inject(Fault("POST", r"/labels$", status=403, retry_after=7))
    hub.rest.inject(Fault("GET", r"/branches/", status=None, delay=0.3))
    with client(hub) as http:
        assert [http.get("/repos/octo/shop", headers=auth).status_code for _ in range(3)] == [502, 502, 200]
        limited = http.post("/repos/octo/shop/labels", json={"name": "x", "color": "ededed"}, headers=auth)
        assert limited.status_code == 403 and limited.headers["retry-after"] == "7"
        assert "secondary rate limit" in limited.json()["message"]
        assert (
            http.post("/repos/octo/shop/labels", json={"name": "x", "color": "ededed"}, headers=auth).status_code == 201
        )
        started = time.monotonic()
        assert http.get("/repos/octo/shop/branches/main", headers=auth).status_code == 200
        assert time.monotonic() - started >= 0.3
    assert hub.all_problems() == []


@pytest.fixture
def baton_double(hub: Hub) -> Iterator[list[tuple[dict[str, str], bytes]]]:
    """A receiver in Baton's place that records what the stand-in delivers."""
    received: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: Request) -> JSONResponse:
        received.append((dict(request.headers), await request.body()))
        return JSONResponse({"received": "new"}, status_code=202)

    with Served(Starlette(routes=[Route("/webhooks/github", hook, methods=["POST"])])) as served:
        hub.hook_url = f"{served.url}/webhooks/github"
        yield received


def test_what_people_do_arrives_as_signed_webhooks_in_githubs_shape(
    hub: Hub, baton_double: list[tuple[dict[str, str], bytes]]
) -> None:
    maria, agent = hub.person("maria"), hub.person("agent-a")
    task = maria.open_issue("octo/shop", "A task")
    agent.comment("octo/shop", task, "/claim")
    agent.push("octo/shop", f"{task}-work", "First try")
    pull = agent.open_pull_request("octo/shop", f"{task}-work", "Work", f"Fixes #{task}")
    head = agent.push("octo/shop", f"{task}-work", "Second try")
    maria.review("octo/shop", pull, "approved", "/accept")
    merge = maria.merge("octo/shop", pull)
    maria.deploy("octo/shop", merge, "production")
    events = []
    for headers, body in baton_double:
        assert verify(SECRET.encode(), body, headers["x-hub-signature-256"])
        payload = json.loads(body)
        assert webhook_problems(headers["x-github-event"], payload) == []
        events.append((headers["x-github-event"], payload.get("action")))
    assert events == [
        ("issues", "opened"), ("issue_comment", "created"), ("create", None), ("push", None),
        ("pull_request", "opened"), ("push", None), ("pull_request", "synchronize"),
        ("pull_request_review", "submitted"), ("pull_request", "closed"), ("issues", "closed"),
        ("deployment", "created"), ("deployment_status", "created"), ("deployment_status", "created"),
    ]  # fmt: skip
    closed = json.loads(baton_double[8][1])
    assert closed["pull_request"]["merged"] is True and closed["pull_request"]["head"]["sha"] == head
    assert hub.world.repository("octo/shop").issues[task].state == "closed"  # type: ignore[union-attr]
    assert len({headers["x-github-delivery"] for headers, _ in baton_double}) == len(baton_double)
    assert hub.all_problems() == []


def test_a_persons_own_token_reads_what_they_may_read_and_comments_as_them(
    hub: Hub, baton_double: list[tuple[dict[str, str], bytes]]
) -> None:
    """As on GitHub: `GET /user` names the token's owner; reads reach what they may read (a private repository
    they cannot read is 404); an issue or a comment they post is theirs, and the App hears of it as of any; the
    changes only the App makes here are 403. None of it counts as the App's writes."""
    hub.world.repository("elsewhere/secret").private = True  # type: ignore[union-attr]
    task = hub.person("maria").open_issue("octo/shop", "A task")
    auth = {"Authorization": f"Bearer {hub.person('agent-a').token()}"}
    with client(hub) as http:
        assert http.get("/user", headers=auth).json()["login"] == "agent-a"
        assert http.get(f"/repos/octo/shop/issues/{task}", headers=auth).json()["title"] == "A task"
        assert http.get("/repos/elsewhere/secret/issues", headers=auth).status_code == 404
        posted = http.post(f"/repos/octo/shop/issues/{task}/comments", json={"body": "/claim"}, headers=auth)
        assert posted.status_code == 201 and posted.json()["user"]["login"] == "agent-a"
        assert posted.json()["performed_via_github_app"] is None
        opened = http.post("/repos/octo/shop/issues", json={"title": "Mine", "labels": ["x"]}, headers=auth)
        assert opened.status_code == 201 and opened.json()["user"]["login"] == "agent-a"
        assert opened.json()["labels"] == []  # read access: GitHub drops the labels
        labelled = http.post(f"/repos/octo/shop/issues/{task}/labels", json={"labels": ["x"]}, headers=auth)
        assert labelled.status_code == 403
    deadline = time.monotonic() + 30  # the App's webhooks leave after the answers, one at a time
    while len(baton_double) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    heard = [(headers["x-github-event"], json.loads(body)) for headers, body in baton_double]
    comment = next(payload for event, payload in heard if event == "issue_comment")
    assert comment["sender"]["login"] == comment["comment"]["user"]["login"] == "agent-a"
    assert comment["comment"]["body"] == "/claim" and comment["issue"]["number"] == task
    assert [payload["issue"]["title"] for event, payload in heard if event == "issues"] == ["A task", "Mine"]
    assert hub.rest.writes() == []
    assert hub.all_problems() == []


def test_compare_answers_whether_one_commit_comes_after_another(hub: Hub) -> None:
    auth = {"Authorization": f"token {token(hub)}"}
    hub.hook_url = None
    agent = hub.person("agent-a")
    first = agent.push("octo/shop", "7-work", "one")
    second = agent.push("octo/shop", "7-work", "two")
    with client(hub) as http:
        ahead = http.get(f"/repos/octo/shop/compare/{first}...{second}", headers=auth).json()
        behind = http.get(f"/repos/octo/shop/compare/{second}...{first}", headers=auth).json()
        assert http.get(f"/repos/octo/shop/compare/{first}...{'f' * 40}", headers=auth).status_code == 404
    assert (ahead["status"], ahead["ahead_by"]) == ("ahead", 1)
    assert (behind["status"], behind["behind_by"]) == ("behind", 1)
    assert hub.all_problems() == []


def test_a_commit_is_found_by_its_id_abbreviated_or_not_or_its_branch_and_an_unknown_one_is_422(hub: Hub) -> None:
    auth = {"Authorization": f"token {token(hub)}"}
    hub.hook_url = None
    first = hub.person("agent-a").push("octo/shop", "7-work", "one")
    with client(hub) as http:
        for ref in (first, first[:7], "7-work"):
            answer = http.get(f"/repos/octo/shop/commits/{ref}", headers=auth)
            assert (answer.status_code, answer.json()["sha"]) == (200, first)
        unknown = http.get("/repos/octo/shop/commits/0c0ffee", headers=auth)
        assert unknown.status_code == 422 and unknown.json()["message"] == "No commit found for SHA: 0c0ffee"
    assert hub.all_problems() == []


def test_check_runs_are_created_updated_and_listed_by_commit(hub: Hub) -> None:
    auth = {"Authorization": f"token {token(hub)}"}
    hub.hook_url = None
    head = hub.person("agent-a").push("octo/shop", "8-work", "one")
    with client(hub) as http:
        created = http.post("/repos/octo/shop/check-runs", headers=auth, json={
            "name": "baton/acceptance", "head_sha": head, "status": "in_progress", "external_id": f"x:{head}",
            "output": {"title": "Delivered", "summary": "Awaiting review."},
        })  # fmt: skip
        assert created.status_code == 201 and created.json()["status"] == "in_progress"
        run = created.json()["id"]
        done = http.patch(f"/repos/octo/shop/check-runs/{run}", headers=auth, json={
            "conclusion": "success", "output": {"title": "Accepted", "summary": "Accepted by @maria."},
        })  # fmt: skip
        assert (done.json()["status"], done.json()["conclusion"]) == ("completed", "success")
        listed = http.get(f"/repos/octo/shop/commits/{head}/check-runs", headers=auth,
                          params={"check_name": "baton/acceptance"}).json()  # fmt: skip
        by_branch = http.get("/repos/octo/shop/commits/8-work/check-runs", headers=auth).json()
        other = http.get("/repos/octo/shop/commits/main/check-runs", headers=auth).json()
    assert [r["id"] for r in listed["check_runs"]] == [run] and listed["check_runs"][0]["output"]["title"] == "Accepted"
    assert by_branch["total_count"] == 1 and other["total_count"] == 0
    assert hub.all_problems() == []


def test_a_deleted_comment_is_gone_and_arrives_as_issue_comment_deleted(
    hub: Hub, baton_double: list[tuple[dict[str, str], bytes]]
) -> None:
    maria = hub.person("maria")
    task = maria.open_issue("octo/shop", "A task")
    said = hub.person("agent-a").comment("octo/shop", task, "/claim")
    maria.delete_comment("octo/shop", said)
    assert said not in hub.world.repository("octo/shop").comments  # type: ignore[union-attr]
    headers, body = baton_double[-1]
    payload = json.loads(body)
    assert (headers["x-github-event"], payload["action"]) == ("issue_comment", "deleted")
    assert (payload["comment"]["id"], payload["comment"]["body"]) == (said, "/claim")
    assert payload["sender"]["login"] == "maria"
    with client(hub) as http:
        gone = http.get(f"/repos/octo/shop/issues/comments/{said}", headers={"Authorization": f"token {token(hub)}"})
    assert gone.status_code == 404
    assert hub.all_problems() == []


def test_the_collaborators_list_holds_whom_the_collaborator_check_counts_with_their_roles_a_page_at_a_time(
    hub: Hub,
) -> None:
    # Roles given here, a custom role, and a pattern of collaborators with the read role; someone whose role is
    # none and someone with no role (who reads the public repository) are no collaborators, and are not listed.
    with hub.world.lock:
        shop = hub.world.repository("octo/shop")
        assert shop is not None
        shop.permissions.update({"maria": "write", "rel": "release-manager", "gone": "none"})
        shop.custom_roles["release-manager"] = "maintain"
        shop.collaborators = ("agent-*",)
        for login in ("maria", "rel", "gone", "agent-b", "agent-a", "outsider"):
            hub.world.account(login)
    auth = {"Authorization": f"token {token(hub)}"}
    with client(hub) as http:
        listed = http.get("/repos/octo/shop/collaborators", headers=auth)
        first = http.get("/repos/octo/shop/collaborators", params={"per_page": 2}, headers=auth).json()
        second = http.get("/repos/octo/shop/collaborators", params={"per_page": 2, "page": 2}, headers=auth).json()
        outside = http.get("/repos/octo/shop/collaborators", params={"affiliation": "outside"}, headers=auth).json()
        elsewhere = http.get("/repos/elsewhere/secret/collaborators", headers=auth)
    assert listed.status_code == 200
    roles = {one["login"]: (one["role_name"], one["permissions"]["push"], one["permissions"]["maintain"])
             for one in listed.json()}  # fmt: skip
    assert roles == {"agent-a": ("read", False, False), "agent-b": ("read", False, False),
                     "maria": ("write", True, False), "rel": ("release-manager", True, True)}  # fmt: skip
    assert [one["login"] for one in first + second] == ["agent-a", "agent-b", "maria", "rel"]
    assert outside == []
    assert elsewhere.status_code == 404  # another installation's repository
    assert hub.all_problems() == []


def test_a_prepared_world_with_inspection_shows_each_write_with_its_time_installation_and_issue(
    contract: Contract,
) -> None:
    world = prepared(APP_ID, app_public_key(), ["5:4242:octo/race", "6:4243:octo-two/race"], 3, ["baton:open"])
    stand_in = StandIn(world, contract)
    with TestClient(with_inspection(stand_in), base_url="http://github.test") as http:
        mint = {"Authorization": f"Bearer {app_jwt()}"}
        tokens = [http.post(f"/app/installations/{n}/access_tokens", headers=mint).json()["token"] for n in (5, 6)]
        auth, other = ({"Authorization": f"token {token}"} for token in tokens)
        made = http.post(
            "/_standin/comments",
            json={
                "repository": "octo/race",
                "comments": [
                    {"issue": 2, "login": "agent-a", "body": "/claim"},
                    {"issue": 3, "login": "agent-b", "body": "/claim"},
                ],
            },
        )
        assert made.status_code == 201
        first, second = made.json()["ids"]
        assert http.get("/repos/octo/race/issues/2", headers=auth).json()["comments"] == 1
        permission = http.get("/repos/octo/race/collaborators/agent-a/permission", headers=auth).json()
        assert permission["permission"] == "read"  # a public repository: everyone reads
        assert http.get("/repos/octo/race/contents/.github/baton.yml", headers=auth).status_code == 404
        assert http.get("/repos/octo/race/labels/baton:open", headers=auth).status_code == 200
        assert http.get("/repos/octo/race", headers=other).status_code == 404  # another installation's
        started = time.time()
        reacted = http.post(f"/repos/octo/race/issues/comments/{first}/reactions", json={"content": "+1"}, headers=auth)
        assert reacted.status_code == 201
        labelled = http.post("/repos/octo/race/issues/3/labels", json={"labels": ["baton:open"]}, headers=other)
        assert labelled.status_code == 404
        labelled = http.post("/repos/octo-two/race/issues/1/labels", json={"labels": ["x"]}, headers=other)
        assert labelled.status_code == 200
        shown = http.get("/_standin/writes").json()["writes"]
    assert [(w["installation"], w["method"], w["repository"], w["issue"]) for w in shown] == [
        (5, "POST", "octo/race", 2), (6, "POST", "octo-two/race", 1),
    ]  # fmt: skip
    assert shown[0]["path"] == f"/repos/octo/race/issues/comments/{first}/reactions"
    assert started <= shown[0]["at"] <= shown[1]["at"] <= time.time()
    assert second not in (w["issue"] for w in shown)
    assert stand_in.problems == []
    with TestClient(StandIn(world).app, base_url="http://github.test") as http:
        hidden = http.get("/_standin/writes")
    assert hidden.status_code == 404 and hidden.json()["message"] == "Not Found"  # off unless asked for


def test_comments_made_through_inspection_come_with_the_whole_payload_github_delivers(contract: Contract) -> None:
    world = prepared(APP_ID, app_public_key(), ["5:4242:octo/race"], 2, ["baton:open"])
    with TestClient(with_inspection(StandIn(world, contract)), base_url="http://github.test") as http:
        asked = {"repository": "octo/race", "comments": [{"issue": 2, "login": "agent-a", "body": "/claim"}]}
        made = http.post("/_standin/comments", json={**asked, "payloads": True})
        plain = http.post("/_standin/comments", json=asked)
    assert made.status_code == 201 and sorted(made.json()) == ["ids", "payloads"]
    assert sorted(plain.json()) == ["ids"]  # only when asked: a caller of many comments takes ids
    ((said,), (payload,)) = made.json()["ids"], made.json()["payloads"]
    assert webhook_problems("issue_comment", payload) == []  # as GitHub's schema for the event says
    assert (payload["action"], payload["issue"]["number"], payload["comment"]["id"]) == ("created", 2, said)
    assert (payload["comment"]["body"], payload["sender"]["login"], payload["installation"]["id"]) == (
        "/claim", "agent-a", 5,
    )  # fmt: skip
    assert payload["repository"]["full_name"] == "octo/race" and len(json.dumps(payload)) > 8_000  # whole


def test_python_m_github_standin_serves_the_prepared_world_on_127_0_0_1(tmp_path: Path) -> None:
    key = tmp_path / "app.pub.pem"
    key.write_text(app_public_key())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "github_standin", "--port", str(port), "--app-id", str(APP_ID),
               "--app-key", str(key), "--repository", "7:99:octo/race", "--issues", "2", "--inspect"]  # fmt: skip
    process = subprocess.Popen(command)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = HTTP.get(f"http://127.0.0.1:{port}/_standin/writes")
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
        assert answer.json() == {"writes": []}
        minted = HTTP.post(f"http://127.0.0.1:{port}/app/installations/7/access_tokens",
                            headers={"Authorization": f"Bearer {app_jwt()}"})  # fmt: skip
        auth = {"Authorization": f"token {minted.json()['token']}"}
        issue = HTTP.get(f"http://127.0.0.1:{port}/repos/octo/race/issues/2", headers=auth).json()
        assert (issue["number"], issue["state"], issue["user"]["login"]) == (2, "open", "octo")
    finally:
        process.terminate()
        process.wait(10)


def test_protection_other_apps_check_runs_chosen_commits_and_the_clock(
    hub: Hub, baton_double: list[tuple[dict[str, str], bytes]]
) -> None:
    auth = {"Authorization": f"token {token(hub)}"}
    repository = hub.world.repository("octo/shop")
    assert repository is not None
    agent = hub.person("agent-a")
    chosen = "1a2b3c4" + "d" * 33
    assert agent.push("octo/shop", "7-work", "one", sha=chosen) == chosen
    pull = agent.open_pull_request("octo/shop", "7-work", "Work", "Fixes #7")
    with hub.world.lock:
        hub.world.protect(repository, "main", ("build",))
        before = hub.world.now()
        hub.world.advance(timedelta(minutes=5))
        assert hub.world.now() - before >= timedelta(minutes=5)
    run = hub.ci("GitHub Actions").check_run("octo/shop", "build", chosen, "failure")
    with client(hub) as http:
        main = http.get("/repos/octo/shop/branches/main", headers=auth).json()
        work = http.get("/repos/octo/shop/branches/7-work", headers=auth).json()
        runs = http.get(f"/repos/octo/shop/commits/{chosen}/check-runs", headers=auth).json()["check_runs"]
    assert main["protected"] is True
    assert main["protection"]["required_status_checks"]["contexts"] == ["build"]
    assert work["protected"] is False and work["commit"]["sha"] == chosen
    assert [(r["id"], r["name"], r["conclusion"], r["app"]["name"]) for r in runs] == [
        (run, "build", "failure", "GitHub Actions")
    ]
    assert [p["number"] for p in runs[0]["pull_requests"]] == [pull]
    told = [json.loads(body) for headers, body in baton_double if headers["x-github-event"] == "check_run"]
    assert [(p["action"], p["check_run"]["status"]) for p in told] == [("created", "in_progress"),
                                                                        ("completed", "completed")]  # fmt: skip
    assert told[1]["check_run"]["completed_at"] >= shapes.timestamp(before + timedelta(minutes=5))
    assert [p["number"] for p in told[1]["check_run"]["pull_requests"]] == [pull]
    assert told[1]["check_run"]["check_suite"]["head_branch"] == "7-work"
    assert hub.all_problems() == []


def test_an_app_registered_from_a_manifest_gets_its_credentials_once_within_the_hour(hub: Hub) -> None:
    manifest = {"name": "Baton", "url": "https://baton.example.org/", "redirect_url": "http://127.0.0.1:1/callback",
                "hook_attributes": {"url": "https://baton.example.org/webhooks/github"},
                "default_events": ["issues"], "default_permissions": {"issues": "write"}}  # fmt: skip
    with client(hub) as http:
        made = http.post("/organizations/octo/settings/apps/new?state=s1", data={"manifest": json.dumps(manifest)},
                         follow_redirects=False)  # fmt: skip
        assert made.status_code == 302, made.text
        assert made.headers["location"].startswith("http://127.0.0.1:1/callback?code=")
        assert made.headers["location"].endswith("&state=s1")
        code = made.headers["location"].split("code=")[1].split("&")[0]
        refused = http.post("/settings/apps/new", data={"manifest": json.dumps({**manifest, "url": "nowhere"})})
        assert refused.status_code == 422 and "url" in refused.text
        converted = http.post(f"/api/v3/app-manifests/{code}/conversions")  # as a GitHub Enterprise Server's API
        assert converted.status_code == 201, converted.text
        app = converted.json()
        assert app["owner"]["login"] == "octo" and app["html_url"] == f"http://github.test/apps/{app['slug']}"
        assert app["events"] == ["issues"] and app["permissions"]["issues"] == "write"
        assert http.post(f"/app-manifests/{code}/conversions").status_code == 404  # used
        assert http.post("/app-manifests/unknown/conversions").status_code == 404
        with hub.world.lock:
            installation = hub.world.install("octo-two", app_id=app["id"]).id
        mint = f"/app/installations/{installation}/access_tokens"
        own = {"Authorization": f"Bearer {app_jwt(app['pem'], iss=str(app['id']))}"}
        assert http.post(mint, headers=own).status_code == 201
        assert http.post(mint, headers={"Authorization": f"Bearer {app_jwt()}"}).status_code == 404  # another App's
        baton_installation = next(iter(hub.world.installations))
        assert http.post(f"/app/installations/{baton_installation}/access_tokens", headers=own).status_code == 404

        again = http.post("/settings/apps/new", data={"manifest": json.dumps(manifest)}, follow_redirects=False)
        later = again.headers["location"].split("code=")[1]
        hub.world.advance(timedelta(hours=1))
        assert http.post(f"/app-manifests/{later}/conversions").status_code == 404  # expired
    assert hub.all_problems() == []


def test_a_manifest_apps_oauth_client_signs_people_in_and_lists_what_they_may_read(hub: Hub) -> None:
    callback = "https://baton.example.org/auth/github/callback"
    manifest = {"name": "Signing", "url": "https://baton.example.org/", "redirect_url": "http://127.0.0.1:1/callback",
                "callback_urls": [callback], "default_permissions": {"issues": "write"}}  # fmt: skip
    with hub.world.lock:
        hub.world.web_login = "rosa"  # signed in on the stand-in's pages
    with client(hub) as http:
        made = http.post("/settings/apps/new", data={"manifest": json.dumps(manifest)}, follow_redirects=False)
        app = http.post(f"/app-manifests/{made.headers['location'].split('code=')[1]}/conversions").json()
        with hub.world.lock:
            installation = hub.world.install("octo-three", app_id=app["id"])
            open_repo = hub.world.add_repository(installation, "open")
            closed = hub.world.add_repository(installation, "closed")
            closed.private = True
            open_repo.permissions["rosa"] = "write"

        def authorize(**query: str) -> httpx.Response:
            return http.get("/login/oauth/authorize", params=query, follow_redirects=False)

        assert authorize(client_id="unknown", state="s").status_code == 404
        assert authorize(client_id=app["client_id"], redirect_uri="https://elsewhere.example/cb").status_code == 400
        sent = authorize(client_id=app["client_id"], redirect_uri=callback, state="s2")
        assert sent.status_code == 302 and sent.headers["location"].startswith(f"{callback}?code=")
        assert sent.headers["location"].endswith("&state=s2")
        code = sent.headers["location"].split("code=")[1].split("&")[0]

        def exchange(secret: str) -> dict[str, object]:
            form = {"client_id": app["client_id"], "client_secret": secret, "code": code, "redirect_uri": callback}
            answer = http.post("/login/oauth/access_token", data=form, headers={"Accept": "application/json"})
            assert answer.status_code == 200
            return dict(answer.json())

        assert exchange("wrong")["error"] == "incorrect_client_credentials"
        granted = exchange(app["client_secret"])
        assert str(granted["access_token"]).startswith("ghu_") and granted["expires_in"] == 8 * 3600
        assert exchange(app["client_secret"])["error"] == "bad_verification_code"  # used once
        person = {"Authorization": f"Bearer {granted['access_token']}"}
        assert http.get("/user", headers=person).json()["login"] == "rosa"
        listed = http.get("/user/installations", headers=person).json()
        assert [one["id"] for one in listed["installations"]] == [installation.id] and listed["total_count"] == 1
        repositories = http.get(f"/user/installations/{installation.id}/repositories", headers=person).json()
        assert [(r["full_name"], r["permissions"]["push"]) for r in repositories["repositories"]] == [
            ("octo-three/open", True)]  # fmt: skip
        with hub.world.lock:
            closed.permissions["rosa"] = "read"
            del open_repo.permissions["rosa"]
        repositories = http.get(f"/user/installations/{installation.id}/repositories", headers=person).json()
        assert [r["full_name"] for r in repositories["repositories"]] == ["octo-three/closed"]
        baton = next(iter(hub.world.installations))  # another App's installation: not the token's
        assert http.get(f"/user/installations/{baton}/repositories", headers=person).status_code == 404
        with hub.world.lock:
            personal = hub.world.user_token("rosa")
        assert http.get("/user/installations", headers={"Authorization": f"token {personal}"}).status_code == 403
        assert http.get("/user/installations", headers={"Authorization": "token ghu_made_up"}).status_code == 401
    assert hub.all_problems() == []
