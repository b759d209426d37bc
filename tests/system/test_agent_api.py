"""The agent API over real sockets: Baton and the stand-in GitHub each serve HTTP on 127.0.0.1, and agents call
Baton with tokens of their own, which the stand-in's `GET /user` tells apart (docs/agents.md)."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, text

from baton.domain import Command
from baton.environment.clock import ManualClock
from baton.github.identity import TTL
from baton.process import logs
from baton.store import tables as t
from baton.web.agent_api import _Call
from baton.web.batches import LATER
from bench.api_race import decided_where as api_decided_where
from bench.api_race import run as api_race
from github_standin.server import Fault
from support import standin_scene
from support.local_http import HTTP
from support.standin_scene import BOT, Scene, opened

scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


class Agent:
    """Someone calling the agent API with a token of their own."""

    def __init__(self, scene: Scene, login: str, permission: str = "read") -> None:
        self.scene, self.login = scene, login
        person = scene.stage.person(login, permission)
        self.token = person.token()

    def post(self, action: str, number: int | None = None, body: Any = None, **headers: str) -> httpx.Response:
        where = f"/api/v1/repos/{self.scene.full_name}/issues/{number or self.scene.number}/{action}"
        sent = {"Authorization": f"Bearer {self.token}", **{k.replace("_", "-"): v for k, v in headers.items()}}
        return HTTP.post(f"{self.scene.stage.baton_url}{where}", json=body, headers=sent)


def test_a_claim_is_answered_in_the_response_and_shown_on_github_as_a_comments_would_be(scene: Scene) -> None:
    agent = Agent(scene, "agent-a")
    answer = agent.post("claim")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["state"], body["runner"], body["attempt"]) == ("claimed", "agent-a", 1)
    assert body["repository"] == scene.full_name and body["issue"] == scene.number
    assert body["url"].endswith(f"/{scene.full_name}/issues/{scene.number}")
    scene.drain()
    assert "baton:claimed" in scene.labels() and scene.assignees() == ["agent-a"]
    assert "@agent-a" in scene.status()
    assert scene.replies() == []  # nothing to answer: the answer was the response
    history = scene.app.state.work.history(scene.key)
    assert history[-1].type == "claimed" and history[-1].data.get("source") == "api"

    again = agent.post("claim")  # the holder claiming again: the same 200, and nothing changes
    assert again.status_code == 200 and again.json()["revision"] == body["revision"]

    other = Agent(scene, "agent-b").post("claim")
    assert other.status_code == 409
    refused = other.json()
    assert (refused["error"], refused["state"], refused["runner"], refused["revision"]) == (
        "conflict", "claimed", "agent-a", body["revision"])  # fmt: skip
    assert "@agent-a" in refused["message"] and f"#{scene.number}" in refused["message"]


def test_if_match_is_a_compare_and_swap_on_the_revision(scene: Scene) -> None:
    agent = Agent(scene, "agent-a")
    revision = scene.app.state.work.ticket(scene.key).revision
    stale = agent.post("claim", If_Match=f'"{revision + 5}"')
    assert stale.status_code == 412
    assert stale.json()["error"] == "precondition_failed" and stale.json()["revision"] == revision
    assert agent.post("claim", If_Match="nineteen").status_code == 422
    won = agent.post("claim", If_Match=f'"{revision}"')
    assert won.status_code == 200 and won.json()["revision"] == revision + 1


def test_an_idempotency_key_gives_a_retry_the_first_answer_and_refuses_another_request(scene: Scene) -> None:
    agent = Agent(scene, "agent-a")
    first = agent.post("claim", Idempotency_Key="try-1")
    assert first.status_code == 200
    agent.post("release")  # the ticket moves on; the retry still gets the first answer
    retry = agent.post("claim", Idempotency_Key="try-1")
    assert (retry.status_code, retry.json()) == (first.status_code, first.json())
    assert scene.app.state.work.ticket(scene.key).state.value == "open"
    other = agent.post("release", Idempotency_Key="try-1")
    assert other.status_code == 422 and "another request" in other.json()["message"]
    assert Agent(scene, "agent-b").post("claim", Idempotency_Key="try-1").status_code == 200  # keys are per login


def test_the_api_root_says_it_is_baton_to_anyone(scene: Scene) -> None:
    """`GET /api/v1` answers without a token, so a client can tell Baton from whatever else a wrong `BATON_URL`
    names; the version is the app's."""
    answer = HTTP.get(f"{scene.stage.baton_url}/api/v1", timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"service": "baton", "version": "0.1.0", "openapi": "/openapi.json"}
    described = HTTP.get(f"{scene.stage.baton_url}/openapi.json", timeout=10).json()["paths"]["/api/v1"]["get"]
    assert described["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Service"
    }


def test_every_error_status(scene: Scene) -> None:
    agent, reader = Agent(scene, "agent-a"), Agent(scene, "reed")
    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}/claim"
    assert HTTP.post(url).status_code == 401
    unknown = HTTP.post(url, headers={"Authorization": "Bearer ghp_not-a-token"})
    assert unknown.status_code == 401 and unknown.json()["error"] == "unauthorized"
    assert agent.post("claim", 999_999).status_code == 404  # GitHub has no such issue
    deliver = agent.post("deliver", body={"summary": ""})
    assert deliver.status_code == 422
    assert agent.post("claim").status_code == 200
    missing = agent.post("deliver", body={"summary": "done", "branch": "a b"})
    assert missing.status_code == 422
    forbidden = reader.post("accept", body={"note": "fine"})
    assert forbidden.status_code in (403, 409), forbidden.text
    delivered = agent.post("deliver", body={"summary": "The empty state is done.", "branch": "empty-state"})
    assert delivered.status_code == 200 and delivered.json()["state"] == "delivered"
    refused = reader.post("accept", body={"note": "fine"})
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden", refused.text
    maria = Agent(scene, "maria", "maintain")
    accepted = maria.post("accept", body={"note": "Looks right."})
    assert accepted.status_code == 200 and accepted.json()["state"] == "accepted"


def test_calls_beyond_the_rate_get_429_with_retry_after(database_url: str) -> None:
    # BATON_API_REQUESTS_PER_MINUTE=60: a burst of 6, then one a second
    with opened(database_url, api_requests_per_minute=60) as scene:
        scene.settle()
        agent, other = Agent(scene, "agent-a"), Agent(scene, "agent-b")
        statuses = Counter(agent.post("claim").status_code for _ in range(20))
        assert statuses[200] >= 6 and statuses[429] >= 1, statuses
        limited = agent.post("claim")
        assert limited.status_code == 429 and 1 <= int(limited.headers["Retry-After"]) <= 2
        assert limited.json()["error"] == "rate_limited" and "@agent-a" in limited.json()["message"]
        assert other.post("claim").status_code == 409  # the rate is per login: agent-b is refused, not limited


def race(agents: list[Agent], **headers: str) -> list[tuple[str, httpx.Response]]:
    """Each agent claims the scene's issue, all at once (`headers` for each, `{login}` in a value naming the
    agent): each call's login and answer."""
    together = threading.Barrier(len(agents))
    answers: list[tuple[str, httpx.Response]] = []

    def claim(agent: Agent) -> None:
        together.wait()
        answers.append(
            (agent.login, agent.post("claim", **{k: v.format(login=agent.login) for k, v in headers.items()}))
        )

    threads = [threading.Thread(target=claim, args=(agent,)) for agent in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == len(agents)
    return answers


def kept_results(scene: Scene) -> int:
    with scene.app.state.work.units.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(t.operations)).scalar_one())


def test_twenty_agents_at_once_one_wins_and_nineteen_are_told_who(scene: Scene) -> None:
    before = kept_results(scene)
    answers = dict(race([Agent(scene, f"agent-{n:02d}") for n in range(20)]))
    statuses = Counter(answer.status_code for answer in answers.values())
    assert statuses == Counter({200: 1, 409: 19}), statuses
    winner = next(login for login, answer in answers.items() if answer.status_code == 200)
    assert all(f"@{winner}" in a.json()["message"] for a in answers.values() if a.status_code == 409)
    assert kept_results(scene) == before  # no Idempotency-Key: no retry can ask for a result, none is kept


def decided_where(scene: Scene) -> dict[str, float]:
    """`baton_api_commands_total` by `where`, as `GET /metrics` shows it."""
    return api_decided_where([scene.stage.baton_url])


def permission_lookups(scene: Scene) -> int:
    with scene.hub.world.lock:
        return sum(1 for call in scene.rest.calls if call.method == "GET" and call.path.endswith("/permission"))


def test_on_sqlite_a_race_of_agents_baton_knows_is_decided_on_the_event_loop_and_one_github_must_tell_in_a_thread(
    scene: Scene,
) -> None:
    """Calls whose every answer is in the process and the database are decided where they arrive (SQLite); a call
    that needs GitHub (who a new agent is, an issue Baton has no ticket for) goes to a thread with those after it,
    and is answered as it always was. On PostgreSQL every batch is decided in a thread."""
    sqlite = scene.app.state.work.units.engine.dialect.name == "sqlite"
    agents = [Agent(scene, f"agent-{n:02d}", "write") for n in range(20)]
    answers = dict(race(agents))  # nobody known yet: GitHub is asked who each is
    assert Counter(answer.status_code for answer in answers.values()) == Counter({200: 1, 409: 19})
    winners = {login for login, answer in answers.items() if answer.status_code == 200}
    assert decided_where(scene) == {"event_loop": 0, "thread": 20}
    asked = permission_lookups(scene)
    assert asked >= 20

    for _ in range(2):  # known now: a race on another issue needs nothing from GitHub
        scene.number = scene.person("olivia").open_issue(scene.full_name, "Another task")
        scene.settle()
        answers = dict(race(agents))
        assert Counter(answer.status_code for answer in answers.values()) == Counter({200: 1, 409: 19})
        winner = next(login for login, answer in answers.items() if answer.status_code == 200)
        assert all(f"@{winner}" in a.json()["message"] for a in answers.values() if a.status_code == 409)
        winners.add(winner)
    assert decided_where(scene) == ({"event_loop": 40, "thread": 20} if sqlite else {"event_loop": 0, "thread": 60})
    assert permission_lookups(scene) == asked

    # An issue opened while no webhook reached Baton: its ticket is made from GitHub's answer, in a thread.
    with scene.hub.world.lock:
        unseen = scene.hub.world.add_issue(scene.repository, "Unseen", scene.hub.world.account("olivia")).number
    agent = next(agent for agent in agents if agent.login not in winners)  # below the claim limit
    claimed = agent.post("claim", unseen)
    assert claimed.status_code == 200 and claimed.json()["runner"] == agent.login, claimed.text
    assert decided_where(scene) == ({"event_loop": 40, "thread": 21} if sqlite else {"event_loop": 0, "thread": 61})
    scene.drain()
    with scene.hub.world.lock:
        assert scene.repository.issues[unseen].assignees == [agent.login]


def test_while_another_thread_writes_a_call_waits_for_it_in_a_thread_and_the_event_loop_goes_on_answering(
    sqlite_url: str,
) -> None:
    """On SQLite, a write transaction is held open in the process (as its lanes hold theirs): a call of an agent
    Baton knows is not decided on the event loop, which would wait for it; it waits in a thread, and the loop
    answers others meanwhile, a metrics scrape (which reads the database) included."""
    with opened(sqlite_url) as scene:
        scene.settle()
        _decided_in_a_thread_while_a_write_is_held(scene)


def _decided_in_a_thread_while_a_write_is_held(scene: Scene) -> None:
    agent, other = Agent(scene, "agent-a", "write"), Agent(scene, "agent-b", "write")
    assert agent.post("claim").status_code == 200 and other.post("claim").status_code == 409  # known now
    assert agent.post("release").status_code == 200
    before = decided_where(scene)
    engine = scene.app.state.work.units.engine
    answers: list[httpx.Response] = []
    with engine.begin() as connection:  # the process's writer
        connection.execute(text("SELECT 1"))
        claiming = threading.Thread(target=lambda: answers.append(agent.post("claim")))
        claiming.start()
        deadline = time.monotonic() + 10
        while decided_where(scene)["thread"] == before["thread"]:  # its batch went to a thread
            assert time.monotonic() < deadline, decided_where(scene)
            time.sleep(0.01)
        for _ in range(3):  # the loop is free
            assert HTTP.get(f"{scene.stage.baton_url}/healthz", timeout=5).status_code == 200
            assert HTTP.get(f"{scene.stage.baton_url}/api/v1", timeout=5).status_code == 200
        assert not answers
    claiming.join(10)
    assert [answer.status_code for answer in answers] == [200]
    assert decided_where(scene) == {**before, "thread": before["thread"] + 1}


def test_a_call_that_needs_github_is_left_to_a_thread_with_every_call_after_it_and_those_before_are_decided(
    scene: Scene,
) -> None:
    """`calls_at_hand` keeps the order calls came in: behind a call whose caller GitHub must be asked about, nothing
    is decided on the event loop (on SQLite; on PostgreSQL nothing is ever)."""
    known, new, also_known = (Agent(scene, login, "write") for login in ("agent-a", "agent-n", "agent-b"))
    for agent in (known, also_known):
        assert agent.post("claim").status_code in (200, 409)
    api = scene.app.state.agent_api
    caller = {a.login: api.known_caller(f"Bearer {a.token}") for a in (known, new, also_known)}
    assert caller[new.login] is None  # GitHub is asked who holds a new token on the way in; do that here
    caller[new.login] = api.caller(f"Bearer {new.token}")
    calls = [_Call(Command("claim"), scene.full_name, scene.number, caller[a.login], None, {})
             for a in (known, new, also_known)]  # fmt: skip
    answered = asyncio.run(_at_hand(api, calls))
    if scene.app.state.work.units.engine.dialect.name != "sqlite":
        assert answered is None
        return
    assert answered is not None and answered[1:] == [LATER, LATER]
    holder = scene.app.state.work.ticket(scene.key).runner
    assert answered[0].status_code == (200 if holder == known.login else 409)
    later = api.decide_calls(calls[1:])  # in a thread: GitHub is asked who agent-n is
    assert [answer.status_code for answer in later] == [409, 200 if holder == also_known.login else 409]
    assert f"@{holder}" in bytes(later[0].body).decode()


async def _at_hand(api: Any, calls: list[Any]) -> Any:
    return api.calls_at_hand(calls)  # on the event loop's thread, as `Batches` calls it


def test_twenty_agents_racing_on_baton_serve_with_its_defaults(database_url: str) -> None:
    """The race of `bench/api_race.py`: real `baton serve` processes (two sharing PostgreSQL), agents Baton knows
    (each listed the tasks first): on SQLite the claims are decided on the event loop (a batch that finds the
    process's writer lock taken, by its lanes showing the claims on GitHub, goes to a thread), on PostgreSQL in
    threads."""
    serves = 2 if database_url.startswith("postgresql") else 1
    kind = "postgresql" if serves == 2 else "sqlite"
    report = api_race(kind, agents=20, rounds=6, serves=serves, url=database_url)
    assert report["right"] == 6, report["wrong"]
    where = report["where"]
    assert where["event_loop"] + where["thread"] == 120
    assert where["event_loop"] >= 60 if serves == 1 else where["event_loop"] == 0, where


def test_each_decision_of_a_race_is_a_line_that_the_listener_thread_writes(
    scene: Scene, configured: list[tuple[str, str]]
) -> None:
    agents = [Agent(scene, f"agent-{n:02d}") for n in range(8)]
    answers = dict(race(agents))
    listener = logs._listening[0]._thread
    assert listener is not None
    logs._stop_listening()  # what is queued is written
    lines = [(thread, line) for thread, line in configured if "decided /claim" in line]
    named = [name for _, line in lines for name in line.split(" by ")[1].split(" on ")[0].split(", ")]
    assert sorted(named) == sorted(answers)  # every call, once
    won = [line for _, line in lines if ": applied (claimed)" in line]
    assert len(won) == 1 and f"on {scene.full_name}#{scene.number}" in won[0] and "(api)" in won[0]
    # The losers refused alike share lines: one for each batch they were decided in, naming each of them.
    refused = [line for _, line in lines if ": refused (" in line]
    assert 1 <= len(refused) < len(agents) - 1
    assert all(line.endswith(f"(api, {line.split(' by ')[1].split(' on ')[0].count(', ') + 1} calls)")
               for line in refused if ", " in line.split(" on ")[0])  # fmt: skip
    assert {thread for thread, _ in lines} == {listener.name}
    assert not any(agent.token in line for agent in agents for _, line in configured)


def test_a_losers_retry_with_its_idempotency_key_gets_the_same_409_after_the_ticket_moved_on(scene: Scene) -> None:
    agents = {agent.login: agent for agent in (Agent(scene, f"agent-{n:02d}") for n in range(12))}
    answers = dict(race(list(agents.values()), Idempotency_Key="race-{login}"))
    statuses = Counter(answer.status_code for answer in answers.values())
    assert statuses == Counter({200: 1, 409: 11}), statuses
    winner = next(login for login, answer in answers.items() if answer.status_code == 200)
    assert agents[winner].post("release").status_code == 200  # open again: a claim decided afresh would win
    for login, answer in answers.items():
        again = agents[login].post("claim", Idempotency_Key=f"race-{login}")
        assert (again.status_code, again.content) == (answer.status_code, answer.content), login
    assert scene.app.state.work.ticket(scene.key).state.value == "open"
    loser = next(login for login in answers if login != winner)
    assert agents[loser].post("claim", Idempotency_Key="after-the-race").status_code == 200


def test_one_key_sent_several_times_at_once_is_decided_once_and_answered_alike(scene: Scene) -> None:
    agent = Agent(scene, "agent-a")
    before = len(scene.app.state.work.history(scene.key))
    answers = [answer for _, answer in race([agent] * 6, Idempotency_Key="only-once")]
    answers += [agent.post("claim", Idempotency_Key="only-once") for _ in range(2)]  # retries, after
    assert answers[0].status_code == 200
    assert {(answer.status_code, answer.content) for answer in answers} == {(200, answers[0].content)}
    history = scene.app.state.work.history(scene.key)[before:]
    assert [event.type for event in history if event.type == "claimed"] == ["claimed"]


def test_issues_baton_never_heard_of_are_read_from_github_at_first_use_and_a_failed_read_fails_its_call_alone(
    scene: Scene,
) -> None:
    """Two issues are opened while no webhook reaches Baton. Three agents call at once: one claims the issue Baton
    knows, one an unseen issue (read from GitHub, then tracked and claimed), one an unseen issue GitHub fails to
    give (503, nothing decided, a retry works)."""
    known, unseen, broken = Agent(scene, "agent-a"), Agent(scene, "agent-b"), Agent(scene, "agent-c")
    with scene.hub.world.lock:  # opened on GitHub while Baton heard nothing
        author = scene.hub.world.account("olivia")
        first = scene.hub.world.add_issue(scene.repository, "Rotate the keys", author).number
        second = scene.hub.world.add_issue(scene.repository, "Trim the logs", author).number
    scene.rest.inject(Fault("GET", rf"/repos/{scene.full_name}/issues/{second}$", status=502))
    together = threading.Barrier(3)
    answers: dict[str, httpx.Response] = {}

    def claim(agent: Agent, number: int) -> None:
        together.wait()
        answers[agent.login] = agent.post("claim", number, Idempotency_Key="first-try")

    threads = [threading.Thread(target=claim, args=pair)
               for pair in ((known, scene.number), (unseen, first), (broken, second))]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers["agent-a"].status_code == 200 and answers["agent-a"].json()["runner"] == "agent-a"
    assert answers["agent-b"].status_code == 200, answers["agent-b"].text
    assert (answers["agent-b"].json()["issue"], answers["agent-b"].json()["state"]) == (first, "claimed")
    failed = answers["agent-c"]
    assert failed.status_code == 503 and failed.json()["error"] == "unavailable", failed.text
    assert f"#{second}" in failed.json()["message"]
    work = scene.app.state.work
    assert work.ticket(replace(scene.key, number=second)) is None  # nothing decided, nothing tracked
    tasks = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name, "state": "claimed"},
                     headers={"Authorization": f"Bearer {unseen.token}"}).json()["tasks"]  # fmt: skip
    assert {(task["issue"], task["title"]) for task in tasks} >= {(first, "Rotate the keys")}  # its title kept
    retried = broken.post("claim", second, Idempotency_Key="first-try")  # a 503 keeps no answer for its key
    assert retried.status_code == 200 and retried.json()["runner"] == "agent-c"


def test_no_token_reaches_the_logs_or_the_database(scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    agent = Agent(scene, "agent-a")
    assert agent.post("claim", Idempotency_Key="k").status_code == 200
    assert agent.post("deliver", body={"summary": "done", "branch": "x"}).status_code == 200
    assert agent.token not in caplog.text
    with scene.app.state.work.units.engine.connect() as connection:
        for table in t.metadata.sorted_tables:
            for row in connection.execute(select(table)):
                assert agent.token not in repr(tuple(row)), table.name
        assert connection.execute(text("SELECT 1")).scalar() == 1


def test_known_identities_keep_working_while_github_cannot_say_whose_a_token_is(scene: Scene) -> None:
    known, new = Agent(scene, "agent-a"), Agent(scene, "agent-b")
    assert known.post("claim").status_code == 200  # its identity is now known
    scene.rest.inject(Fault("GET", r"^/user$", status=502, times=100))
    assert known.post("release").status_code == 200  # no need to ask GitHub
    unavailable = new.post("claim")
    assert unavailable.status_code == 503 and unavailable.json()["error"] == "unavailable"
    assert new.token not in unavailable.text


def _asked_whose(scene: Scene, login: str | None = None) -> int:
    """How many times Baton asked GitHub whose `login`'s token is (None: whose any token is)."""
    with scene.hub.world.lock:
        return sum(1 for call in scene.rest.calls if call.path == "/user" and login in (None, call.person))


def test_a_kept_identity_expires_and_the_token_is_checked_again(database_url: str) -> None:
    clock = ManualClock()
    with opened(database_url, clock=clock) as scene:
        scene.settle()
        agent = Agent(scene, "agent-a")
        assert agent.post("claim").status_code == 200
        assert _asked_whose(scene) == 1
        with scene.hub.world.lock:
            del scene.hub.world.user_tokens[agent.token]  # revoked on GitHub
        clock.advance(timedelta(seconds=TTL - 1))
        assert agent.post("release").status_code == 200  # its identity is still kept: GitHub is not asked
        assert _asked_whose(scene) == 1
        clock.advance(timedelta(seconds=1))
        refused = agent.post("claim")
        assert refused.status_code == 401 and "GitHub does not accept this token" in refused.json()["message"]
        assert _asked_whose(scene) == 2
        assert scene.app.state.work.ticket(scene.key).state.value == "open"
        assert len(scene.app.state.agent_api.identities) == 0  # a refused token is not kept


def test_baton_keeps_the_identities_of_the_tokens_used_last_and_no_more(scene: Scene) -> None:
    identities = scene.app.state.agent_api.identities
    identities.most = 3
    agents = [Agent(scene, f"agent-{n}") for n in range(5)]
    for agent in agents[:3]:
        assert agent.post("release").status_code == 409
    assert len(identities) == 3
    assert agents[0].post("release").status_code == 409  # used again: now the last one to go
    for agent in agents[3:]:
        assert agent.post("release").status_code == 409
        assert len(identities) == 3
    assert [_asked_whose(scene, agent.login) for agent in agents] == [1, 1, 1, 1, 1]
    # agent-1 and agent-2 were put out, agent-0 kept.
    for agent in agents[:3]:
        assert agent.post("release").status_code == 409
    assert [_asked_whose(scene, agent.login) for agent in agents] == [1, 2, 2, 1, 1]
    # Many more tokens than that: never more kept.
    for n in range(20):
        assert Agent(scene, f"reader-{n}").post("release").status_code == 409
        assert len(identities) == 3


def test_the_tasks_open_for_claiming_oldest_first_and_a_tickets_status_with_an_agents_token(scene: Scene) -> None:
    olivia = scene.person("olivia")
    second = olivia.open_issue(scene.full_name, "Second", "```yaml\ntask: Add a footer\nacceptance: [a footer]\n```")
    scene.settle()
    agent = Agent(scene, "agent-a")
    listed = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name},
                      headers={"Authorization": f"Bearer {agent.token}"})  # fmt: skip
    assert listed.status_code == 200, listed.text
    tasks = listed.json()["tasks"]
    assert [task["issue"] for task in tasks] == [scene.number, second]
    assert tasks[1]["title"] == "Second" and tasks[1]["brief"]["acceptance"] == ["a footer"]  # the issue's title
    olivia.edit_issue(scene.full_name, second, title="Totals in the footer")
    scene.settle()
    renamed = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name},
                       headers={"Authorization": f"Bearer {agent.token}"}).json()["tasks"]  # fmt: skip
    assert [task["title"] for task in renamed] == [scene.issue.title, "Totals in the footer"]
    assert renamed[1]["revision"] == tasks[1]["revision"]  # a new title is no work: the revision stays
    assert all(task["state"] == "open" and task["url"].endswith(f"/issues/{task['issue']}") for task in tasks)
    assert agent.post("claim", second).status_code == 200
    left = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name},
                    headers={"Authorization": f"Bearer {agent.token}"}).json()["tasks"]  # fmt: skip
    assert [task["issue"] for task in left] == [scene.number]
    status = HTTP.get(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{second}",
                      headers={"Authorization": f"Bearer {agent.token}"})  # fmt: skip
    assert status.status_code == 200 and status.json()["runner"] == "agent-a"
    anonymous = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name},
                         headers={"Authorization": "Bearer ghp_nobody"})  # fmt: skip
    assert anonymous.status_code == 401


def test_the_tasks_are_listed_and_handed_out_highest_priority_first_then_oldest(scene: Scene) -> None:
    olivia, agent = scene.person("olivia"), Agent(scene, "agent-a")

    def brief(priority: str) -> str:
        return f"```yaml\ntask: A task\npriority: {priority}\n```"

    low = olivia.open_issue(scene.full_name, "Low", brief("low"))
    first = olivia.open_issue(scene.full_name, "First", brief("P0"))
    high = olivia.open_issue(scene.full_name, "High", brief("high"))
    bad = olivia.open_issue(scene.full_name, "Bad", brief("urgent"))  # not a priority: no task until it is fixed
    scene.settle()

    def listed() -> list[tuple[int, int]]:
        answer = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name},
                          headers={"Authorization": f"Bearer {agent.token}"})  # fmt: skip
        assert answer.status_code == 200, answer.text
        return [(task["issue"], task["priority"]) for task in answer.json()["tasks"]]

    assert listed() == [(first, 0), (high, 1), (scene.number, 2), (low, 3)]  # the scene's own task says none: p2
    assert any("`priority` must be one of p0 (first) to p4" in said for said in _bot_comments(scene, bad))

    won = _baton(scene, agent.token, "next", scene.full_name)
    assert won.returncode == 0, won.stderr
    assert won.stdout.startswith(f"claimed {scene.full_name}#{first} ")  # the first listed, and free
    olivia.edit_issue(scene.full_name, low, body=brief("1"))  # a brief's new priority moves its task up
    scene.settle()
    assert listed() == [(low, 1), (high, 1), (scene.number, 2)]  # of one priority, the oldest first
    ticket = scene.app.state.work.ticket(scene.key.__class__(scene.key.installation_id, scene.key.repository_id, low))
    assert ticket is not None and ticket.brief is not None and ticket.brief.priority == 1
    changed = scene.app.state.work.history(ticket.key)[-1]
    assert (changed.type, changed.data["changes"]) == ("brief_changed", ["priority now p1"])


def test_a_task_blocked_on_github_is_not_ready_until_its_blockers_close(scene: Scene) -> None:
    olivia, maria, agent = scene.person("olivia"), scene.person("maria"), Agent(scene, "agent-a")
    body = "```yaml\ntask: A task\n```"
    blocked = olivia.open_issue(scene.full_name, "Blocked", body)
    blocker = olivia.open_issue(scene.full_name, "Blocker", body)
    epic = olivia.open_issue(scene.full_name, "Epic", body)
    child = olivia.open_issue(scene.full_name, "Child", body)
    scene.settle()
    maria.block(scene.full_name, blocked, by=(scene.full_name, blocker))  # GitHub's "blocked by"
    maria.add_sub_issue(scene.full_name, epic, (scene.full_name, child))  # an epic waits for its sub-issues
    scene.settle()
    own = scene.full_name.lower()

    def listed(**params: str) -> dict[int, list[str]]:
        answer = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name, **params},
                          headers={"Authorization": f"Bearer {agent.token}"})  # fmt: skip
        assert answer.status_code == 200, answer.text
        return {task["issue"]: task["blocked_by"] for task in answer.json()["tasks"]}

    assert listed() == {scene.number: [], blocker: [], child: []}  # only what is ready
    assert listed(blocked="true") == {scene.number: [], blocked: [f"{own}#{blocker}"], blocker: [],
                                      epic: [f"{own}#{child}"], child: []}  # fmt: skip
    refused = agent.post("claim", blocked)
    assert refused.status_code == 409, refused.text
    assert (refused.json()["error"], refused.json()["code"]) == ("conflict", "blocked")
    assert refused.json()["message"] == (f"#{blocked} is not ready: it is blocked by #{blocker}, still open. Claim "
                                         "another task, or this one once it is closed (a maintainer may /claim "
                                         "force).")  # fmt: skip
    not_theirs = agent.post("claim", blocked, body={"force": True})  # overriding is a maintainer's
    assert (not_theirs.status_code, not_theirs.json()["code"]) == (403, "not_permitted"), not_theirs.text
    scene.comment("agent-a", "/claim", number=epic)  # a comment's claim is refused the same way, in a reply
    assert any(f"#{epic} is not ready: it is blocked by #{child}, still open." in said
               for said in _bot_comments(scene, epic))  # fmt: skip

    forced = _baton(scene, Agent(scene, "maria", "maintain").token, "claim", f"{scene.full_name}#{epic}", "--force")
    assert forced.returncode == 0, forced.stderr  # a maintainer takes it all the same, and the event says so
    claimed = scene.app.state.work.history(scene.key.__class__(scene.key.installation_id, scene.key.repository_id,
                                                                epic))[-1]  # fmt: skip
    assert (claimed.type, claimed.actor, claimed.data["override"]) == ("claimed", "maria",
                                                                       {"blocked_by": [f"{own}#{child}"]})  # fmt: skip
    scene.comment("maria", "/release", number=epic)

    olivia.close_issue(scene.full_name, blocker)  # its last blocker closes: ready
    olivia.close_issue(scene.full_name, child)
    scene.settle()
    assert set(listed()) == {scene.number, blocked, epic}
    assert agent.post("claim", blocked).status_code == 200
    olivia.reopen_issue(scene.full_name, child)  # open again: the epic waits again
    scene.settle()
    assert epic not in listed() and listed(blocked="true")[epic] == [f"{own}#{child}"]
    maria.remove_sub_issue(scene.full_name, epic, (scene.full_name, child))  # no longer its sub-issue: ready
    scene.settle()
    assert listed()[epic] == [] and agent.post("claim", epic).status_code == 200
    last = olivia.open_issue(scene.full_name, "Last", body)
    gone = olivia.open_issue(scene.full_name, "Gone", body)
    scene.settle()
    maria.block(scene.full_name, last, by=(scene.full_name, gone))
    scene.settle()
    assert last not in listed()
    maria.delete_issue(scene.full_name, gone)  # a deleted blocker blocks nothing
    scene.settle()
    assert listed()[last] == []


def _bot_comments(scene: Scene, number: int) -> list[str]:
    scene.drain()
    with scene.hub.world.lock:
        return [c.body for c in scene.repository.comments.values() if c.issue == number and c.user.login == BOT]


def _baton(scene: Scene, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "GH_", "GITHUB_"))},
           "BATON_URL": scene.stage.baton_url, "GITHUB_TOKEN": token}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "baton.cli", *args], env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_the_baton_command_exits_0_on_a_win_1_on_a_refusal_naming_the_holder_and_2_on_a_bad_token(
    scene: Scene,
) -> None:
    winner, loser = Agent(scene, "agent-a"), Agent(scene, "agent-b")
    won = _baton(scene, winner.token, "next", scene.full_name)
    assert won.returncode == 0, won.stderr
    assert f"{scene.full_name}#{scene.number}" in won.stdout
    lost = _baton(scene, loser.token, "claim", f"{scene.full_name}#{scene.number}")
    assert lost.returncode == 1 and "@agent-a" in lost.stderr, lost.stderr
    assert _baton(scene, loser.token, "next", scene.full_name).returncode == 1  # none left
    refused = _baton(scene, "ghp_nobody", "claim", f"{scene.full_name}#{scene.number}")
    assert refused.returncode == 2 and "ghp_nobody" not in refused.stderr + refused.stdout
    for result in (won, lost, refused):
        assert winner.token not in result.stdout + result.stderr and loser.token not in result.stdout + result.stderr


def test_create_and_claim_opens_an_issue_that_is_never_open_for_anyone_else(scene: Scene) -> None:
    agent = Agent(scene, "agent-a")
    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues"
    made = HTTP.post(url, json={"title": "Totals in the footer", "body": "The cart's footer shows totals."},
                     headers={"Authorization": f"Bearer {agent.token}"})  # fmt: skip
    assert made.status_code == 201, made.text
    body = made.json()
    number = body["issue"]
    assert (body["state"], body["runner"], body["attempt"]) == ("claimed", "agent-a", 1)
    scene.drain()  # the App's issue came back as an `issues` webhook: Baton's own, it offers nothing
    work = scene.app.state.work
    key = scene.key.__class__(scene.key.installation_id, scene.key.repository_id, number)
    ticket = work.ticket(key)
    assert ticket is not None and (ticket.state.value, ticket.owner, ticket.revision) == ("claimed", "agent-a", 2)
    assert [event.type for event in work.history(key)] == ["created", "claimed"]
    with scene.hub.world.lock:
        issue = scene.repository.issues[number]
        assert (issue.title, issue.user.login) == ("Totals in the footer", "baton[bot]")
        assert issue.labels == ["baton:claimed"] and issue.assignees == ["agent-a"]

    scene.configure('runners: ["@agent-a"]\n')  # a reader outside the list may not run, so may not open one
    reader = Agent(scene, "reed")
    refused = HTTP.post(url, json={"title": "Not mine to run"}, headers={"Authorization": f"Bearer {reader.token}"})
    assert refused.status_code == 403 and refused.json()["code"] == "not_permitted", refused.text
    with scene.hub.world.lock:
        assert max(scene.repository.issues) == number  # no issue was opened for a refusal


def _posted_as_baton_stops(
    monkeypatch: pytest.MonkeyPatch, target: object, name: str, url: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    """POST `body` while `target.name` fails as a Baton that stops there would: no answer, or a 500."""

    def stopped(*_: Any, **__: Any) -> Any:
        raise RuntimeError("Baton stopped")

    with monkeypatch.context() as patched:
        patched.setattr(target, name, stopped)
        try:  # on a connection of its own: the one the failure ends is not used again
            status: int | None = HTTP.post(url, json=body, headers={**headers, "Connection": "close"}).status_code
        except httpx.HTTPError:
            status = None
    assert status in (None, 500)


def test_a_create_and_claim_retried_after_baton_stopped_midway_claims_the_issue_it_opened(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent(scene, "agent-a")
    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues"
    headers = {"Authorization": f"Bearer {agent.token}", "Idempotency-Key": "footer-1"}
    new = {"title": "Totals in the footer", "body": "The cart's footer shows totals."}
    work = scene.app.state.work
    with scene.hub.world.lock:
        before = max(scene.repository.issues)
    # GitHub opens the issue; Baton stops before recording the claim
    _posted_as_baton_stops(monkeypatch, work, "apply_all", url, new, headers)
    with scene.hub.world.lock:
        assert max(scene.repository.issues) == before + 1  # opened on GitHub, not claimed

    retried = HTTP.post(url, json=new, headers=headers)
    assert retried.status_code == 201, retried.text
    assert (retried.json()["issue"], retried.json()["state"], retried.json()["runner"]) == (
        before + 1, "claimed", "agent-a")  # fmt: skip
    again = HTTP.post(url, json=new, headers=headers)
    assert (again.status_code, again.json()) == (201, retried.json())
    with scene.hub.world.lock:
        assert max(scene.repository.issues) == before + 1  # no second issue
    key = scene.key.__class__(scene.key.installation_id, scene.key.repository_id, before + 1)
    assert [event.type for event in work.history(key)] == ["created", "claimed"]


@pytest.mark.both_engines
def test_a_create_and_claim_github_did_not_open_is_503_and_a_retry_opens_it(scene: Scene) -> None:
    agent = Agent(scene, "agent-a")
    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues"
    headers = {"Authorization": f"Bearer {agent.token}", "Idempotency-Key": "footer-2"}
    new = {"title": "Totals in the footer"}
    scene.rest.inject(Fault("POST", f"^/repos/{scene.full_name}/issues$", status=502))
    with scene.hub.world.lock:
        before = max(scene.repository.issues)
    failed = HTTP.post(url, json=new, headers=headers)
    assert failed.status_code == 503 and "GitHub answered 502" in failed.json()["message"], failed.text
    opened = HTTP.post(url, json=new, headers=headers)  # the key decided nothing: tried afresh
    assert opened.status_code == 201, opened.text
    with scene.hub.world.lock:
        assert max(scene.repository.issues) == before + 1


def test_a_create_and_claim_retried_while_the_first_may_still_be_opening_is_told_to_wait(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent(scene, "agent-a")
    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues"
    headers = {"Authorization": f"Bearer {agent.token}", "Idempotency-Key": "footer-3"}
    new = {"title": "Totals in the footer"}
    with scene.hub.world.lock:
        before = max(scene.repository.issues)
    # Baton stops while GitHub is opening the issue, or before it asked
    _posted_as_baton_stops(monkeypatch, scene.app.state.parts.intake.issues, "create", url, new, headers)
    waiting = HTTP.post(url, json=new, headers=headers)
    assert waiting.status_code == 409 and "still under way" in waiting.json()["message"], waiting.text
    monkeypatch.setattr("baton.web.agent_api.UNDER_WAY", 0.0)  # long enough ago: nothing is opening it any more
    opened = HTTP.post(url, json=new, headers=headers)
    assert opened.status_code == 201, opened.text
    with scene.hub.world.lock:
        assert max(scene.repository.issues) == before + 1
