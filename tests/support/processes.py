"""Starting `baton demo` as a newcomer does, and stopping the `baton` processes a test started. A process that
outlives its test keeps working on the database the next tests of that pytest worker share (it takes their
deliveries, writes to their stand-in): one that does not stop on SIGTERM in time is killed, whatever the test's
outcome."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def stop(*processes: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM to each process still running, `grace` seconds for each to exit, then SIGKILL for the rest."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate()
    for process in running:
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def demo(folder: Path) -> subprocess.Popen[str]:
    """`baton demo` serving on a free port, on a SQLite file in `folder`, its output (stderr too) read as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "demo", "--port", "0", "--database", f"sqlite:///{folder / 'demo.db'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
