"""The stand-in GitHub's links between issues, over HTTP on 127.0.0.1: dependencies ("blocked by") and
sub-issues, across the repositories of one world, the summaries every issue answer carries, GitHub's
refusals, and the `issue_dependencies` and `sub_issues` webhooks GitHub sends the App about them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from baton.github.webhooks import verify
from baton.store import tables as t
from github_standin.contract import Contract, webhook_problems
from github_standin.people import Hub
from github_standin.serving import Served
from github_standin.world import Refused, World
from support.keys import app_key, app_public_key
from support.standin_scene import opened

APP_ID = 77
SECRET = "stand-in secret"
SHOP, TOOLS, ELSEWHERE = "octo/shop", "octo/tools", "other-org/lib"


@dataclass
class Site:
    """The stand-in served on 127.0.0.1, a token of the `octo` installation, and the webhooks it sent."""

    hub: Hub
    http: httpx.Client
    received: list[tuple[dict[str, str], bytes]]

    def issue(self, full_name: str, title: str) -> tuple[int, int]:
        """A new issue, opened by maria: its number and its id."""
        number = self.hub.person("maria").open_issue(full_name, title)
        with self.hub.world.lock:
            repository = self.hub.world.repository(full_name)
            assert repository is not None
            return number, repository.issues[number].id

    def get(self, path: str) -> httpx.Response:
        return self.http.get(f"/repos/{path}")

    def events(self, count: int) -> list[tuple[str, dict[str, Any]]]:
        """The webhooks received after the first `count`, once every one the stand-in sent has arrived."""
        deadline = time.monotonic() + 30
        while len(self.received) < len(self.hub.deliveries) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.received) == len(self.hub.deliveries)
        events = []
        for headers, body in self.received[count:]:
            assert verify(SECRET.encode(), body, headers["x-hub-signature-256"])
            payload = json.loads(body)
            assert webhook_problems(headers["x-github-event"], payload) == []
            events.append((headers["x-github-event"], payload))
        return events


@pytest.fixture
def site(contract: Contract) -> Iterator[Site]:
    world = World(APP_ID, app_public_key())
    with world.lock:
        octo = world.install("octo")
        world.add_repository(octo, "shop")
        world.add_repository(octo, "tools")
        world.add_repository(world.install("other-org"), "lib")
    hub = Hub(world, SECRET, contract)
    received: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: Request) -> JSONResponse:
        received.append((dict(request.headers), await request.body()))
        return JSONResponse({"received": "new"}, status_code=202)

    receiver = Starlette(routes=[Route("/webhooks/github", hook, methods=["POST"])])
    with Served(receiver) as baton, Served(hub.rest.app) as github:
        hub.hook_url, hub.api_url = f"{baton.url}/webhooks/github", github.url
        now = int(time.time())
        made = jwt.encode({"iat": now - 60, "exp": now + 540, "iss": str(APP_ID)}, app_key(), algorithm="RS256")
        with httpx.Client(base_url=github.url, timeout=10) as http:
            minted = http.post(
                f"/app/installations/{octo.id}/access_tokens", headers={"Authorization": f"Bearer {made}"}
            )
            assert minted.status_code == 201
            http.headers["Authorization"] = f"token {minted.json()['token']}"
            yield Site(hub, http, received)
            assert hub.all_problems() == []
    hub.close()


def test_an_issue_is_blocked_by_issues_of_two_repositories_and_lists_them(site: Site) -> None:
    blocked, blocked_id = site.issue(SHOP, "Ship it")
    near, near_id = site.issue(SHOP, "Write the docs")
    far, far_id = site.issue(TOOLS, "Fix the build tool")
    path = f"{SHOP}/issues/{blocked}/dependencies/blocked_by"

    added = site.http.post(f"/repos/{path}", json={"issue_id": far_id})
    assert added.status_code == 201
    assert (added.json()["id"], added.json()["number"]) == (far_id, far)
    assert added.json()["repository_url"].endswith(f"/repos/{TOOLS}")
    assert site.http.post(f"/repos/{path}", json={"issue_id": near_id}).status_code == 201

    assert [one["id"] for one in site.get(path).json()] == [far_id, near_id]
    blocking = site.get(f"{TOOLS}/issues/{far}/dependencies/blocking")
    assert blocking.status_code == 200 and [one["id"] for one in blocking.json()] == [blocked_id]
    assert site.get(f"{SHOP}/issues/{near}/dependencies/blocking").json()[0]["number"] == blocked

    removed = site.http.delete(f"/repos/{path}/{far_id}")
    assert removed.status_code == 200 and removed.json()["id"] == far_id
    assert [one["id"] for one in site.get(path).json()] == [near_id]
    assert site.get(f"{TOOLS}/issues/{far}/dependencies/blocking").json() == []
    assert site.http.delete(f"/repos/{path}/{far_id}").status_code == 404


def test_every_issue_answer_sums_up_its_dependencies_as_blockers_close_and_reopen(site: Site) -> None:
    blocked, _ = site.issue(SHOP, "Ship it")
    first, first_id = site.issue(SHOP, "One")
    second, second_id = site.issue(TOOLS, "Two")
    untouched = site.get(f"{SHOP}/issues/{blocked}").json()
    assert untouched["issue_dependencies_summary"] == {"blocked_by": 0, "blocking": 0, "total_blocked_by": 0,
                                                       "total_blocking": 0}  # fmt: skip
    assert untouched["sub_issues_summary"] == {"total": 0, "completed": 0, "percent_completed": 0}
    assert untouched["parent_issue_url"] is None
    for blocking_id in (first_id, second_id):
        site.http.post(f"/repos/{SHOP}/issues/{blocked}/dependencies/blocked_by", json={"issue_id": blocking_id})

    def summary() -> dict[str, int]:
        return dict(site.get(f"{SHOP}/issues/{blocked}").json()["issue_dependencies_summary"])

    assert summary() == {"blocked_by": 2, "blocking": 0, "total_blocked_by": 2, "total_blocking": 0}
    maria = site.hub.person("maria")
    maria.close_issue(TOOLS, second)
    assert summary() == {"blocked_by": 1, "blocking": 0, "total_blocked_by": 2, "total_blocking": 0}
    maria.close_issue(SHOP, first)
    assert summary()["blocked_by"] == 0
    maria.reopen_issue(SHOP, first)
    assert summary()["blocked_by"] == 1
    blocker = site.get(f"{TOOLS}/issues/{second}").json()["issue_dependencies_summary"]
    assert blocker == {"blocked_by": 0, "blocking": 1, "total_blocked_by": 0, "total_blocking": 1}
    maria.close_issue(SHOP, blocked)
    assert site.get(f"{TOOLS}/issues/{second}").json()["issue_dependencies_summary"]["blocking"] == 0
    listed = {one["number"]: one for one in site.get(f"{SHOP}/issues?state=all").json()}
    assert listed[blocked]["issue_dependencies_summary"]["total_blocked_by"] == 2


def test_github_refuses_a_dependency_it_would_not_make(site: Site) -> None:
    blocked, blocked_id = site.issue(SHOP, "Ship it")
    other, other_id = site.issue(SHOP, "Other")
    path = f"/repos/{SHOP}/issues/{blocked}/dependencies/blocked_by"
    itself = site.http.post(path, json={"issue_id": blocked_id})
    assert itself.status_code == 422 and itself.json()["message"] == "Validation Failed"
    assert site.http.post(path, json={"issue_id": 987654321}).status_code == 404
    assert site.http.post(path, json={"issue_id": other_id}).status_code == 201
    assert site.http.post(path, json={"issue_id": other_id}).status_code == 422
    loop = site.http.post(f"/repos/{SHOP}/issues/{other}/dependencies/blocked_by", json={"issue_id": blocked_id})
    assert loop.status_code == 422
    assert site.http.post(f"/repos/{SHOP}/issues/999/dependencies/blocked_by", json={"issue_id": 1}).status_code == 404
    assert [one["id"] for one in site.get(f"{SHOP}/issues/{blocked}/dependencies/blocked_by").json()] == [other_id]


def test_sub_issues_are_added_listed_counted_and_removed(site: Site) -> None:
    parent, parent_id = site.issue(SHOP, "Epic")
    near, near_id = site.issue(SHOP, "Part one")
    far, far_id = site.issue(TOOLS, "Part two")
    path = f"/repos/{SHOP}/issues/{parent}"
    assert site.get(f"{SHOP}/issues/{near}/parent").status_code == 404

    added = site.http.post(f"{path}/sub_issues", json={"sub_issue_id": near_id})
    assert added.status_code == 201 and added.json()["id"] == parent_id
    assert added.json()["sub_issues_summary"] == {"total": 1, "completed": 0, "percent_completed": 0}
    assert site.http.post(f"{path}/sub_issues", json={"sub_issue_id": far_id}).status_code == 201
    assert [one["id"] for one in site.get(f"{SHOP}/issues/{parent}/sub_issues").json()] == [near_id, far_id]

    found = site.get(f"{TOOLS}/issues/{far}/parent")
    assert found.status_code == 200 and found.json()["id"] == parent_id
    child = site.get(f"{TOOLS}/issues/{far}").json()
    assert child["parent_issue_url"] == f"{site.hub.api_url}/repos/{SHOP}/issues/{parent}"
    site.hub.person("maria").close_issue(TOOLS, far)
    summary = site.get(f"{SHOP}/issues/{parent}").json()["sub_issues_summary"]
    assert summary == {"total": 2, "completed": 1, "percent_completed": 50}

    removed = site.http.request("DELETE", f"{path}/sub_issue", json={"sub_issue_id": near_id})
    assert removed.status_code == 200 and removed.json()["id"] == parent_id
    assert removed.json()["sub_issues_summary"] == {"total": 1, "completed": 1, "percent_completed": 100}
    assert site.get(f"{SHOP}/issues/{near}/parent").status_code == 404
    assert site.get(f"{SHOP}/issues/{near}").json()["parent_issue_url"] is None
    assert site.http.request("DELETE", f"{path}/sub_issue", json={"sub_issue_id": near_id}).status_code == 404


def test_a_sub_issue_has_one_parent_unless_it_is_replaced(site: Site) -> None:
    first, first_id = site.issue(SHOP, "First epic")
    second, second_id = site.issue(TOOLS, "Second epic")
    part, part_id = site.issue(SHOP, "Part")
    _, foreign_id = site.issue(ELSEWHERE, "Another owner's")
    assert site.http.post(f"/repos/{SHOP}/issues/{first}/sub_issues", json={"sub_issue_id": part_id}).status_code == 201

    again = site.http.post(f"/repos/{TOOLS}/issues/{second}/sub_issues", json={"sub_issue_id": part_id})
    assert again.status_code == 422
    moved = site.http.post(f"/repos/{TOOLS}/issues/{second}/sub_issues",
                           json={"sub_issue_id": part_id, "replace_parent": True})  # fmt: skip
    assert moved.status_code == 201 and moved.json()["id"] == second_id
    assert site.get(f"{SHOP}/issues/{part}/parent").json()["id"] == second_id
    assert site.get(f"{SHOP}/issues/{first}/sub_issues").json() == []
    assert site.get(f"{SHOP}/issues/{first}").json()["sub_issues_summary"]["total"] == 0

    for refused in (first_id, foreign_id):
        answer = site.http.post(f"/repos/{SHOP}/issues/{first}/sub_issues", json={"sub_issue_id": refused})
        assert answer.status_code == 422
    loop = site.http.post(f"/repos/{SHOP}/issues/{part}/sub_issues", json={"sub_issue_id": second_id})
    assert loop.status_code == 422
    assert (
        site.http.post(f"/repos/{SHOP}/issues/{first}/sub_issues", json={"sub_issue_id": 987654321}).status_code == 404
    )


def test_a_dependency_made_and_undone_sends_issue_dependencies_to_both_repositories(site: Site) -> None:
    blocked, blocked_id = site.issue(SHOP, "Ship it")
    blocking, blocking_id = site.issue(TOOLS, "Fix the tool")
    before = len(site.hub.deliveries)
    path = f"/repos/{SHOP}/issues/{blocked}/dependencies/blocked_by"
    assert site.http.post(path, json={"issue_id": blocking_id}).status_code == 201
    assert site.http.delete(f"{path}/{blocking_id}").status_code == 200

    events = site.events(before)
    assert [(event, payload["action"]) for event, payload in events] == [
        ("issue_dependencies", "blocked_by_added"), ("issue_dependencies", "blocking_added"),
        ("issue_dependencies", "blocked_by_removed"), ("issue_dependencies", "blocking_removed"),
    ]  # fmt: skip
    with site.hub.world.lock:
        installation = site.hub.world.repository(SHOP).installation_id  # type: ignore[union-attr]
    for (_, payload), (here, there, other_repo) in zip(
        events, [(SHOP, TOOLS, "blocking_issue_repo"), (TOOLS, SHOP, "blocked_issue_repo")] * 2, strict=True
    ):
        assert (payload["blocked_issue_id"], payload["blocking_issue_id"]) == (blocked_id, blocking_id)
        assert (payload["blocked_issue"]["number"], payload["blocking_issue"]["number"]) == (blocked, blocking)
        assert payload["repository"]["full_name"] == here and payload[other_repo]["full_name"] == there
        assert payload["installation"]["id"] == installation and payload["organization"]["login"] == "octo"
        assert payload["sender"]["login"] == "baton[bot]"
    assert events[0][1]["blocked_issue"]["issue_dependencies_summary"]["blocked_by"] == 1
    assert events[2][1]["blocked_issue"]["issue_dependencies_summary"]["blocked_by"] == 0

    maria = site.hub.person("maria")
    before = len(site.hub.deliveries)
    maria.block(SHOP, blocked, by=(TOOLS, blocking))
    maria.unblock(SHOP, blocked, by=(TOOLS, blocking))
    by_hand = site.events(before)
    assert [payload["action"] for _, payload in by_hand] == [
        "blocked_by_added", "blocking_added", "blocked_by_removed", "blocking_removed"
    ]  # fmt: skip
    assert {payload["sender"]["login"] for _, payload in by_hand} == {"maria"}
    with pytest.raises(Refused):
        maria.block(SHOP, blocked, by=(SHOP, blocked))


def test_sub_issues_added_replaced_and_removed_send_sub_issues_to_both_repositories(site: Site) -> None:
    first, first_id = site.issue(SHOP, "First epic")
    second, second_id = site.issue(SHOP, "Second epic")
    part, part_id = site.issue(TOOLS, "Part")
    before = len(site.hub.deliveries)
    site.http.post(f"/repos/{SHOP}/issues/{first}/sub_issues", json={"sub_issue_id": part_id})
    site.http.post(f"/repos/{SHOP}/issues/{second}/sub_issues", json={"sub_issue_id": part_id, "replace_parent": True})
    site.http.request("DELETE", f"/repos/{SHOP}/issues/{second}/sub_issue", json={"sub_issue_id": part_id})

    events = site.events(before)
    assert [(event, payload["action"], payload["parent_issue_id"]) for event, payload in events] == [
        ("sub_issues", "sub_issue_added", first_id), ("sub_issues", "parent_issue_added", first_id),
        ("sub_issues", "sub_issue_removed", first_id), ("sub_issues", "parent_issue_removed", first_id),
        ("sub_issues", "sub_issue_added", second_id), ("sub_issues", "parent_issue_added", second_id),
        ("sub_issues", "sub_issue_removed", second_id), ("sub_issues", "parent_issue_removed", second_id),
    ]  # fmt: skip
    for _, payload in events:
        assert payload["sub_issue_id"] == part_id and payload["sub_issue"]["number"] == part
        if payload["action"].startswith("sub_issue"):
            assert payload["repository"]["full_name"] == SHOP and payload["sub_issue_repo"]["full_name"] == TOOLS
        else:
            assert payload["repository"]["full_name"] == TOOLS and payload["parent_issue_repo"]["full_name"] == SHOP
    assert events[4][1]["sub_issue"]["parent_issue_url"].endswith(f"/repos/{SHOP}/issues/{second}")

    before = len(site.hub.deliveries)
    maria = site.hub.person("maria")
    maria.add_sub_issue(SHOP, first, (TOOLS, part))
    maria.remove_sub_issue(SHOP, first, (TOOLS, part))
    assert [payload["action"] for _, payload in site.events(before)] == [
        "sub_issue_added", "parent_issue_added", "sub_issue_removed", "parent_issue_removed"
    ]  # fmt: skip


def test_payloads_of_these_events_are_held_to_githubs_description(site: Site) -> None:
    """@octokit/webhooks-schemas has neither event: the description's `webhook-*` components check them, and
    they do find what is wrong."""
    problems = webhook_problems("issue_dependencies", {"action": "blocked_by_added", "sender": {}})
    assert any("repository" in problem for problem in problems)
    assert any("organization" in problem for problem in problems)
    assert webhook_problems("sub_issues", {"action": "sub_issue_moved"}) == [
        "sub_issues.sub_issue_moved webhook: @octokit/openapi describes no sub_issues webhook with action "
        "'sub_issue_moved'"
    ]


def test_baton_keeps_each_link_from_the_blocked_sides_delivery_and_lets_the_other_side_be(database_url: str) -> None:
    """Each link is told to both sides' repositories; Baton keeps it from the blocked side's delivery (`done`),
    lets the other be (`ignored`); links undone before Baton wrote leave nothing to write on GitHub (docs/agents.md,
    "Ready work")."""
    with opened(database_url) as scene:
        maria = scene.person("maria")
        other = maria.open_issue(scene.full_name, "Another one")
        scene.drain()  # what Baton writes about the new issues
        before, writes = len(scene.hub.deliveries), scene.writes()
        maria.block(scene.full_name, scene.number, by=(scene.full_name, other))
        maria.add_sub_issue(scene.full_name, other, (scene.full_name, scene.number))
        scene.settle()
        engine = scene.app.state.work.units.engine
        with engine.connect() as connection:
            kept = connection.execute(select(t.dependencies.c.number, t.dependencies.c.source,
                                             t.dependencies.c.blocker, t.dependencies.c.open)).all()  # fmt: skip
        own = scene.full_name.lower()
        assert sorted(kept) == sorted([(scene.number, "blocked_by", f"{own}#{other}", True),
                                       (other, "sub_issue", f"{own}#{scene.number}", True)])  # fmt: skip
        maria.remove_sub_issue(scene.full_name, other, (scene.full_name, scene.number))
        maria.unblock(scene.full_name, scene.number, by=(scene.full_name, other))
        scene.settle()
        assert [d.event for d in scene.hub.deliveries[before:]] == ["issue_dependencies"] * 2 + ["sub_issues"] * 4 + [
            "issue_dependencies"
        ] * 2
        scene.drain()  # both issues are looked at again; undone before Baton wrote, the links leave no trace
        assert scene.writes() == writes
        deliveries = t.webhook_deliveries
        with engine.connect() as connection:
            assert connection.execute(select(t.dependencies)).all() == []  # removed on GitHub: removed here
            decided = dict(connection.execute(
                select(deliveries.c.action, deliveries.c.status)
                .where(deliveries.c.id.in_([d.id for d in scene.hub.deliveries[before:]]))
            ).all())  # fmt: skip
        assert decided == {"blocked_by_added": "done", "blocked_by_removed": "done", "sub_issue_added": "done",
                           "sub_issue_removed": "done", "blocking_added": "ignored", "blocking_removed": "ignored",
                           "parent_issue_added": "ignored", "parent_issue_removed": "ignored"}  # fmt: skip
