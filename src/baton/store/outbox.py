"""The worker's side of the outbox: take due issues, read what to show, record what was sent.

An issue is taken with a lease (its due time moves a minute ahead), so several workers never work on
one issue at once and a worker that dies mid-batch leaves the issue to be taken again when the lease
runs out. On PostgreSQL the taking query skips rows another worker is taking (`FOR UPDATE SKIP
LOCKED`). Reconciling is idempotent (labels and assignees are compared first, the status comment and
replies are found by their markers), so doing an issue twice after a crash doubles nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, Engine, and_, delete, desc, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from baton.domain import TicketKey
from baton.domain.status import CheckView, Review

from . import tables as t
from .work import Store, StoredTicket

LEASE = timedelta(seconds=60)
MAX_ATTEMPTS = 12

_o = t.outbox.c
_i = t.outbox_items.c


@dataclass(frozen=True)
class Due:
    key: TicketKey
    repository: str
    version: int
    attempts: int


@dataclass(frozen=True)
class Item:
    id: int
    kind: str  # reaction | reply
    comment_id: int | None
    author: str
    message: str


# An uninstalled or suspended installation's answers wait (GitHub would refuse them anyway).
_stopped = (
    select(t.installations.c.id)
    .where(t.installations.c.id == _o.installation_id, t.installations.c.status != "active")
    .exists()
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


class Outbox:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.engine: Engine = store.engine

    def take(self, limit: int = 10, now: datetime | None = None) -> list[Due]:
        """Lease the issues that are due, oldest first."""
        now = now or datetime.now(UTC)
        with self.engine.begin() as connection:
            query = (
                select(_o.installation_id, _o.repository_id, _o.number, _o.repository, _o.version, _o.attempts)
                .where(_o.due_at <= now, _o.attempts < MAX_ATTEMPTS, ~_stopped)
                .order_by(_o.due_at)
                .limit(limit)
            )
            if connection.dialect.name == "postgresql":
                query = query.with_for_update(skip_locked=True)
            rows = connection.execute(query).all()
            taken = []
            for row in rows:
                key = TicketKey(row.installation_id, row.repository_id, row.number)
                connection.execute(update(t.outbox).where(_at(key)).values(due_at=now + LEASE))
                taken.append(Due(key, row.repository, row.version, row.attempts))
        return taken

    def next_due(self) -> datetime | None:
        with self.engine.connect() as connection:
            value = connection.execute(select(func.min(_o.due_at)).where(_o.attempts < MAX_ATTEMPTS)).scalar()
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value

    def ticket(self, key: TicketKey) -> tuple[StoredTicket | None, Review | None, list[str]]:
        """The ticket, its last review, and everyone who has been its runner (to unassign them)."""
        with self.store.transaction() as tx:
            stored = tx.ticket(key)
        if stored is None:
            return None, None, []
        with self.engine.connect() as connection:
            review = connection.execute(
                select(t.reviews.c.reviewer, t.reviews.c.independent)
                .where(t.reviews.c.ticket_id == stored.id, t.reviews.c.verdict == "accepted")
                .order_by(desc(t.reviews.c.id))
                .limit(1)
            ).first()
            runners = connection.execute(
                select(t.attempts.c.runner).where(t.attempts.c.ticket_id == stored.id).distinct()
            ).scalars()
            past = sorted(set(runners))
        return stored, Review(review.reviewer, bool(review.independent)) if review else None, past

    def items(self, key: TicketKey) -> list[Item]:
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(_i.id, _i.kind, _i.comment_id, _i.author, _i.message)
                .where(_items_at(key), _i.sent_at.is_(None))
                .order_by(_i.id)
            ).all()
        return [Item(r.id, r.kind, r.comment_id, r.author, r.message) for r in rows]

    def sent(self, item_ids: list[int], result_id: int | None = None) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                update(t.outbox_items).where(_i.id.in_(item_ids)).values(sent_at=datetime.now(UTC), result_id=result_id)
            )

    def status_comment(self, key: TicketKey) -> int | None:
        p = t.projections.c
        with self.engine.connect() as connection:
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
        """Clear the issue unless something changed since it was taken; then it is due again at once."""
        with self.engine.begin() as connection:
            cleared = connection.execute(delete(t.outbox).where(_at(due.key), _o.version == due.version)).rowcount
            if not cleared:
                connection.execute(
                    update(t.outbox).where(_at(due.key)).values(due_at=datetime.now(UTC), attempts=0, last_error=None)
                )

    def retry(self, due: Due, after: float, error: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                update(t.outbox)
                .where(_at(due.key))
                .values(
                    due_at=datetime.now(UTC) + timedelta(seconds=after),
                    attempts=_o.attempts + 1,
                    last_error=error[:2000],
                )
            )

    def pending(self) -> int:
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(t.outbox)).scalar_one())

    # -- the acceptance check -----------------------------------------------------------------------

    def accepted_heads(self, ticket_id: int) -> tuple[str, ...]:
        """The commits the ticket's last acceptance covered, as the evidence log recorded them with it."""
        e = t.evidence_events.c
        with self.engine.connect() as connection:
            data = connection.execute(
                select(e.data).where(e.ticket_id == ticket_id, e.type == "acceptance").order_by(desc(e.id)).limit(1)
            ).scalar()
        return tuple((data or {}).get("heads", ()))

    def check_run(self, installation_id: int, repository_id: int, head_sha: str) -> KnownCheck | None:
        with self.engine.connect() as connection:
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
        two workers never both create one and a crash in between is noticed.

        `"fresh"`: no run of Baton's can be on the head; create one. `"recover"`: a creation was left
        unfinished (its lease ran out); look for the run on GitHub before creating one. None: another worker
        is creating it right now. `replacing`: the id of a completed run to be followed by a new one.
        """
        now = datetime.now(UTC)
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
                .values(check_run_id=check_run_id, shown=shown.to_dict(), updated_at=datetime.now(UTC))
            )


@dataclass(frozen=True)
class KnownCheck:
    """Baton's check run on one head: its id (None while being created) and what was last written to it."""

    check_run_id: int | None
    shown: CheckView | None


_c = t.check_runs.c


def _check_at(installation_id: int, repository_id: int, head_sha: str) -> ColumnElement[bool]:
    return and_(_c.installation_id == installation_id, _c.repository_id == repository_id, _c.head_sha == head_sha)
