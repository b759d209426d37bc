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

from sqlalchemy import Connection, Engine, and_, case, insert, select, update
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


class WorkTx:
    """One open transaction. Methods never commit; leaving `Store.transaction()` does."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    # -- idempotency ---------------------------------------------------------------------------

    def operation(self, operation_id: str) -> dict[str, Any] | None:
        row = self.connection.execute(select(t.operations.c.result).where(t.operations.c.id == operation_id)).first()
        return None if row is None else dict(row.result)

    def record_operation(self, operation_id: str, ticket_id: int | None, result: dict[str, Any]) -> None:
        """Raises `IntegrityError` when another transaction recorded the same operation first."""
        self.connection.execute(
            insert(t.operations).values(id=operation_id, ticket_id=ticket_id, result=result, created_at=_now())
        )

    # -- tickets -------------------------------------------------------------------------------

    def ticket(self, key: TicketKey) -> StoredTicket | None:
        row = self.connection.execute(
            select(t.tickets).where(
                t.tickets.c.installation_id == key.installation_id,
                t.tickets.c.repository_id == key.repository_id,
                t.tickets.c.number == key.number,
            )
        ).first()
        return None if row is None else _ticket(row)

    def insert_ticket(self, ticket: Ticket, created: Event, operation_id: str | None) -> int:
        """Raises `IntegrityError` when the ticket was created concurrently."""
        now = _now()
        ticket_id = self.connection.execute(
            insert(t.tickets)
            .values(
                installation_id=ticket.key.installation_id,
                repository_id=ticket.key.repository_id,
                number=ticket.key.number,
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
        """The compare-and-swap: True when this transaction moved the ticket from `expected_revision`."""
        result = self.connection.execute(
            update(t.tickets)
            .where(t.tickets.c.id == ticket_id, t.tickets.c.revision == expected_revision)
            .values(**_fields(ticket))
        )
        return result.rowcount == 1

    # -- claim counting ------------------------------------------------------------------------

    def _claims_row(self, key: TicketKey, login: str) -> Any:
        c = t.runner_claims.c
        return and_(
            c.installation_id == key.installation_id,
            c.repository_id == key.repository_id,
            c.login == login.lower(),
        )

    def claims_held(self, key: TicketKey, login: str) -> int:
        active = self.connection.execute(select(t.runner_claims.c.active).where(self._claims_row(key, login))).scalar()
        return int(active or 0)

    def count_claims(self, before: Ticket, after: Ticket, limit: int | None) -> bool:
        """Move the runners' claim counts from `before` to `after`.

        With `limit`, the gained claim is a conditional increment (`… WHERE active < :limit`), so two
        concurrent claims by one runner cannot both pass the limit. False means the limit held.
        """
        lost = before.runner if before.state is WorkState.CLAIMED else None
        gained = after.runner if after.state is WorkState.CLAIMED else None
        if lost is not None and gained is not None and lost.lower() == gained.lower():
            return True
        active = t.runner_claims.c.active
        if lost is not None:
            self.connection.execute(
                update(t.runner_claims)
                .where(self._claims_row(before.key, lost))
                .values(active=case((active > 0, active - 1), else_=0))
            )
        if gained is None:
            return True
        self._ensure_claims_row(after.key, gained)
        condition = self._claims_row(after.key, gained)
        if limit is not None:
            condition = and_(condition, t.runner_claims.c.active < limit)
        result = self.connection.execute(
            update(t.runner_claims).where(condition).values(active=t.runner_claims.c.active + 1)
        )
        return result.rowcount == 1

    def _ensure_claims_row(self, key: TicketKey, login: str) -> None:
        if self.connection.execute(select(1).where(self._claims_row(key, login))).first() is not None:
            return
        values = {
            "installation_id": key.installation_id,
            "repository_id": key.repository_id,
            "login": login.lower(),
            "active": 0,
        }
        dialect = postgresql if self.connection.dialect.name == "postgresql" else sqlite
        self.connection.execute(dialect.insert(t.runner_claims).values(values).on_conflict_do_nothing())

    # -- history -------------------------------------------------------------------------------

    def append(self, ticket_id: int, event: Event, operation_id: str | None) -> None:
        """Append the event and keep attempts, deliveries and reviews in step with it."""
        now = _now()
        self.connection.execute(
            insert(t.events).values(
                ticket_id=ticket_id,
                type=event.type,
                actor=event.actor,
                role=event.role.value,
                attempt=event.attempt,
                revision=event.revision,
                operation_id=operation_id,
                data=event.data,
                created_at=now,
            )
        )
        data = event.data
        ended = data.get("ended")
        if ended:
            self.connection.execute(
                update(t.attempts)
                .where(
                    t.attempts.c.ticket_id == ticket_id,
                    t.attempts.c.number == ended["attempt"],
                    t.attempts.c.ended_at.is_(None),
                )
                .values(ended_at=now, end_reason=ended["reason"])
            )
        if event.type in ("claimed", "assigned", "sent_back"):
            self.connection.execute(
                insert(t.attempts).values(
                    ticket_id=ticket_id,
                    number=event.attempt,
                    runner=data["runner"],
                    started_revision=event.revision,
                    started_at=now,
                )
            )
        if event.type == "delivered":
            self.connection.execute(
                insert(t.deliveries).values(
                    ticket_id=ticket_id,
                    number=data["delivery"],
                    attempt=event.attempt,
                    runner=event.actor,
                    text=data["text"],
                    evidence=data["evidence"],
                    revision=event.revision,
                    created_at=now,
                )
            )
        review = data.get("review")
        if review:
            self.connection.execute(
                insert(t.reviews).values(
                    ticket_id=ticket_id,
                    attempt=review["attempt"],
                    delivery=review["delivery"],
                    reviewer=event.actor,
                    role=event.role.value,
                    verdict=review["verdict"],
                    independent=review["independent"],
                    note=review["note"],
                    revision=event.revision,
                    created_at=now,
                )
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
