"""The spool: hooks kept in files while the database cannot be reached, stored in the inbox when it
returns, so a hook answered 202 during an outage is not lost.

One file per hook, named by its arrival (`<nanoseconds>-<pid>-<sequence>.delivery`): a line of JSON
(id, event, action, installation id, arrival time), then the body exactly as GitHub sent it. A file is
written under a temporary name, flushed to disk and renamed into place, and the directory flushed too, before
the hook is answered: a file in the spool is whole and survives a crash. Draining stores the oldest
files in the inbox, then deletes them; a hook stored twice (a crash between the two) is a redelivery,
which changes nothing. A file the inbox refuses for a reason of its own (not the database being away) is
renamed `….refused` and left for the operator.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import threading
from datetime import datetime
from pathlib import Path

from baton.environment.clock import Clock

from .engine import describe, unreachable
from .inbox import Inbox, Incoming, Received

log = logging.getLogger("baton.spool")

SUFFIX = ".delivery"
REFUSED = ".refused"


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Spool:
    def __init__(self, directory: str | Path, clock: Clock) -> None:
        self.directory = Path(directory)
        self.clock = clock  # the arrival time a hook is kept with, and its file's place in the order
        self._lock = threading.Lock()
        self._sequence = itertools.count()
        self._holding = bool(self.files())

    def holding(self) -> bool:
        """Whether hooks wait in the spool (as this process last saw it). While they do, new hooks
        join them there, so they reach the inbox in the order they arrived."""
        return self._holding

    def files(self, limit: int | None = None) -> list[Path]:
        """The spooled hooks, oldest first."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.directory) if entry.name.endswith(SUFFIX))
        except FileNotFoundError:
            return []
        return [self.directory / name for name in names[:limit]]

    def put(self, incoming: Incoming) -> None:
        """Keep a hook, durably, before it is answered."""
        now = self.clock.now()
        head = {"id": incoming.id, "event": incoming.event, "action": incoming.action,
                "installation_id": incoming.installation_id,
                "received_at": (incoming.received_at or now).isoformat()}  # fmt: skip
        nanoseconds = int(now.timestamp()) * 1_000_000_000 + now.microsecond * 1000  # the names' form since the first
        name = f"{nanoseconds:020d}-{os.getpid()}-{next(self._sequence):08d}"
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f".{name}.tmp"
        with open(temporary, "wb") as file:
            file.write(json.dumps(head).encode() + b"\n" + incoming.payload.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())
        with self._lock:  # with `drain`'s last look, so a hook put meanwhile is never overlooked
            os.replace(temporary, self.directory / f"{name}{SUFFIX}")
            if not self._holding:
                log.warning("the database is unreachable: deliveries are kept in %s until it returns", self.directory)
            self._holding = True
        _sync_directory(self.directory)

    def drain(self, inbox: Inbox, limit: int = 200) -> int:
        """Store up to `limit` of the oldest spooled hooks in the inbox, and delete their files. Returns
        how many were new to the inbox (or to be processed again). Raises the database's error when it is
        still unreachable; the files stay."""
        files = self.files(limit)
        if not files:
            with self._lock:
                if self._holding and not self.files(1):
                    self._holding = False
                    log.warning("the spool at %s is empty: every delivery kept there is in the inbox", self.directory)
            return 0
        readable: list[tuple[Path, Incoming]] = []
        for path in files:
            try:
                readable.append((path, _read(path)))
            except FileNotFoundError:
                continue  # another process draining the same spool took it
            except (OSError, ValueError, KeyError) as error:
                self._refuse(path, f"{type(error).__name__}: {error}")
        results = inbox.receive_each([incoming for _, incoming in readable])
        away: Exception | None = None
        for (path, _), result in zip(readable, results, strict=True):
            if isinstance(result, Exception):
                if unreachable(result):
                    away = away or result
                else:
                    self._refuse(path, describe(result))
            else:
                path.unlink(missing_ok=True)  # another process draining the same spool may have been first
        _sync_directory(self.directory)
        if away is not None:
            raise away
        return sum(result in (Received.NEW, Received.RETRY) for result in results)

    def _refuse(self, path: Path, reason: str) -> None:
        refused = path.with_suffix(REFUSED)
        with contextlib.suppress(FileNotFoundError):  # another process draining the same spool was first
            path.replace(refused)
            log.error("spooled delivery %s cannot be stored (%s); kept as %s", path.name, reason, refused.name)


def _read(path: Path) -> Incoming:
    head, _, body = path.read_bytes().partition(b"\n")
    fields = json.loads(head)
    return Incoming(fields["id"], fields["event"], fields["action"], fields["installation_id"], body.decode("utf-8"),
                    datetime.fromisoformat(fields["received_at"]))  # fmt: skip
