"""The unit of work: one transaction on one connection, seen through a facet per concern.

`uow.work` reads and writes the work rail (tickets, events, operations, claim counts), `uow.evidence` the
evidence rails and their log, `uow.activity` runners' activity and stale flags (at the units' `clock`),
`uow.outbox` marks issues due and queues answers, `uow.inbox` finishes the hooks a decision came in. A use case
opens one unit,
and everything it writes commits together or not at all: a `/deliver` records its report on the evidence
rail in the same transaction as the delivery, and every change marks its issue due in that transaction too.

`Units.settle()` runs an attempt in a unit of its own through the store's one retry loop for
compare-and-swap (`baton.store.statements.settle`): an attempt that loses to a concurrent writer (a lost
swap, a unique row written first, or PostgreSQL breaking a deadlock) is rolled back and made again on what
the winner left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

from sqlalchemy import Connection, Engine

from baton.environment.clock import Clock
from baton.store import WorkTx
from baton.store.activity import ActivityTx
from baton.store.engine import reader
from baton.store.evidence import EvidenceTx
from baton.store.inbox import InboxTx
from baton.store.outbox.marking import OutboxTx
from baton.store.statements import settle

T = TypeVar("T")


class UnitOfWork:
    """One open transaction. Leaving `Units.begin()` commits it, or rolls it back on an exception."""

    def __init__(self, connection: Connection, clock: Clock) -> None:
        self.connection = connection
        self.work = WorkTx(connection, clock)
        self.evidence = EvidenceTx(connection, clock)
        self.activity = ActivityTx(connection, clock)
        self.outbox = OutboxTx(connection, clock)
        self.inbox = InboxTx(connection, clock)

    def close(self) -> None:
        self.work.close()
        self.activity.close()
        self.outbox.close()


class Units:
    """Units of work on one database. Build one per process (or per test) from an engine; nothing is global.
    `clock` is the time its rows are written at: activity, due times, timestamps (a test moves it by hand)."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock
        self._reader = reader(engine)

    def begin(self) -> AbstractContextManager[UnitOfWork]:
        return self._unit(self.engine)

    def read(self) -> AbstractContextManager[UnitOfWork]:
        """A unit that only reads: on SQLite it reads a snapshot and waits for no writer."""
        return self._unit(self._reader)

    @contextmanager
    def _unit(self, engine: Engine) -> Iterator[UnitOfWork]:
        with engine.begin() as connection:
            uow = UnitOfWork(connection, self.clock)
            try:
                yield uow
            finally:
                uow.close()

    def settle(self, what: str, attempt: Callable[[UnitOfWork], T]) -> T:
        """`attempt` in a unit of work of its own, made again while it loses to a concurrent writer."""
        return settle(what, lambda: self._once(attempt))

    def _once(self, attempt: Callable[[UnitOfWork], T]) -> T:
        with self.begin() as uow:
            return attempt(uow)
