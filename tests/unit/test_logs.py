"""How a `baton` process logs: the thread that logs hands the record on unformatted; one listener thread formats
and writes every line, in order, and writes what is still queued when the process ends."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import pytest

from baton.environment.settings import Settings
from baton.process import logs


def test_a_line_is_formatted_and_written_by_the_listener_not_by_the_thread_that_logs(
    configured: list[tuple[str, str]],
) -> None:
    log = logging.getLogger("baton.work")
    for n in range(50):
        log.info("decided /claim by agent-%d on octo/shop#%d", n, n)
    logs._stop_listening()  # what is queued is written before the listener stops
    assert [line.split(": ", 1)[1] for _, line in configured] == [
        f"decided /claim by agent-{n} on octo/shop#{n}" for n in range(50)
    ]
    assert all(thread != threading.current_thread().name for thread, _ in configured)


def test_lines_logged_after_the_listener_went_quiet_wake_it(configured: list[tuple[str, str]]) -> None:
    """The listener takes a burst's lines together and then sleeps until the next line: each burst is written
    whole, whenever it comes."""
    log = logging.getLogger("baton.work")
    for burst in range(3):
        for n in range(20):
            log.info("burst %d line %d", burst, n)
        waited_until = time.monotonic() + 30  # the listener wakes for each burst; 30 s: it never came
        while len(configured) < 20 * (burst + 1):
            assert time.monotonic() < waited_until, f"burst {burst} not written"
            time.sleep(0.01)
    assert [line.split(": ", 1)[1] for _, line in configured] == [
        f"burst {burst} line {n}" for burst in range(3) for n in range(20)
    ]
    listener = logs._listening[0]._thread
    assert listener is not None and {thread for thread, _ in configured} == {listener.name}


def test_what_is_logged_just_before_the_process_ends_is_written() -> None:
    program = (
        "import logging\n"
        "from baton.environment.settings import Settings\n"
        "from baton.process.logs import configure\n"
        "configure(Settings(log_format='json', log_level='INFO'))\n"
        "for n in range(200):\n"
        "    logging.getLogger('baton.work').info('line %d', n)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    lines = done.stderr.splitlines()
    assert len(lines) == 200 and '"message": "line 199"' in lines[-1], done.stderr[-500:]


class Stream:
    """stderr as the listener sees it: what each write carried."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_bursts_lines_leave_in_one_write_not_one_each(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = Stream()
    monkeypatch.setattr(logs.sys, "stderr", stream)
    root = logging.getLogger()
    before = (list(root.handlers), root.level, logging.getLogger("baton").level)
    logs.configure(Settings(log_format="text", log_level="INFO"))
    try:
        log = logging.getLogger("baton.work")
        for n in range(20):
            log.info("decided /claim by agent-%d", n)
        waited_until = time.monotonic() + 30
        while "".join(stream.writes).count("\n") < 20:
            assert time.monotonic() < waited_until, "the burst was not written"
            time.sleep(0.01)
    finally:
        logs._stop_listening()
        root.handlers[:] = before[0]
        root.setLevel(before[1])
        logging.getLogger("baton").setLevel(before[2])
    lines = "".join(stream.writes).splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [f"decided /claim by agent-{n}" for n in range(20)]
    assert len(stream.writes) <= 3  # the first line may leave alone, woken before the rest were logged
