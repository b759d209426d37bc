"""Calls that arrive together are done together: a group commit for threads.

The first caller to find nothing under way leads: it takes every item waiting (its own among them), does them
in one call of `work`, and hands each waiting caller its own result. Callers that arrive meanwhile wait, and
the first of them leads the next round with all that gathered. Twenty agents claiming one issue at once cost
two transactions instead of twenty, each claim decided as if alone (`WorkService.apply_all`).

(The webhook endpoint's `GroupCommit` does the same for stored deliveries, on the event loop; this one is for
the threads sync endpoints run in.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class _Waiting(Generic[T, R]):
    def __init__(self, item: T) -> None:
        self.item = item
        self.woken = threading.Event()
        self.leads = False
        self.result: R | None = None
        self.error: BaseException | None = None


class Together(Generic[T, R]):
    """`run(item)` is `work([...item...])`'s result for `item`, with the items of the callers waiting meanwhile
    in the same call of `work` (at most `most` at a time). An exception from `work` is raised to every caller
    of that round."""

    def __init__(self, work: Callable[[Sequence[T]], Sequence[R]], most: int = 100) -> None:
        self._work = work
        self._most = most
        self._lock = threading.Lock()
        self._waiting: list[_Waiting[T, R]] = []
        self._busy = False

    def run(self, item: T) -> R:
        mine: _Waiting[T, R] = _Waiting(item)
        with self._lock:
            self._waiting.append(mine)
            if not self._busy:
                self._busy = mine.leads = True
        if not mine.leads:
            mine.woken.wait()
        if mine.leads:  # first, or handed the lead by the round before
            self._round()
        if mine.error is not None:
            raise mine.error
        return mine.result  # type: ignore[return-value]  # set by the round that held it

    def _round(self) -> None:
        with self._lock:
            batch, self._waiting = self._waiting[: self._most], self._waiting[self._most :]
        try:
            results = self._work([waiting.item for waiting in batch])
            for waiting, result in zip(batch, results, strict=True):
                waiting.result = result
        except BaseException as error:
            for waiting in batch:
                waiting.error = error
        finally:
            with self._lock:
                if self._waiting:  # they came while this round ran: the first of them leads the next
                    self._waiting[0].leads = True
                    self._waiting[0].woken.set()
                else:
                    self._busy = False
            for waiting in batch:
                waiting.leads = False
                waiting.woken.set()


__all__ = ["Together"]
