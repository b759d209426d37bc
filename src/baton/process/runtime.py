"""The lanes, in `baton serve` and in `baton worker`: deciding stored hooks, and writing to GitHub,
side by side, so a decision never waits for a GitHub write, a verification read or the write budget.

- The decide lane takes the pending hooks in batches, oldest first, and decides them (the commands on
  one ticket in one transaction); then it wakes the writers.
- The write lane is a few threads; each holds one installation at a time (`baton.process.writer`), so one
  installation's backlog, slowness or rate limit holds one thread while the others serve the rest. While
  there is nothing to write, only the first thread looks for writes come due; it wakes the next when it
  finds more installations due than it can take, and that one the next.
- The sweep lane looks for quiet claims every 30 seconds (`baton.service.quiet`): it flags them stale, or
  releases them where a repository sets `auto_release_after`. Every process runs it; the compare-and-swap of
  each action keeps two processes from doing it twice.

While the database is unreachable every lane backs off, and the process says so once when it begins and
once when it ends (`Outage`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable

from baton.github.client import WouldWait, not_waiting
from baton.intake import comments_only, decide
from baton.process.wiring import Parts
from baton.store.engine import checkpoints, describe, unreachable, writing_at_hand

log = logging.getLogger("baton.runtime")

BATCH = 200  # hooks decided per round of the decide lane
# A round at hand that finds the writer lock taken (mostly by the acks of the same burst being stored) looks again
# after each of these seconds, before it leaves the hooks to the decide lane, which would wait for the lock as well.
AGAIN_AT_HAND = (0.001, 0.002, 0.004, 0.008)
# Seconds an idle write lane but the first waits before it looks on its own. The first looks every
# `write_poll`, and wakes the next when more installations are due than it can take at once.
RESTING_WRITER = 5.0
BACKOFF = (0.5, 1.0, 2.0, 5.0)  # seconds a lane waits after its 1st, 2nd, 3rd … failure in a row


class Outage:
    """The database being unreachable, as the lanes of one process find it: one line when the first lane
    meets it, one when a lane reaches the database again (instead of a traceback per round)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: float | None = None

    def failed(self, error: BaseException) -> None:
        with self._lock:
            if self._since is None:
                self._since = time.monotonic()
                log.warning("the database is unreachable (%s); the lanes try again with backoff", describe(error))

    def succeeded(self) -> None:
        if self._since is None:  # the usual case, without taking the lock
            return
        with self._lock:
            if self._since is not None:
                log.warning("the database is reachable again, after %.1f s", time.monotonic() - self._since)
                self._since = None


class Lane:
    """A thread that runs `step` again and again: at once when woken, else after the wait `step` returns.
    A round that fails is tried again after a growing wait (`BACKOFF`); `outage` hears of those that
    failed because the database could not be reached."""

    def __init__(self, name: str, step: Callable[[], float], outage: Outage | None = None) -> None:
        self.step = step
        self.outage = outage or Outage()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def looking(self) -> None:
        """`step` is about to look for work: the wakes until now are answered by this round, so the lane does not
        run again at once for them."""
        self._wake.clear()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self._wake.clear()
            try:
                wait = self.step()
            except Exception as error:  # nothing must end the lane; the rows are still there
                if unreachable(error):
                    self.outage.failed(error)
                elif failures == 0:  # the first of a run of failures in a row, not each of them
                    log.exception("%s: a round failed", self._thread.name)
                wait = BACKOFF[min(failures, len(BACKOFF) - 1)]
                failures += 1
                # A wake (a stored hook) does not cut a backoff short: wait it out.
                self._stop.wait(wait)
                continue
            failures = 0
            self.outage.succeeded()
            if wait > 0:
                self._wake.wait(wait)


class Runtime:
    """Both lanes of one process. `before_batch` runs before each decide round (`baton serve` lets the
    acknowledgements waiting at that moment go first); `poll` is how often each lane looks for work that
    another process stored."""

    def __init__(
        self,
        parts: Parts,
        *,
        writers: int = 4,
        poll: float = 0.05,
        write_poll: float = 0.2,
        before_batch: Callable[[], None] | None = None,
        sweep: bool = True,
    ) -> None:
        self.parts = parts
        self.poll = poll
        self.write_poll = write_poll
        self.before_batch = before_batch
        self._stopping = threading.Event()
        self._next_writer = 0
        self._stored = False  # a hook was stored (`wake`) since the decide lane last looked
        # On SQLite, stored comments are decided on the event loop when nothing is to be waited for (`stored`).
        self.at_hand = parts.engine.dialect.name == "sqlite"
        self._scheduled = False  # a round at hand is scheduled on the loop
        self._prepare = parts.prepare
        self.outage = Outage()
        self.decider = Lane("baton-decide", self._decide, self.outage)
        self.writers = [
            Lane(f"baton-write-{n}", functools.partial(self._write, n), self.outage)
            for n in range(writers if parts.writer else 0)
        ]
        self.sweeper = Lane("baton-sweep", parts.sweep.step, self.outage) if sweep else None
        # What is kept only for a while, pruned once a day by one process (`baton.service.retention`).
        self.pruner = Lane("baton-prune", parts.pruning.step, self.outage) if sweep and parts.pruning else None
        # On SQLite, the log is checkpointed here rather than at the commit that grows it long (`Checkpoints`).
        self.checkpoints = checkpoints(parts.engine)
        self.checkpointer = Lane("baton-checkpoint", self.checkpoints.step, self.outage) if self.checkpoints else None
        # On PostgreSQL, hooks another process stores wake the decide lane at once.
        self._listener = threading.Thread(
            target=parts.inbox.listen, args=(self.decider.wake, self._stopping), name="baton-listen", daemon=True
        )

    def _lanes(self) -> list[Lane]:
        others = (self.sweeper, self.pruner, self.checkpointer)
        return [self.decider, *self.writers, *(lane for lane in others if lane is not None)]

    def start(self) -> None:
        for lane in self._lanes():
            lane.start()
        self._listener.start()

    def wake(self) -> None:
        """A hook was stored."""
        self._stored = True
        self.decider.wake()

    def stored(self) -> None:
        """A hook was stored by this process's webhook route, on its event loop. On SQLite a round is decided there
        once the acknowledgements being written have left (`_decide_here`); otherwise, and whenever that cannot be
        done without waiting, the decide lane is woken."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop
            loop = None
        if not self.at_hand or loop is None:
            self.wake()
            return
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(loop.call_soon, self._decide_here, 0)  # after the answers the acks' callbacks queued

    def _decide_here(self, tries: int = 0) -> None:
        """A decide round on the event loop: the comments stored (and nothing else), decided in one transaction
        while the process's writer lock is free and everything GitHub would be asked is known (`not_waiting`).
        They are not taken first: that transaction finishes them with their decisions, and no other thread of the
        process takes hooks while this one holds the lock (nor, on SQLite with the lanes in `baton serve`, another
        process). Hooks tried before, anything but comments, or comments that need more (`decide(...,
        at_hand=True)` raises `WouldWait` before anything is decided) are left to the decide lane, which takes
        them."""
        self._scheduled = False
        parts = self.parts
        if not parts.intake.own_login_known:
            self.wake()
            return
        try:
            with writing_at_hand(parts.engine) as free:
                if not free:
                    if tries < len(AGAIN_AT_HAND):  # stays scheduled: the hooks stored meanwhile are taken then
                        self._scheduled = True
                        asyncio.get_running_loop().call_later(AGAIN_AT_HAND[tries], self._decide_here, tries + 1)
                    else:
                        self.wake()
                    return
                with not_waiting():
                    hooks = parts.inbox.ready(BATCH, known=parts.intake.parsed.text)
                    if not hooks:
                        return
                    if any(hook.attempts for hook in hooks) or not comments_only(hooks):
                        raise WouldWait("more than comments stored just now")
                    decide(parts.inbox, parts.intake, hooks, at_hand=True)
        except WouldWait:
            self.wake()
            return
        except Exception as error:  # the decide lane meets it again, and says so
            log.debug("deciding at hand failed (%s): left to the decide lane", describe(error))
            self.wake()
            return
        self._wake_a_writer()

    def stop(self, timeout: float = 10.0) -> None:
        lanes = self._lanes()
        self._stopping.set()
        if self.parts.writer is not None:
            self.parts.writer.gate.stop()  # a write waiting for GitHub's pacing stays due rather than holding the exit
        for lane in lanes:
            lane.stop()
        deadline = time.monotonic() + timeout
        for lane in lanes:
            lane.join(max(0.0, deadline - time.monotonic()))
        if self.checkpoints is not None and self.checkpointer is not None and not self.checkpointer.alive():
            self.checkpoints.close()

    def _decide(self) -> float:
        if self._prepare is not None:  # once, before the first round (and before any round at hand: `own_login_known`)
            prepare, self._prepare = self._prepare, None
            prepare()
        # Baton's own login, before the first hook that may be its own label write coming back
        self.parts.intake.own_login()
        inbox = self.parts.inbox
        if self.before_batch is not None:
            self.before_batch()
        # The hooks stored until now are all taken below: a wake before this point needs no round of its own.
        self.decider.looking()
        stored, self._stored = self._stored, False
        hooks = inbox.take_pending(BATCH, look=not stored, known=self.parts.intake.parsed.text)
        if not hooks:
            return self.poll
        decide(inbox, self.parts.intake, hooks)
        self._wake_a_writer()
        return 0.0  # at once again: hooks another process stored meanwhile wake nothing here

    def _wake_a_writer(self) -> None:
        if self.writers:  # one writer is enough to look; it wakes the next when there is more to do
            self._next_writer = (self._next_writer + 1) % len(self.writers)
            self.writers[self._next_writer].wake()

    def _write(self, index: int) -> float:
        """Write lane `index`'s round: every installation due that no other lane holds, one after another."""
        writer = self.parts.writer
        assert writer is not None
        free = writer.free()
        if len(free) > 1 and index + 1 < len(self.writers):  # more than this lane can take at once
            self.writers[index + 1].wake()
        worked = sum(writer.turn(installation_id, self._stopping.is_set) for installation_id in free)
        if worked:
            return 0.0
        # Idle: one lane keeps looking for writes come due (an answer's delay, a retry's backoff, another
        # process's decisions); the others rest until woken, so an idle process does not query in four threads.
        return self.write_poll if index == 0 else RESTING_WRITER
