"""Who a caller is in a repository, the same for both doors: the sender of a comment (webhook intake,
`baton.intake`) and the caller of the agent API (`baton.web.agent_api`).

The `Resolver` finds where a repository is installed (`locate`), refuses a caller who cannot read it
(`readable`), and turns a caller into an `Actor` with the repository's `Policy` (`resolve`): their access, and
their memberships of the teams the settings list. What it meets on the way that people must be told (settings
that cannot be used, teams GitHub hides from the App) comes back as `Notice`s, which the work service queues in
the unit of work that decides the caller's request (`Request.notices`), once each by its operation id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Protocol

from baton.domain import Access, Actor, Permission, Policy, TicketKey
from baton.github.client import TeamsHidden
from baton.github.configs import DefaultConfigs, Loaded
from baton.service.installations import LookupFailed
from baton.store.installations import Installations

SETTINGS_AT_ONCE = 4  # settings files read side by side by one `warm` (an organisation's claim-next asks about many)


class Directory(Protocol):
    """Who a GitHub user is in a repository. The GitHub-backed one asks the collaborator-permission and
    team-membership APIs."""

    def access(self, installation_id: int, repository: str, login: str) -> Access: ...

    def member(self, installation_id: int, team: str, login: str) -> bool:
        """Whether `login` is an active member of `team` ("org/team-slug"); raises `TeamsHidden` when GitHub
        will not tell the App."""
        ...


class Configs(Protocol):
    """A repository's settings (`.github/baton.yml`)."""

    def load(self, installation_id: int, repository: str) -> Loaded: ...

    def forget(self, installation_id: int, repository: str) -> None:
        """The file changed on GitHub: read it again at the next command (`repository` is `owner/.github`
        for the organisation's file, which every repository of that owner falls back to)."""


class DirectoryUnavailable(RuntimeError):
    """Permissions cannot be read; the hook fails and a redelivery can process it later."""


class NoDirectory:
    def access(self, installation_id: int, repository: str, login: str) -> Access:
        raise DirectoryUnavailable(
            "repository permissions cannot be read: set BATON_APP_ID and BATON_PRIVATE_KEY "
            "(or BATON_PRIVATE_KEY_PATH) so Baton can ask GitHub"
        )

    def member(self, installation_id: int, team: str, login: str) -> bool:
        self.access(installation_id, team, login)
        return False


@dataclass(frozen=True)
class Missing(Exception):
    """No such issue for Baton: the repository is not installed, or GitHub has no open issue of that number."""

    message: str


def not_served(repository: str) -> str:
    """The one answer to a caller about a repository Baton does not serve, or one the caller cannot read: the
    same words for both, so nobody learns from Baton what a private repository holds, or that it exists."""
    return f"Baton is not installed on {repository}, or you cannot read it."


@dataclass(frozen=True)
class Notice:
    """A reply on the issue at `where` explaining what resolving `author` met, sent once: its `operation_id`
    is recorded with it."""

    where: TicketKey
    repository: str
    author: str
    message: str
    operation_id: str


@dataclass(frozen=True)
class Resolved:
    """A caller as the guards see them, the settings they act under, and what people must be told."""

    actor: Actor
    policy: Policy
    notices: tuple[Notice, ...] = ()


@dataclass
class Resolver:
    directory: Directory
    configs: Configs = field(default_factory=DefaultConfigs)
    installations: Installations | None = None
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

    def readable(self, repository: str, login: str, within: int | None = None) -> tuple[int, int]:
        """The installation and id of `repository`, where Baton serves it and GitHub lets `login` read it. Every
        agent API call passes here before any ticket or issue is looked at; a caller who may not read the
        repository gets `Missing(not_served(repository))`, as for a repository Baton does not serve. With
        `within` (a GitHub Actions run's installation), a repository of another installation is missing too.
        Raises `DirectoryUnavailable` when GitHub cannot be asked."""
        found = self.locate(repository)
        if found is None or (within is not None and found[0] != within):
            raise Missing(not_served(repository))
        if self.directory.access(found[0], repository, login).permission is Permission.NONE:
            raise Missing(not_served(repository))
        return found

    def known(self, installation_id: int, repository: str, login: str) -> bool:
        """Whether `login`'s access to `repository` can be told without asking GitHub (a directory that keeps no
        answers is taken to know: its `access` is asked as before)."""
        knows = getattr(self.directory, "knows", None)
        return knows is None or bool(knows(installation_id, repository, login))

    def knows_all(self, people: set[tuple[int, str, str]]) -> bool:
        """Whether these (installation, repository, login) and their repositories' settings are all known without
        asking GitHub."""
        fresh = getattr(self.configs, "fresh", None)
        places = {(installation_id, repository) for installation_id, repository, _ in people}
        return all(fresh is None or fresh(*place) for place in places) and all(self.known(*p) for p in people)

    def learn(self, people: set[tuple[int, str, str]]) -> None:
        """Have the directory look these (installation, repository, login) up in a thread of its own, where it can,
        without waiting: their next command finds them known."""
        learn = getattr(self.directory, "learn", None)
        if learn is not None and people:
            learn(people)

    def warm(self, people: set[tuple[int, str, str]]) -> None:
        """Find out, all at once, who these (installation, repository, login) are where the directory can, and
        read the settings of their repositories not known yet beside those lookups: GitHub's answers arrive side
        by side instead of one after another. A read that fails here is made again, and fails properly, when the
        settings are asked for."""
        warm = getattr(self.directory, "warm", None)
        fresh = getattr(self.configs, "fresh", None)
        places = {(installation_id, repository.lower()): (installation_id, repository)
                  for installation_id, repository, _ in people}  # fmt: skip
        cold = [place for place in places.values() if fresh is not None and not fresh(*place)]
        if not cold:
            if warm is not None and people:
                warm(people)
            return
        # One person not known is asked beside the settings (the directory's `warm` looks up two or more at once).
        alone = [person for person in people if warm is not None and not self.known(*person)]
        alone = alone if len(alone) == 1 else []
        with ThreadPoolExecutor(
            max_workers=min(SETTINGS_AT_ONCE, len(cold)) + len(alone), thread_name_prefix="baton-settings"
        ) as pool:
            reads: list[Future[object]] = [pool.submit(self.configs.load, *place) for place in cold]
            reads += [pool.submit(self.directory.access, *person) for person in alone]
            if warm is not None and not alone:
                warm(people)
            for read in reads:
                with suppress(Exception):
                    read.result()

    def resolve(
        self,
        installation_id: int,
        repository: str,
        login: str,
        bot: bool,
        where: TicketKey | None,
        teams: frozenset[str] = frozenset(),
    ) -> Resolved:
        """`login` in `repository` under its settings (`settings`), with their access and memberships
        (`person`). `where` is the issue the caller is about, where notices go; None: nobody is told."""
        policy, told = self.settings(installation_id, repository, where, login)
        actor, more = self.person(installation_id, repository, login, bot, policy, where, teams)
        return Resolved(actor, policy, told + more)

    def settings(
        self, installation_id: int, repository: str, where: TicketKey | None, login: str
    ) -> tuple[Policy, tuple[Notice, ...]]:
        """The repository's settings. An invalid settings file is explained once, on the issue where it was
        first met (`where`), while the last good settings stay in force."""
        loaded = self.configs.load(installation_id, repository)
        if not loaded.problems or where is None:
            return loaded.policy, ()
        problems = "; ".join(loaded.problems)
        digest = hashlib.sha256(f"{repository}\n{problems}".encode()).hexdigest()[:16]
        message = (f"Baton cannot use `.github/baton.yml`: {problems}. Until it is fixed, the settings from "
                   f"{loaded.source} stay in force.")  # fmt: skip
        return loaded.policy, (Notice(where, repository, login, message, f"{installation_id}:config:{digest}"),)

    def person(
        self,
        installation_id: int,
        repository: str,
        login: str,
        bot: bool,
        policy: Policy | None = None,
        where: TicketKey | None = None,
        teams: frozenset[str] = frozenset(),
    ) -> tuple[Actor, tuple[Notice, ...]]:
        """`login` as an actor in `repository`: their access, and their memberships of the teams `policy` lists
        and of `teams` (a brief's reviewer team). Teams GitHub will not show (the App lacks the organisation
        `members: read` permission) match nobody, and that is explained once, on the issue at `where`."""
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
        notices = tuple(
            Notice(
                where,
                repository,
                login,
                f"Baton cannot read the members of {', '.join(f'@{entry}' for entry in entries)}: GitHub refuses "
                f"the App the organization `members: read` permission on {org}. Until an owner of {org} grants it "
                "(in the App's installation settings), team entries in `.github/baton.yml` match nobody.",
                f"{installation_id}:members-permission:{org}",
            )
            for org, entries in hidden.items()
            if where is not None
        )
        actor = Actor(login, access.permission, frozenset(member_of), is_bot=bot, role_name=access.role_name,
                      collaborator=access.collaborator)  # fmt: skip
        return actor, notices
