"""The values the work rail is made of. Standard library only; everything is immutable."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class WorkState(StrEnum):
    DRAFT = "draft"
    OPEN = "open"
    CLAIMED = "claimed"
    DELIVERED = "delivered"
    ACCEPTED = "accepted"
    WITHDRAWN = "withdrawn"


class RepositoryState(StrEnum):
    NOT_APPLICABLE = "not_applicable"
    UNREPORTED = "unreported"
    BRANCH_REPORTED = "branch_reported"
    PULL_REQUEST_OPEN = "pull_request_open"
    MERGED = "merged"
    BLOCKED = "blocked"


class DeploymentState(StrEnum):
    NOT_APPLICABLE = "not_applicable"
    NOT_DEPLOYED = "not_deployed"
    DEPLOYING = "deploying"
    DEPLOYED = "deployed"
    FAILED = "failed"


class Role(StrEnum):
    """The role a person exercises in one transition; every event records it."""

    REQUESTER = "requester"
    TASK_OWNER = "task_owner"
    RUNNER = "runner"
    REVIEWER = "reviewer"
    REPOSITORY_MAINTAINER = "repository_maintainer"
    RELEASE_OWNER = "release_owner"
    ANYONE = "anyone"
    APP = "app"  # Baton itself: a quiet claim flagged stale, or released under `auto_release_after`


APP_ACTOR = "baton[bot]"  # the actor of what Baton does by itself (its events have the role `app`)


class Permission(StrEnum):
    """A person's permission on the repository, as GitHub's collaborator-permission API names it. A custom
    repository role counts as the built-in level it is based on."""

    NONE = "none"
    READ = "read"
    TRIAGE = "triage"
    WRITE = "write"
    MAINTAIN = "maintain"
    ADMIN = "admin"

    @property
    def can_maintain(self) -> bool:
        """Whether GitHub counts this level as maintaining the repository. Write access is not enough: agents
        need it to push their branches."""
        return self in (Permission.MAINTAIN, Permission.ADMIN)


@dataclass(frozen=True)
class Access:
    """What GitHub says of a person's access to a repository: the built-in level the rules use, and the role
    GitHub names (a custom role's own name, whose base level is `permission`)."""

    permission: Permission = Permission.NONE
    role_name: str = ""
    # what GitHub calls a collaborator (its collaborator check answers 204): direct and outside collaborators,
    # and organisation members with access through a team or the base permission; read access alone is not
    # one, since on a public repository everybody has it
    collaborator: bool = False


class AttemptEnd(StrEnum):
    RELEASED = "released"
    RELEASED_BY_MAINTAINER = "released_by_maintainer"
    AUTO_RELEASED = "auto_released"  # quiet for the repository's `auto_release_after`
    REASSIGNED = "reassigned"
    DELIVERED = "delivered"
    REOPENED = "reopened"
    WITHDRAWN = "withdrawn"


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    SENT_BACK = "sent_back"


EVIDENCE_KINDS = ("branch", "commit", "pr", "tests", "screenshot")


@dataclass(frozen=True)
class TicketKey:
    """An issue as Baton keys it: its repository's key, and its number there."""

    installation_id: int
    repository_id: int
    number: int

    @property
    def repository_key(self) -> RepositoryKey:
        return RepositoryKey(self.installation_id, self.repository_id)


@dataclass(frozen=True)
class RepositoryKey:
    """A repository as Baton keys it: the installation that reports it and GitHub's repository id (names
    change; ids do not)."""

    installation_id: int
    repository_id: int

    def ticket(self, number: int) -> TicketKey:
        return TicketKey(self.installation_id, self.repository_id, number)


@dataclass(frozen=True)
class Brief:
    """What an issue asks for (docs/design.md §5), as `baton.domain.brief` reads it from the issue body.

    `required_evidence` holds each kind once per item required (`("tests", "screenshot", "screenshot")`
    asks for test output and two screenshots). `owner`, when set, is the task owner instead of the issue's
    author; `reviewer` is a login or an `org/team`. `code` False: a non-code task, whose evidence rails are
    not applicable.

    `access` is how the runner reaches what the task needs, in the brief's words. `evidence_lines` are the
    evidence items written as sentences ("real screenshots at 390px and 1280px"), kept as written for the
    reviewer; the kinds they name are in `required_evidence` too. `reviewer_as_written` is a reviewer the
    brief names in words rather than as a login or team ("named frontend maintainer"): shown, never a rule.
    """

    scope: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    acceptance: tuple[str, ...] = ()
    required_evidence: tuple[str, ...] = ()
    reviewer: str | None = None
    task: str = ""
    owner: str | None = None
    code: bool = True
    access: str | None = None
    priority: int | None = None  # 0 (p0, first) to 4 (p4); None: not said, handed out as p2
    # The issues the task waits for: `#12` in its own repository, `owner/repo#3` (lower-case) in another.
    depends_on: tuple[str, ...] = ()
    evidence_lines: tuple[str, ...] = ()
    reviewer_as_written: str | None = None

    def missing(self, require_reviewer: bool = False) -> tuple[str, ...]:
        """What `/publish` needs and the brief lacks: acceptance criteria, and a reviewer where the
        repository requires one (`require_reviewer`). Scope is optional. A reviewer named only in words
        does not count: a rule needs someone GitHub can tell."""
        gaps = []
        if not self.acceptance:
            gaps.append("acceptance criteria")
        if require_reviewer and not self.reviewer:
            if self.reviewer_as_written:
                gaps.append(
                    f"a reviewer named as a login or org/team (like `@mona` or `@octo/design`), not "
                    f"“{self.reviewer_as_written}”"
                )
            else:
                gaps.append("a reviewer")
        return tuple(gaps)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "task": self.task,
            "scope": list(self.scope),
            "excluded": list(self.excluded),
            "acceptance": list(self.acceptance),
            "required_evidence": list(self.required_evidence),
            "reviewer": self.reviewer,
            "owner": self.owner,
            "code": self.code,
        }
        # Written only when set, so a brief without them is stored and recorded as before they existed.
        if self.access is not None:
            data["access"] = self.access
        if self.evidence_lines:
            data["evidence_lines"] = list(self.evidence_lines)
        if self.reviewer_as_written is not None:
            data["reviewer_as_written"] = self.reviewer_as_written
        if self.priority is not None:
            data["priority"] = self.priority
        if self.depends_on:
            data["depends_on"] = list(self.depends_on)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Brief | None:
        if data is None:
            return None
        return cls(
            scope=tuple(data.get("scope", ())),
            excluded=tuple(data.get("excluded", ())),
            acceptance=tuple(data.get("acceptance", ())),
            required_evidence=tuple(data.get("required_evidence", ())),
            reviewer=data.get("reviewer"),
            task=data.get("task", ""),
            owner=data.get("owner"),
            code=data.get("code", True),
            access=data.get("access"),
            evidence_lines=tuple(data.get("evidence_lines", ())),
            reviewer_as_written=data.get("reviewer_as_written"),
            priority=data.get("priority"),
            depends_on=tuple(data.get("depends_on", ())),
        )


@dataclass(frozen=True)
class Ticket:
    """One issue's work state. `attempt` is the current attempt's number (0 before the first claim)."""

    key: TicketKey
    repository: str
    state: WorkState
    revision: int
    owner: str
    runner: str | None = None
    attempt: int = 0
    deliveries: int = 0
    brief: Brief | None = None

    @property
    def ref(self) -> str:
        return f"#{self.key.number}"


@dataclass(frozen=True)
class Actor:
    """Who sent a command, with what GitHub says about them. Logins compare case-insensitively.

    `permission` is the built-in level (a custom role's base level); `role_name` the role GitHub names,
    built-in or custom (`""` when unknown); `teams` the `org/team` entries of the repository's lists the
    actor is an active member of; `is_bot` a `type: Bot` account or a login ending in `[bot]`; `collaborator`
    whether GitHub counts them a collaborator of the repository (`Access.collaborator`); `workflow` the
    GitHub Actions workflow (`owner/repo/.github/workflows/agent.yml`) whose run calls on the actor's behalf,
    with its OIDC token (None: the actor calls, or comments, as themselves). `access_known` False: only the login
    is known, not yet looked up on GitHub; a decision that needs more raises `AccessNeeded` (`decide`).
    """

    login: str
    permission: Permission = Permission.NONE
    teams: frozenset[str] = frozenset()
    is_bot: bool = False
    role_name: str = ""
    collaborator: bool = False
    workflow: str | None = None
    access_known: bool = True

    def __post_init__(self) -> None:
        if self.login.lower().endswith("[bot]") and not self.is_bot:
            object.__setattr__(self, "is_bot", True)

    def is_(self, login: str | None) -> bool:
        return login is not None and login.lower() == self.login.lower()


@dataclass(frozen=True)
class Evidence:
    """What a `/deliver` reports. A report is a claim until the evidence rail verifies it."""

    branch: str | None = None
    commit: str | None = None
    pull_request: int | None = None
    tests: tuple[str, ...] = ()
    screenshots: tuple[str, ...] = ()

    def kinds(self) -> frozenset[str]:
        present = {
            "branch": self.branch is not None,
            "commit": self.commit is not None,
            "pr": self.pull_request is not None,
            "tests": bool(self.tests),
            "screenshot": bool(self.screenshots),
        }
        return frozenset(kind for kind, there in present.items() if there)

    def to_dict(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "commit": self.commit,
            "pr": self.pull_request,
            "tests": list(self.tests),
            "screenshots": list(self.screenshots),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            branch=data.get("branch"),
            commit=data.get("commit"),
            pull_request=data.get("pr"),
            tests=tuple(data.get("tests", ())),
            screenshots=tuple(data.get("screenshots", ())),
        )


@dataclass(frozen=True)
class Command:
    """One command line of a comment, parsed. `text` is the free text that belongs to it; `summary` that
    text without its evidence lines, as the parser found it (None: not parsed, and `text` is the summary).
    `summary` is derived from `text`, so it takes no part in comparisons."""

    name: str
    rev: int | None = None
    user: str | None = None
    issue: int | None = None
    text: str = ""
    evidence: Evidence = field(default_factory=Evidence)
    summary: str | None = field(default=None, compare=False)

    def summarised(self) -> str:
        """The free text that is not evidence."""
        return self.text if self.summary is None else self.summary


# A `runners` entry naming a GitHub Actions workflow whose runs may run tasks (`workflow:owner/repo/.github/...`).
WORKFLOW = "workflow:"


@dataclass(frozen=True)
class Run:
    """A GitHub Actions run calling Baton with its OIDC token: the workflow file and ref it runs
    (`owner/repo/.github/workflows/agent.yml@refs/heads/main`), its run id, and the installation of Baton that
    serves its repository (the run acts on that installation's repositories only)."""

    workflow_ref: str
    run_id: str
    installation_id: int

    @property
    def workflow(self) -> str:
        """The workflow file, without the ref it ran at, as `runners:` names it."""
        return self.workflow_ref.partition("@")[0]

    def recorded(self) -> dict[str, str]:
        """What the event of a command the run decided records of it."""
        return {"via": "actions", "workflow_ref": self.workflow_ref, "run_id": self.run_id}


@dataclass(frozen=True)
class Policy:
    """A repository's settings that the guards need (from `.github/baton.yml`)."""

    max_active_claims: int = 3
    allow_self_review: bool = False
    reviewers: frozenset[str] = frozenset()
    runners: frozenset[str] = frozenset()
    maintainers: frozenset[str] = frozenset()  # replaces "maintain or admin permission" when set
    # without a `runners` list: "collaborators" (GitHub's collaborators), "readers" (read access or more) or "anyone"
    runner_access: str = "collaborators"
    required_evidence: tuple[str, ...] = ()  # each kind once per item required, as in `Brief`
    require_reviewer: bool = False  # `/publish` needs a brief that names a reviewer
    # `/accept` waits until GitHub verified every branch, commit and pull request the delivery reported
    require_verified_evidence: bool = False
    offer: str = "all"
    offer_label: str = "baton"
    stale_after: int = 3 * 86400  # seconds without activity before a claim is marked stale
    auto_release_after: int | None = None  # None: a stale claim is released only by a person
    # (label, priority 0 to 4): an issue's labels give its priority when its brief says none (the lowest wins)
    priority_labels: tuple[tuple[str, int], ...] = ()

    def label_priority(self, labels: Iterable[str]) -> int | None:
        """The priority `priority_labels` gives an issue with `labels` (names compared case-insensitively)."""
        mapped = {name.lower(): priority for name, priority in self.priority_labels}
        found = [mapped[label.lower()] for label in labels if label.lower() in mapped]
        return min(found, default=None)

    def lists(self, names: frozenset[str], actor: Actor, *, by_name: bool = False) -> bool:
        """True when the actor is named in a list of logins, `@org/team` entries (matching `actor.teams`) and
        `role:NAME` entries (matching GitHub's role name, custom roles included). With `by_name` only the
        login counts."""
        wanted = {name.lower().lstrip("@") for name in names}
        if actor.login.lower() in wanted:
            return True
        if by_name:
            return False
        role = f"role:{actor.role_name.lower()}" if actor.role_name else None
        return any(team.lower() in wanted for team in actor.teams) or role in wanted

    def teams(self) -> frozenset[str]:
        """The `org/team` entries of every list, lower-case and without the @: whose membership matters."""
        entries = self.reviewers | self.runners | self.maintainers
        return frozenset(e.lower().lstrip("@") for e in entries if "/" in e and not e.startswith(WORKFLOW))

    def workflows(self) -> frozenset[str]:
        """The workflows `runners` lists (`workflow:owner/repo/.github/workflows/agent.yml`), lower-case and
        without their prefix."""
        return frozenset(e.removeprefix(WORKFLOW).lower() for e in self.runners if e.startswith(WORKFLOW))


@dataclass(frozen=True)
class Event:
    """One entry of the append-only history. `data` holds what replay needs to rebuild the ticket."""

    type: str
    actor: str
    role: Role
    revision: int
    attempt: int
    data: dict[str, Any] = field(default_factory=dict)


# An answer to a command, queued to be written on GitHub: its kind ("reaction" | "reply"), the comment it answers
# (None: the issue's or pull request's own body), the command's author, and the text (a reply's, or the reaction).
Answer = tuple[str, int | None, str, str]
