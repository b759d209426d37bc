"""Requests that arrive together are done together: a group commit on the event loop.

While one batch runs in a thread of the pool, the requests that arrive wait on the loop; the next batch takes all
of them, in the order they came. Each request awaits its own result, and is answered as soon as its batch is
done. One hop to a thread per batch instead of per request: twenty agents claiming one issue at once cost a
transaction or two, not twenty, and the event loop never waits on the database.
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
    while the batch before ran (all of them, or at most `most`). A result that is an exception is raised to its own
    caller; an exception from `work` itself, to every caller of that batch."""

    def __init__(self, work: Callable[[list[T]], Sequence[R | Exception]], most: int | None = None) -> None:
        self._work = work
        self._most = most
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._running: asyncio.Task[None] | None = None

    async def run(self, item: T) -> R:
        result: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, result))
        if self._running is None:
            self._running = asyncio.create_task(self._batches())
        return await result

    async def _batches(self) -> None:
        try:
            while self._waiting:
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
            self._running = None


__all__ = ["Batches"]
