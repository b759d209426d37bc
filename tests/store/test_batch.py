"""`WorkService.apply_all` against `WorkService.apply`, on SQLite and on PostgreSQL.

The same random command sequence is decided twice, on two databases: once in `apply_all` calls (the
whole sequence in one call, or cut into several at random points) and once command by command with
`apply`. The two must leave the same rows (tickets, events, attempts, deliveries, reviews, operations,
claim counts, answers, outbox keys, evidence) and give the same `Outcome`s, retried operation ids included.

Tickets only meet through what they share: the claim counts of their repository. The one-by-one run takes
the commands in the order they arrived, which is the order `apply_all` decides them in, whichever tickets
and repositories a call mixes (`test_a_claim_limit_is_met_in_arrival_order` holds it to that where the
claim limit makes the order matter).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from baton.domain import (
    Actor,
    Applied,
    Command,
    Evidence,
    Permission,
    Policy,
    Situation,
    Ticket,
    TicketKey,
    WorkState,
    create,
    decide,
)
from baton.process.wiring import work_service
from baton.service.work import Issue, Outcome, Request, Source, WorkService
from baton.store import make_engine, tables, upgrade
from bench.claim_race import scratch_postgres
from support.row_counts import counts

INSTALLATION = 7
SHOP = (1001, "octo/shop")  # the repository most commands are about
DOCS = (1002, "octo/docs")  # a second repository, whose claim counts are its own
AUTHOR = "olivia"
PULL_REQUEST = 90  # ticket #n's pull request is #(90 + n)

PERMISSIONS = {
    "agent-a": Permission.READ,
    "agent-b": Permission.WRITE,  # an agent who can push, which makes no reviewer
    "agent-c": Permission.READ,
    "maria": Permission.MAINTAIN,
    AUTHOR: Permission.READ,
}
NAMES = (
    *("claim",) * 4,
    *("release",) * 3,
    *("assign",) * 2,
    *("deliver",) * 4,
    *("accept",) * 3,
    *("send-back",) * 2,
    "reopen",
    "withdraw",
    "status",
    "help",
    "publish",
)
USERS = (None, None, "agent-a", "Agent-B", "agent-c", "maria", "nobody")
TEXTS = ("", "the empty state is covered")
EVIDENCES = (
    Evidence(),
    Evidence(branch="42-empty-state"),
    Evidence("42-empty-state", "1a2b3c4", 57, ("https://ci/run/1",)),
    Evidence(tests=("https://ci/run/2",), screenshots=("https://img/1.png",)),
)


def issue(repository: tuple[int, str], number: int) -> Issue:
    repository_id, name = repository
    return Issue(TicketKey(INSTALLATION, repository_id, number), name, AUTHOR)


# ---------------------------------------------------------------------------------------------- two databases


@dataclass
class Twin:
    """Two migrated databases of one engine, emptied before each example."""

    engines: tuple[Engine, Engine]

    def services(self) -> tuple[WorkService, WorkService]:
        for engine in self.engines:
            clear(engine)
        return work_service(self.engines[0]), work_service(self.engines[1])


def clear(engine: Engine) -> None:
    with engine.begin() as connection:
        for table in reversed(tables.metadata.sorted_tables):
            connection.execute(table.delete())


@pytest.fixture
def twin(database_url: str, tmp_path: Path) -> Iterator[Twin]:
    """`database_url`'s database (a temporary SQLite file, or the session's PostgreSQL database) and a second,
    fresh one beside it."""
    with contextlib.ExitStack() as stack:
        if make_url(database_url).get_backend_name() == "sqlite":
            other = f"sqlite:///{tmp_path / 'twin.db'}"
        else:
            other = stack.enter_context(scratch_postgres(database_url))
        engines = (make_engine(database_url), make_engine(other))
        upgrade(engines[1])
        try:
            yield Twin(engines)
        finally:
            clear(engines[0])  # the session's PostgreSQL database is shared with later tests
            for engine in engines:
                engine.dispose()


# ---------------------------------------------------------------------------------------------- rows


TICKET_COLUMNS = (
    "installation_id", "repository_id", "number", "repository", "state", "revision", "owner", "runner", "attempt",
    "deliveries", "brief",
)  # fmt: skip


def snapshot(engine: Engine) -> dict[str, Any]:
    """Everything deciding writes, keyed by issue rather than by row id (ids depend on insertion order).

    Timestamps are left out, and so are the outbox rows' version, due time and urgency."""
    t = tables
    with engine.connect() as connection:
        keys = {
            row.id: (row.installation_id, row.repository_id, row.number)
            for row in connection.execute(select(t.tickets))
        }

        def per_ticket(table: Any, *columns: str) -> dict[Any, list[tuple[Any, ...]]]:
            """The table's rows by ticket, each ticket's in id order."""
            found: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
            for row in connection.execute(select(table).order_by(table.c.id)):
                found[keys[row.ticket_id]].append(tuple(getattr(row, column) for column in columns))
            return dict(found)

        def rows(*columns: Any) -> list[tuple[Any, ...]]:
            return sorted(tuple(row) for row in connection.execute(select(*columns)))

        items: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
        for row in connection.execute(select(t.outbox_items).order_by(t.outbox_items.c.id)):
            items[(row.installation_id, row.repository_id, row.number)].append(
                (row.kind, row.comment_id, row.author, row.message, row.sent_at, row.result_id)
            )
        attempts = per_ticket(t.attempts, "number", "runner", "started_revision", "ended_at", "end_reason")
        return {
            "tickets": rows(*(t.tickets.c[name] for name in TICKET_COLUMNS)),
            "events": per_ticket(t.events, "type", "actor", "role", "attempt", "revision", "operation_id", "data"),
            "attempts": {
                key: [
                    (number, runner, started, ended is not None, reason)
                    for number, runner, started, ended, reason in found
                ]
                for key, found in attempts.items()
            },
            "deliveries": per_ticket(t.deliveries, "number", "attempt", "runner", "text", "evidence", "revision"),
            "reviews": per_ticket(
                t.reviews, "attempt", "delivery", "reviewer", "role", "verdict", "independent", "note", "revision"
            ),
            "operations": {
                row.id: (keys.get(row.ticket_id), row.result) for row in connection.execute(select(t.operations))
            },
            "runner_claims": rows(t.runner_claims),
            "outbox_items": dict(items),
            "outbox": rows(
                t.outbox.c.installation_id, t.outbox.c.repository_id, t.outbox.c.number, t.outbox.c.repository
            ),
            "evidence_rails": sorted(
                (keys[row.ticket_id], row.version, row.repository_state, row.deployment_state)
                for row in connection.execute(select(t.evidence_rails))
            ),
            "evidence_links": sorted(
                (row.installation_id, row.repository_id, row.subject, keys[row.ticket_id])
                for row in connection.execute(select(t.evidence_links))
            ),
            "evidence_events": per_ticket(t.evidence_events, "type", "source", "repository_state", "deployment_state"),
            "counts": counts(connection),
        }


def count_rows(engine: Engine) -> dict[str, int]:
    with engine.connect() as connection:
        return counts(connection)


# ---------------------------------------------------------------------------------------------- sequences


@dataclass(frozen=True)
class Scenario:
    requests: tuple[Request, ...]
    calls: tuple[tuple[int, ...], ...]  # the indices of `requests` each `apply_all` call takes, in order


def by_key(request: Request) -> tuple[int, int, int]:
    key = request.issue.key
    return key.installation_id, key.repository_id, key.number


def key_order(scenario: Scenario) -> list[int]:
    """Call by call; within a call, ticket by ticket in the order of their keys, each ticket's requests in
    the order they came."""
    return [index for call in scenario.calls for index in sorted(call, key=lambda i: by_key(scenario.requests[i]))]


def mixes_tickets(scenario: Scenario) -> bool:
    """Whether a call holds commands on two tickets of one repository."""
    for call in scenario.calls:
        tickets = {scenario.requests[index].issue.key for index in call}
        if len({(key.installation_id, key.repository_id) for key in tickets}) < len(tickets):
            return True
    return False


def reference_order(scenario: Scenario) -> list[int]:
    """The order the one-by-one run takes the requests in: as they arrived."""
    return list(range(len(scenario.requests)))


def actor(login: str) -> Actor:
    permission = PERMISSIONS.get(login.lower(), Permission.NONE)
    return Actor(login, permission, collaborator=permission is not Permission.NONE)


rarely = st.sampled_from((*(False,) * 7, True))

actors = st.builds(
    lambda login, shout: actor(login.title() if shout else login),
    st.sampled_from(sorted(PERMISSIONS)),
    rarely,  # now and then a login in other letters
)
commands = st.builds(
    Command,
    name=st.sampled_from(NAMES),
    rev=st.sampled_from((*(None,) * 9, 2, 3, 4)),  # mostly none; now and then one, right or stale
    user=st.sampled_from(USERS),
    text=st.sampled_from(TEXTS),
    evidence=st.sampled_from(EVIDENCES),
)
policies = st.builds(
    Policy,
    max_active_claims=st.sampled_from((1, 2)),
    allow_self_review=st.booleans(),
    reviewers=st.sampled_from((frozenset(), frozenset({"agent-c"}))),
    required_evidence=st.sampled_from(((), ("branch",))),
    offer=st.just("all"),
)

# The commands that move a ticket on from each state, and who usually sends them ("runner": its runner).
PLAUSIBLE = {
    WorkState.OPEN: (("claim", "agent-a"), ("claim", "agent-b"), ("claim", "agent-a"), ("assign", "maria")),
    WorkState.CLAIMED: (("deliver", "runner"), ("deliver", "runner"), ("release", "runner"), ("release", "maria"),
                        ("reopen", "maria")),
    WorkState.DELIVERED: (("send-back", "maria"), ("accept", "maria"), ("send-back", "agent-b"), ("accept", "agent-b"),
                          ("reopen", "agent-b")),
    WorkState.ACCEPTED: (("reopen", "maria"), ("status", "agent-c")),
    WorkState.WITHDRAWN: (("claim", "agent-a"), ("help", "agent-c")),
}  # fmt: skip


@st.composite
def plausible(draw: st.DrawFn, ticket: Ticket) -> tuple[Command, Actor]:
    """A command that likely moves the ticket on (the guide below says where it is, in arrival order)."""
    name, sender = draw(st.sampled_from(PLAUSIBLE[ticket.state]))
    runner = ticket.runner or "agent-a"
    login = runner if sender == "runner" else sender
    user = draw(st.sampled_from((None, runner, "agent-c") if name == "release" else (runner, "agent-b", "agent-c")))
    command = Command(
        name,
        rev=draw(st.sampled_from((None, None, ticket.revision))),
        user=user,
        text=draw(st.sampled_from(TEXTS[1:] * 3 + TEXTS[:1])),
        evidence=draw(st.sampled_from(EVIDENCES[1:])),
    )
    return command, actor(login)


@st.composite
def scenarios(draw: st.DrawFn, max_size: int = 25) -> Scenario:
    policy = draw(policies)
    numbers = draw(st.lists(st.sampled_from((1, 2, 3)), min_size=1, max_size=3, unique=True))
    issues = [issue(SHOP, number) for number in numbers]
    if draw(st.booleans()):
        issues.append(issue(DOCS, numbers[0]))  # the same number in another repository
    size = draw(st.integers(1, max_size))
    requests: list[Request] = []
    # A guide to where each ticket is, so that half the commands are ones that move it on. It decides in
    # arrival order with the pure rules; the test's expectations never come from it.
    guide = {one.key: create(one.key, one.repository, AUTHOR)[0] for one in issues}
    for index in range(size):
        if requests and draw(rarely):
            # a redelivered comment: the same request, operation id and all
            requests.append(requests[draw(st.integers(0, len(requests) - 1))])
            continue
        target = draw(st.sampled_from(issues))
        ticket = guide[target.key]
        if draw(st.booleans()):
            command, who = draw(plausible(ticket))
        else:
            command, who = draw(commands), draw(actors)
        held = sum(
            other.state is WorkState.CLAIMED and who.is_(other.runner) and key.repository_id == target.key.repository_id
            for key, other in guide.items()
        )
        decision = decide(ticket, command, who, Situation(policy, held))
        if isinstance(decision, Applied):
            guide[target.key] = decision.ticket
        # now and then a command written on the pull request that links the ticket, and answered there
        where = target.key.number + PULL_REQUEST if draw(rarely) else None
        source = Source(comment_id=5000 + index, number=where, reactable=not draw(rarely))
        requests.append(Request(target, command, who, f"op-{index}", policy, source))
    cuts = sorted(draw(st.sets(st.integers(1, size - 1), max_size=4))) if size > 1 else []
    bounds = [0, *cuts, size]
    calls = tuple(tuple(range(start, end)) for start, end in itertools.pairwise(bounds))
    return Scenario(tuple(requests), calls)


# ---------------------------------------------------------------------------------------------- deciding


def one_by_one(service: WorkService, requests: tuple[Request, ...], order: list[int]) -> list[Outcome]:
    """`apply` per request, in `order`; a retried operation id must give its first outcome and write nothing."""
    outcomes: dict[int, Outcome] = {}
    firsts: dict[str, Outcome] = {}
    for index in order:
        request = requests[index]
        retried = request.operation_id in firsts
        before = count_rows(service.units.engine) if retried else None
        outcome = service.apply(
            request.issue, request.command, request.actor, request.operation_id, request.policy, request.source
        )
        if retried:
            assert outcome == replace(firsts[request.operation_id], duplicate=True)
            assert count_rows(service.units.engine) == before
        else:
            assert not outcome.duplicate
            firsts[request.operation_id] = outcome
        outcomes[index] = outcome
    return [outcomes[index] for index in range(len(requests))]


def batched(service: WorkService, scenario: Scenario) -> list[Outcome]:
    outcomes: dict[int, Outcome] = {}
    for call in scenario.calls:
        decided = service.apply_all([scenario.requests[index] for index in call])
        assert len(decided) == len(call)
        outcomes.update(zip(call, decided, strict=True))
    return [outcomes[index] for index in range(len(scenario.requests))]


def check_answers(
    rows: dict[str, Any], requests: tuple[Request, ...], order: list[int], outcomes: list[Outcome]
) -> None:
    """Each command decided (not retried) has its own operation row, its own event when applied, and its own
    answer where it was written: a reply with the refusal or the help, else a 👍 where GitHub has reactions (and
    a reply beside it for a note that says something)."""
    expected_items: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
    expected_events: set[tuple[str, str]] = set()
    results: dict[str, dict[str, Any]] = {}
    for index in order:
        request, outcome = requests[index], outcomes[index]
        if request.operation_id in results:
            continue
        results[request.operation_id] = outcome.to_json()
        key, source = request.issue.key, request.source
        assert source is not None
        where = (key.installation_id, key.repository_id, source.number or key.number)
        login = request.actor.login
        if outcome.kind == "refused":
            expected_items[where].append(("reply", source.comment_id, login, outcome.message, None, None))
        elif request.command.name == "help":
            expected_items[where].append(("reply", source.comment_id, login, "help", None, None))
        else:
            if source.reactable:
                expected_items[where].append(("reaction", source.comment_id, login, "+1", None, None))
            if outcome.message is not None:  # the holder claiming again: the 👍, and what it holds
                expected_items[where].append(("reply", source.comment_id, login, outcome.message, None, None))
        if outcome.applied:
            assert outcome.event is not None
            expected_events.add((request.operation_id, outcome.event))
    assert {id_: result for id_, (_, result) in rows["operations"].items()} == results
    found_items = {
        where: [
            (kind, comment, author, "help" if message.startswith("commands you may use on #") else message, *rest)
            for kind, comment, author, message, *rest in items
        ]
        for where, items in rows["outbox_items"].items()
    }
    assert found_items == dict(expected_items)
    events = {(event[5], event[0]) for history in rows["events"].values() for event in history if event[0] != "created"}
    assert events == expected_events


# ---------------------------------------------------------------------------------------------- properties


def describe(scenario: Scenario, outcomes: list[Outcome]) -> None:
    """What the example exercised, for `--hypothesis-show-statistics`."""
    event("one call" if len(scenario.calls) == 1 else "several calls")
    if mixes_tickets(scenario):
        event("a call mixes tickets of one repository")
    elif key_order(scenario) != list(range(len(scenario.requests))):
        event("a call takes repositories out of arrival order")
    if len({request.operation_id for request in scenario.requests}) < len(scenario.requests):
        event("a retried operation id")
    for outcome in outcomes:
        if outcome.applied:
            event(f"applied: {outcome.event}")
        elif outcome.code in ("claim_limit", "stale_revision", "missing_evidence"):
            event(f"refused: {outcome.code}")


@pytest.mark.long
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios())
def test_apply_all_decides_like_apply(twin: Twin, scenario: Scenario) -> None:
    single, batch = twin.services()
    order = reference_order(scenario)
    expected = one_by_one(single, scenario.requests, order)
    outcomes = batched(batch, scenario)

    assert outcomes == expected
    describe(scenario, expected)
    expected_rows, rows = snapshot(single.units.engine), snapshot(batch.units.engine)
    for table in expected_rows:
        assert rows[table] == expected_rows[table], table
    check_answers(expected_rows, scenario.requests, order, expected)


# ---------------------------------------------------------------------------------------------- examples


def test_twenty_agents_racing_in_one_call_make_one_claim(twin: Twin) -> None:
    single, batch = twin.services()
    target = issue(SHOP, 42)
    policy = Policy(max_active_claims=1, offer="all")
    agents = [Actor(f"agent-{n:02d}", Permission.READ, collaborator=True) for n in range(20)]
    requests = tuple(
        Request(target, Command("claim"), agent, f"race-{n}", policy, Source(700 + n)) for n, agent in enumerate(agents)
    )

    outcomes = batched(batch, Scenario(requests, (tuple(range(20)),)))
    expected = one_by_one(single, requests, list(range(20)))

    assert outcomes == expected
    assert outcomes[0] == Outcome("applied", "claim", WorkState.CLAIMED, 2, "agent-00", event="claimed")
    refusal = "#42 is claimed by @agent-00 (revision 2), not open. Pick another issue."
    assert (
        outcomes[1:]
        == [Outcome("refused", "claim", WorkState.CLAIMED, 2, "agent-00", code="wrong_state", message=refusal)] * 19
    )
    rows = snapshot(batch.units.engine)
    assert rows == snapshot(single.units.engine)
    key = (INSTALLATION, SHOP[0], 42)
    assert [(event[0], event[1], event[5]) for event in rows["events"][key]] == [
        ("created", AUTHOR, "race-0"),
        ("claimed", "agent-00", "race-0"),
    ]
    assert rows["outbox_items"][key] == [
        ("reaction", 700, "agent-00", "+1", None, None),
        *[("reply", 700 + n, f"agent-{n:02d}", refusal, None, None) for n in range(1, 20)],
    ]
    assert rows["runner_claims"] == [(INSTALLATION, SHOP[0], "agent-00", 1)]
    assert rows["tickets"] == [(INSTALLATION, SHOP[0], 42, "octo/shop", "claimed", 2, AUTHOR, "agent-00", 1, 0, None)]
    assert rows["outbox"] == [(INSTALLATION, SHOP[0], 42, "octo/shop")]
    assert len(rows["operations"]) == 20


AGENT_A = Actor("agent-a", Permission.READ, collaborator=True)
ARRIVALS = {
    # agent-a claims #2, then #1: #1 meets the limit, though its key comes first
    "claims": [(2, "claim"), (1, "claim")],
    # agent-a holds #1, claims #2 (over the limit), then releases #1: the release does not come first
    "release-after": [(1, "claim"), (2, "claim"), (1, "release")],
}


@pytest.mark.parametrize("arrivals", list(ARRIVALS.values()), ids=list(ARRIVALS))
def test_a_claim_limit_is_met_in_arrival_order(twin: Twin, arrivals: list[tuple[int, str]]) -> None:
    single, batch = twin.services()
    policy = Policy(max_active_claims=1, offer="all")
    requests = tuple(
        Request(issue(SHOP, number), Command(name), AGENT_A, f"op-{n}", policy, Source(n))
        for n, (number, name) in enumerate(arrivals)
    )

    expected = one_by_one(single, requests, list(range(len(requests))))
    assert [outcome.code for outcome in expected][:2] == [None, "claim_limit"]

    assert batched(batch, Scenario(requests, (tuple(range(len(requests))),))) == expected
