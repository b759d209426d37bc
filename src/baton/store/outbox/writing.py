"""The writer's side of the outbox: which installation to write for, its most urgent issue, what to show,
what was sent. (Rows are marked due, and answers queued, by `marking.OutboxTx` inside the transaction of the
change.)

Rows are written for one installation at a time by whichever writer holds it (`budget.Budgets.hold`), so
there is no lease per row: the holder takes the most urgent due row of its installation (a 👍 waiting
first, then a changed ticket, then an issue only being offered; the oldest first within each), works on
it, and puts it back or clears it. Reconciling is idempotent (labels and assignees are compared first, the
status comment and replies are found by their markers), so doing an issue twice after a crash doubles
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, Engine, and_, bindparam, case, delete, desc, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from baton.domain import TicketKey
from baton.domain.quiet import Quiet
from baton.domain.status import BriefChange, CheckView, Review
from baton.environment.clock import Clock

from .. import dependencies
from .. import tables as t
from ..engine import reader
from ..work import StoredTicket, WorkTx, loaded
from .marking import OFFERING, ORDINARY, URGENT

# A check-run creation not finished after this long died with its writer.
LEASE = timedelta(seconds=60)
# GitHub failing an issue's writes for a passing reason (5xx, a timeout, a lost connection) puts the issue back
# after 1, 2, 4 … seconds, then every five minutes; a 👍, a reply or a status update is given up only after a
# day of tries, so an outage shorter than that loses nothing.
BACKOFF_CAP = 300.0
TRY_FOR = timedelta(hours=24)


def backoff(attempts: int) -> float:
    """Seconds before the next try of an issue GitHub failed `attempts` times in a row (0: the first failure)."""
    return float(min(BACKOFF_CAP, 2 ** min(attempts, 16)))


def _tries_for(span: timedelta) -> int:
    """The tries whose waits add up to `span`: a row that failed this many times has been tried for at least that
    long (each try comes no sooner than its wait)."""
    tries, waited = 0, 0.0
    while waited < span.total_seconds():
        waited += backoff(tries)
        tries += 1
    return tries


MAX_ATTEMPTS = _tries_for(TRY_FOR)  # 296: a row failed this many times in a row waits for the issue's next change

_o = t.outbox.c
_i = t.outbox_items.c
_k = t.tickets.c
# An answer's ticket, and its issue's outbox row: the answers name their issue by its three keys.
_ITEM_TICKET = and_(_k.installation_id == _i.installation_id, _k.repository_id == _i.repository_id,
                    _k.number == _i.number)  # fmt: skip
_ITEM_ISSUE = and_(_o.installation_id == _i.installation_id, _o.repository_id == _i.repository_id,
                   _o.number == _i.number)  # fmt: skip


@dataclass(frozen=True)
class Due:
    key: TicketKey
    repository: str
    version: int
    attempts: int
    urgency: int = ORDINARY  # URGENT, ORDINARY or OFFERING (`marking`): the last is held to offering's share


@dataclass(frozen=True)
class Item:
    id: int
    kind: str  # reaction | reply
    comment_id: int | None
    author: str
    message: str
    due_at: datetime | None = None  # a reply waits until then for others to share its comment


# An uninstalled or suspended installation's answers wait (GitHub would refuse them anyway).
_stopped = (
    select(t.installations.c.id)
    .where(t.installations.c.id == _o.installation_id, t.installations.c.status != "active")
    .exists()
)

_b = t.write_budgets.c
# Before each write that is not a 👍: does another issue of the installation have more urgent writes waiting?
_URGENT_ELSEWHERE = (
    select(_o.number)
    .where(
        _o.installation_id == bindparam("installation"),
        _o.urgency < bindparam("below"),
        _o.due_at <= bindparam("now"),
        _o.attempts < MAX_ATTEMPTS,
        ~and_(_o.repository_id == bindparam("repository"), _o.number == bindparam("number")),
    )
    .limit(1)
)
# The write lane's look, built once: an idle process runs it every `write_poll`.
_DUE_INSTALLATIONS = (
    select(_o.installation_id)
    .select_from(t.outbox.outerjoin(t.write_budgets, _b.installation_id == _o.installation_id))
    .where(
        _o.due_at <= bindparam("now"),
        _o.attempts < MAX_ATTEMPTS,
        ~_stopped,
        or_(
            _b.installation_id.is_(None),
            and_(
                or_(_b.held_until.is_(None), _b.held_until < bindparam("now")),
                or_(_b.paused_until.is_(None), _b.paused_until <= bindparam("now")),
                or_(_b.next_at.is_(None), _b.next_at <= bindparam("soon")),
            ),
        ),
    )
    .group_by(_o.installation_id)
    .order_by(func.min(_o.urgency), func.min(_o.due_at))
    .limit(bindparam("limit"))
)


def _at(key: TicketKey) -> ColumnElement[bool]:
    return and_(
        _o.installation_id == key.installation_id,
        _o.repository_id == key.repository_id,
        _o.number == key.number,
    )


def _items_at(key: TicketKey) -> ColumnElement[bool]:
    return and_(
        _i.installation_id == key.installation_id,
        _i.repository_id == key.repository_id,
        _i.number == key.number,
    )


def utc(value: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; they are UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class Outbox:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock
        self._reads = reader(engine)  # what only reads takes no lock (the write lanes look often)

    def due_installations(
        self, soon: datetime | None = None, now: datetime | None = None, limit: int = 20
    ) -> list[int]:
        """Installations with rows due now that a writer may take: not held by another writer, not paused,
        their budget allowing a write before `soon`. Most urgent first."""
        now = now or self.clock.now()
        with self._reads.connect() as connection:
            found = connection.execute(_DUE_INSTALLATIONS, {"now": now, "soon": soon or now, "limit": limit})
            return list(found.scalars())

    def due(
        self, now: datetime | None = None, installation_id: int | None = None, limit: int | None = None
    ) -> list[Due]:
        """The rows due now (of one installation, when given), most urgent first: a 👍 waiting, then the one
        due longest."""
        query = (
            select(_o.installation_id, _o.repository_id, _o.number, _o.repository, _o.version, _o.attempts, _o.urgency)
            .where(_o.due_at <= (now or self.clock.now()), _o.attempts < MAX_ATTEMPTS, ~_stopped)
            .order_by(_o.urgency, _o.due_at, _o.number)
            .limit(limit)
        )
        if installation_id is not None:
            query = query.where(_o.installation_id == installation_id)
        with self._reads.connect() as connection:
            rows = connection.execute(query).all()
        return [Due(TicketKey(r.installation_id, r.repository_id, r.number), r.repository, r.version, r.attempts,
                    r.urgency) for r in rows]  # fmt: skip

    def most_urgent(self, installation_id: int) -> Due | None:
        """The installation's next row to write."""
        found = self.due(installation_id=installation_id, limit=1)
        return found[0] if found else None

    def urgent_elsewhere(self, key: TicketKey, now: datetime | None = None, below: int = ORDINARY) -> bool:
        """Whether another issue of the installation has writes due more urgent than `below` (a 👍 waiting,
        by default; for an issue only being offered, any change): they go before this issue's writes."""
        now = now or self.clock.now()
        values = {"installation": key.installation_id, "repository": key.repository_id, "number": key.number}
        with self._reads.connect() as connection:
            row = connection.execute(_URGENT_ELSEWHERE, {**values, "now": now, "below": below}).first()
        return row is not None

    def offer_later(self, installation_id: int, until: datetime) -> None:
        """Offering's share of the budget allows no write before `until`: the installation's issues that are
        only being offered wait until then (one that changes meanwhile leaves their tier, and is due at once)."""
        with self.engine.begin() as connection:
            connection.execute(
                update(t.outbox)
                .where(_o.installation_id == installation_id, _o.urgency >= OFFERING, _o.due_at < until)
                .values(due_at=until)
            )

    def to_offer(self, installation_id: int | None = None) -> int:
        """Issues offered and not shown on GitHub yet (of one installation, when given)."""
        query = select(func.count()).select_from(t.outbox).where(_o.urgency >= OFFERING, _o.attempts < MAX_ATTEMPTS)
        if installation_id is not None:
            query = query.where(_o.installation_id == installation_id)
        with self._reads.connect() as connection:
            return int(connection.execute(query).scalar_one())

    def answered(self, key: TicketKey) -> bool:
        """Whether a command on the issue was ever answered there (a 👍 or a reply, sent or waiting)."""
        with self._reads.connect() as connection:
            return connection.execute(select(_i.id).where(_items_at(key)).limit(1)).first() is not None

    def ticket(self, key: TicketKey) -> tuple[StoredTicket | None, Review | None, list[str]]:
        """The ticket, its last review, and everyone who has been its runner (to unassign them)."""
        with self.engine.begin() as connection:
            tx = WorkTx(connection, self.clock)
            stored = tx.ticket(key)
            tx.close()
        if stored is None:
            return None, None, []
        with self._reads.connect() as connection:
            review = connection.execute(
                select(t.reviews.c.reviewer, t.reviews.c.independent, t.reviews.c.role)
                .where(t.reviews.c.ticket_id == stored.id, t.reviews.c.verdict == "accepted")
                .order_by(desc(t.reviews.c.id))
                .limit(1)
            ).first()
            runners = connection.execute(
                select(t.attempts.c.runner).where(t.attempts.c.ticket_id == stored.id).distinct()
            ).scalars()
            past = sorted(set(runners))
        return stored, Review(review.reviewer, bool(review.independent), review.role) if review else None, past

    def quiet(self, key: TicketKey) -> Quiet | None:
        """How a claim flagged stale shows its quiet period; None when it is not flagged."""
        a, tk = t.ticket_activity.c, t.tickets.c
        with self._reads.connect() as connection:
            row = connection.execute(
                select(a.last_activity_at)
                .select_from(t.ticket_activity.join(t.tickets, tk.id == a.ticket_id))
                .where(
                    tk.installation_id == key.installation_id,
                    tk.repository_id == key.repository_id,
                    tk.number == key.number,
                    a.stale_at.is_not(None),
                )
            ).first()
        return None if row is None else Quiet(utc(row.last_activity_at))

    def blockers(self, key: TicketKey) -> list[str]:
        """The open issues the issue at `key` waits for (`owner/repo#N`, sorted)."""
        with self._reads.connect() as connection:
            return dependencies.open_blockers(connection, [key]).get(key, [])

    def brief_changes(self, ticket_id: int) -> list[BriefChange]:
        """The ticket's `brief_changed` events, oldest first, as the status comment tells them."""
        e = t.events.c
        with self._reads.connect() as connection:
            rows = connection.execute(
                select(e.revision, e.attempt, e.data)
                .where(e.ticket_id == ticket_id, e.type == "brief_changed")
                .order_by(e.id)
            ).all()
        return [BriefChange(r.revision, r.attempt, tuple(loaded(r.data).get("changes", ()))) for r in rows]

    def items(self, key: TicketKey) -> list[Item]:
        with self._reads.connect() as connection:
            rows = connection.execute(
                select(_i.id, _i.kind, _i.comment_id, _i.author, _i.message, _i.due_at)
                .where(_items_at(key), _i.sent_at.is_(None), _i.dropped.is_(None))
                .order_by(_i.id)
            ).all()
        return [Item(r.id, r.kind, r.comment_id, r.author, r.message, utc(r.due_at) if r.due_at else None)
                for r in rows]  # fmt: skip

    def sent(self, item_ids: list[int], result_id: int | None = None) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                update(t.outbox_items).where(_i.id.in_(item_ids)).values(sent_at=self.clock.now(), result_id=result_id)
            )

    def drop(self, item_ids: list[int], reason: str) -> None:
        """Give answers up for good (GitHub refused them), keeping why on their rows."""
        with self.engine.begin() as connection:
            connection.execute(update(t.outbox_items).where(_i.id.in_(item_ids)).values(dropped=reason[:2000]))

    def status_comment(self, key: TicketKey) -> int | None:
        p = t.projections.c
        with self._reads.connect() as connection:
            return connection.execute(
                select(p.status_comment_id).where(
                    p.installation_id == key.installation_id,
                    p.repository_id == key.repository_id,
                    p.number == key.number,
                )
            ).scalar()

    def remember_status_comment(self, key: TicketKey, comment_id: int) -> None:
        p = t.projections.c
        where = and_(p.installation_id == key.installation_id, p.repository_id == key.repository_id,
                     p.number == key.number)  # fmt: skip
        with self.engine.begin() as connection:
            if connection.execute(update(t.projections).where(where).values(status_comment_id=comment_id)).rowcount:
                return
            connection.execute(
                insert(t.projections).values(
                    installation_id=key.installation_id, repository_id=key.repository_id, number=key.number,
                    status_comment_id=comment_id,
                )
            )  # fmt: skip

    def done(self, due: Due) -> None:
        """Clear the row unless something changed since it was read; then it is due again at once."""
        self.later(due, None)

    def later(self, due: Due, at: datetime | None, urgency: int | None = None) -> None:
        """Put the row back, due at `at` (None: nothing is left to do), with what remains its `urgency`
        (by default: ordinary, or still offering for an issue only being offered).
        A change made meanwhile (its version rose) makes it due at once: that change may carry a 👍."""
        now = self.clock.now()
        if urgency is None:
            urgency = max(ORDINARY, due.urgency)
        with self.engine.begin() as connection:
            if at is None:
                cleared = connection.execute(delete(t.outbox).where(_at(due.key), _o.version == due.version))
                if cleared.rowcount:
                    return
            unchanged = _o.version == due.version
            connection.execute(
                update(t.outbox)
                .where(_at(due.key))
                .values(
                    due_at=case((unchanged, at or now), else_=now),
                    urgency=case((unchanged, urgency), else_=URGENT),
                    attempts=0,
                    last_error=None,
                )
            )

    def retry(self, due: Due, after: float, error: str, *, count: bool = True, fresh: bool = False) -> None:
        """Put the row back after a failure, due in `after` seconds, with the error on it. `count`: the
        failure is one more of its tries (a rate limit is not); `fresh`: its tries start again from none
        (what failed them is gone)."""
        attempts = 0 if fresh else _o.attempts + 1 if count else _o.attempts
        with self.engine.begin() as connection:
            connection.execute(
                update(t.outbox)
                .where(_at(due.key))
                .values(
                    due_at=self.clock.now() + timedelta(seconds=after),
                    attempts=attempts,
                    last_error=error[:2000],
                )
            )

    def park(self, due: Due, error: str) -> None:
        """GitHub refused the issue's state for good: the row keeps the error and waits for the issue's next
        change (which makes it due with its tries counted afresh). Changed meanwhile, it is due at once."""
        with self.engine.begin() as connection:
            parked = connection.execute(
                update(t.outbox)
                .where(_at(due.key), _o.version == due.version)
                .values(attempts=MAX_ATTEMPTS, last_error=error[:2000])
            ).rowcount
            if not parked:
                connection.execute(
                    update(t.outbox).where(_at(due.key)).values(due_at=self.clock.now(), last_error=error[:2000])
                )

    def given_up(self, limit: int = 50) -> list[GivenUp]:
        """What GitHub was never shown, newest first: answers dropped, then issues waiting for their next
        change after GitHub refused their state or failed it on every try."""
        with self._reads.connect() as connection:
            answers = connection.execute(
                select(_k.repository, _i.repository_id, _i.number, _i.kind, _i.dropped, _i.created_at)
                .select_from(t.outbox_items.outerjoin(t.tickets, _ITEM_TICKET))
                .where(_i.dropped.is_not(None))
                .order_by(desc(_i.id))
                .limit(limit)
            ).all()
            issues = connection.execute(
                select(_o.repository, _o.number, _o.last_error)
                .where(_o.attempts >= MAX_ATTEMPTS)
                .order_by(_o.repository, _o.number)
                .limit(limit)
            ).all()
        return [
            GivenUp(r.repository or f"repository {r.repository_id}", r.number, r.kind, r.dropped, utc(r.created_at))
            for r in answers
        ] + [GivenUp(r.repository, r.number, "issue", r.last_error or "", None) for r in issues]

    def oldest_answer(self) -> Waiting | None:
        """The answer (👍 or reply) that has waited longest to be shown on GitHub; None when every answer was sent
        or given up."""
        with self._reads.connect() as connection:
            row = connection.execute(
                select(_k.repository, _i.repository_id, _i.number, _i.kind, _i.created_at, _o.last_error)
                .select_from(t.outbox_items.outerjoin(t.tickets, _ITEM_TICKET).outerjoin(t.outbox, _ITEM_ISSUE))
                .where(_i.sent_at.is_(None), _i.dropped.is_(None))
                .order_by(_i.created_at, _i.id)
                .limit(1)
            ).first()
        if row is None:
            return None
        where = row.repository or f"repository {row.repository_id}"
        return Waiting(where, row.number, row.kind, utc(row.created_at), row.last_error)

    def pending(self) -> int:
        """Issues still to be written (not those waiting for their next change after GitHub refused them)."""
        with self._reads.connect() as connection:
            query = select(func.count()).select_from(t.outbox).where(_o.attempts < MAX_ATTEMPTS)
            return int(connection.execute(query).scalar_one())

    # -- the acceptance check -----------------------------------------------------------------------

    def accepted_heads(self, ticket_id: int) -> tuple[str, ...]:
        """The commits the ticket's last acceptance covered, as the evidence log recorded them with it."""
        e = t.evidence_events.c
        with self._reads.connect() as connection:
            data = connection.execute(
                select(e.data).where(e.ticket_id == ticket_id, e.type == "acceptance").order_by(desc(e.id)).limit(1)
            ).scalar()
        return tuple((data or {}).get("heads", ()))

    def check_run(self, installation_id: int, repository_id: int, head_sha: str) -> KnownCheck | None:
        with self._reads.connect() as connection:
            row = connection.execute(
                select(_c.check_run_id, _c.shown).where(_check_at(installation_id, repository_id, head_sha))
            ).first()
        if row is None:
            return None
        return KnownCheck(row.check_run_id, CheckView(**row.shown) if row.shown else None)

    def claim_check_creation(
        self, installation_id: int, repository_id: int, head_sha: str, replacing: int | None = None
    ) -> str | None:
        """Take the right to create the head's check run, committed before it is created on GitHub, so that
        two writers never both create one and a crash in between is noticed.

        `"fresh"`: no run of Baton's can be on the head; create one. `"recover"`: a creation was left
        unfinished (its lease ran out); look for the run on GitHub before creating one. None: another writer
        is creating it right now. `replacing`: the id of a completed run to be followed by a new one.
        """
        now = self.clock.now()
        where = _check_at(installation_id, repository_id, head_sha)
        with self.engine.begin() as connection:
            if replacing is not None:
                taken = connection.execute(
                    update(t.check_runs)
                    .where(where, _c.check_run_id == replacing)
                    .values(check_run_id=None, shown=None, updated_at=now)
                ).rowcount
                return "fresh" if taken else None
            dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
            inserted = connection.execute(
                dialect.insert(t.check_runs)
                .values(installation_id=installation_id, repository_id=repository_id, head_sha=head_sha, updated_at=now)
                .on_conflict_do_nothing()
                .returning(_c.head_sha)  # the driver's rowcount of INSERT … ON CONFLICT is not reliable
            ).first()
            if inserted:
                return "fresh"
            stolen = connection.execute(
                update(t.check_runs)
                .where(where, _c.check_run_id.is_(None), _c.updated_at < now - LEASE)
                .values(updated_at=now)
            ).rowcount
            return "recover" if stolen else None

    def record_check_run(
        self, installation_id: int, repository_id: int, head_sha: str, check_run_id: int, shown: CheckView
    ) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                update(t.check_runs)
                .where(_check_at(installation_id, repository_id, head_sha))
                .values(check_run_id=check_run_id, shown=shown.to_dict(), updated_at=self.clock.now())
            )


@dataclass(frozen=True)
class Waiting:
    """An answer not yet on GitHub: `what` is `reaction` or `reply`, queued `since`; `error` is GitHub's last
    failure of its issue's writes (None while none failed)."""

    repository: str
    number: int
    what: str
    since: datetime
    error: str | None


@dataclass(frozen=True)
class GivenUp:
    """A write GitHub was never shown: an answer (`what` is `reaction` or `reply`, `at` when it was queued)
    or an issue's labels, assignee and status comment (`issue`), with why."""

    repository: str
    number: int
    what: str
    reason: str
    at: datetime | None


@dataclass(frozen=True)
class KnownCheck:
    """Baton's check run on one head: its id (None while being created) and what was last written to it."""

    check_run_id: int | None
    shown: CheckView | None


_c = t.check_runs.c


def _check_at(installation_id: int, repository_id: int, head_sha: str) -> ColumnElement[bool]:
    return and_(_c.installation_id == installation_id, _c.repository_id == repository_id, _c.head_sha == head_sha)
