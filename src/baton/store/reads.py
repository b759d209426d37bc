"""Read-only queries for the read API and other viewers, in SQLAlchemy Core over `tables.py`.

Nothing here writes. Each query opens one short connection of its own and leaves it before returning,
so a caller never holds a connection between calls. Under SQLite the connection is marked read-only:
it begins a deferred transaction and takes no writer lock, so reads never wait for writes (WAL).

A ticket with its attempts, deliveries and reviews is read in one transaction: under SQLite that is
one WAL snapshot, a consistent view; under PostgreSQL the connection runs
REPEATABLE READ and read-only, so a transition committed between the statements cannot show a ticket
at one revision beside rows of another.

Repository names and runner logins match case-insensitively, as GitHub compares them. Timestamps come
back as aware datetimes in UTC: SQLite hands SQLAlchemy's `DateTime` back naive (it was written in
UTC), and PostgreSQL in the session's time zone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    RowMapping,
    Select,
    and_,
    bindparam,
    case,
    func,
    select,
    union_all,
)

from baton.domain import Brief, TicketKey, WorkState
from baton.domain.brief import UNSAID_PRIORITY
from baton.domain.issue import IssueState
from baton.domain.weekly import FLOW_EVENTS, WorkTime
from baton.store.dependencies import unblocked

from . import dependencies
from .engine import READ_ONLY
from .tables import attempts, deliveries, events, evidence_rails, issue_states, reviews, ticket_activity, tickets

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

DEFAULT_LIMIT = 100
MAX_LIMIT = 500


@dataclass(frozen=True)
class TicketSummary:
    repository: str  # "owner/name", as stored
    number: int
    state: WorkState
    revision: int
    owner: str
    runner: str | None
    attempt: int  # the current attempt's number; 0 before the first claim
    created_at: datetime
    updated_at: datetime
    title: str | None = None  # the issue's, as GitHub last told it
    repository_id: int = 0  # GitHub's id of the repository
    state_since: datetime | None = None  # when it entered its state, or while claimed its runner's hands
    installation_id: int = 0
    # 0 (p0, first) to 4: the brief's, else the one its labels give (`priority_labels`), else p2
    priority: int = UNSAID_PRIORITY

    @property
    def key(self) -> TicketKey:
        return TicketKey(self.installation_id, self.repository_id, self.number)


@dataclass(frozen=True)
class AttemptRecord:
    number: int
    runner: str
    started_revision: int
    started_at: datetime
    ended_at: datetime | None
    end_reason: str | None


@dataclass(frozen=True)
class DeliveryRecord:
    number: int
    attempt: int
    runner: str
    text: str
    evidence: dict[str, Any]
    revision: int
    created_at: datetime


@dataclass(frozen=True)
class ReviewRecord:
    attempt: int
    delivery: int
    reviewer: str
    role: str
    verdict: str
    independent: bool
    note: str
    revision: int
    created_at: datetime


@dataclass(frozen=True)
class TicketDetail:
    ticket: TicketSummary
    attempts: tuple[AttemptRecord, ...]
    deliveries: tuple[DeliveryRecord, ...]
    reviews: tuple[ReviewRecord, ...]
    evidence: dict[str, Any] | None = None  # the evidence rails as stored; None before their first fact
    evidence_updated_at: datetime | None = None
    brief: Brief | None = None  # the brief in force; None when the issue has none
    issue: IssueState | None = None  # the issue's state on GitHub as last told; None: never told (open)
    blocked_by: tuple[str, ...] = ()  # the open issues it waits for (`owner/repo#N`)
    parent: str | None = None  # the issue it is a sub-issue of (`owner/repo#N`)

    @property
    def ready(self) -> bool:
        """An open task nothing open blocks."""
        return self.ticket.state is WorkState.OPEN and not self.blocked_by


@dataclass(frozen=True)
class BoardRow:
    """A ticket as the board shows it: its summary, its evidence rails as stored (None before their first
    fact), and when its claim was flagged stale (None: it is not)."""

    ticket: TicketSummary
    evidence: dict[str, Any] | None
    stale_at: datetime | None
    review: ReviewRecord | None = None  # the last verdict, which an accepted ticket's words name
    issue: IssueState | None = None  # the issue's state on GitHub as last told; None: never told (open)
    blocked_by: tuple[str, ...] = ()  # an open ticket's open blockers (`owner/repo#N`)


@dataclass(frozen=True)
class RepositoryCounts:
    """How many of a board's tickets one repository has in each state, and how many of its open tasks are ready
    (nothing open blocks them)."""

    repository: str  # "owner/name"
    totals: dict[WorkState, int]  # a state with none is missing
    ready: int


@dataclass(frozen=True)
class Board:
    """A board's tickets, at most so many per state, and how many tickets each state has in all, and per
    repository (by name)."""

    rows: list[BoardRow]
    totals: dict[WorkState, int]  # a state with none is missing
    repositories: list[RepositoryCounts] = field(default_factory=list)


def _issue_row(row: RowMapping) -> IssueState:
    return IssueState(row["issue_state"], row["issue_at"], row["issue_actor"], row["issue_reason"],
                      bool(row["issue_merged"]))  # fmt: skip


def utc(value: datetime) -> datetime:
    """A stored timestamp as an aware datetime in UTC (naive ones were written in UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _maybe_utc(value: datetime | None) -> datetime | None:
    return None if value is None else utc(value)


# When a ticket entered its state (`updated_at` for a row no migration dated: there is none after 0014).
_SINCE = func.coalesce(tickets.c.state_since, tickets.c.updated_at)
# A task's priority: its brief's, else the one its labels give (`priority_labels`), else p2.
_PRIORITY = func.coalesce(tickets.c.priority, tickets.c.label_priority, UNSAID_PRIORITY)

_SUMMARY_COLUMNS = (
    tickets.c.id,
    tickets.c.installation_id,
    tickets.c.repository,
    tickets.c.repository_id,
    tickets.c.number,
    tickets.c.state,
    tickets.c.revision,
    tickets.c.owner,
    tickets.c.runner,
    tickets.c.attempt,
    tickets.c.title,
    tickets.c.created_at,
    tickets.c.updated_at,
    _SINCE.label("state_since"),
    _PRIORITY.label("priority"),
)


def _summary(row: RowMapping) -> TicketSummary:
    return TicketSummary(
        repository=row["repository"],
        number=row["number"],
        state=WorkState(row["state"]),
        revision=row["revision"],
        owner=row["owner"],
        runner=row["runner"],
        attempt=row["attempt"],
        title=row["title"],
        repository_id=row["repository_id"],
        created_at=utc(row["created_at"]),
        updated_at=utc(row["updated_at"]),
        state_since=utc(row["state_since"]),
        installation_id=row["installation_id"],
        priority=row["priority"],
    )


def _found(row: RowMapping) -> tuple[int, TicketSummary, Brief | None, int]:
    """A ticket's id, summary, brief and how many deliveries it had, from a row of `_FIND` or `_FIND_WHOLE`."""
    return int(row["id"]), _summary(row), Brief.from_dict(row["brief"]), int(row["deliveries"])


def _same_name(column: Any, value: str) -> ColumnElement[bool]:
    """Both sides lowered by the database, so the comparison is the same one on every engine."""
    return func.lower(column) == func.lower(value)


# A ticket's statements, built once: agents poll a ticket, and building them cost more than running them.
# (installation, repository id, number) is the ticket's key; the name is only what GitHub calls the
# repository now. A repository deleted and made again under the same name has a new id: the newest ticket
# under the name is the one its URL means.
_NAMED = (func.lower(tickets.c.repository) == func.lower(bindparam("repository")), tickets.c.number == bindparam("n"))
_NEWEST = tickets.c.id.desc()
_FIND = select(*_SUMMARY_COLUMNS, tickets.c.brief, tickets.c.deliveries).where(*_NAMED).order_by(_NEWEST).limit(1)
# The same, with the ticket's evidence rail and its issue's state (at most one row of each): `Reads.ticket` reads all
# three, and one statement cost less than three.
_FIND_WHOLE = (
    select(
        *_SUMMARY_COLUMNS,
        tickets.c.brief,
        tickets.c.deliveries,
        evidence_rails.c.rail,
        evidence_rails.c.updated_at.label("rail_updated_at"),
        *(column.label(f"issue_{column.name}") for column in issue_states.c),
    )
    .outerjoin(evidence_rails, evidence_rails.c.ticket_id == tickets.c.id)
    .outerjoin(issue_states, issue_states.c.ticket_id == tickets.c.id)
    .where(*_NAMED)
    .order_by(_NEWEST)
    .limit(1)
)
_ATTEMPTS = select(attempts).where(attempts.c.ticket_id == bindparam("ticket")).order_by(attempts.c.number)
_DELIVERIES = select(deliveries).where(deliveries.c.ticket_id == bindparam("ticket")).order_by(deliveries.c.number)
_REVIEWS = select(reviews).where(reviews.c.ticket_id == bindparam("ticket")).order_by(reviews.c.id)


_R = TypeVar("_R", bound="DataclassInstance")


def _record(kind: type[_R], row: Mapping[Any, Any], **converted: object) -> _R:
    """A history record (`AttemptRecord` …) from a row whose columns bear its fields' names, taking `converted`
    instead of the row's value where the row's needs converting."""
    return kind(**{f.name: converted[f.name] if f.name in converted else row[f.name] for f in fields(kind)})


def _review(row: Mapping[Any, Any]) -> ReviewRecord | None:
    """A review row (or a join's review columns, None where no review matched)."""
    if row["id"] is None:
        return None
    return _record(ReviewRecord, row, independent=bool(row["independent"]), created_at=utc(row["created_at"]))


class Reads:
    """The read side of the store. Build one from the process's engine; it holds nothing else."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        with self.engine.connect() as connection:
            if connection.dialect.name == "postgresql":
                # Set before the first statement begins the transaction; the pool resets both on return.
                connection.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            else:
                connection.execution_options(**{READ_ONLY: True})  # reads never wait for the writer
            yield connection
            # Leaving without a commit rolls back: there is nothing to keep, and it ends the snapshot.

    @staticmethod
    def _find(
        connection: Connection, repository: str, number: int
    ) -> tuple[int, TicketSummary, Brief | None, int] | None:
        """The ticket's id, summary, brief and how many deliveries it had."""
        row = connection.execute(_FIND, {"repository": repository, "n": number}).mappings().first()
        return None if row is None else _found(row)

    def ticket(self, repository: str, number: int) -> TicketDetail | None:
        """A ticket by repository ("owner/name", any case) and issue number, with its history rows."""
        with self._connect() as connection:
            row = connection.execute(_FIND_WHOLE, {"repository": repository, "n": number}).mappings().first()
            if row is None:
                return None
            ticket_id, summary, brief, delivered = _found(row)
            # A ticket's attempt and delivery counts only rise, with the rows written beside them (`WorkTx.append`):
            # one never claimed has no attempts, one never delivered no deliveries and no reviews, unasked.
            attempt_rows = connection.execute(_ATTEMPTS, {"ticket": ticket_id}).mappings() if summary.attempt else ()
            delivery_rows = connection.execute(_DELIVERIES, {"ticket": ticket_id}).mappings() if delivered else ()
            review_rows = connection.execute(_REVIEWS, {"ticket": ticket_id}) if delivered else ()
            blockers = dependencies.open_blockers(connection, [summary.key]).get(summary.key, [])
            parent = dependencies.parents(connection, {summary.key: summary.repository}).get(summary.key)
            return TicketDetail(
                ticket=summary,
                attempts=tuple(
                    _record(AttemptRecord, a, started_at=utc(a.started_at), ended_at=_maybe_utc(a.ended_at))
                    for a in attempt_rows
                ),
                deliveries=tuple(
                    _record(DeliveryRecord, d, evidence=dict(d.evidence), created_at=utc(d.created_at))
                    for d in delivery_rows
                ),
                reviews=tuple(review for r in review_rows if (review := _review(r._mapping))),
                evidence=None if row["rail_updated_at"] is None else dict(row["rail"]),
                evidence_updated_at=_maybe_utc(row["rail_updated_at"]),
                brief=brief,
                issue=None if row["issue_ticket_id"] is None else _issue_row(row),
                blocked_by=tuple(blockers),
                parent=parent,
            )

    def tickets(
        self,
        *,
        repository: str | None = None,
        state: WorkState | None = None,
        runner: str | None = None,
        limit: int = DEFAULT_LIMIT,
        by_priority: bool = False,
        ready_only: bool = False,
    ) -> list[TicketSummary]:
        """Tickets matching every filter given, by repository (case-insensitively) then issue number; with
        `by_priority`, within a repository the highest priority first (a brief without one counts as p2)."""
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        with self._connect() as connection:
            query: Select[Any] = select(*_SUMMARY_COLUMNS)
            if repository is not None:
                query = query.where(_same_name(tickets.c.repository, repository))
            if state is not None:
                query = query.where(tickets.c.state == state.value)
            if runner is not None:
                query = query.where(_same_name(tickets.c.runner, runner))
            if ready_only:
                query = query.where(unblocked())
            name: ColumnElement[str] = func.lower(tickets.c.repository)
            if connection.dialect.name == "postgresql":
                # Byte order, as SQLite sorts: a locale's collation would order `a-b` and `ab` otherwise.
                name = name.collate("C")
            first = (_PRIORITY,) if by_priority else ()
            query = query.order_by(name, tickets.c.repository, *first, tickets.c.number, tickets.c.id).limit(limit)
            return [_summary(row) for row in connection.execute(query).mappings()]

    def board(
        self,
        *,
        repository: str | None = None,
        states: tuple[WorkState, ...] = tuple(WorkState),
        runner: str | None = None,
        stale: bool = False,
        readable: frozenset[int] | None = None,
        per_state: int = MAX_LIMIT,
    ) -> Board:
        """The tickets in `states` matching the other filters, with their rails and stale flags: in each state
        the `per_state` longest there (the board's order within a column), and how many match in all.
        `stale`: only claims flagged stale. `readable`: only tickets of these repositories (GitHub's ids);
        None: of any."""
        matching: list[ColumnElement[bool]] = []
        if repository is not None:
            matching.append(_same_name(tickets.c.repository, repository))
        if runner is not None:
            matching.append(_same_name(tickets.c.runner, runner))
        if stale:
            matching += [ticket_activity.c.stale_at.is_not(None), tickets.c.state == WorkState.CLAIMED.value]
        if readable is not None:
            matching.append(tickets.c.repository_id.in_(sorted(readable)))
        # the tickets, with their activity when only stale claims are asked for
        source = tickets.outerjoin(ticket_activity, ticket_activity.c.ticket_id == tickets.c.id) if stale else tickets
        ready = func.sum(case((and_(tickets.c.state == WorkState.OPEN.value, unblocked()), 1), else_=0))
        counted = (  # per repository (by id: a renamed one's tickets carry either name) and state
            select(tickets.c.repository_id, func.max(tickets.c.repository), tickets.c.state, func.count(), ready)
            .select_from(source)
            .where(tickets.c.state.in_([state.value for state in states]), *matching)
            .group_by(tickets.c.repository_id, tickets.c.state)
        )
        # Each state's longest there, read along the index of that order (tables.py) and stopped at `per_state`.
        firsts = [
            select(tickets.c.id)
            .select_from(source)
            .where(tickets.c.state == state.value, *matching)
            .order_by(_SINCE, tickets.c.id)
            .limit(per_state)
            .subquery()
            for state in states
        ]
        shown = union_all(*(select(first.c.id) for first in firsts))
        newer = reviews.alias("newer")
        last = (
            select(func.max(newer.c.id)).where(newer.c.ticket_id == tickets.c.id).correlate(tickets).scalar_subquery()
        )
        query: Select[Any] = (
            select(
                *_SUMMARY_COLUMNS,
                evidence_rails.c.rail,
                ticket_activity.c.stale_at,
                *(column.label(f"review_{column.name}") for column in reviews.c),
                *(column.label(f"issue_{column.name}") for column in issue_states.c),
            )
            .outerjoin(evidence_rails, evidence_rails.c.ticket_id == tickets.c.id)
            .outerjoin(ticket_activity, ticket_activity.c.ticket_id == tickets.c.id)
            .outerjoin(reviews, reviews.c.id == last)
            .outerjoin(issue_states, issue_states.c.ticket_id == tickets.c.id)
            .where(tickets.c.id.in_(shown))
            .order_by(_SINCE, tickets.c.id)
        )
        rows: list[BoardRow] = []
        with self._connect() as connection:
            totals: dict[WorkState, int] = {}
            places: dict[int, RepositoryCounts] = {}
            for repository_id, name, state, count, open_ready in connection.execute(counted):
                totals[WorkState(state)] = totals.get(WorkState(state), 0) + int(count)
                place = places.setdefault(repository_id, RepositoryCounts(name, {}, 0))
                place.totals[WorkState(state)] = int(count)
                if state == WorkState.OPEN.value:
                    places[repository_id] = replace(place, ready=int(open_ready or 0))
            found = list(connection.execute(query).mappings())
            waiting = [_summary(row).key for row in found if row["state"] == WorkState.OPEN.value]
            blockers = dependencies.open_blockers(connection, waiting)
            for row in found:
                summary = _summary(row)
                rows.append(
                    BoardRow(
                        summary,
                        None if row["rail"] is None else dict(row["rail"]),
                        # only a claim is stale, as the status comment shows it
                        _maybe_utc(row["stale_at"]) if summary.state is WorkState.CLAIMED else None,
                        _review({name[7:]: value for name, value in row.items() if name.startswith("review_")}),
                        None if row["issue_state"] is None else _issue_row(row),
                        tuple(blockers.get(summary.key, ())),
                    )
                )
        return Board(rows, totals, sorted(places.values(), key=lambda place: place.repository.lower()))

    def work_times(
        self, *, since: datetime, repository: str | None = None, readable: frozenset[int] | None = None
    ) -> list[WorkTime]:
        """The claim, assignment, send-back, delivery and acceptance times of every ticket with one of them at
        or after `since`, in one statement: all of such a ticket's, so an attempt begun before `since` still
        has its start (the charts, domain/weekly.py). `readable`: only tickets of these repositories."""
        kinds = sorted(FLOW_EVENTS)
        recent = select(events.c.ticket_id).where(
            events.c.type.in_(kinds), events.c.created_at >= since.astimezone(UTC)
        )
        query = (
            select(events.c.ticket_id, events.c.type, events.c.attempt, events.c.created_at)
            .where(events.c.type.in_(kinds), events.c.ticket_id.in_(recent))
            .order_by(events.c.id)
        )
        if repository is not None or readable is not None:
            query = query.join(tickets, tickets.c.id == events.c.ticket_id)
        if repository is not None:
            query = query.where(_same_name(tickets.c.repository, repository))
        if readable is not None:
            query = query.where(tickets.c.repository_id.in_(sorted(readable)))
        with self._connect() as connection:
            return [
                WorkTime(row.ticket_id, row.type, row.attempt, utc(row.created_at)) for row in connection.execute(query)
            ]


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "AttemptRecord",
    "Board",
    "BoardRow",
    "DeliveryRecord",
    "Reads",
    "ReviewRecord",
    "TicketDetail",
    "TicketSummary",
    "utc",
]
