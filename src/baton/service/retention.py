"""The daily prune (`baton.store.retention`), in `baton serve` and `baton worker` alike: one process at a time
prunes (`sweeps`), as the lanes start and then once a day; `baton db prune` prunes at once."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import timedelta

from baton.store.retention import Keep, Pruned, Retention
from baton.store.sweeps import Sweeps

log = logging.getLogger("baton.retention")

SWEEP = "retention"
EVERY = 86400.0  # seconds: once a day
HOLD = timedelta(hours=1)  # a prune that has not ended after this long died with its process


class Pruning:
    def __init__(self, retention: Retention, sweeps: Sweeps, keep: Keep, every: float = EVERY) -> None:
        self.retention = retention
        self.sweeps = sweeps
        self.keep = keep
        self.every = every
        self.holder = f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def step(self) -> float:
        """One round of the lane: prune unless another process pruned less than a day ago (or prunes now).
        Returns the wait until the next round: an hour, so a process that was not the one to prune takes over
        within the hour after the day is up."""
        self.prune(since=timedelta(seconds=self.every))
        return min(self.every, HOLD.total_seconds())

    def prune(self, since: timedelta | None = None) -> Pruned | None:
        """Prune now; None when another process prunes (or, with `since`, pruned less than that ago)."""
        if not self.sweeps.take(SWEEP, self.holder, HOLD, since):
            return None
        try:
            pruned = self.retention.prune(self.keep)
        except BaseException:
            self.sweeps.release(SWEEP, self.holder)
            raise
        self.sweeps.done(SWEEP, self.holder)
        if pruned.total():
            log.info(
                "pruned %d payloads and %d rows of webhook deliveries, %d redeliveries, %d idempotency keys, "
                "%d board sessions", pruned.payloads, pruned.hooks, pruned.redeliveries, pruned.keys,
                pruned.sessions, extra=pruned.counts(),
            )  # fmt: skip
        return pruned
