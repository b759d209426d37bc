"""What every intake handler asks of the rest of Baton: the use cases it hands work to, and who-is-who —
whether an installation is active, whether a write is Baton's own, who the sender is in a repository,
which settings the repository has."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from baton.domain import Access, Actor, Policy, TicketKey
from baton.github.client import TeamsHidden
from baton.github.configs import DefaultConfigs, Loaded
from baton.github.issues import OpenIssue
from baton.github.webhooks import number
from baton.service.evidence import EvidenceService
from baton.service.installations import LookupFailed
from baton.service.offering import Offering
from baton.service.work import WorkService
from baton.store.inbox import Inbox, WebhookDelivery
from baton.store.installations import Installations

from .envelope import Envelope

log = logging.getLogger("baton.intake")


class Decisions(Protocol):
    """What hears of each delivery decided, to time it from its acknowledgement (`baton.process.metrics.Metrics`)."""

    def decided_deliveries(self, deliveries: Iterable[WebhookDelivery]) -> None: ...


class Directory(Protocol):
    """Who a GitHub user is in a repository. The GitHub-backed one asks the collaborator-permission and
    team-membership APIs."""

    def access(self, installation_id: int, repository: str, login: str) -> Access: ...

    def member(self, installation_id: int, team: str, login: str) -> bool:
        """Whether `login` is an active member of `team` ("org/team-slug"); raises `TeamsHidden` when GitHub
        will not tell the App."""
        ...


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


class Configs(Protocol):
    """A repository's settings (`.github/baton.yml`)."""

    def load(self, installation_id: int, repository: str) -> Loaded: ...

    def forget(self, installation_id: int, repository: str) -> None:
        """The file changed on GitHub: read it again at the next command (`repository` is `owner/.github`
        for the organisation's file, which every repository of that owner falls back to)."""


class DirectoryUnavailable(RuntimeError):
    """Permissions cannot be read; the delivery fails and a redelivery can process it later."""


class NoDirectory:
    def access(self, installation_id: int, repository: str, login: str) -> Access:
        raise DirectoryUnavailable(
            "repository permissions cannot be read: set BATON_APP_ID and BATON_PRIVATE_KEY "
            "(or BATON_PRIVATE_KEY_PATH) so Baton can ask GitHub"
        )

    def member(self, installation_id: int, team: str, login: str) -> bool:
        self.access(installation_id, team, login)
        return False


@dataclass
class Intake:
    work: WorkService
    directory: Directory
    configs: Configs = field(default_factory=DefaultConfigs)
    app_id: int | None = None
    installations: Installations | None = None
    evidence: EvidenceService | None = None
    offering: Offering | None = None
    issues: IssueSource | None = None  # None: repositories' existing issues are not offered on installation
    inbox: Inbox | None = None  # where an installation stores the backfill of its repositories
    metrics: Decisions | None = None  # hears of each delivery decided (how long after its acknowledgement)
    # Asks GitHub where a repository Baton has no record of is installed, and records what it says
    # (`service.installations.Lookup`); None: only what the installation events and sweeps recorded counts.
    lookup: Callable[[str], None] | None = None

    def locate(self, repository: str) -> tuple[int, int] | None:
        """The installation and id of `repository` ("owner/name", any case) where an active installation of
        Baton holds it; None where none does. A repository with no record, or recorded under an installation no
        longer active, is asked of GitHub first (`lookup`): a database that missed the installation event still
        serves it. Raises `DirectoryUnavailable` when GitHub cannot be asked."""
        if self.installations is None:
            return None
        installations = self.installations
        found = installations.find(repository)
        if (found is None or not installations.active(found[0])) and self.lookup is not None:
            # Inactive: perhaps installed again, under a new installation, with its events missed too.
            try:
                self.lookup(repository)
            except LookupFailed as error:
                raise DirectoryUnavailable(str(error)) from None
            found = installations.find(repository)
        if found is None or not installations.active(found[0]):
            return None
        return found

    app_login: Callable[[], str] | None = None  # asks GitHub for the App's own login (`GitHubApp.login`)
    _own: str | None = field(default=None, init=False, repr=False)
    _own_asked: float = field(default=float("-inf"), init=False, repr=False)

    def active(self, envelope: Envelope) -> bool:
        """An uninstalled or suspended installation's commands stop; its history stays."""
        installation_id = envelope.installation_id
        return self.installations is None or installation_id is None or self.installations.active(installation_id)

    def warm(self, people: set[tuple[int, str, str]]) -> None:
        """Find out, all at once, who these (installation, repository, login) are where the directory can:
        GitHub's answers arrive side by side instead of one after another."""
        warm = getattr(self.directory, "warm", None)
        if warm is not None and people:
            warm(people)

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
        """Whether the delivery reports something Baton itself did (its sender is Baton's own login)."""
        own = self.own_login()
        return own is not None and envelope.sender.lower() == own.lower()

    def from_baton(self, envelope: Envelope, where: str) -> bool:
        """Whether the comment or issue at `where` was written by Baton itself (it carries Baton's App id);
        other bots are ordinary actors."""
        app_id = number(envelope.payload, where, "performed_via_github_app", "id")
        return self.app_id is not None and app_id == self.app_id

    def actor(
        self,
        envelope: Envelope,
        policy: Policy | None = None,
        where: TicketKey | None = None,
        login: str = "",
        teams: frozenset[str] = frozenset(),
    ) -> Actor:
        """The sender (or `login`, someone a command names), with their access to the delivery's repository
        and their memberships of the teams `policy` lists and of `teams` (a brief's reviewer team). Teams
        GitHub will not show (the App lacks the organisation `members: read` permission) match nobody, and
        that is explained once, on the issue at `where`."""
        installation_id = envelope.installation_id
        assert installation_id is not None
        named = bool(login)
        login = login or envelope.sender
        bot = (envelope.sender_is_bot and not named) or login.lower().endswith("[bot]")
        return self.person(installation_id, envelope.repository, login, bot, policy, where, teams)

    def person(
        self,
        installation_id: int,
        repository: str,
        login: str,
        bot: bool,
        policy: Policy | None = None,
        where: TicketKey | None = None,
        teams: frozenset[str] = frozenset(),
    ) -> Actor:
        """`login` as an actor in `repository` (see `actor`), however the command reached Baton."""
        access = self.directory.access(installation_id, repository, login)
        member_of: set[str] = set()
        hidden: dict[str, list[str]] = {}
        wanted = (policy.teams() if policy is not None else frozenset()) | teams
        for team in sorted(wanted) if not bot else ():
            try:
                if self.directory.member(installation_id, team, login):
                    member_of.add(team)
            except TeamsHidden as error:
                hidden.setdefault(error.org.lower(), []).append(team)
        for org, entries in hidden.items() if where is not None else ():
            assert where is not None
            listed = ", ".join(f"@{entry}" for entry in entries)
            self.work.reply(
                where,
                repository,
                login,
                f"Baton cannot read the members of {listed}: GitHub refuses the App the organization `members: "
                f"read` permission on {org}. Until an owner of {org} grants it (in the App's installation "
                "settings), team entries in `.github/baton.yml` match nobody.",
                f"{installation_id}:members-permission:{org}",
            )
        return Actor(login, access.permission, frozenset(member_of), is_bot=bot, role_name=access.role_name,
                     collaborator=access.collaborator)  # fmt: skip

    def policy(self, installation_id: int, repository: str, where: TicketKey, login: str) -> Policy:
        """The repository's settings. An invalid settings file is explained once, on the issue where
        it was first met, while the last good settings stay in force."""
        loaded = self.configs.load(installation_id, repository)
        if loaded.problems:
            problems = "; ".join(loaded.problems)
            digest = hashlib.sha256(f"{repository}\n{problems}".encode()).hexdigest()[:16]
            self.work.reply(
                where,
                repository,
                login,
                f"Baton cannot use `.github/baton.yml`: {problems}. Until it is fixed, the settings from "
                f"{loaded.source} stay in force.",
                f"{installation_id}:config:{digest}",
            )
        return loaded.policy
