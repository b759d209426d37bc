"""Requests that arrive together are done together: a group commit on the event loop.

While one batch runs in a thread of the pool, the requests that arrive wait on the loop; the next batch takes all
of them, in the order they came. Each request awaits its own result, and is answered as soon as its batch is
done. One hop to a thread per batch instead of per request: twenty agents claiming one issue at once cost a
transaction or two, not twenty, and the event loop never waits on the database.

A burst of requests reaches the loop as a few clumps a millisecond or so apart. With `gather`, a batch that would
start with several requests waiting (a burst; a lone request never waits) waits while more keep arriving within
`gather` seconds, so that the burst is one batch rather than one after the other. With `at_once` above one, that
many batches may be under way together: requests that arrive while one runs start the next at once instead of
waiting for it to end, on a database where transactions do not wait for each other (claim-next on PostgreSQL:
each batch takes rows no other holds).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from starlette.concurrency import run_in_threadpool

T = TypeVar("T")
R = TypeVar("R")


class Batches(Generic[T, R]):
    """`await run(item)` is `work([..., item, ...])`'s result for `item`, `work` taking the items that arrived
    while the batch before ran (all of them, or at most `most`), with at most `at_once` batches under way, a burst
    gathered for `gather` seconds after its last arrival. A result that is an exception is raised to its own
    caller; an exception from `work` itself, to every caller of that batch."""

    def __init__(
        self, work: Callable[[list[T]], Sequence[R | Exception]], most: int | None = None, at_once: int = 1,
        gather: float = 0.0,
    ) -> None:  # fmt: skip
        self._work = work
        self._most = most
        self._at_once = max(1, at_once)
        self._gather = gather
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._running = 0  # the tasks taking batches
        self._starting = 0  # those of them that have not taken their first batch yet
        self._tasks: set[asyncio.Task[None]] = set()  # kept until done

    async def run(self, item: T) -> R:
        result: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, result))
        if self._running < self._at_once and not self._starting:  # one not under way yet takes this one too
            self._running += 1
            self._starting += 1
            task = asyncio.create_task(self._batches())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await result

    async def _batches(self) -> None:
        starting = True
        try:
            while self._waiting:
                if starting:  # the first batch of a burst: while the burst goes on, the others join it
                    if self._gather and len(self._waiting) > 1:
                        await self._burst()
                    self._starting -= 1
                    starting = False
                    if not self._waiting:  # a batch that ended meanwhile took them
                        break
                most = len(self._waiting) if self._most is None else self._most
                batch, self._waiting = self._waiting[:most], self._waiting[most:]
                try:
                    results: Sequence[R | Exception] = await run_in_threadpool(self._work, [item for item, _ in batch])
                except Exception as error:
                    results = [error] * len(batch)
                for (_, result), outcome in zip(batch, results, strict=True):
                    if result.done():  # its client went away
                        continue
                    if isinstance(outcome, Exception):
                        result.set_exception(outcome)
                    else:
                        result.set_result(outcome)
        finally:
            self._running -= 1
            if starting:
                self._starting -= 1

    async def _burst(self) -> None:
        """Several items waiting at once are a burst: wait while it goes on (more arrive within `gather` seconds,
        for at most four of those), so that it is one batch rather than a few one after the other."""
        for _ in range(4):
            seen = len(self._waiting)
            await asyncio.sleep(self._gather)
            if len(self._waiting) == seen or (self._most is not None and len(self._waiting) >= self._most):
                return


__all__ = ["Batches"]
