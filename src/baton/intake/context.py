"""What every intake handler asks of the rest of Baton: the use cases it hands work to, whether an
installation is active, whether a write is Baton's own, and who-is-who (`resolver`, shared with the agent
API: who the sender is in a repository, which settings the repository has)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from baton.github.issues import OpenIssue
from baton.github.webhooks import number
from baton.service.evidence import EvidenceService
from baton.service.offering import Offering
from baton.service.resolver import Configs, Directory, DirectoryUnavailable, NoDirectory, Notice, Resolver
from baton.service.work import WorkService
from baton.store.inbox import Hook, Inbox
from baton.store.installations import Installations

from .envelope import Envelope, Parsed

log = logging.getLogger("baton.intake")


class Decisions(Protocol):
    """What hears of each hook decided, to time it from its acknowledgement (`baton.process.metrics.Metrics`)."""

    def decided_hooks(self, hooks: Iterable[Hook]) -> None: ...


class IssueSource(Protocol):
    """A repository's open issues (GitHub's list-repository-issues API, without pull requests), and what
    closed one."""

    def open_issues(self, installation_id: int, repository: str) -> Iterable[OpenIssue]: ...

    def issue(self, installation_id: int, repository: str, number: int) -> OpenIssue | None:
        """One open issue (None: no such open issue)."""
        ...

    def create(self, installation_id: int, repository: str, title: str, body: str, labels: list[str]) -> OpenIssue:
        """Open an issue as the App."""
        ...

    def closing_commit(self, installation_id: int, repository: str, number: int) -> str | None:
        """The commit that closed the issue last (its timeline's last `closed` event); None: a person did."""
        ...


@dataclass
class Intake:
    work: WorkService
    resolver: Resolver  # who-is-who, shared with the agent API
    app_id: int | None = None
    installations: Installations | None = None
    evidence: EvidenceService | None = None
    offering: Offering | None = None
    issues: IssueSource | None = None  # None: repositories' existing issues are not offered on installation
    inbox: Inbox | None = None  # where an installation stores the backfill of its repositories
    metrics: Decisions | None = None  # hears of each hook decided (how long after its acknowledgement)
    app_login: Callable[[], str] | None = None  # asks GitHub for the App's own login (`GitHubApp.login`)
    # what this process's webhook route parsed, for its decide lane (`Envelope.open`)
    parsed: Parsed = field(default_factory=Parsed, repr=False)
    _own: str | None = field(default=None, init=False, repr=False)
    _own_asked: float = field(default=float("-inf"), init=False, repr=False)

    def active(self, envelope: Envelope) -> bool:
        """An uninstalled or suspended installation's commands stop; its history stays."""
        installation_id = envelope.installation_id
        return self.installations is None or installation_id is None or self.installations.active(installation_id)

    @property
    def own_login_known(self) -> bool:
        """Whether `own_login` answers without asking GitHub."""
        return self._own is not None or self.app_login is None

    def own_login(self) -> str | None:
        """Baton's own login on GitHub (`<slug>[bot]`), asked of GitHub once; after a failure, again at most
        once a minute. None while unknown."""
        if self._own is not None or self.app_login is None:
            return self._own
        now = time.monotonic()
        if now - self._own_asked < 60:
            return None
        self._own_asked = now
        try:
            self._own = self.app_login()
        except Exception as error:  # GitHub down for a moment: Baton's own writes look like anyone's meanwhile
            log.warning("Baton's own login could not be read from GitHub (GET /app): %s", error)
        return self._own

    def by_baton(self, envelope: Envelope) -> bool:
        """Whether the hook reports something Baton itself did (its sender is Baton's own login)."""
        own = self.own_login()
        return own is not None and envelope.sender.lower() == own.lower()

    def from_baton(self, envelope: Envelope, where: str) -> bool:
        """Whether the comment or issue at `where` was written by Baton itself (it carries Baton's App id);
        other bots are ordinary actors."""
        app_id = number(envelope.payload, where, "performed_via_github_app", "id")
        return self.app_id is not None and app_id == self.app_id

    def tell(self, notices: Iterable[Notice]) -> None:
        """Notices no decision carries (a handler that reads settings without deciding a command), each sent
        once in a transaction of its own."""
        for notice in notices:
            self.work.reply(notice.where, notice.repository, notice.author, notice.message, notice.operation_id)


__all__ = ["Configs", "Decisions", "Directory", "DirectoryUnavailable", "Intake", "IssueSource", "NoDirectory"]
