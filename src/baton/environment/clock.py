"""The time Baton acts on: the wall clock in production, a clock a test moves by hand.

One `Clock`, made where a process is assembled (`create_app`, `assemble`, the CLI), is passed to everything that
reads the time: the times stored in rows and events, due times, leases, idempotency and redelivery windows, write
budgets, session expiry, the sweeps, the metrics' ages. Nothing else in Baton reads the wall clock (the
architecture test says so); durations measured for logs use `time.monotonic()`. Standard library only, so every
layer may use it.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, aware, in UTC."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to (`advance`), from `start` (default: the wall clock now)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, by: timedelta) -> datetime:
        with self._lock:
            self._now += by
            return self._now


class ShiftedClock:
    """The wall clock, moved forward by hand (`advance`): a running Baton's lanes wait out their real delays (an
    answer's coalescing window, a write budget's spacing) while a test makes days pass at once."""

    def __init__(self) -> None:
        self._shift = timedelta(0)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return datetime.now(UTC) + self._shift

    def advance(self, by: timedelta) -> datetime:
        with self._lock:
            self._shift += by
        return self.now()


SYSTEM = SystemClock()

__all__ = ["SYSTEM", "Clock", "ManualClock", "ShiftedClock", "SystemClock"]
