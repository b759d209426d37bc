"""The writers' gate, on a real database: a write waiting for its turn under GitHub's pacing gives the turn up at
once when the process stops, rather than holding the process's exit for the rest of the wait; the write is left
due (the writer puts it back, `Writer.handle`)."""

from __future__ import annotations

import threading
import time

import pytest

from baton.environment.clock import SYSTEM
from baton.process.writer import Gate, Stopping
from baton.store import make_engine, upgrade
from baton.store.budget import Budgets, Limits
from baton.store.outbox.writing import Outbox

INTERVAL = 60.0  # seconds between two writes: the wait the stop cuts short


def test_a_write_waiting_for_its_turn_gives_it_up_when_the_process_stops(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    upgrade(engine)
    try:
        budgets = Budgets(engine, Limits(interval=INTERVAL), SYSTEM)
        gate = Gate(budgets, Outbox(engine, SYSTEM), patience=INTERVAL + 1.0)
        gate.wait(7)  # the first write goes at once, and the next must wait a whole interval
        outcome: list[BaseException | None] = []

        def waiting() -> None:
            try:
                gate.wait(7)
            except BaseException as error:
                outcome.append(error)
            else:
                outcome.append(None)

        thread = threading.Thread(target=waiting)
        started = time.monotonic()
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive(), "the second write did not wait for its turn"
        gate.stop()
        thread.join(INTERVAL / 3)
        assert not thread.is_alive(), "the stop did not end the wait"
        assert time.monotonic() - started < INTERVAL / 3
        assert len(outcome) == 1 and isinstance(outcome[0], Stopping)
        with pytest.raises(Stopping):  # and the next one, on a stopped gate, gives up too
            gate.wait(7)
    finally:
        engine.dispose()
