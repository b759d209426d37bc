"""Requests that arrive together are done together: a group commit on the event loop.

While one batch runs in a thread of the pool, the requests that arrive wait on the loop; the next batch takes all
of them, in the order they came. Each request awaits its own result, and is answered as soon as its batch is
done. One hop to a thread per batch instead of per request: twenty agents claiming one issue at once cost a
transaction or two, not twenty, and the event loop never waits for a lock or a round trip (`at_hand` below does
only what needs neither).

A burst of requests reaches the loop as a few clumps a millisecond or so apart. With `gather`, a batch that would
start with several requests waiting (a burst) waits while more keep arriving within `gather` seconds, so that the
burst is one batch rather than one after the other. With `busy` too, a batch that would start with one request
waits the same way when the batch before ended less than `busy` seconds ago: requests are coming together, and the
first of a burst is most often alone when its batch starts. A lone request, on a quiet process, never waits.

With `at_once` above one, that many batches may be under way together: requests that arrive while one runs start
the next at once instead of waiting for it to end, on a database where transactions do not wait for each other
(claim-next on PostgreSQL: each batch takes rows no other holds).

With `at_hand`, a batch is first offered to it on the event loop itself: what it can do there without waiting (on
SQLite, a batch whose every answer is in the process and the database file) it answers at once, and it leaves the
rest (`LATER`), or all (None), to `work` in a thread. Going to a thread and back, while the loop keeps taking
requests beside it, costs more than a SQLite transaction of a few hundred microseconds: both threads want the one
interpreter, and each waits for the other's turn to end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Generic, TypeVar

from starlette.concurrency import run_in_threadpool

T = TypeVar("T")
R = TypeVar("R")


class Later(Enum):
    LATER = "later"


LATER = Later.LATER  # an item `at_hand` left for `work`


class Batches(Generic[T, R]):
    """`await run(item)` (or the future `submit(item)` gives) is `work([..., item, ...])`'s result for `item`,
    `work` taking the items that arrived while the batch before ran (all of them, or at most `most`), with at most
    `at_once` batches under way, a burst gathered for `gather` seconds after its last arrival (`busy`: the module's
    description), each offered to `at_hand` first. A result that is an exception is raised to its own caller; an
    exception from `work` or `at_hand` itself, to every caller of that batch (of its part of it)."""

    def __init__(
        self, work: Callable[[list[T]], Sequence[R | Exception]], most: int | None = None, at_once: int = 1,
        gather: float = 0.0, busy: float = 0.0,
        at_hand: Callable[[list[T]], Sequence[R | Exception | Later] | None] | None = None,
    ) -> None:  # fmt: skip
        self._work = work
        self._at_hand = at_hand
        self._most = most
        self._at_once = max(1, at_once)
        self._gather = gather
        self._busy = busy
        self._ended = -busy  # when the last batch ended (the event loop's clock)
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._last = 0  # how many items the last batch took
        self._full: asyncio.Future[None] | None = None  # set once a burst being gathered is as large as the last
        self._running = 0  # the tasks taking batches
        self._starting = 0  # those of them that have not taken their first batch yet
        self._tasks: set[asyncio.Task[None]] = set()  # kept until done

    async def run(self, item: T) -> R:
        return await self.submit(item)

    def submit(self, item: T) -> asyncio.Future[R]:
        """`item` put in the next batch, from the event loop's thread: the future of its result."""
        result: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, result))
        if self._full is not None and len(self._waiting) >= self._last:
            _wake(self._full)
        if self._running < self._at_once and not self._starting:  # one not under way yet takes this one too
            self._running += 1
            self._starting += 1
            task = asyncio.create_task(self._batches())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return result

    async def _batches(self) -> None:
        starting = True
        try:
            while self._waiting:
                if starting:  # the first batch of a burst: while the burst goes on, the others join it
                    if self._gather and (len(self._waiting) > 1 or self._loop_time() - self._ended < self._busy):
                        await self._burst()
                    self._starting -= 1
                    starting = False
                    if not self._waiting:  # a batch that ended meanwhile took them
                        break
                most = len(self._waiting) if self._most is None else self._most
                batch, self._waiting = self._waiting[:most], self._waiting[most:]
                self._last = len(batch)
                if self._at_hand is not None:
                    try:
                        done = self._at_hand([item for item, _ in batch])
                    except Exception as error:
                        done = [error] * len(batch)
                    if done is not None:
                        _settle(batch, done)
                        batch = [waiting for waiting, result in zip(batch, done, strict=True) if result is LATER]
                if batch:
                    try:
                        results: Sequence[R | Exception] = await run_in_threadpool(
                            self._work, [item for item, _ in batch]
                        )
                    except Exception as error:
                        results = [error] * len(batch)
                    _settle(batch, results)
                self._ended = self._loop_time()
        finally:
            self._running -= 1
            if starting:
                self._starting -= 1

    @staticmethod
    def _loop_time() -> float:
        return asyncio.get_running_loop().time()

    async def _burst(self) -> None:
        """Wait while the burst goes on: until no more items arrive within `gather` seconds (at most four times
        that), or it is as large as the last batch was."""
        loop = asyncio.get_running_loop()
        for _ in range(4):
            seen = len(self._waiting)
            if seen >= self._last > 1 or (self._most is not None and seen >= self._most):
                return
            self._full = loop.create_future()
            timer = loop.call_later(self._gather, _wake, self._full)
            try:
                await self._full
            finally:
                timer.cancel()
                self._full = None
            if len(self._waiting) == seen:
                return


def _settle(batch: list[tuple[T, asyncio.Future[R]]], results: Sequence[R | Exception | Later]) -> None:
    """Each item's result given to its caller (an exception raised to it); those left `LATER` wait on."""
    for (_, result), outcome in zip(batch, results, strict=True):
        if result.done() or outcome is LATER:  # its client went away, or `work` does it
            continue
        if isinstance(outcome, Exception):
            result.set_exception(outcome)
        else:
            result.set_result(outcome)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


__all__ = ["LATER", "Batches", "Later"]
