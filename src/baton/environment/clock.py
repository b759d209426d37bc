"""The time Baton acts on: the wall clock in production, a clock a test moves by hand.

One `Clock` is shared by everything that asks "how long has this been quiet": the units of work that
record a runner's activity, and the sweep that compares it with a repository's `stale_after`. Standard
library only, so every layer may use it.
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


SYSTEM = SystemClock()

__all__ = ["SYSTEM", "Clock", "ManualClock", "SystemClock"]
