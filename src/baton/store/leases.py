"""Leases kept alive by a heartbeat: what a process holds (hooks it processes, installations it writes
for) stays its own while a thread of the process renews it every `HEARTBEAT` seconds. A lease not renewed
for `LEASE` died with its process (killed, or cut off from the database): any process may take it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Generic, TypeVar

HEARTBEAT = 2.0
LEASE = timedelta(seconds=3 * HEARTBEAT)

K = TypeVar("K", bound=Hashable)


class Heartbeat(Generic[K]):
    """The keys this process holds leases on. While there are any, a thread calls `renew` with all of them
    every HEARTBEAT seconds; it ends when there are none. A renewal that fails (the database is away) is
    left to the next beat: the leases run out, and whoever reaches the database takes over."""

    def __init__(self, renew: Callable[[list[K]], None], name: str) -> None:
        self._renew_all = renew
        self._name = name
        self._held: Counter[K] = Counter()
        self._lock = threading.Lock()
        self._beating = False

    @contextmanager
    def holding(self, keys: list[K]) -> Iterator[None]:
        with self._lock:
            self._held.update(keys)
            if not self._beating and self._held:
                self._beating = True
                threading.Thread(target=self._beat, name=self._name, daemon=True).start()
        try:
            yield
        finally:
            with self._lock:
                self._held.subtract(keys)
                self._held = +self._held  # drops the keys no longer held

    def _beat(self) -> None:
        while True:
            time.sleep(HEARTBEAT)
            with self._lock:
                keys = list(self._held)
                if not keys:
                    self._beating = False
                    return
            try:
                self._renew_all(keys)
            except Exception:
                continue
