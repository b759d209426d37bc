"""Where Baton is installed, known without anyone's help: GitHub's installation events can be missed (Baton
was down, its database is new, the App was installed before Baton ran), so Baton also asks.

- The sweep (`InstallationSweep`), as a process starts and every `BATON_INSTALLATIONS_EVERY` seconds (an hour),
  lists the App's installations and each one's repositories and records what it finds: installations added,
  suspended or unsuspended, and gone; repositories added to or removed from one. One process sweeps at a time
  (`baton.store.sweeps`); another that finds a sweep ended less than half a period ago leaves it.
- The lookup (`Lookup`): a call about a repository with no record asks GitHub which installation holds it,
  once, before Baton answers that it does not serve it. A "none" is remembered for `FORGET` seconds.

GitHub's faults end a sweep with one line in the log (and one when GitHub answers again); the next tries again.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from githubkit.exception import RequestError

from baton.github.installations import Installed
from baton.github.refusals import failure
from baton.store.installations import Installations
from baton.store.sweeps import Sweeps

log = logging.getLogger("baton.installations")

EVERY = 3600.0  # seconds between sweeps (`BATON_INSTALLATIONS_EVERY`; 0 turns the sweep off)
HOLD = timedelta(minutes=10)  # far longer than a sweep takes; a process that died sweeping lets go after it
FORGET = 600.0  # seconds a repository GitHub says the App is not installed on is taken as not installed
SWEEP = "installations"


class InstallationSource(Protocol):
    """GitHub's side (`baton.github.installations.GitHubInstallations`); each call raises `RequestError`."""

    def installations(self) -> list[Installed]: ...

    def repositories(self, installation_id: int) -> list[tuple[int, str]]: ...

    def holding(self, repository: str) -> tuple[Installed, int, str] | None: ...


class LookupFailed(RuntimeError):
    """GitHub could not say where the App is installed."""


@dataclass(frozen=True)
class Reconciled:
    """What one sweep found changed."""

    installations: int = 0  # listed by GitHub
    added: tuple[str, ...] = ()  # repositories that came
    removed: tuple[str, ...] = ()  # repositories that went
    suspended: tuple[int, ...] = ()
    gone: tuple[int, ...] = ()  # installations GitHub no longer lists


def status_of(installed: Installed) -> str:
    return "suspended" if installed.suspended else "active"


class InstallationSweep:
    def __init__(self, github: InstallationSource, installations: Installations, sweeps: Sweeps,
                 every: float = EVERY, lookup: Lookup | None = None) -> None:  # fmt: skip
        self.github = github
        self.installations = installations
        self.sweeps = sweeps
        self.every = every
        self.lookup = lookup  # what it remembers is forgotten after each sweep: the sweep knows better
        self.holder = f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._started = False
        self._failing = False  # GitHub failed the last sweep: said once, until a sweep gets through

    def step(self) -> float:
        """One round of the lane: a sweep at once as the process starts, then one every `every` seconds unless
        another process swept less than half of that ago. Returns the wait until the next round."""
        since = None if not self._started else timedelta(seconds=self.every / 2)
        self._started = True
        self.sweep(since)
        return self.every

    def sweep(self, since: timedelta | None = None) -> Reconciled | None:
        """List the installations and their repositories and record them; None when another process sweeps
        (or, with `since`, swept less than that ago), or GitHub failed the sweep."""
        if not self.sweeps.take(SWEEP, self.holder, HOLD, since):
            return None
        try:
            found = self._reconcile()
        except RequestError as error:
            self.sweeps.release(SWEEP, self.holder)
            self._failed(error)
            return None
        except BaseException:
            self.sweeps.release(SWEEP, self.holder)
            raise
        self.sweeps.done(SWEEP, self.holder)
        if self.lookup is not None:
            self.lookup.forget_all()
        if self._failing:
            log.warning("GitHub lists the App's installations again")
            self._failing = False
        if found.added or found.removed or found.suspended or found.gone:
            log.info(
                "installations swept: %d repositories added, %d removed; %d installations suspended, %d gone",
                len(found.added), len(found.removed), len(found.suspended), len(found.gone),
            )  # fmt: skip
        return found

    def _reconcile(self) -> Reconciled:
        listed = self.github.installations()
        recorded = self.installations.statuses()
        added: list[str] = []
        removed: list[str] = []
        suspended: list[int] = []
        for one in listed:
            status = status_of(one)
            if recorded.get(one.id) != status:
                self.installations.record(one.id, one.account, status)
                if status == "suspended":
                    suspended.append(one.id)
            if one.suspended:  # GitHub mints it no token, so its repositories cannot be listed; they stay as they are
                continue
            came, went = self.installations.reconcile(one.id, self.github.repositories(one.id))
            added += came
            removed += went
        seen = {one.id for one in listed}
        gone = [installation for installation, status in recorded.items()
                if installation not in seen and status != "deleted"]  # fmt: skip
        for installation in gone:
            self.installations.record(installation, "", "deleted")
        return Reconciled(len(listed), tuple(added), tuple(removed), tuple(suspended), tuple(gone))

    def _failed(self, error: RequestError[Exception]) -> None:
        if self._failing:
            log.debug("GitHub still fails to list the App's installations")
            return
        self._failing = True
        log.warning("could not list the App's installations (%s); the next sweep tries again", failure(error))


@dataclass
class _Asking:
    """The calls about one repository under way: one asks GitHub at a time."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0


class Lookup:
    """Asks GitHub where a repository with no record is installed (`__call__`), and records what it says."""

    def __init__(self, github: InstallationSource, installations: Installations, forget: float = FORGET) -> None:
        self.github = github
        self.installations = installations
        self.forget = forget
        self._none: dict[str, float] = {}  # lower-case "owner/name" -> when GitHub said no installation holds it
        self._answered: dict[str, float] = {}  # … -> when GitHub last said which one does (recorded then)
        self._asking: dict[str, _Asking] = {}  # … -> the calls asking about it now
        self._lock = threading.Lock()

    def forget_all(self) -> None:
        """Every repository is asked about again at its next call."""
        with self._lock:
            self._none.clear()
            self._answered.clear()

    def __call__(self, repository: str) -> None:
        """Raises `LookupFailed` when GitHub cannot be asked. Calls about one repository at once ask GitHub
        once: the others wait for that answer."""
        name = repository.lower()
        with self._lock:
            asking = self._asking.setdefault(name, _Asking())
            asking.calls += 1
        try:
            with asking.lock:
                self._ask(repository, name)
        finally:
            with self._lock:
                asking.calls -= 1
                if not asking.calls:
                    del self._asking[name]

    def _ask(self, repository: str, name: str) -> None:
        now = time.monotonic()
        with self._lock:
            said, answered = self._none.get(name), self._answered.get(name)
        if (said is not None and now - said < self.forget) or (answered is not None and now - answered < 1.0):
            return  # told no, or another call just recorded what GitHub said
        try:
            held = self.github.holding(repository)
        except RequestError as error:
            raise LookupFailed(f"GitHub cannot say whether Baton is installed on {repository}: "
                               f"{failure(error)}") from None  # fmt: skip
        if held is not None:
            installed, repository_id, full_name = held
            self.installations.record(installed.id, installed.account, status_of(installed))
            if not installed.suspended:
                self.installations.repositories(installed.id, [(repository_id, full_name)], True)
                with self._lock:
                    self._answered[name] = time.monotonic()
                    if len(self._answered) > 10_000:
                        self._answered.clear()
                return
        with self._lock:
            if len(self._none) > 10_000:
                self._none.clear()
            self._none[name] = now
