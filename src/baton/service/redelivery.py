"""Missed hooks come back: GitHub never sends a failed webhook again by itself, so a lane of `baton
serve` reads the App's delivery log as it starts and every `BATON_REDELIVER_EVERY` seconds, and asks GitHub to
redeliver what Baton missed.

A sweep reads the log, newest first, back to `WINDOW` (GitHub redelivers only that far back), and asks, oldest
first, for each event (GUID) that

- Baton never stored (the webhook inbox has no hook with that GUID),
- GitHub never delivered (no attempt of the event was answered 2xx), and
- has a newest attempt that failed (not 2xx, or 0: no answer at all) and was never asked for,

at most `MAX_ASKS` times per event: a redelivery that fails again is asked for again at the next sweep,
but an event Baton keeps refusing (a wrong webhook secret) is not asked for for ever. Each entry is asked
for once, by one process (`baton.store.redeliveries`). GitHub's faults end the sweep with one line in the
log (and one when GitHub answers again); the next sweep tries again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from githubkit.exception import RequestError

from baton.github.hooks import Attempt
from baton.github.refusals import failure, refused
from baton.store.redeliveries import Redeliveries

log = logging.getLogger("baton.redelivery")

EVERY = 300.0  # seconds between sweeps (`BATON_REDELIVER_EVERY`; 0 turns the sweep off)
WINDOW = timedelta(hours=72)  # how far back GitHub keeps hooks it will redeliver
MAX_ASKS = 3  # redeliveries asked for one event, ever
MAX_PAGES = 1000  # a bound on one sweep's reading, whatever cursors GitHub hands out
# The lane starts before the server listens; what GitHub redelivers at once must not find it deaf.
START = 2.0


class HookDeliveries(Protocol):
    def page(self, cursor: str | None) -> tuple[list[Attempt], str | None]: ...

    def redeliver(self, attempt_id: int) -> None: ...


@dataclass(frozen=True)
class Swept:
    """What one sweep did: `asked` redeliveries; `failed` when GitHub failed it."""

    read: int = 0
    asked: int = 0
    failed: bool = False


def wanted(attempts: list[Attempt], stored: set[str], asked: set[int], asks: dict[str, int]) -> list[Attempt]:
    """The attempts to ask GitHub to redeliver, oldest event first (see the module's rules)."""
    by_guid: dict[str, list[Attempt]] = {}
    for entry in attempts:
        by_guid.setdefault(entry.guid, []).append(entry)
    chosen: list[tuple[datetime, Attempt]] = []
    for guid, entries in by_guid.items():
        if guid in stored or any(not entry.failed for entry in entries) or asks.get(guid, 0) >= MAX_ASKS:
            continue
        newest = max(entries, key=lambda entry: (entry.delivered_at, entry.id))
        if newest.id not in asked:
            chosen.append((min(entry.delivered_at for entry in entries), newest))
    return [entry for _, entry in sorted(chosen, key=lambda pair: (pair[0], pair[1].id))]


class Redelivery:
    def __init__(self, github: HookDeliveries, store: Redeliveries, every: float = EVERY) -> None:
        self.github = github
        self.store = store
        self.every = every
        self._failing = False  # GitHub failed the last sweep: said once, until a sweep gets through
        self._started = False

    def step(self) -> float:
        """One sweep, for the lane (the first `START` seconds after it starts); returns the wait until the next."""
        if not self._started:
            self._started = True
            return START
        self.sweep()
        return self.every

    def sweep(self) -> Swept:
        since = self.store.clock.now() - WINDOW
        # Without the database nothing read could be acted on: the lane backs off before GitHub is called.
        self.store.ping()
        try:
            attempts = self._read(since)
        except RequestError as error:
            self._failed("read", error)
            return Swept(failed=True)
        guids = {entry.guid for entry in attempts}
        asked, asks = self.store.asked(guids)
        todo = wanted(attempts, self.store.stored(guids), asked, asks)
        count = 0
        for entry in todo:
            if not self.store.take(entry.id, entry.guid, entry.event):
                continue  # another process asks for it
            try:
                self.github.redeliver(entry.id)
            except RequestError as error:
                if refused(error):
                    self.store.refused(entry.id, failure(error))
                    log.warning("GitHub refused to redeliver %s (%s): %s", entry.guid, entry.event, failure(error))
                    continue
                self.store.release(entry.id)
                self._failed("redeliver", error)
                return Swept(len(attempts), count, failed=True)
            self.store.done(entry.id)
            count += 1
        if self._failing:
            log.warning("GitHub's webhook delivery log answers again")
            self._failing = False
        if count:
            log.info("asked GitHub to redeliver %d missed deliveries", count)
        return Swept(len(attempts), count)

    def _read(self, since: datetime) -> list[Attempt]:
        attempts: list[Attempt] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page, cursor = self.github.page(cursor)
            attempts += [entry for entry in page if entry.delivered_at >= since]
            if cursor is None or any(entry.delivered_at < since for entry in page):
                break
        return attempts

    def _failed(self, doing: str, error: RequestError[Exception]) -> None:
        if self._failing:
            log.debug("GitHub's webhook delivery log still fails")
            return
        self._failing = True
        action = "read the App's webhook deliveries" if doing == "read" else "ask for a redelivery"
        log.warning("could not %s (%s); the next sweep tries again", action, failure(error))
