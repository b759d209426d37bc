"""Claim-next over real sockets: `POST /api/v1/repos/{owner}/{repo}/tasks/claim` and `POST
/api/v1/orgs/{org}/tasks/claim` hand each caller the first ready task it may claim, claimed in the same
transaction (docs/agents.md, "Claim the next task")."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections import Counter
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from baton.domain import TicketKey
from baton.store import tables as t
from bench.api_race import decided_where
from bench.claim_next import run as race
from support import standin_scene
from support.local_http import HTTP
from support.standin_scene import Scene, opened

pytestmark = pytest.mark.both_engines  # by default on both databases: claim-next racing (SKIP LOCKED)


scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


class Agent:
    """Someone calling claim-next with a token of their own."""

    def __init__(self, scene: Scene, login: str, permission: str = "read") -> None:
        self.scene, self.login = scene, login
        self.token = scene.stage.person(login, permission).token()

    def next(self, body: Any = None, *, org: str | None = None, path: str | None = None,
             **headers: str) -> httpx.Response:  # fmt: skip
        where = path or (f"/api/v1/orgs/{org}/tasks/claim" if org else
                         f"/api/v1/repos/{self.scene.full_name}/tasks/claim")  # fmt: skip
        sent = {"Authorization": f"Bearer {self.token}", **{k.replace("_", "-"): v for k, v in headers.items()}}
        return HTTP.post(f"{self.scene.stage.baton_url}{where}", json=body, headers=sent)


def brief(priority: str | None = None) -> str:
    return "```yaml\ntask: A task\n" + (f"priority: {priority}\n" if priority else "") + "```"


def key(scene: Scene, number: int) -> TicketKey:
    return TicketKey(scene.key.installation_id, scene.key.repository_id, number)


def shown(scene: Scene, number: int) -> tuple[list[str], list[str]]:
    """The labels and assignees GitHub shows on issue `number` of the scene's repository."""
    with scene.hub.world.lock:
        issue = scene.repository.issues[number]
        return list(issue.labels), list(issue.assignees)


def test_the_highest_priority_oldest_ready_task_is_claimed_as_a_claim_of_it_would_be(scene: Scene) -> None:
    olivia, maria = scene.person("olivia"), scene.person("maria")

    def task(title: str, priority: str) -> int:
        made = olivia.open_issue(scene.full_name, title, brief(priority))
        scene.settle()  # its ticket made before the next one's: older
        return made

    low, high, later_high = task("Low", "p3"), task("High", "p1"), task("Later high", "p1")
    top_but_blocked = task("Top, blocked", "p0")
    maria.block(scene.full_name, top_but_blocked, by=(scene.full_name, low))
    scene.settle()
    a, b = Agent(scene, "agent-a"), Agent(scene, "agent-b")

    first = a.next()
    assert first.status_code == 200, first.text
    body = first.json()
    assert (body["issue"], body["state"], body["runner"], body["attempt"]) == (high, "claimed", "agent-a", 1)
    assert (body["repository"], body["title"], body["priority"]) == (scene.full_name, "High", 1)
    assert body["url"].endswith(f"/{scene.full_name}/issues/{high}") and body["brief"]["task"] == "A task"
    assert body["revision"] == scene.app.state.work.ticket(key(scene, high)).revision
    claimed = scene.app.state.work.history(key(scene, high))[-1]
    assert (claimed.type, claimed.actor, claimed.data.get("source")) == ("claimed", "agent-a", "api")
    scene.drain()  # GitHub shows it as a claim's: label, assignee, status comment
    labels, assignees = shown(scene, high)
    assert "baton:claimed" in labels and assignees == ["agent-a"]

    order = [b.next().json()["issue"], a.next().json()["issue"], b.next().json()["issue"]]
    assert order == [later_high, scene.number, low]  # p1 then the p2 (a brief that says none), then p3
    none = a.next()
    assert none.status_code == 404, none.text
    said = none.json()
    assert (said["error"], said["code"]) == ("not_found", "none_ready")
    assert said["counts"] == {"ready": 0, "blocked": 1, "claimed": 4}  # the blocked p0 was never handed out
    assert "1 blocked" in said["message"]
    scene.person("olivia").close_issue(scene.full_name, low)  # its blocker closes: ready, and next
    scene.settle()
    assert a.next().json()["issue"] == top_but_blocked


def test_a_caller_at_its_claim_limit_or_not_a_runner_is_refused_as_a_claim_would_be(scene: Scene) -> None:
    scene.configure("max_active_claims: 1\nrunners: [agent-a]\n")
    olivia = scene.person("olivia")
    for title in ("Second", "Third"):
        olivia.open_issue(scene.full_name, title, brief())
    scene.settle()
    agent = Agent(scene, "agent-a")
    assert agent.next().status_code == 200
    limited = agent.next()
    assert limited.status_code == 409, limited.text
    assert (limited.json()["code"], limited.json()["state"]) == ("claim_limit", "open")
    assert "already holds 1 claim" in limited.json()["message"]
    outsider = Agent(scene, "agent-b").next()  # not among the runners
    assert (outsider.status_code, outsider.json()["code"]) == (403, "not_permitted"), outsider.text
    with scene.app.state.work.units.engine.connect() as connection:
        claimed = connection.execute(select(func.count()).select_from(t.tickets)
                                     .where(t.tickets.c.state == "claimed")).scalar()  # fmt: skip
    assert claimed == 1


def test_labels_and_repo_narrow_what_is_handed_out(scene: Scene) -> None:
    olivia, maria = scene.person("olivia"), scene.person("maria")
    styled = olivia.open_issue(scene.full_name, "Styled", brief())
    both = olivia.open_issue(scene.full_name, "Both", brief())
    scene.settle()
    maria.label(scene.full_name, styled, "Frontend", add=True)
    maria.label(scene.full_name, both, "frontend", add=True)
    maria.label(scene.full_name, both, "good first task", add=True)
    scene.settle()
    agent = Agent(scene, "agent-a")
    picked = agent.next({"labels": ["FRONTEND", "Good First Task"], "repo": "shop"})
    assert picked.status_code == 200 and picked.json()["issue"] == both, picked.text
    assert agent.next({"labels": ["frontend"]}).json()["issue"] == styled
    none = agent.next({"labels": ["frontend"], "repo": scene.full_name})
    assert none.status_code == 404 and none.json()["counts"] == {"ready": 0, "blocked": 0, "claimed": 2}
    assert "carrying frontend" in none.json()["message"]
    maria.label(scene.full_name, styled, "Frontend", add=False)  # a label removed is no longer carried
    scene.settle()
    assert agent.next({"labels": ["frontend"]}).json()["counts"]["claimed"] == 1
    other = agent.next({"repo": "octo/elsewhere"})
    assert other.status_code == 422 and other.json()["problems"][0]["field"] == "repo", other.text
    for bad in ({"labels": ["two\nlines"]}, {"labels": "frontend"}, {"label": ["frontend"]}):
        refused = agent.next(bad)
        assert refused.status_code == 422 and refused.json()["error"] == "invalid", refused.text
    assert agent.next().json()["issue"] == scene.number  # nothing asked: the one left


def test_an_idempotency_key_replays_the_first_answer(scene: Scene) -> None:
    scene.person("olivia").open_issue(scene.full_name, "Second", brief())
    scene.settle()
    agent = Agent(scene, "agent-a")
    first = agent.next(Idempotency_Key="next-1")
    assert first.status_code == 200
    again = agent.next(Idempotency_Key="next-1")
    assert (again.status_code, again.json()) == (first.status_code, first.json())
    with scene.app.state.work.units.engine.connect() as connection:
        claims = connection.execute(select(func.count()).select_from(t.events)
                                    .where(t.events.c.type == "claimed")).scalar()  # fmt: skip
    assert claims == 1
    other = agent.next({"labels": ["x"]}, Idempotency_Key="next-1")
    assert other.status_code == 422 and "another request" in other.json()["message"]
    assert agent.next(Idempotency_Key="next-2").json()["issue"] != first.json()["issue"]


def all_at_once(agents: list[Agent], org: str | None = None) -> dict[str, httpx.Response]:
    """Each agent's claim-next (on the scene's repository, or the organisation `org`'s), all released at once."""
    together = threading.Barrier(len(agents))
    answers: dict[str, httpx.Response] = {}

    def ask(agent: Agent) -> None:
        together.wait()
        answers[agent.login] = agent.next(org=org)

    threads = [threading.Thread(target=ask, args=(agent,)) for agent in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_twenty_callers_at_once_get_twenty_different_tasks(scene: Scene) -> None:
    olivia = scene.person("olivia")
    for n in range(29):
        olivia.open_issue(scene.full_name, f"Task {n}", brief())
    scene.settle()
    agents = [Agent(scene, f"agent-{n:02d}") for n in range(20)]
    answers = all_at_once(agents)
    assert Counter(answer.status_code for answer in answers.values()) == Counter({200: 20}), [
        answer.text for answer in answers.values() if answer.status_code != 200]  # fmt: skip
    issues = {answer.json()["issue"] for answer in answers.values()}
    assert len(issues) == 20
    assert {answers[login].json()["runner"] for login in answers} == set(answers)
    with scene.app.state.work.units.engine.connect() as connection:
        claimed = connection.execute(select(t.tickets.c.number, t.tickets.c.runner)
                                     .where(t.tickets.c.state == "claimed")).all()  # fmt: skip
    assert {number: runner for number, runner in claimed} == {a.json()["issue"]: login for login, a in answers.items()}


def test_on_sqlite_claim_next_for_agents_baton_knows_is_decided_on_the_event_loop(scene: Scene) -> None:
    """Each agent takes two tasks, the twenty at once each time: the first time GitHub is asked who they are (in a
    thread), the second time nothing is (on the event loop, on SQLite; on PostgreSQL in a thread again); on an
    organisation's route too. Twenty different tasks each time, each claimed once."""
    sqlite = scene.app.state.work.units.engine.dialect.name == "sqlite"
    olivia = scene.person("olivia")
    for n in range(60):
        olivia.open_issue(scene.full_name, f"Task {n}", brief())
    scene.settle()
    agents = [Agent(scene, f"agent-{n:02d}", "write") for n in range(20)]
    handed: list[int] = []
    for org in (None, None, "octo"):
        answers = all_at_once(agents, org)
        assert Counter(answer.status_code for answer in answers.values()) == Counter({200: 20}), [
            answer.text for answer in answers.values() if answer.status_code != 200]  # fmt: skip
        handed += [answer.json()["issue"] for answer in answers.values()]
    assert len(set(handed)) == 60
    assert decided_where([scene.stage.baton_url]) == (
        {"event_loop": 40.0, "thread": 20.0} if sqlite else {"event_loop": 0.0, "thread": 60.0}
    )


def test_twenty_agents_on_baton_serve_with_its_defaults(database_url: str) -> None:
    """The race of `bench/claim_next.py`: `baton serve` processes (two sharing PostgreSQL), 30 tasks, 5 blocked,
    3 of high priority."""
    serves = 2 if database_url.startswith("postgresql") else 1
    report = race(database_url, agents=20, tasks=30, blocked=5, high=3, serves=serves)
    assert Counter(report.statuses) == Counter({200: 20}), report.statuses
    assert len(set(report.handed)) == 20 and not set(report.handed) & set(report.blocked)
    assert report.in_order  # the first 20 in Baton's order, the three of high priority among them
    assert (report.requests, report.conflicts) == (20, 0)


def test_the_organisation_route_hands_out_tasks_across_its_repositories(database_url: str) -> None:
    with opened(database_url, hidden=("tools",)) as scene:  # octo/tools: private
        scene.settle()
        tools = scene.stage.other("tools")
        insider, outsider = Agent(scene, "agent-a"), Agent(scene, "agent-b")
        with scene.hub.world.lock:
            tools.permissions["agent-a"] = "write"
            tools.permissions["olivia"] = "admin"
        urgent = scene.person("olivia").open_issue("octo/tools", "Urgent tool", brief("p0"))
        scene.settle()
        assert outsider.next({"repo": "tools"}, org="octo").status_code == 404
        hidden = outsider.next(path="/api/v1/repos/octo/tools/tasks/claim")
        missing = outsider.next(path="/api/v1/repos/octo/nothing-here/tasks/claim")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json() == {**missing.json(), "message": missing.json()["message"].replace("nothing-here",
                                                                                                  "tools")}  # fmt: skip
        assert outsider.next(org="nobody").status_code == 404

        first = insider.next(org="octo")
        assert first.status_code == 200, first.text
        assert (first.json()["repository"], first.json()["issue"]) == ("octo/tools", urgent)  # p0, in tools
        second = insider.next(org="octo")
        assert (second.json()["repository"], second.json()["issue"]) == (scene.full_name, scene.number)
        none = insider.next(org="OCTO")
        assert none.status_code == 404 and none.json()["counts"] == {"ready": 0, "blocked": 0, "claimed": 2}
        scene.drain()
        with scene.hub.world.lock:
            assert "baton:claimed" in tools.issues[urgent].labels and tools.issues[urgent].assignees == ["agent-a"]


def test_baton_next_makes_one_request(database_url: str) -> None:
    """A login may send one request at once here (10 a minute: a burst of one), and `baton next` wins a task with
    it."""
    with opened(database_url, api_requests_per_minute=10) as scene:
        scene.settle()
        agent = Agent(scene, "agent-a")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "GH_", "GITHUB_"))},
               "BATON_URL": scene.stage.baton_url, "GITHUB_TOKEN": agent.token}  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "baton.cli", "next", scene.full_name, "--json"], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f'"issue": {scene.number}' in done.stdout and '"runner": "agent-a"' in done.stdout
        assert agent.next().status_code == 429  # the one request left was the one it made
        usage = subprocess.run([sys.executable, "-m", "baton.cli", "next", scene.full_name, "--org", "octo"],
                               env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert usage.returncode == 2 and "one of the two" in usage.stderr


def test_the_routes_are_described_in_openapi_and_served_as_the_description_says(scene: Scene) -> None:
    spec = HTTP.get(f"{scene.stage.baton_url}/openapi.json").json()
    for path in ("/api/v1/repos/{owner}/{repo}/tasks/claim", "/api/v1/orgs/{org}/tasks/claim"):
        route = spec["paths"][path]["post"]
        assert {"200", "401", "403", "404", "409", "422", "429", "503"} <= set(route["responses"]), path
        assert route["responses"]["200"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ClaimedTask"}  # fmt: skip
        assert route["responses"]["404"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/NoneReady"}  # fmt: skip
    described = spec["components"]["schemas"]
    assert {"title", "priority", "brief", "issue", "revision", "url"} <= set(described["ClaimedTask"]["properties"])
    assert set(described["Next"]["properties"]) == {"labels", "repo"}
    agent = Agent(scene, "agent-a")
    answer = agent.next({"labels": [], "repo": scene.full_name}).json()
    assert set(answer) == set(described["ClaimedTask"]["properties"])
    none = agent.next()
    assert none.status_code == 404 and set(none.json()) <= set(described["NoneReady"]["properties"])
