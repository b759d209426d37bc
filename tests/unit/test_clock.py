"""The clocks Baton can be assembled with: the wall clock, one a test moves by hand, one the test moves ahead."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from baton.environment.clock import SYSTEM, ManualClock, ShiftedClock

T0 = datetime(2025, 3, 14, 9, 0, tzinfo=UTC)


def test_a_manual_clock_stands_still_until_it_is_moved() -> None:
    clock = ManualClock(T0)
    assert clock.now() == clock.now() == T0
    assert clock.advance(timedelta(minutes=5)) == clock.now() == T0 + timedelta(minutes=5)


def test_a_shifted_clock_runs_with_the_wall_clock_ahead_by_what_it_was_moved() -> None:
    clock = ShiftedClock()
    before = SYSTEM.now()
    assert before <= clock.now() <= SYSTEM.now()
    moved = clock.advance(timedelta(days=4))
    assert before + timedelta(days=4) <= moved <= clock.now() <= SYSTEM.now() + timedelta(days=4)
    assert clock.now().tzinfo == UTC
