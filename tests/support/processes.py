"""Stopping the `baton` processes a test started. A process that outlives its test keeps working on the
database the next tests of that pytest worker share (it takes their deliveries, writes to their stand-in):
one that does not stop on SIGTERM in time is killed, whatever the test's outcome."""

from __future__ import annotations

import subprocess


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
