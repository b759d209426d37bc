"""The two lanes, through the real paths: deciding never waits for GitHub, writes leave most awaited first
under one budget per installation shared by every process, and a delivery that fails for a passing reason
is tried again until it is decided.

Baton and the stand-in GitHub run as real HTTP servers on 127.0.0.1 (`Stage`); the budget across processes
runs four `baton worker` processes against the stand-in GitHub in a process of its own, as the benchmarks do.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, insert, select
from sqlalchemy.engine import make_url

from baton.demo.stage import Stage
from baton.demo.story import offered, wait_for
from baton.environment.clock import SYSTEM
from baton.github.client import GitHubApp
from baton.process.runtime import Runtime
from baton.store import make_engine, upgrade
from baton.store import tables as t
from baton.store.budget import Budgets, Limits, earliest
from baton.store.inbox import Inbox, Incoming
from bench.webhook_race import INSTALLATION, claims, payload, stand_in
from bench.webhook_race import writes as written
from github_standin.server import Fault
from support.keys import app_key, app_public_key
from support.lanes import SHOP, open_stage, ticket, until
from support.local_http import HTTP
from support.processes import stop

pytestmark = pytest.mark.both_engines  # by default on both databases: lanes sharing one database


@pytest.fixture
def stage(database_url: str) -> Iterator[Stage]:
    with open_stage(database_url) as opened:
        yield opened
        assert opened.hub.all_problems() == []
    opened.app.state.work.units.engine.dispose()


def writes(stage: Stage) -> list[str]:
    """What Baton wrote on the stand-in, in order, as `METHOD path`."""
    with stage.hub.world.lock:
        return [f"{c.method} {c.path}" for c in stage.hub.rest.writes()]


def calls_since(stage: Stage, since: float) -> list[Any]:
    """The calls Baton made to the stand-in from `since` (wall-clock seconds) on, in order."""
    with stage.hub.world.lock:
        return [call for call in stage.hub.rest.calls if call.at >= since]


@contextmanager
def claim_lines() -> Iterator[list[tuple[str, float]]]:
    """While inside, each `/claim` decision line as it is made, in order: the thread it is made on (a log record may
    not carry it: `logs.configure` leaves thread names out of records) and when (`time.time()`)."""
    lines: list[tuple[str, float]] = []

    class Heard(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "decided /claim" in record.getMessage():
                lines.append((threading.current_thread().name, record.created))

    decisions, heard = logging.getLogger("baton.decisions"), Heard()
    level = decisions.level
    decisions.addHandler(heard)
    decisions.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        decisions.removeHandler(heard)
        decisions.setLevel(level)


def race_in_one_round(stage: Stage, number: int, agents: list[Any]) -> None:
    """`agents` comment `/claim` on `number` at once; nothing is taken to be decided until GitHub has delivered them
    all, so they are decided in one round, as a race usually is (on a loaded machine they could otherwise be split
    across rounds). Taking does not wait meanwhile: it may be asked on the event loop (`Runtime.stored`)."""
    inbox, arrived = stage.app.state.inbox, threading.Event()
    take_pending = inbox.take_pending
    inbox.take_pending = lambda limit, **look: take_pending(limit, **look) if arrived.is_set() else []
    together = threading.Barrier(len(agents))
    threads = [threading.Thread(target=a.comment, args=(SHOP, number, "/claim"), kwargs={"together": together})
               for a in agents]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    until(lambda: all(d.status == 202 for d in stage.hub.deliveries), 10, "GitHub to deliver the claims")
    arrived.set()


def test_decisions_show_in_the_read_api_while_the_writer_is_stuck_on_a_slow_github(database_url: str) -> None:
    # Baton gives up on a GitHub call after 2 s (instead of 10): the end of the test waits that out.
    with open_stage(database_url, github_timeout=2) as stage:
        owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
        first, second = owner.open_issue(SHOP, "First"), owner.open_issue(SHOP, "Second")
        hanging = Fault("POST", r"/reactions$", status=None, times=5, delay=30)  # GitHub hangs on 👍s
        stage.hub.rest.inject(hanging)
        agent.comment(SHOP, first, "/claim")
        until(lambda: ticket(stage, first).get("state") == "claimed", 8, "the first claim")
        agent.comment(SHOP, second, "/claim")
        until(lambda: ticket(stage, second).get("state") == "claimed", 8, "the second claim")
        # Both decisions show while the writer is still stuck: each hung 👍 holds it 2 s, and it has not yet
        # tried all five (had the decisions waited behind it, the fault would be used up).
        with stage.hub.world.lock:
            assert hanging.times > 0, "the decisions waited for the writer"
        assert not any("/reactions" in write for write in writes(stage))  # the writer is still waiting on GitHub
    stage.app.state.work.units.engine.dispose()


def test_the_thumbs_up_goes_first_then_the_reply_then_label_assignee_and_status(database_url: str) -> None:
    with open_stage(database_url, answer_delay=0.5, write_interval=0.3) as stage:
        owner = stage.person("olivia", "admin")
        agents = [stage.person(f"agent-{n}", "write") for n in "abc"]
        number = owner.open_issue(SHOP, "Raced")
        wait_for(stage, number, offered, "the issue offered")
        # the offering's writes: `baton:open` created and added (the status comment comes with the first command)
        until(lambda: len(writes(stage)) >= 2, 5, "the stand-in to record the offering's writes")
        before = len(writes(stage))
        race_in_one_round(stage, number, agents)
        wait_for(stage, number, lambda s: s.status is not None and s.assignees != (), "the race shown")
        until(lambda: len(writes(stage)) >= before + 7, 5, "the stand-in to record the writes")
        kinds = []
        for write in writes(stage)[before:]:
            path = write.split(" ", 1)[1]
            kind = path.rsplit("/", 1)[-1] if path.endswith(("reactions", "labels", "assignees")) else "comments"
            kind = "labels" if "/labels/" in path else kind  # a label removed
            kinds.append(kind if kind != "comments" else ("reply" if "reply" not in kinds else "status"))
        # creating `baton:claimed`, adding it, removing `baton:open`
        assert kinds == ["reactions", "reply", "labels", "labels", "labels", "assignees", "status"]
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()


def test_a_race_waits_for_the_winner_s_lookup_alone_and_the_losers_are_looked_up_after_their_refusals(
    stage: Stage,
) -> None:
    # Baton keeps a repository's settings five minutes (here: not at all, as if they had just run out). A race of
    # agents it has not looked up yet: `.github/baton.yml` and the first claimer's permission are asked for side by
    # side (`look_ahead`; GitHub is slow to say each here: half a second, so one after the other they would be asked
    # half a second apart at least); the others are refused by the ticket's state, which needs no lookup, and GitHub
    # is asked about them only after every claim of the race was decided (for their next command). A read-role
    # agent's permission is followed by the collaborator check.
    owner = stage.person("olivia", "admin")
    agents = [stage.person(f"agent-{n}", "read") for n in "abc"]
    number = owner.open_issue(SHOP, "Raced, the settings run out")
    wait_for(stage, number, offered, "the issue offered")
    stage.app.state.parts.resolver.configs.ttl = 0
    stage.hub.rest.inject(Fault("GET", r"/collaborators/agent-[abc]/permission$", status=None, delay=0.5, times=3))
    stage.hub.rest.inject(Fault("GET", rf"^/repos/{SHOP}/contents/", status=None, delay=0.5, times=1))
    began = time.time()
    with claim_lines() as decided:
        race_in_one_round(stage, number, agents)
        until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
        until(lambda: len(decided) >= 2, 10, "the winner's and the losers' lines")
    last_decided = max(at for _, at in decided)

    def calls() -> list[Any]:
        return [call for call in calls_since(stage, began) if call.method == "GET"]

    def checks() -> list[Any]:
        return [call for call in calls() if re.fullmatch(rf"/repos/{SHOP}/collaborators/agent-[abc]", call.path)]

    until(lambda: len(checks()) == 3, 10, "GitHub asked about every claimer")
    winner = ticket(stage, number)["runner"]
    settings = [call.at for call in calls() if call.path == f"/repos/{SHOP}/contents/.github/baton.yml"]
    asked = {call.path.split("/")[-2]: call.at for call in calls() if call.path.endswith("/permission")}
    assert settings and abs(settings[0] - asked[winner]) < 0.3, [(round(c.at - began, 3), c.path) for c in calls()]
    losers = {login: at for login, at in asked.items() if login != winner}
    assert len(losers) == 2 and all(at >= last_decided for at in losers.values()), (last_decided, asked, winner)


def test_a_race_s_losers_are_learned_from_one_page_of_collaborators_and_claim_next_without_a_lookup(
    stage: Stage,
) -> None:
    # Four agents Baton has not looked up race for an issue. The winner is looked up before its claim (its
    # permission, then the collaborator check: it has the read role); the three refused by the ticket's state are
    # learned afterwards with one call listing the repository's collaborators, instead of six. Each of them then
    # claims an issue of its own, decided without asking GitHub who they are.
    owner = stage.person("olivia", "admin")
    agents = [stage.person(f"agent-{n}", "read") for n in "abcd"]
    number = owner.open_issue(SHOP, "Raced by four")
    others = {agent.login: owner.open_issue(SHOP, f"For {agent.login} next") for agent in agents}
    for issue in (number, *others.values()):
        wait_for(stage, issue, offered, "the issues offered")
    began = time.time()

    def asked(since: float) -> list[str]:
        return [call.path for call in calls_since(stage, since) if "/collaborators" in call.path]

    race_in_one_round(stage, number, agents)
    until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
    until(lambda: f"/repos/{SHOP}/collaborators" in asked(began), 10, "the collaborators listed")
    winner = ticket(stage, number)["runner"]
    assert sorted(asked(began)) == sorted(
        [
            f"/repos/{SHOP}/collaborators/{winner}/permission",
            f"/repos/{SHOP}/collaborators/{winner}",
            f"/repos/{SHOP}/collaborators",
        ]
    )
    listed = time.time()
    losers = [agent for agent in agents if agent.login != winner]
    for agent in losers:
        agent.comment(SHOP, others[agent.login], "/claim")
    until(lambda: all(ticket(stage, others[a.login]).get("runner") == a.login for a in losers), 30, "their claims")
    assert asked(listed) == []
    assert stage.hub.all_problems() == []


def test_claimers_baton_does_not_know_are_looked_up_in_turn_until_one_may_claim(stage: Stage) -> None:
    # Two people Baton has not looked up claim in one round, the first one GitHub says cannot run the task: they are
    # looked up first, and refused for that; then the second, who claims. Nobody is refused for not being known.
    owner = stage.person("olivia", "admin")
    outsider, agent = stage.person("outsider", "none"), stage.person("agent-a", "write")
    number = owner.open_issue(SHOP, "Claimed by whoever may")
    wait_for(stage, number, offered, "the issue offered")
    inbox, arrived = stage.app.state.inbox, threading.Event()
    take_pending = inbox.take_pending
    inbox.take_pending = lambda limit, **look: take_pending(limit, **look) if arrived.is_set() else []
    outsider.comment(SHOP, number, "/claim")  # first in the round
    agent.comment(SHOP, number, "/claim")
    until(lambda: all(d.status == 202 for d in stage.hub.deliveries), 10, "GitHub to deliver the claims")
    arrived.set()
    until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
    assert ticket(stage, number)["runner"] == "agent-a"

    def said() -> list[str]:
        with stage.hub.world.lock:
            return [c.body for c in stage.hub.world.repository(SHOP).comments.values()
                    if c.issue == number and c.user.login != "outsider" and "@outsider" in c.body]  # fmt: skip

    until(lambda: bool(said()), 30, "the outsider's answer")
    assert any("@outsider cannot /claim" in body for body in said()), said()


def test_lookups_that_find_the_installation_token_run_out_share_one_new_token(stage: Stage) -> None:
    # An installation token lasts an hour. When it has run out and a race of agents Baton has not looked up yet
    # comes in, their permissions are asked side by side, each call needing a token: GitHub is slow to mint one
    # here (0.3 s), and the lookups that need it meanwhile wait for that one instead of minting their own.
    owner = stage.person("olivia", "admin")
    agents = [stage.person(f"agent-{n}", "write") for n in "abcd"]
    number = owner.open_issue(SHOP, "Raced as the token runs out")
    wait_for(stage, number, offered, "the issue offered")
    stage.app.state.parts.resolver.directory.github.app.config.cache_strategy.cleanup()  # the hour is up
    stage.hub.rest.inject(Fault("POST", r"/app/installations/[0-9]+/access_tokens$", status=None, delay=0.3, times=5))
    began = time.time()
    race_in_one_round(stage, number, agents)
    until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
    asked = rf"/repos/{SHOP}/collaborators(/agent-[a-d]/permission)?"

    # the winner's lookup before its claim, the losers' after their refusals (one page of collaborators)
    until(lambda: len([c for c in calls_since(stage, began) if re.fullmatch(asked, c.path)]) == 2, 10, "every lookup")
    calls = calls_since(stage, began)
    mints = [call for call in calls if call.path.endswith("/access_tokens")]
    assert len(mints) == 1, [(round(call.at - began, 3), call.method, call.path) for call in calls]


def test_a_permission_used_near_the_end_of_its_time_is_asked_again_without_the_call_waiting(stage: Stage) -> None:
    # Baton keeps a permission two minutes (here two seconds); one used late in its time (here after 1.2 s) is
    # asked again in the background, while the call goes on with the answer kept. An agent that keeps calling
    # does not wait for GitHub when the first answer runs out: the call after it finds the new one.
    directory = stage.app.state.parts.resolver.directory
    directory.ttl, directory.again_after = 2.0, 0.6
    owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
    number = owner.open_issue(SHOP, "Claimed, and claimed again")
    wait_for(stage, number, offered, "the issue offered")
    token = agent.token()

    def claim() -> int:
        answer = HTTP.post(f"{stage.baton_url}/api/v1/repos/{SHOP}/issues/{number}/claim",
                           headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
        return answer.status_code

    def lookups() -> list[float]:
        permission = f"/repos/{SHOP}/collaborators/agent-a/permission"
        return [call.at for call in calls_since(stage, 0.0) if call.method == "GET" and call.path == permission]

    assert claim() == 200
    first = lookups()
    assert len(first) == 1
    time.sleep(max(0.0, first[0] + 1.4 - time.time()))  # late in its time, within it
    said = time.time()
    assert claim() == 200  # the runner's claim again: nothing changes
    until(lambda: len(lookups()) == 2, 5, "the permission asked again")
    assert lookups()[1] >= said
    time.sleep(max(0.0, first[0] + 2.3 - time.time()))  # the first answer's time is up; the second is not late
    assert claim() == 200
    assert len(lookups()) == 2, lookups()  # the answer asked again served it


def test_the_decide_lane_takes_each_payload_the_webhook_route_parsed_and_parses_none_again_nor_reads_it_back(
    stage: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The webhook route parses each delivery to check it; the decide lane of the same process takes that parse
    # instead of parsing the stored text again (a GitHub payload is some 10 KB), and that text instead of reading
    # the stored payload back.
    from baton.intake import envelope

    owner = stage.person("olivia", "admin")
    agents = [stage.person(f"agent-{n}", "write") for n in "abcd"]
    number = owner.open_issue(SHOP, "Raced, each payload parsed once")
    wait_for(stage, number, offered, "the issue offered")
    parsed_again: list[str] = []  # the JSON texts deciding parses meanwhile (on the event loop or in the lane)
    read = envelope.read_json

    def counted(text: str) -> Any:
        parsed_again.append(text)
        return read(text)

    monkeypatch.setattr(envelope, "read_json", counted)  # the envelope's parsing, not the route's
    read_back: list[str] = []  # the statements reading stored payloads meanwhile

    def statement(_connection: Any, _cursor: Any, text: str, *_: Any) -> None:
        if text.lstrip().upper().startswith("SELECT") and "webhook_payloads" in text:
            read_back.append(text)

    engine = stage.app.state.parts.engine
    event.listen(engine, "before_cursor_execute", statement)
    try:
        race_in_one_round(stage, number, agents)
        until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
        claims = {d.id for d in stage.hub.deliveries if d.event == "issue_comment" and b'"/claim"' in d.body}
        inbox = stage.app.state.inbox
        until(lambda: all((inbox.status(c) or ("",))[0] == "done" for c in claims), 10, "the claims decided")
    finally:
        event.remove(engine, "before_cursor_execute", statement)
    assert len(claims) == 4
    assert [text for text in parsed_again if '"/claim"' in text] == []
    assert read_back == []
    assert len(stage.app.state.parts.intake.parsed) == 0  # each taken, none left behind


def test_the_decide_lane_prepares_the_github_operations_of_a_decision_once_before_its_first_round(stage: Stage) -> None:
    """`GitHubApp.prepare`, in `baton serve`'s parts, run by the decide lane before its first round (and so before
    any round at hand, which waits for the lane's first round to know Baton's login): the first race does not pay
    githubkit's first calls."""
    parts = stage.app.state.parts
    assert getattr(parts.prepare, "__func__", None) is GitHubApp.prepare
    prepared: list[float] = []
    rounds: list[int] = []  # how many times prepare had run at the start of each round
    lanes = Runtime(dataclasses.replace(parts, prepare=lambda: prepared.append(time.monotonic())), writers=0,
                    before_batch=lambda: rounds.append(len(prepared)), sweep=False)  # fmt: skip
    lanes.start()
    try:
        until(lambda: len(rounds) >= 1, 10, "the lane's first round")
        for _ in range(3):
            seen = len(rounds)
            lanes.wake()
            until(lambda seen=seen: len(rounds) > seen, 10, "another round")
    finally:
        lanes.stop()
    assert len(prepared) == 1 and set(rounds) == {1}, (prepared, rounds)


def test_on_sqlite_comments_of_people_baton_knows_are_decided_on_the_event_loop_the_others_in_the_lane(
    stage: Stage,
) -> None:
    """`Runtime.stored`: a burst of `/claim` comments is decided where the webhook route stored it, once nothing is
    to be asked of GitHub (SQLite); the first race, whose winner GitHub must be asked about, is handed to the
    decide lane and decided there, once. On PostgreSQL every round is the lane's, and deliveries are stored in a
    thread of the pool; on SQLite they are stored on the event loop too (`GroupCommit`), where they are decided
    without being taken first (the decision's transaction finishes them)."""
    engine = stage.app.state.work.units.engine
    sqlite = engine.dialect.name == "sqlite"
    owner = stage.person("olivia", "admin")
    agents = [stage.person(f"agent-{n}", "write") for n in "abcd"]
    where: dict[int, set[str]] = {}
    stored: list[str] = []  # the thread of each statement storing deliveries
    stored_on: dict[int, set[str]] = {}
    attempts: dict[int, list[int]] = {}  # the attempts each round's claims were decided in (0: never taken)
    claims_before: set[str] = set()

    applied_on: dict[int, list[str]] = {}  # the thread of each transaction deciding claims, by round
    work = stage.app.state.parts.intake.work
    apply_all = work.apply_all

    def applying(requests: Any, **kwargs: Any) -> Any:
        if any(request.command.name == "claim" for request in requests):
            applied_on.setdefault(len(where), []).append(threading.current_thread().name)
        return apply_all(requests, **kwargs)

    work.apply_all = applying

    def storing(_connection: Any, _cursor: Any, text: str, *_: Any) -> None:
        if text.lstrip().upper().startswith("INSERT INTO WEBHOOK_DELIVERIES"):
            stored.append(threading.current_thread().name)

    event.listen(engine, "before_cursor_execute", storing)
    with claim_lines() as deciding:
        for round_ in range(ROUNDS):
            number = owner.open_issue(SHOP, f"Raced {round_}")
            wait_for(stage, number, offered, "the issue offered")
            # What the opening set going (its labels written, GitHub's hooks about them decided) is done before the
            # race: a hook other than a comment among the claims would send the round to the lane, rightly.
            until(lambda: quiet(stage), 30, "Baton to have decided and written everything")
            deciding.clear()
            stored.clear()
            together = threading.Barrier(len(agents))
            threads = [threading.Thread(target=a.comment, args=(SHOP, number, "/claim"),
                                        kwargs={"together": together}) for a in agents]  # fmt: skip
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            until(lambda number=number: ticket(stage, number).get("state") == "claimed", 30, "the claim")
            until(lambda: len(deciding) >= 2, 10, "the winner's and the losers' lines")
            where[round_] = {thread for thread, _ in deciding}
            stored_on[round_] = set(stored)
            claims = {d.id for d in stage.hub.deliveries if d.event == "issue_comment" and b'"/claim"' in d.body}
            mine, claims_before = claims - claims_before, claims
            with engine.connect() as connection:
                tried = select(t.webhook_deliveries.c.attempts).where(t.webhook_deliveries.c.id.in_(mine))
                attempts[round_] = sorted(connection.execute(tried).scalars())
            with stage.app.state.work.units.engine.connect() as connection:
                claimed = connection.execute(
                    select(func.count()).select_from(t.events).join(t.tickets, t.events.c.ticket_id == t.tickets.c.id)
                    .where(t.tickets.c.number == number, t.events.c.type == "claimed")).scalar_one()  # fmt: skip
            assert claimed == 1
    event.remove(engine, "before_cursor_execute", storing)
    # GitHub was asked who the winner is: the lane decided it. On a loaded machine the claims may come in two groups,
    # and those of the second, refused by the ticket's state, need no lookup: they may be decided at hand.
    assert "baton-decide" in where[0], (where, stored_on, attempts)
    # Claimers Baton does not know yet send the round to the lane before anything is decided (`look_ahead`), not
    # after a transaction on the event loop that meets the first claimer and rolls back. (A second group of claims,
    # on a loaded machine, is decided at hand once they are known.)
    assert applied_on[0][0] == "baton-decide", applied_on
    later = [where[round_] for round_ in range(1, ROUNDS)]
    if sqlite:
        # A round may still go to the lane when the writer lock stays taken through every look (`AGAIN_AT_HAND`),
        # as on a machine too loaded to finish storing the acks of the others meanwhile: one at most, here.
        assert sum("baton-decide" not in decided for decided in later) >= len(later) - 1, where
        # Stored where they were decided, the event loop's thread (a group found the lock taken: a pool thread)
        at_hand = [r for r in range(1, ROUNDS) if "baton-decide" not in where[r]]
        assert sum(stored_on[r] == where[r] for r in at_hand) >= len(at_hand) - 1, (where, stored_on)
        assert all(attempts[r] == [0] * len(agents) for r in at_hand), (where, attempts)  # decided, never taken
        assert max(attempts[0]) == 1, attempts  # the lane takes what it decides
    else:
        assert all(decided == {"baton-decide"} for decided in later), where
        assert all(threads and "baton-decide" not in threads and not threads & where[r]
                   for r, threads in stored_on.items()), (where, stored_on)  # fmt: skip


def test_a_round_at_hand_that_finds_the_writer_lock_taken_looks_again_instead_of_leaving_it_to_the_lane(
    sqlite_url: str,
) -> None:
    """`Runtime._decide_here` on SQLite, when another thread of the process writes (in a burst, mostly the acks of
    the same claims being stored): it looks again a moment later (`AGAIN_AT_HAND`) and decides the comments on the
    event loop, instead of waking the decide lane, which would wait for the same lock. Here a thread holds the lock
    from the round's first look until its second."""
    with open_stage(sqlite_url) as stage:
        owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
        runtime = stage.app.state.runtime
        first = owner.open_issue(SHOP, "Known claimer")
        wait_for(stage, first, offered, "the issue offered")
        agent.comment(SHOP, first, "/claim")  # Baton asks GitHub who agent-a is (in the lane)
        until(lambda: ticket(stage, first).get("state") == "claimed", 30, "the first claim")
        until(lambda: quiet(stage), 30, "Baton to have decided and written everything")
        second = owner.open_issue(SHOP, "Raced once the lock is free")
        wait_for(stage, second, offered, "the issue offered")
        until(lambda: quiet(stage), 30, "Baton to have decided and written everything")

        looks: list[tuple[int, str]] = []
        holding, release, released = threading.Event(), threading.Event(), threading.Event()

        def hold() -> None:  # a write transaction of another thread: it holds the process's writer lock
            with stage.app.state.work.units.engine.begin():
                holding.set()
                release.wait(10)
            released.set()

        decide_here = runtime._decide_here

        def looking(tries: int = 0) -> None:
            looks.append((tries, threading.current_thread().name))
            if tries == 0 and not holding.is_set():
                threading.Thread(target=hold, daemon=True).start()
                assert holding.wait(5)
            elif tries == 1:
                release.set()
                assert released.wait(5)
            decide_here(tries)

        runtime._decide_here = looking
        try:
            with claim_lines() as deciding:
                agent.comment(SHOP, second, "/claim")
                until(lambda: ticket(stage, second).get("state") == "claimed", 30, "the claim")
                until(lambda: bool(deciding), 10, "the decision's line")
        finally:
            runtime._decide_here = decide_here
            release.set()
        # the lock taken at the first look, free at the second (the hooks of Baton's writes that follow look again)
        assert [tries for tries, _ in looks[:2]] == [0, 1], looks
        threads = [thread for thread, _ in deciding]
        assert threads and threads == [looks[0][1]] and threads[0] != "baton-decide", (threads, looks)


def test_on_sqlite_what_is_written_reaches_the_database_file_by_a_lane_of_its_own(sqlite_url: str) -> None:
    """`Checkpoints`: deliveries stored (about 1 MB, fewer than the 1,000 pages at which SQLite's commit would copy
    its write-ahead log into the database file itself) are in the database file a moment later, copied there by the
    `baton-checkpoint` lane; the commit that next crosses 1,000 pages has only what came after to copy."""
    with open_stage(sqlite_url) as stage:
        database = Path(make_url(sqlite_url).database or "")
        until(lambda: quiet(stage), 30, "Baton to have decided and written everything")
        time.sleep(0.3)  # what setting the stage up wrote is copied too
        before = database.stat().st_size
        filler = "x" * 10_000
        for n in range(100):
            assert stage.hub.deliver("ping", {"zen": filler, "hook_id": n}).status == 202
        until(lambda: database.stat().st_size - before > 900_000, 5, "the deliveries in the database file")


ROUNDS = 5  # the first with claimers GitHub is asked about, then four with claimers Baton knows


def quiet(stage: Stage) -> bool:
    """Every hook GitHub sent is answered and decided, and nothing is left to write to GitHub."""
    sent = [d.id for d in stage.hub.deliveries]
    if any(d.status is None for d in stage.hub.deliveries):
        return False
    hooks, items = t.webhook_deliveries.c, t.outbox_items.c
    with stage.app.state.work.units.engine.connect() as connection:
        undecided = connection.execute(
            select(func.count()).where(hooks.id.in_(sent), hooks.status.not_in(("done", "ignored", "failed")))
        ).scalar_one()
        due = connection.execute(select(func.count()).select_from(t.outbox)).scalar_one()
        unsent = connection.execute(
            select(func.count()).where(items.sent_at.is_(None), items.dropped.is_(None))
        ).scalar_one()
    return undecided == 0 and due == 0 and unsent == 0


def test_comments_refused_alike_in_one_round_share_a_decision_line_naming_each_delivery(
    database_url: str, configured: list[tuple[str, str]]
) -> None:
    with open_stage(database_url) as stage:
        owner = stage.person("olivia", "admin")
        agents = [stage.person(f"agent-{n}", "write") for n in "abcde"]
        number = owner.open_issue(SHOP, "Raced, and logged")
        wait_for(stage, number, offered, "the issue offered")
        race_in_one_round(stage, number, agents)
        inbox = stage.app.state.inbox
        until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
        claims = {d.id for d in stage.hub.deliveries if d.event == "issue_comment" and b'"/claim"' in d.body}
        until(lambda: all((inbox.status(c) or ("",))[0] == "done" for c in claims), 10, "the claims decided")
    lines = [line.split("baton.decisions: ", 1)[1] for _, line in configured if "decided /claim" in line]
    assert len(lines) == 2, lines  # the winner's, and one for the four refused alike
    won, refused = sorted(lines, key=lambda line: ": refused" in line)
    assert ": applied (claimed)" in won and won.split(" by ")[1].split(" on ")[0] in [a.login for a in agents]
    named = refused.split(" by ")[1].split(" on ")[0].split(", ")
    assert sorted([*named, won.split(" by ")[1].split(" on ")[0]]) == sorted(a.login for a in agents)
    said = refused.rsplit("(deliveries ", 1)[1].rstrip(")").split(", ")
    assert len(said) == 4 and set(said) <= claims and won.rsplit("(delivery ", 1)[1].rstrip(")") in claims - set(said)


@pytest.mark.long
def test_a_thumbs_up_on_another_issue_goes_before_what_is_left_of_the_first(database_url: str) -> None:
    with open_stage(database_url, write_interval=0.4) as stage:
        owner, agent_a, agent_b = stage.person("olivia", "admin"), stage.person("agent-a"), stage.person("agent-b")
        first, second = owner.open_issue(SHOP, "First"), owner.open_issue(SHOP, "Second")
        for number in (first, second):
            wait_for(stage, number, offered, "the issue offered")
        agent_a.comment(SHOP, first, "/claim")
        until(lambda: any("/reactions" in w for w in writes(stage)), 5, "the first 👍")
        comment = agent_b.comment(SHOP, second, "/claim")
        wait_for(stage, second, lambda s: "baton:claimed" in s.labels, "the second issue shown")
        wait_for(stage, first, lambda s: s.assignees == ("agent-a",) and "Claimed" in (s.status or ""),
                 "the first issue shown")  # fmt: skip
        order = writes(stage)
        second_thumb = order.index(f"POST /repos/{SHOP}/issues/comments/{comment}/reactions")
        # the first issue's status comment, posted with its claim's result (an offered issue has none before)
        posted = f"POST /repos/{SHOP}/issues/{first}/comments"
        until(lambda: posted in writes(stage), 30, "the stand-in to record the status comment")
        order = writes(stage)
        first_status = order.index(posted)
        assert second_thumb < first_status, order
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()


@pytest.mark.long
def test_a_delivery_failing_for_a_passing_reason_is_tried_again_until_decided(stage: Stage) -> None:
    owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
    number = owner.open_issue(SHOP, "Flaky")
    inbox: Inbox = stage.app.state.inbox
    # The opening decided first, so that the claim is taken on its own: taken in one batch with the opening (on
    # a busy machine), the batch's side-by-side permission lookup would meet one of the two 502s, uncounted.
    until(lambda: any(d.event == "issues" for d in inbox.listed("done")), 30, "the opening decided")
    stage.hub.rest.inject(Fault("GET", r"/collaborators/agent-a/permission$", status=502, times=2))
    agent.comment(SHOP, number, "/claim")
    took = until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim, after two 502s")
    assert took > 2.0  # it waited out a backoff at least once
    # the claim's delivery, not those of Baton's own comments coming back
    claim = next(d.id for d in stage.hub.deliveries if d.event == "issue_comment" and b'"/claim"' in d.body)
    until(lambda: (inbox.status(claim) or ("",))[0] == "done", 10, "the delivery to be finished")
    # Two failed attempts and the third done; or, where the claim shared a batch with the echo of Baton's own
    # status comment, the batch's side-by-side permission lookup met the first 502 and the claim took two.
    status, attempts, error = inbox.status(claim) or ("", 0, None)
    assert (status, error) == ("done", None) and attempts in (2, 3), (status, attempts, error)


def test_a_command_s_delivery_is_finished_in_the_transaction_of_its_decision(stage: Stage) -> None:
    # The lane finishes what else it took after deciding: were that to fail (the process dying there), the
    # claim's delivery is done already, and is never taken again to be decided a second time.
    owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
    number = owner.open_issue(SHOP, "Finished together")
    inbox: Inbox = stage.app.state.inbox
    until(lambda: any(d.event == "issues" for d in inbox.listed("done")), 30, "the opening decided")

    def dying(finished: list[tuple[str, str]]) -> None:
        raise RuntimeError("the process died before finishing the rest")

    inbox.finish_all = dying  # type: ignore[method-assign]
    agent.comment(SHOP, number, "/claim")
    until(lambda: ticket(stage, number).get("state") == "claimed", 30, "the claim")
    claim = next(d.id for d in stage.hub.deliveries if d.event == "issue_comment" and b'"/claim"' in d.body)
    status, attempts, error = inbox.status(claim) or ("", 0, None)
    assert (status, attempts, error) == ("done", 1, None)


@pytest.mark.long
def test_a_delivery_failing_for_good_is_listed_and_baton_replay_processes_it_again(stage: Stage) -> None:
    owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
    number = owner.open_issue(SHOP, "Refused lookup")
    inbox: Inbox = stage.app.state.inbox
    # the opening decided first, for the reason given in the test above: the 403 is for the claim's own lookup
    until(lambda: any(d.event == "issues" for d in inbox.listed("done")), 30, "the opening decided")
    stage.hub.rest.inject(Fault("GET", r"/collaborators/agent-a/permission$", status=403, times=1))
    agent.comment(SHOP, number, "/claim")
    until(lambda: any(d.status == "failed" for d in inbox.listed()), 30, "the delivery to fail")
    [failed] = inbox.listed("failed")
    assert failed.event == "issue_comment" and failed.error is not None and "403" in failed.error
    assert ticket(stage, number)["state"] == "open"  # offered when opened; the claim not decided

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
           "BATON_DATABASE_URL": stage.settings.database_url, "BATON_APP_ID": str(stage.settings.app_id),
           "BATON_PRIVATE_KEY": app_key(), "BATON_GITHUB_API_URL": stage.github_url}  # fmt: skip
    listed = subprocess.run([sys.executable, "-m", "baton.cli", "deliveries", "--failed"], env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert listed.returncode == 0 and failed.id in listed.stdout and "403" in listed.stdout
    replayed = subprocess.run([sys.executable, "-m", "baton.cli", "replay", failed.id, "--json"], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout) == {"delivery": failed.id, "status": "done", "reason": None}
    assert ticket(stage, number)["state"] == "claimed"
    wait_for(stage, number, lambda s: s.assignees == ("agent-a",), "the replayed claim shown")


def test_a_passing_failure_that_keeps_failing_ends_failed_with_its_reason(
    stage: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    import baton.intake.routing

    monkeypatch.setattr(baton.intake.routing, "MAX_HOOK_ATTEMPTS", 1)
    owner, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
    number = owner.open_issue(SHOP, "Down")
    stage.hub.rest.inject(Fault("GET", r"/collaborators/agent-a/permission$", status=503, times=5))
    agent.comment(SHOP, number, "/claim")
    inbox: Inbox = stage.app.state.inbox
    until(lambda: inbox.listed("failed") != [], 30, "the delivery to fail")
    [failed] = inbox.listed("failed")
    assert failed.attempts == 1 and failed.error is not None and "503" in failed.error


# ------------------------------------------------------------------------------------------------ the budget


def test_the_earliest_write_respects_spacing_pause_and_the_minute_and_hour_limits() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    limits = Limits(interval=1.0, per_minute=80, per_hour=500)
    assert earliest(now, limits, None, None, None, None) == now
    assert earliest(now, limits, now + timedelta(seconds=1), None, None, None) == now + timedelta(seconds=1)
    assert earliest(now, limits, None, now + timedelta(seconds=30), None, None) == now + timedelta(seconds=30)
    edge = now - timedelta(seconds=20)  # the 80th write back was 20 s ago: the next one waits 40 s
    assert earliest(now, limits, None, None, edge, None) == now + timedelta(seconds=40)
    hour_edge = now - timedelta(minutes=50)
    assert earliest(now, limits, None, None, None, hour_edge) == now + timedelta(minutes=10)


def test_the_budget_counts_the_writes_of_the_last_minute_and_hour(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        budgets = Budgets(engine, Limits(interval=0.0, per_minute=3, per_hour=5), SYSTEM)
        now = datetime.now(UTC)
        assert budgets.slot(7, now) == now
        for seconds in (50, 40, 30):  # three writes in the last minute, two more earlier in the hour
            budgets.spend(7, now - timedelta(seconds=seconds))
        assert abs((budgets.slot(7, now) - (now + timedelta(seconds=10))).total_seconds()) < 0.01
        with engine.begin() as connection:
            connection.execute(insert(t.write_log), [{"installation_id": 7, "at": now - timedelta(minutes=m)}
                                                     for m in (58, 57)])  # fmt: skip
        # five writes in the hour: the next waits until the oldest of them is an hour old
        assert abs((budgets.slot(7, now) - (now + timedelta(minutes=2))).total_seconds()) < 0.01
        assert budgets.slot(8, now) == now  # another installation's budget is its own
        budgets.pause(8, now + timedelta(seconds=30), "Retry-After: 30")
        assert budgets.slot(8, now) == now + timedelta(seconds=30)
        assert budgets.hold(8, "writer-1", now) is False  # paused: nobody takes it
        assert budgets.hold(9, "writer-1", now) is True
        assert budgets.hold(9, "writer-2", now) is False  # one writer at a time
        budgets.release(9, "writer-1")
        assert budgets.hold(9, "writer-2", now) is True
    finally:
        engine.dispose()


@pytest.mark.long
@pytest.mark.postgres
def test_four_worker_processes_never_exceed_the_budget_of_one_installation(postgres_url: str) -> None:
    """Four `baton worker` processes decide and write for one installation; the stand-in GitHub sees its
    writes spaced by the interval and no more than the per-minute number in the first minute."""
    engine = make_engine(postgres_url)
    upgrade(engine)
    issues, claimers, interval, per_minute = 12, 3, 0.25, 24
    with stand_in(app_public_key(), issues=issues) as api:
        said = claims(api, [(r, c) for r in range(issues) for c in range(claimers)])
        Inbox(engine, SYSTEM).receive_all([
            Incoming(f"r{r}-c{c}", "issue_comment", "created", INSTALLATION, payload(r, c, said[r, c]).decode())
            for r in range(issues) for c in range(claimers)
        ])  # fmt: skip
        key = app_key()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
               "BATON_DATABASE_URL": postgres_url, "BATON_APP_ID": "1", "BATON_PRIVATE_KEY": key,
               "BATON_GITHUB_API_URL": api, "BATON_ANSWER_DELAY": "0.2", "BATON_WRITE_INTERVAL": str(interval),
               "BATON_WRITES_PER_MINUTE": str(per_minute)}  # fmt: skip
        command = [sys.executable, "-m", "baton.cli", "worker"]
        workers = [
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(4)
        ]
        try:
            began = time.time()

            def mine() -> list[dict[str, Any]]:
                return [w for w in written(api) if w["installation"] == INSTALLATION]

            # Watch until the per-minute number is reached (on a busy machine that takes longer: slow workers are
            # not a broken budget; the minute the assertion is about is the limit), then 5 s more: twenty
            # intervals in which a budget that let more through would show.
            log = mine()
            while len(log) < per_minute and time.time() < began + 55:
                time.sleep(0.5)
                log = mine()
            time.sleep(5)
            log = mine()
        finally:
            stop(*workers)
    engine.dispose()
    times = sorted(w["at"] for w in log if w["installation"] == INSTALLATION)
    # the races want over 40 writes: the per-minute number is reached in the time watched, and held
    # Never more than the per-minute number in the first minute; on an idle machine it is reached, on a loaded
    # one the four workers may be slower, which is not a broken budget (the figure is in bench/, not here).
    first_minute = len([at for at in times if at < began + 60])
    assert per_minute // 2 <= first_minute <= per_minute, first_minute
    # Never faster than the interval. The stand-in sees arrivals: a write can arrive late (the first of each process
    # carries the token exchange), so any run of writes is checked against its length, with that much slack.
    for i, earlier in enumerate(times):
        for j in range(i + 1, len(times)):
            assert times[j] - earlier >= (j - i) * interval - 0.2, (i, j, times)
    # every issue's 👍 went before any of the later writes of the issues decided with it
    thumbs = [w for w in log if w["path"].endswith("/reactions")]
    assert len(thumbs) >= min(issues, 5)
