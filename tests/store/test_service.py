"""The work rail through `WorkService`, on SQLite and on PostgreSQL: rows, idempotency, claim counting."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Column, Integer, MetaData, Table, func, select

from baton.domain import (
    Actor,
    Brief,
    Command,
    Evidence,
    Permission,
    Policy,
    Ticket,
    TicketKey,
    WorkState,
    replay,
)
from baton.process.wiring import work_service
from baton.service.resolver import Notice
from baton.service.unit import Units
from baton.service.work import Issue, Outcome, Request, Source
from baton.store import make_engine, tables
from baton.store.migrate import current, head, upgrade
from baton.store.reads import Reads

REPO = "octo/shop"
INSTALLATION, REPOSITORY_ID = 7, 1001

AGENT_A = Actor("agent-a", Permission.READ, collaborator=True)
AGENT_B = Actor("agent-b", Permission.READ, collaborator=True)
AGENT_C = Actor("agent-c", Permission.READ, collaborator=True)
ADMIN_A = Actor("agent-a", Permission.ADMIN)
OWNER = Actor("olivia", Permission.READ, collaborator=True)
MAINTAINER = Actor("maria", Permission.MAINTAIN)
STRANGER = Actor("stranger", Permission.NONE)

COMPLETE_BRIEF = Brief(scope=("src/BillingHistory.tsx",), acceptance=("no invoices: empty state",))
FIRST = Evidence("42-empty-state", "1a2b3c4", 57, ("https://ci/run/1",), ())
SECOND = Evidence("42-empty-state", "5d6e7f8", 57, ("https://ci/run/2",), ("https://img/390.png",))

OPEN, CLAIMED, DELIVERED, ACCEPTED, WITHDRAWN, DRAFT = (
    WorkState.OPEN,
    WorkState.CLAIMED,
    WorkState.DELIVERED,
    WorkState.ACCEPTED,
    WorkState.WITHDRAWN,
    WorkState.DRAFT,
)


def issue(number: int, author: str = "olivia") -> Issue:
    return Issue(TicketKey(INSTALLATION, REPOSITORY_ID, number), REPO, author)


class Rail:
    """A `WorkService` with fresh operation ids and row readers."""

    def __init__(self, store: Units) -> None:
        self.store = store
        self.service = work_service(store.engine)
        self._ids = itertools.count(1)

    def op(self) -> str:
        return f"op-{next(self._ids)}"

    def do(
        self,
        number: int,
        command: Command,
        actor: Actor,
        policy: Policy | None = None,
        operation_id: str | None = None,
    ) -> Outcome:
        return self.service.apply(issue(number), command, actor, operation_id or self.op(), policy)

    def ticket(self, number: int) -> Ticket | None:
        return self.service.ticket(issue(number).key)

    def rows(self, table: Any, *where: Any) -> list[Any]:
        order = [table.c[name] for name in ("id", "login") if name in table.c]
        with self.store.engine.connect() as connection:
            return list(connection.execute(select(table).where(*where).order_by(*order)))

    def count(self, table: Any) -> int:
        with self.store.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(table)).scalar_one())

    def ticket_row(self, number: int) -> Any:
        (row,) = self.rows(tables.tickets, tables.tickets.c.number == number)
        return row

    def counts(self) -> dict[str, int]:
        return {table.name: self.count(table) for table in tables.metadata.sorted_tables}

    def assert_claims_counted(self) -> None:
        """`runner_claims.active` is the number of `claimed` tickets each runner holds."""
        claimed = Counter(
            row.runner.lower() for row in self.rows(tables.tickets) if row.state == "claimed" and row.runner
        )
        counted = {row.login: row.active for row in self.rows(tables.runner_claims)}
        for login, active in counted.items():
            assert active == claimed.get(login, 0), (login, active, claimed)
        for login, held in claimed.items():
            assert counted.get(login) == held, (login, held, counted)

    def assert_replays(self) -> None:
        rows = self.rows(tables.tickets)
        assert rows
        for row in rows:
            key = TicketKey(row.installation_id, row.repository_id, row.number)
            history = self.service.history(key)
            assert history[0].type == "created"
            assert replay(key, row.repository, history) == self.service.ticket(key)


@pytest.fixture
def rail(store: Units) -> Rail:
    return Rail(store)


def applied(command: str, state: WorkState, revision: int, runner: str | None, event: str) -> Outcome:
    return Outcome("applied", command, state, revision, runner, event=event)


# ---------------------------------------------------------------------------------------------- a whole life


def test_a_full_life_is_recorded_row_by_row(rail: Rail) -> None:
    key = issue(42).key
    assert rail.ticket(42) is None

    first = rail.do(42, Command("status"), STRANGER, operation_id="op-status")
    assert first == Outcome("noted", "status", OPEN, 1, None)
    assert rail.ticket(42) == Ticket(key, REPO, OPEN, 1, "olivia")

    steps = [
        (Command("claim"), AGENT_A, applied("claim", CLAIMED, 2, "agent-a", "claimed")),
        (
            Command("deliver", text="Empty state added.", evidence=FIRST),
            AGENT_A,
            applied("deliver", DELIVERED, 3, "agent-a", "delivered"),
        ),
        (
            Command("send-back", text="The empty state vanishes on error."),
            MAINTAINER,
            applied("send-back", CLAIMED, 4, "agent-a", "sent_back"),
        ),
        (
            Command("deliver", text="Kept on error too.", evidence=SECOND),
            AGENT_A,
            applied("deliver", DELIVERED, 5, "agent-a", "delivered"),
        ),
        (Command("accept", text="lgtm"), MAINTAINER, applied("accept", ACCEPTED, 6, "agent-a", "accepted")),
    ]
    for number, (command, actor, expected) in enumerate(steps, start=1):
        assert rail.do(42, command, actor, operation_id=f"op-{number}") == expected
        assert rail.ticket(42).revision == expected.revision  # type: ignore[union-attr]

    assert rail.ticket(42) == Ticket(key, REPO, ACCEPTED, 6, "olivia", runner="agent-a", attempt=2, deliveries=2)
    ticket_id = rail.ticket_row(42).id

    events = rail.rows(tables.events)
    assert {row.ticket_id for row in events} == {ticket_id}
    assert [(e.type, e.actor, e.role, e.attempt, e.revision, e.operation_id) for e in events] == [
        ("created", "olivia", "requester", 0, 1, "op-status"),
        ("claimed", "agent-a", "runner", 1, 2, "op-1"),
        ("delivered", "agent-a", "runner", 1, 3, "op-2"),
        ("sent_back", "maria", "reviewer", 2, 4, "op-3"),
        ("delivered", "agent-a", "runner", 2, 5, "op-4"),
        ("accepted", "maria", "reviewer", 2, 6, "op-5"),
    ]
    assert events[0].data == {"state": "open", "owner": "olivia", "brief": None}
    assert events[1].data == {"runner": "agent-a"}
    assert events[3].data["review"] == {
        "verdict": "sent_back",
        "attempt": 1,
        "delivery": 1,
        "independent": True,
        "note": "The empty state vanishes on error.",
    }

    attempts = rail.rows(tables.attempts)
    assert [(a.ticket_id, a.number, a.runner, a.started_revision, a.end_reason) for a in attempts] == [
        (ticket_id, 1, "agent-a", 2, "delivered"),
        (ticket_id, 2, "agent-a", 4, "delivered"),
    ]
    assert all(a.ended_at is not None for a in attempts)

    deliveries = rail.rows(tables.deliveries)
    assert [(d.ticket_id, d.number, d.attempt, d.runner, d.text, d.evidence, d.revision) for d in deliveries] == [
        (ticket_id, 1, 1, "agent-a", "Empty state added.", FIRST.to_dict(), 3),
        (ticket_id, 2, 2, "agent-a", "Kept on error too.", SECOND.to_dict(), 5),
    ]
    assert Evidence.from_dict(deliveries[1].evidence) == SECOND

    reviews = rail.rows(tables.reviews)
    assert [
        (r.ticket_id, r.attempt, r.delivery, r.reviewer, r.role, r.verdict, r.independent, r.note, r.revision)
        for r in reviews
    ] == [
        (ticket_id, 1, 1, "maria", "reviewer", "sent_back", True, "The empty state vanishes on error.", 4),
        (ticket_id, 2, 2, "maria", "reviewer", "accepted", True, "lgtm", 6),
    ]

    operations = {row.id: row for row in rail.rows(tables.operations)}
    assert set(operations) == {"op-status", "op-1", "op-2", "op-3", "op-4", "op-5"}
    assert {row.ticket_id for row in operations.values()} == {ticket_id}
    assert operations["op-5"].result == steps[-1][2].to_json()
    assert operations["op-status"].result == first.to_json()

    assert [(r.login, r.active) for r in rail.rows(tables.runner_claims)] == [("agent-a", 0)]
    rail.assert_claims_counted()
    rail.assert_replays()


def test_reopen_clears_the_claim_keeps_deliveries_and_the_next_claim_is_a_new_attempt(rail: Rail) -> None:
    rail.do(5, Command("claim"), AGENT_A)
    rail.do(5, Command("deliver", text="one", evidence=FIRST), AGENT_A)
    reopened = rail.do(5, Command("reopen", text="wrong approach"), MAINTAINER)
    assert reopened == applied("reopen", OPEN, 4, None, "reopened")
    key = issue(5).key
    assert rail.ticket(5) == Ticket(key, REPO, OPEN, 4, "olivia", runner=None, attempt=1, deliveries=1)
    rail.assert_claims_counted()

    assert rail.do(5, Command("claim"), AGENT_B) == applied("claim", CLAIMED, 5, "agent-b", "claimed")
    assert rail.ticket(5) == Ticket(key, REPO, CLAIMED, 5, "olivia", runner="agent-b", attempt=2, deliveries=1)
    rail.assert_claims_counted()

    # Reopening a running attempt ends it as `reopened`; the next claim is attempt 3.
    assert rail.do(5, Command("reopen", text="stalled"), MAINTAINER).applied
    rail.assert_claims_counted()
    rail.do(5, Command("claim"), AGENT_C)
    delivered = rail.do(5, Command("deliver", text="three"), AGENT_C)
    assert delivered == applied("deliver", DELIVERED, 8, "agent-c", "delivered")

    attempts = rail.rows(tables.attempts)
    assert [(a.number, a.runner, a.started_revision, a.end_reason) for a in attempts] == [
        (1, "agent-a", 2, "delivered"),
        (2, "agent-b", 5, "reopened"),
        (3, "agent-c", 7, "delivered"),
    ]
    deliveries = rail.rows(tables.deliveries)
    assert [(d.number, d.attempt, d.runner, d.text) for d in deliveries] == [
        (1, 1, "agent-a", "one"),
        (2, 3, "agent-c", "three"),
    ]
    assert rail.ticket(5) == Ticket(key, REPO, DELIVERED, 8, "olivia", runner="agent-c", attempt=3, deliveries=2)
    rail.assert_claims_counted()
    rail.assert_replays()


# ---------------------------------------------------------------------------------------------- idempotency


def test_a_repeated_applied_claim_returns_the_first_outcome_and_writes_nothing(rail: Rail) -> None:
    first = rail.do(1, Command("claim"), AGENT_A, operation_id="comment-100")
    assert first == applied("claim", CLAIMED, 2, "agent-a", "claimed")
    assert first.duplicate is False
    before, ticket_row = rail.counts(), rail.ticket_row(1)

    # The retry may even carry another actor and command: the operation id decides.
    for command, actor in [(Command("claim"), AGENT_A), (Command("release"), AGENT_A), (Command("claim"), AGENT_B)]:
        again = rail.do(1, command, actor, operation_id="comment-100")
        assert again == replace(first, duplicate=True)
        assert rail.counts() == before
        assert rail.ticket_row(1) == ticket_row

    fresh = rail.do(1, Command("claim"), AGENT_A, operation_id="comment-101")  # the holder: nothing to change
    assert (fresh.kind, fresh.code, fresh.duplicate) == ("noted", "already_held", False)
    assert rail.counts()["operations"] == before["operations"] + 1
    assert rail.counts()["events"] == before["events"]
    rail.assert_claims_counted()
    rail.assert_replays()


def test_a_repeated_refusal_stays_refused_even_when_it_would_now_apply(rail: Rail) -> None:
    rail.do(1, Command("claim"), AGENT_A)
    refused = rail.do(1, Command("claim"), AGENT_B, operation_id="comment-200")
    assert (refused.kind, refused.code, refused.state, refused.runner) == ("refused", "wrong_state", CLAIMED, "agent-a")
    assert refused.message == "#1 is claimed by @agent-a (revision 2), not open. Pick another issue."

    assert rail.do(1, Command("release"), AGENT_A).applied
    before, ticket_row = rail.counts(), rail.ticket_row(1)
    again = rail.do(1, Command("claim"), AGENT_B, operation_id="comment-200")
    assert again == replace(refused, duplicate=True)
    assert rail.counts() == before
    assert rail.ticket_row(1) == ticket_row

    fresh = rail.do(1, Command("claim"), AGENT_B, operation_id="comment-201")
    assert fresh == applied("claim", CLAIMED, 4, "agent-b", "claimed")
    assert rail.counts()["events"] == before["events"] + 1
    rail.assert_claims_counted()
    rail.assert_replays()


def test_a_repeated_status_note_is_a_duplicate_and_the_first_sight_happens_once(rail: Rail) -> None:
    noted = rail.do(9, Command("status"), STRANGER, operation_id="comment-300")
    assert noted == Outcome("noted", "status", OPEN, 1, None)
    before = rail.counts()
    assert (before["tickets"], before["events"], before["operations"]) == (1, 1, 1)

    again = rail.do(9, Command("status"), STRANGER, operation_id="comment-300")
    assert again == replace(noted, duplicate=True)
    assert rail.counts() == before

    fresh = rail.do(9, Command("status"), STRANGER, operation_id="comment-301")
    assert fresh == noted
    assert rail.counts() == {**before, "operations": before["operations"] + 1}
    rail.assert_replays()


def test_open_ticket_is_idempotent_and_refuses_an_issue_already_tracked(rail: Rail) -> None:
    opened = rail.service.open_ticket(issue(3), "open-3", brief=COMPLETE_BRIEF)
    assert opened == Outcome("applied", "open", OPEN, 1, None, event="created")
    before = rail.counts()
    assert rail.service.open_ticket(issue(3), "open-3") == replace(opened, duplicate=True)
    assert rail.counts() == before

    again = rail.service.open_ticket(issue(3), "open-3-again", draft=True)
    assert again == Outcome(
        "refused",
        "open",
        OPEN,
        1,
        None,
        code="already_tracked",
        message="#3 is already tracked, at revision 1.",
    )
    assert rail.ticket(3) == Ticket(issue(3).key, REPO, OPEN, 1, "olivia", brief=COMPLETE_BRIEF)
    assert rail.counts() == {**before, "operations": before["operations"] + 1}


# ---------------------------------------------------------------------------------------------- refusals


def test_refusals_change_nothing(rail: Rail) -> None:
    self_review = Policy(allow_self_review=False)
    rail.do(4, Command("claim"), ADMIN_A)

    def refused_without_change(command: Command, actor: Actor, code: str, policy: Policy | None = None) -> None:
        ticket_row, before = rail.ticket_row(4), rail.counts()
        outcome = rail.do(4, command, actor, policy)
        assert (outcome.kind, outcome.code) == ("refused", code), outcome
        after_row = rail.ticket_row(4)
        assert after_row == ticket_row  # updated_at included: no write touched the row
        assert (outcome.state, outcome.revision, outcome.runner) == (
            WorkState(after_row.state),
            after_row.revision,
            after_row.runner,
        )
        assert rail.counts() == {**before, "operations": before["operations"] + 1}

    # claimed by agent-a (who has admin rights)
    refused_without_change(Command("claim"), AGENT_B, "wrong_state")
    refused_without_change(Command("deliver", text="mine"), AGENT_B, "not_runner")
    refused_without_change(Command("release"), AGENT_B, "not_runner")
    refused_without_change(Command("release", user="agent-b"), MAINTAINER, "not_runner")
    refused_without_change(Command("accept"), MAINTAINER, "wrong_state")
    refused_without_change(Command("assign"), MAINTAINER, "missing_argument")
    refused_without_change(Command("assign", user="agent-b"), AGENT_B, "not_permitted")
    refused_without_change(Command("withdraw", text="x"), AGENT_B, "not_permitted")
    refused_without_change(Command("withdraw"), OWNER, "missing_argument")
    refused_without_change(Command("publish"), OWNER, "wrong_state")
    refused_without_change(Command("deliver", rev=1), ADMIN_A, "stale_revision")
    refused_without_change(Command("frobnicate"), ADMIN_A, "unknown_command")
    refused_without_change(
        Command("deliver"), ADMIN_A, "missing_evidence", Policy(required_evidence=("tests", "screenshot"))
    )

    assert rail.do(4, Command("deliver", text="done"), ADMIN_A).applied
    refused_without_change(Command("accept"), ADMIN_A, "self_review", self_review)
    refused_without_change(Command("send-back", text="redo"), ADMIN_A, "self_review", self_review)
    refused_without_change(Command("send-back"), MAINTAINER, "missing_argument")
    refused_without_change(Command("accept"), AGENT_B, "not_reviewer")
    refused_without_change(Command("reopen", text="x"), OWNER, "not_permitted")
    refused_without_change(Command("deliver", text="again"), ADMIN_A, "wrong_state")

    assert rail.do(4, Command("accept"), MAINTAINER).applied
    refused_without_change(Command("withdraw", text="x"), MAINTAINER, "wrong_state")
    refused_without_change(Command("reopen"), MAINTAINER, "missing_argument")
    rail.assert_claims_counted()
    rail.assert_replays()


def test_a_first_command_that_is_refused_still_starts_tracking_the_issue(rail: Rail) -> None:
    outcome = rail.do(6, Command("deliver", text="done"), AGENT_A)
    assert (outcome.kind, outcome.code, outcome.state, outcome.revision) == ("refused", "wrong_state", OPEN, 1)
    assert rail.ticket(6) == Ticket(issue(6).key, REPO, OPEN, 1, "olivia")
    assert [row.type for row in rail.rows(tables.events)] == ["created"]
    rail.assert_replays()


def test_a_notice_is_queued_once_in_the_unit_of_work_that_decides_its_request(
    rail: Rail, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What resolving a caller met (`Resolver`) is told with the decision of the caller's request, before its
    answers, once by its operation id; a decision that fails takes its notice with it, and its retry tells it."""
    words = "Baton cannot use `.github/baton.yml`: `max_active_claims` must be a whole number."
    notice = Notice(issue(9).key, REPO, "agent-a", words, f"{INSTALLATION}:config:digest")
    claim = Request(issue(9), Command("claim"), AGENT_A, "claim-9", Policy(), Source(501), notices=(notice,))
    status = Request(issue(9), Command("status"), AGENT_A, "status-9", Policy(), Source(501), notices=(notice,))

    def lost(*_: Any) -> list[Outcome]:
        raise RuntimeError("the database went away")

    with monkeypatch.context() as patched:
        patched.setattr(rail.service, "_decide_all", lost)
        with pytest.raises(RuntimeError):
            rail.service.apply_all([claim, status])
    assert rail.count(tables.outbox_items) == rail.count(tables.operations) == 0

    first = rail.service.apply_all([claim, status])
    assert first[0].kind == "applied"
    items = [(row.kind, row.author, row.message) for row in rail.rows(tables.outbox_items)]
    assert items == [("reply", "agent-a", words), ("reaction", "agent-a", "+1")]

    again = replace(status, operation_id="status-9-again")
    assert rail.service.apply_all([again])[0].kind == "noted"
    assert [row.message for row in rail.rows(tables.outbox_items)].count(words) == 1


# ---------------------------------------------------------------------------------------------- offer: labeled


def test_with_offer_labeled_an_untracked_issue_is_not_offered_and_a_draft_is_published(rail: Rail) -> None:
    labeled = Policy(offer="labeled")
    refused = rail.do(8, Command("claim"), AGENT_A, labeled, operation_id="comment-400")
    assert refused == Outcome(
        "refused",
        "claim",
        None,
        0,
        None,
        code="not_offered",
        message="#8 is not offered: octo/shop offers only issues labelled `baton`. Ask a maintainer to add the label.",
    )
    assert rail.ticket(8) is None
    assert rail.service.history(issue(8).key) == []
    assert (rail.count(tables.tickets), rail.count(tables.events)) == (0, 0)
    (operation,) = rail.rows(tables.operations)
    assert (operation.id, operation.ticket_id) == ("comment-400", None)
    assert rail.do(8, Command("claim"), AGENT_A, labeled, operation_id="comment-400") == replace(
        refused, duplicate=True
    )
    assert rail.count(tables.operations) == 1

    brief = Brief(
        scope=("src/Billing.tsx",),
        acceptance=("empty state",),
        required_evidence=("tests",),
        reviewer="agent-b",
    )
    opened = rail.service.open_ticket(issue(8), "label-added", draft=True, brief=brief)
    assert opened == Outcome("applied", "open", DRAFT, 1, None, event="created")
    assert rail.ticket(8) == Ticket(issue(8).key, REPO, DRAFT, 1, "olivia", brief=brief)
    (created,) = rail.rows(tables.events)
    assert (created.type, created.actor, created.role, created.operation_id) == (
        "created",
        "olivia",
        "requester",
        "label-added",
    )
    assert created.data == {"state": "draft", "owner": "olivia", "brief": brief.to_dict()}

    claim = rail.do(8, Command("claim"), AGENT_A, labeled)
    assert (claim.kind, claim.code, claim.state) == ("refused", "wrong_state", DRAFT)
    assert rail.do(8, Command("publish"), AGENT_A, labeled).code == "not_permitted"

    published = rail.do(8, Command("publish"), OWNER, labeled)
    assert published == applied("publish", OPEN, 2, None, "published")
    assert rail.rows(tables.events)[-1].role == "task_owner"

    assert rail.do(8, Command("claim"), AGENT_A, labeled).applied
    # The brief survives the round trip: it requires tests and names agent-b as the reviewer.
    assert rail.do(8, Command("deliver", text="no tests"), AGENT_A, labeled).code == "missing_evidence"
    assert rail.do(8, Command("deliver", text="done", evidence=FIRST), AGENT_A, labeled).applied
    accepted = rail.do(8, Command("accept"), AGENT_B, labeled)
    assert accepted == applied("accept", ACCEPTED, 5, "agent-a", "accepted")
    (review,) = rail.rows(tables.reviews)
    assert (review.reviewer, review.role, review.independent) == ("agent-b", "reviewer", True)
    rail.assert_replays()


def test_publishing_an_incomplete_draft_is_refused(rail: Rail) -> None:
    rail.service.open_ticket(issue(11), "draft-11", draft=True, brief=Brief(scope=("a.py",)))
    outcome = rail.do(11, Command("publish"), MAINTAINER)
    assert outcome.code == "incomplete_brief"
    assert rail.ticket(11).state is DRAFT  # type: ignore[union-attr]
    rail.assert_replays()


# ---------------------------------------------------------------------------------------------- claim limit


def test_the_claim_limit_holds_across_tickets_and_the_counts_follow_every_transition(rail: Rail) -> None:
    policy = Policy(max_active_claims=2)
    for number in (1, 2, 3, 4):
        assert rail.service.open_ticket(issue(number), f"open-{number}").applied
    agent_a_upper, agent_a_lower, agent_a_shout = (
        Actor("Agent-A", Permission.READ, collaborator=True),
        Actor("agent-a", Permission.READ, collaborator=True),
        Actor("AGENT-A", Permission.READ, collaborator=True),
    )

    def step(number: int, command: Command, actor: Actor) -> Outcome:
        outcome = rail.do(number, command, actor, policy)
        rail.assert_claims_counted()
        return outcome

    def active(login: str) -> int:
        counted = {row.login: row.active for row in rail.rows(tables.runner_claims)}
        return counted.get(login, 0)

    assert step(1, Command("claim"), agent_a_upper) == applied("claim", CLAIMED, 2, "Agent-A", "claimed")
    assert step(2, Command("claim"), agent_a_lower).applied
    assert active("agent-a") == 2
    assert [row.login for row in rail.rows(tables.runner_claims)] == ["agent-a"]

    refused = step(3, Command("claim"), agent_a_shout)
    assert (refused.kind, refused.code, refused.state, refused.revision) == ("refused", "claim_limit", OPEN, 1)
    assert refused.message == (
        "@AGENT-A already holds 2 claims in octo/shop (the limit is 2). Deliver or /release one before claiming #3."
    )
    assert step(3, Command("claim"), AGENT_B).applied  # the limit is per runner
    assert step(3, Command("release"), AGENT_B).applied

    assert step(1, Command("release"), agent_a_lower) == applied("release", OPEN, 3, None, "released")
    assert active("agent-a") == 1
    assert step(3, Command("claim"), agent_a_upper) == applied("claim", CLAIMED, 4, "Agent-A", "claimed")
    assert active("agent-a") == 2

    assert step(3, Command("deliver", text="done"), agent_a_lower).applied
    assert active("agent-a") == 1
    assert step(2, Command("assign", user="agent-b"), MAINTAINER).applied
    assert (active("agent-a"), active("agent-b")) == (0, 1)
    assert step(3, Command("send-back", text="redo"), MAINTAINER) == applied(
        "send-back", CLAIMED, 6, "Agent-A", "sent_back"
    )
    assert active("agent-a") == 1
    assert step(2, Command("reopen", text="stalled"), MAINTAINER).applied
    assert active("agent-b") == 0
    assert step(1, Command("claim"), agent_a_shout).applied
    assert active("agent-a") == 2
    assert step(4, Command("claim"), agent_a_lower).code == "claim_limit"
    assert step(1, Command("withdraw", text="obsolete"), OWNER).applied
    assert active("agent-a") == 1
    assert step(4, Command("claim"), agent_a_lower).applied
    assert active("agent-a") == 2

    # /assign is a maintainer's decision and is not bound by the limit; reassigning to the same
    # runner (in another case) neither gains nor loses a claim.
    assert step(2, Command("assign", user="AGENT-A"), MAINTAINER).applied
    assert active("agent-a") == 3
    assert step(2, Command("assign", user="agent-a"), MAINTAINER).applied
    assert active("agent-a") == 3
    assert step(2, Command("release", user="agent-a"), MAINTAINER).applied
    assert step(4, Command("reopen", text="x"), MAINTAINER).applied
    assert active("agent-a") == 1
    rail.assert_replays()


# ---------------------------------------------------------------------------------------------- revisions


def test_an_explicit_stale_revision_is_refused(rail: Rail) -> None:
    assert rail.do(5, Command("claim", rev=1), AGENT_A) == applied("claim", CLAIMED, 2, "agent-a", "claimed")
    stale = rail.do(5, Command("deliver", text="done", rev=1), AGENT_A)
    assert stale == Outcome(
        "refused",
        "deliver",
        CLAIMED,
        2,
        "agent-a",
        code="stale_revision",
        message="#5 is at revision 2, not 1: it is claimed by @agent-a now. @agent-a works on it; /deliver comes "
        "next. Send the command again with rev=2 if it still applies.",
    )
    assert rail.do(5, Command("deliver", text="done", rev=3), AGENT_A).code == "stale_revision"
    assert rail.ticket(5).revision == 2  # type: ignore[union-attr]
    assert rail.do(5, Command("deliver", text="done", rev=2), AGENT_A).applied
    # On first sight the new ticket is at revision 1, and a command naming another revision is stale.
    assert rail.do(6, Command("claim", rev=2), AGENT_A).code == "stale_revision"
    assert rail.ticket(6) == Ticket(issue(6).key, REPO, OPEN, 1, "olivia")
    rail.assert_replays()


def test_the_time_in_a_state_moves_with_the_state_or_the_runner_only(rail: Rail) -> None:
    """`tickets.state_since`: a claim, a release, a claim by another runner move it; an edited brief, a refusal
    and a repeated claim do not, though the first of them moves the revision and `updated_at`."""

    def since() -> Any:
        row = rail.ticket_row(8)
        return row.state_since, row.updated_at, row.revision

    rail.do(8, Command("status"), STRANGER)
    opened, _, _ = since()
    assert opened is not None
    rail.do(8, Command("claim"), AGENT_A)
    claimed, claimed_update, _ = since()
    assert claimed > opened
    edited = "```yaml\ntask: Add an empty state\nreviewer: maria\n```"
    assert rail.service.brief_edited(Issue(issue(8).key, REPO, "olivia", edited), "olivia", rail.op())
    assert rail.do(8, Command("claim"), AGENT_B).code is not None  # refused: agent-a holds it
    rail.do(8, Command("claim"), AGENT_A)  # the holder again: nothing changes
    still, updated, revision = since()
    assert (still, revision) == (claimed, 3) and updated > claimed_update
    rail.do(8, Command("release"), AGENT_A)
    released, _, _ = since()
    assert released > claimed
    rail.do(8, Command("claim"), AGENT_B)
    assert since()[0] > released


def test_the_board_read_keeps_the_longest_in_each_state_and_counts_them_all(rail: Rail) -> None:
    for number in (11, 12, 13, 14):
        rail.do(number, Command("status"), STRANGER)
    rail.do(14, Command("claim"), AGENT_A)
    rail.do(11, Command("claim"), AGENT_B)
    rail.do(11, Command("release"), AGENT_B)  # open again, and now the newest open
    board = Reads(rail.store.engine).board(per_state=2)
    assert [(row.ticket.state, row.ticket.number) for row in board.rows] == [(OPEN, 12), (OPEN, 13), (CLAIMED, 14)]
    assert board.totals == {OPEN: 3, CLAIMED: 1}
    assert Reads(rail.store.engine).board(states=(OPEN,), runner="agent-a").totals == {}


def test_the_migration_dates_each_ticket_s_state_from_its_last_move(tmp_path: Path) -> None:
    """Tickets stored before `state_since` existed take the time of their last event that moved the state or
    the runner; a later brief edit is not one."""
    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        upgrade(engine, "0013")
        moved, edited, created = (datetime(2026, 11, day, 9, 0, tzinfo=UTC) for day in (3, 5, 1))
        with engine.begin() as connection:
            ticket = dict(installation_id=7, repository_id=1001, repository=REPO, revision=3, owner="olivia",
                          attempt=1, deliveries=0, created_at=created, updated_at=edited)  # fmt: skip
            connection.execute(tables.tickets.insert(), [
                dict(ticket, id=1, number=1, state="claimed", runner="agent-a"),
                dict(ticket, id=2, number=2, state="open", runner=None, revision=1, updated_at=created),
            ])  # fmt: skip
            event = dict(actor="olivia", role="requester", attempt=0, data={})
            connection.execute(tables.events.insert(), [
                dict(event, ticket_id=1, type="created", revision=1, created_at=created),
                dict(event, ticket_id=1, type="claimed", revision=2, created_at=moved),
                dict(event, ticket_id=1, type="brief_changed", revision=3, created_at=edited),
            ])  # fmt: skip
        upgrade(engine)
        with engine.connect() as connection:
            rows = connection.execute(select(tables.tickets.c.number, tables.tickets.c.state_since)).all()
        assert {number: since.replace(tzinfo=UTC) for number, since in rows} == {1: moved, 2: created}
    finally:
        engine.dispose()


def test_the_migration_moves_each_hooks_payload_to_a_row_of_its_own_and_back(tmp_path: Path) -> None:
    """Hooks stored before `webhook_payloads` existed keep their payloads, taken as before; one emptied by the
    retention has none; going back down puts them in their rows again."""
    from alembic import command

    from baton.environment.clock import SYSTEM
    from baton.store.inbox import Inbox
    from baton.store.migrate import alembic_config

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        upgrade(engine, "0023")
        insert = ("INSERT INTO webhook_deliveries (id, event, action, installation_id, payload, status, attempts, "
                  "received_at) VALUES (?, 'issue_comment', 'created', 7, ?, 'pending', 0, ?)")  # fmt: skip
        with engine.begin() as connection:
            connection.exec_driver_sql(insert, [("kept", '{"a": 1}', "2026-12-01 09:00:00.000000"),
                                                ("emptied", "", "2026-12-01 09:00:01.000000")])  # fmt: skip
        upgrade(engine)
        with engine.connect() as connection:
            moved = dict(
                connection.execute(select(tables.webhook_payloads.c.id, tables.webhook_payloads.c.payload)).all()
            )
        assert moved == {"kept": '{"a": 1}'}
        taken = {hook.id: hook.payload for hook in Inbox(engine, SYSTEM).take_pending()}
        assert taken == {"kept": '{"a": 1}', "emptied": ""}
        config = alembic_config()
        with engine.connect() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0023")
            connection.commit()
        with engine.connect() as connection:
            back = dict(connection.exec_driver_sql("SELECT id, payload FROM webhook_deliveries").all())
        assert back == {"kept": '{"a": 1}', "emptied": ""}
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------------------------- the schema


# SQLite's reflection skips expression indexes, and says so: tests/store/test_board_indexes.py checks them there.
_EXPRESSIONS_UNREFLECTED = pytest.mark.filterwarnings(
    "ignore:Skipped unsupported reflection of expression-based index",
    "ignore:autogenerate skipping metadata-specified expression-based index",
)


@_EXPRESSIONS_UNREFLECTED
def test_the_migrations_create_exactly_the_schema_in_tables(store: Units) -> None:
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), tables.metadata)
    assert differences == []


@_EXPRESSIONS_UNREFLECTED
def test_the_comparison_would_notice_a_table_the_migrations_lack(store: Units) -> None:
    """Guards the test above against comparing nothing."""
    extended = MetaData(naming_convention=tables.metadata.naming_convention)
    for table in tables.metadata.sorted_tables:
        table.to_metadata(extended)
    Table("not_migrated", extended, Column("id", Integer, primary_key=True))
    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), extended)
    assert [(diff[0], diff[1].name) for diff in differences] == [("add_table", "not_migrated")]


def test_upgrade_is_idempotent(store: Units) -> None:
    rail = Rail(store)
    assert current(store.engine) == head() == "0025"
    rail.do(1, Command("claim"), AGENT_A)
    upgrade(store.engine)
    upgrade(store.engine)
    assert current(store.engine) == head()
    assert rail.ticket(1) == Ticket(issue(1).key, REPO, CLAIMED, 2, "olivia", runner="agent-a", attempt=1)
    assert rail.count(tables.events) == 2


def test_sqlite_connections_use_wal_and_a_busy_timeout(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        for _ in range(2):
            with engine.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
                assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_the_newest_migration_read_from_the_files_is_alembics() -> None:
    from baton.store.migrate import _alembic_head

    assert head() == _alembic_head() is not None
