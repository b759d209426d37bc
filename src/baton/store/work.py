"""Reading and writing the work rail inside one transaction.

`Store.transaction()` hands out a `WorkTx`; the service layer decides and the `WorkTx` writes. The
compare-and-swap is an `UPDATE … WHERE id = :id AND revision = :expected` whose row count decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Connection, Engine, bindparam, case, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from baton.domain import Brief, Event, Role, Ticket, TicketKey, WorkState

from . import tables as t


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class StoredTicket:
    id: int
    ticket: Ticket


def _ticket(row: Any) -> StoredTicket:
    return StoredTicket(
        row.id,
        Ticket(
            key=TicketKey(row.installation_id, row.repository_id, row.number),
            repository=row.repository,
            state=WorkState(row.state),
            revision=row.revision,
            owner=row.owner,
            runner=row.runner,
            attempt=row.attempt,
            deliveries=row.deliveries,
            brief=Brief.from_dict(row.brief),
        ),
    )


def _fields(ticket: Ticket) -> dict[str, Any]:
    return {
        "state": ticket.state.value,
        "revision": ticket.revision,
        "runner": ticket.runner,
        "attempt": ticket.attempt,
        "deliveries": ticket.deliveries,
        "updated_at": _now(),
    }


@dataclass(frozen=True)
class Situation:
    """What one round trip reads before a decision."""

    first: dict[str, Any] | None  # the operation's first result, when it was seen before
    stored: StoredTicket | None
    held: int  # tickets the actor holds as `claimed` in this repository


_c = t.runner_claims.c
_READ = text(
    """
        SELECT tickets.*, operations.result AS first_result, runner_claims.active AS held
        FROM (SELECT 1 AS one) AS one
        LEFT JOIN operations ON operations.id = :operation_id
        LEFT JOIN tickets ON tickets.installation_id = :installation_id
            AND tickets.repository_id = :repository_id AND tickets.number = :number
        LEFT JOIN runner_claims ON runner_claims.installation_id = :installation_id
            AND runner_claims.repository_id = :repository_id AND runner_claims.login = :login
        """
).columns(brief=JSON, first_result=JSON)
_TICKET = select(t.tickets).where(
    t.tickets.c.installation_id == bindparam("installation_id"),
    t.tickets.c.repository_id == bindparam("repository_id"),
    t.tickets.c.number == bindparam("number"),
)
_SWAP = (
    update(t.tickets)
    .where(t.tickets.c.id == bindparam("ticket_id"), t.tickets.c.revision == bindparam("expected"))
    .values({name: bindparam(name) for name in ("state", "revision", "runner", "attempt", "deliveries", "updated_at")})
)
_LOSE_CLAIM = (
    update(t.runner_claims)
    .where(
        _c.installation_id == bindparam("in_installation"),
        _c.repository_id == bindparam("in_repository"),
        _c.login == bindparam("of_login"),
    )
    .values(active=case((_c.active > 0, _c.active - 1), else_=0))
)


def _gain_claim(dialect: str, limited: bool) -> Any:
    """Insert the runner's count at 1, or add one to it; with a limit, only while below it."""
    insert_ = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert_(t.runner_claims)
        .on_conflict_do_update(
            index_elements=[_c.installation_id, _c.repository_id, _c.login],
            set_={"active": _c.active + 1},
            where=(_c.active < bindparam("limit")) if limited else None,
        )
        .returning(_c.active)
    )


_GAIN_CLAIM = {(d, limited): _gain_claim(d, limited) for d in ("postgresql", "sqlite") for limited in (True, False)}


# Built once: the hot path only binds parameters (building a statement costs more than running it).
_INSERT_OPERATION = insert(t.operations)
_INSERT_EVENT = insert(t.events)
_INSERT_ATTEMPT = insert(t.attempts)
_INSERT_DELIVERY = insert(t.deliveries)
_INSERT_REVIEW = insert(t.reviews)
_END_ATTEMPT = update(t.attempts).where(
    t.attempts.c.ticket_id == bindparam("of_ticket"),
    t.attempts.c.number == bindparam("of_attempt"),
    t.attempts.c.ended_at.is_(None),
)


def _key(key: TicketKey) -> dict[str, int]:
    return {"installation_id": key.installation_id, "repository_id": key.repository_id, "number": key.number}


class WorkTx:
    """One open transaction. Methods never commit; leaving `Store.transaction()` does."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def read(self, key: TicketKey, operation_id: str, login: str) -> Situation:
        """The operation's first result, the ticket and the actor's claim count, in one round trip."""
        row = self.connection.execute(_READ, {**_key(key), "operation_id": operation_id, "login": login.lower()}).one()
        return Situation(
            first=row.first_result,
            stored=None if row.id is None else _ticket(row),
            held=int(row.held or 0),
        )

    def record_operation(self, operation_id: str, ticket_id: int | None, result: dict[str, Any]) -> None:
        """Raises `IntegrityError` when another transaction recorded the same operation first."""
        self.connection.execute(
            _INSERT_OPERATION, {"id": operation_id, "ticket_id": ticket_id, "result": result, "created_at": _now()}
        )

    def ticket(self, key: TicketKey) -> StoredTicket | None:
        row = self.connection.execute(_TICKET, _key(key)).first()
        return None if row is None else _ticket(row)

    def insert_ticket(self, ticket: Ticket, created: Event, operation_id: str | None) -> int:
        """Raises `IntegrityError` when the ticket was created concurrently."""
        now = _now()
        ticket_id = self.connection.execute(
            insert(t.tickets)
            .values(
                **_key(ticket.key),
                repository=ticket.repository,
                owner=ticket.owner,
                brief=ticket.brief.to_dict() if ticket.brief else None,
                created_at=now,
                **_fields(ticket),
            )
            .returning(t.tickets.c.id)
        ).scalar_one()
        self.append(ticket_id, created, operation_id)
        return int(ticket_id)

    def swap(self, ticket_id: int, expected_revision: int, ticket: Ticket) -> bool:
        """The compare-and-swap: True when this transaction moved the ticket from `expected_revision`.

        Under PostgreSQL a concurrent writer's row lock makes this wait; once that writer commits, the
        condition is checked again against its row, the revision no longer matches, and 0 rows means lost.
        """
        result = self.connection.execute(
            _SWAP, {"ticket_id": ticket_id, "expected": expected_revision, **_fields(ticket)}
        )
        return result.rowcount == 1

    def count_claims(self, before: Ticket, after: Ticket, limit: int | None) -> bool:
        """Move the runners' claim counts from `before` to `after`.

        With `limit`, the gained claim is a conditional upsert (`… DO UPDATE … WHERE active < :limit`),
        so two concurrent claims by one runner cannot both pass the limit. False means the limit held.
        """
        lost = before.runner if before.state is WorkState.CLAIMED else None
        gained = after.runner if after.state is WorkState.CLAIMED else None
        if lost is not None and gained is not None and lost.lower() == gained.lower():
            return True
        row = {"installation_id": before.key.installation_id, "repository_id": before.key.repository_id}
        if lost is not None:
            self.connection.execute(
                _LOSE_CLAIM,
                {
                    "in_installation": row["installation_id"],
                    "in_repository": row["repository_id"],
                    "of_login": lost.lower(),
                },
            )
        if gained is None:
            return True
        statement = _GAIN_CLAIM[(self.connection.dialect.name, limit is not None)]
        values = {**row, "login": gained.lower(), "active": 1, "limit": limit}
        # No row back means the conflict's WHERE failed: the runner is at the limit.
        return self.connection.execute(statement, values).first() is not None

    # -- history -------------------------------------------------------------------------------

    def append(self, ticket_id: int, event: Event, operation_id: str | None) -> None:
        """Append the event and keep attempts, deliveries and reviews in step with it."""
        now, data, execute = _now(), event.data, self.connection.execute
        common = {"ticket_id": ticket_id, "revision": event.revision, "created_at": now}
        execute(
            _INSERT_EVENT,
            {
                **common,
                "type": event.type,
                "actor": event.actor,
                "role": event.role.value,
                "attempt": event.attempt,
                "operation_id": operation_id,
                "data": data,
            },
        )
        ended = data.get("ended")
        if ended:
            execute(
                _END_ATTEMPT,
                {
                    "of_ticket": ticket_id,
                    "of_attempt": ended["attempt"],
                    "ended_at": now,
                    "end_reason": ended["reason"],
                },
            )
        if event.type in ("claimed", "assigned", "sent_back"):
            execute(
                _INSERT_ATTEMPT,
                {
                    "ticket_id": ticket_id,
                    "number": event.attempt,
                    "runner": data["runner"],
                    "started_revision": event.revision,
                    "started_at": now,
                },
            )
        if event.type == "delivered":
            execute(
                _INSERT_DELIVERY,
                {
                    **common,
                    "number": data["delivery"],
                    "attempt": event.attempt,
                    "runner": event.actor,
                    "text": data["text"],
                    "evidence": data["evidence"],
                },
            )
        review = data.get("review")
        if review:
            execute(
                _INSERT_REVIEW,
                {
                    **common,
                    "attempt": review["attempt"],
                    "delivery": review["delivery"],
                    "reviewer": event.actor,
                    "role": event.role.value,
                    "verdict": review["verdict"],
                    "independent": review["independent"],
                    "note": review["note"],
                },
            )

    def events(self, ticket_id: int) -> list[Event]:
        rows = self.connection.execute(
            select(t.events).where(t.events.c.ticket_id == ticket_id).order_by(t.events.c.id)
        )
        return [Event(row.type, row.actor, Role(row.role), row.revision, row.attempt, dict(row.data)) for row in rows]


class Store:
    """The database. Build one per process (or per test) from an engine; nothing is global."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def transaction(self) -> Iterator[WorkTx]:
        with self.engine.begin() as connection:
            yield WorkTx(connection)

    def dispose(self) -> None:
        self.engine.dispose()


__all__ = ["IntegrityError", "Store", "StoredTicket", "WorkTx"]
