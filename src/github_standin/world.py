"""The stand-in GitHub's state: accounts, installations, repositories and what is in them. In memory.

One lock guards everything: the HTTP side (Baton calling the REST API) and the people side (users
commenting, opening pull requests, merging, deploying) change the same objects from different threads.
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import secrets
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .actions import Issuer
from .shapes import Account, App, Repo

PERMISSIONS = ("none", "read", "triage", "write", "maintain", "admin")


def sha_of(*parts: object) -> str:
    """A commit id: 40 hex digits, derived from what the commit is about."""
    return hashlib.sha1("/".join(str(part) for part in parts).encode()).hexdigest()


@dataclass
class Label:
    id: int
    name: str
    color: str
    description: str | None
    default: bool = False


@dataclass
class Comment:
    id: int
    issue: int
    user: Account
    body: str
    created_at: datetime
    updated_at: datetime
    app_id: int | None = None  # the App that wrote it (GitHub's `performed_via_github_app`)


@dataclass
class Reaction:
    id: int
    user: Account
    content: str
    created_at: datetime
    comment: int | None  # None: on the issue itself


@dataclass
class Issue:
    number: int
    id: int
    title: str
    body: str
    user: Account
    created_at: datetime
    updated_at: datetime
    state: str = "open"
    state_reason: str | None = None
    closed_at: datetime | None = None
    labels: list[str] = field(default_factory=list)  # names, in the order they were added
    assignees: list[str] = field(default_factory=list)
    pull_request: bool = False
    app_id: int | None = None  # the App that opened it, through an installation token
    # its closes and reopenings, oldest first, as its timeline shows them: (event, who, when, the commit that
    # closed it (a merge's) or None, state_reason)
    changes: list[tuple[str, Account, datetime, str | None, str | None]] = field(default_factory=list)


@dataclass
class PullRequest:
    number: int
    id: int
    head: str  # branch name
    head_sha: str
    base: str
    draft: bool = False
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    title: str | None
    summary: str | None
    app_id: int
    started_at: datetime
    completed_at: datetime | None = None
    external_id: str | None = None
    details_url: str | None = None
    suite_id: int | None = None  # the check suite it belongs to (its own id if None)


@dataclass
class Deployment:
    id: int
    sha: str
    ref: str
    environment: str
    creator: Account
    created_at: datetime
    statuses: list[tuple[int, str, datetime]] = field(default_factory=list)  # (id, state, at)


@dataclass
class Repository:
    id: int
    owner: Account
    name: str
    installation_id: int
    default_branch: str = "main"
    private: bool = False
    files: dict[str, str] = field(default_factory=dict)  # path on the default branch -> text
    labels: dict[str, Label] = field(default_factory=dict)  # lower-case name -> label
    issues: dict[int, Issue] = field(default_factory=dict)  # issues and pull requests share numbers
    comments: dict[int, Comment] = field(default_factory=dict)
    reactions: dict[int, list[Reaction]] = field(default_factory=dict)  # issue number -> reactions
    permissions: dict[str, str] = field(default_factory=dict)  # lower-case login -> role (built-in or custom)
    custom_roles: dict[str, str] = field(default_factory=dict)  # a custom role's name -> its base role
    branches: dict[str, list[str]] = field(default_factory=dict)  # name -> commits, oldest first
    committed: dict[str, datetime] = field(default_factory=dict)  # commit -> when it was made
    protection: dict[str, tuple[str, ...]] = field(default_factory=dict)  # branch -> its required checks
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    deployments: dict[int, Deployment] = field(default_factory=dict)
    # logins (shell-style patterns, `agent-*`) GitHub counts collaborators with the read role, beside `permissions`
    collaborators: tuple[str, ...] = ()

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    def shape(self, api_url: str) -> Repo:
        """How GitHub's objects describe this repository, with REST URLs starting at `api_url`."""
        return Repo(self.owner, self.name, self.id, api_url=api_url, default_branch=self.default_branch,
                    private=self.private)  # fmt: skip

    def label(self, name: str) -> Label | None:
        return self.labels.get(name.lower())

    def permission(self, login: str) -> str:
        if login.lower() == self.owner.login.lower():
            return "admin"
        if login.lower() not in self.permissions and self._listed(login):
            return "read"
        return self.permissions.get(login.lower(), "read" if not self.private else "none")

    def is_collaborator(self, login: str) -> bool:
        """What GitHub's collaborator check says: the owner, and everyone given a role here (`permissions`, not
        `none`) or listed in `collaborators`. Reading a public repository, as everybody may, is not enough."""
        if login.lower() == self.owner.login.lower():
            return True
        role = self.permissions.get(login.lower())
        return role != "none" if role is not None else self._listed(login)

    def _listed(self, login: str) -> bool:
        return any(fnmatch.fnmatchcase(login.lower(), pattern.lower()) for pattern in self.collaborators)

    def commits(self, branch: str) -> list[str]:
        return self.branches.get(branch, [])

    def is_at_or_after(self, base: str, head: str) -> bool | None:
        """Whether commit `head` has `base` in its history, on any branch; None if either is unknown."""
        for commits in self.branches.values():
            if head in commits:
                return base in commits[: commits.index(head) + 1]
        return None


@dataclass
class Installation:
    id: int
    account: Account
    app_id: int
    suspended: bool = False
    # what the installation grants the App beyond repository contents; without `members` GitHub refuses
    # to show the organisation's team memberships
    permissions: dict[str, str] = field(default_factory=lambda: {"members": "read"})


@dataclass
class Membership:
    role: str = "member"  # or "maintainer"
    state: str = "active"  # or "pending": invited, not yet joined


@dataclass
class RegisteredApp:
    """An App made through the App-manifest flow (registration.py): GitHub keeps the public half of its key,
    to verify its JWTs, and hands its credentials out once, for the code it gave the browser."""

    app: App
    public_key: str  # PEM
    webhook_secret: str
    client_id: str
    client_secret: str
    hook_url: str | None  # where its webhooks go
    url: str  # its homepage
    description: str | None
    created_at: datetime


@dataclass
class Client:
    """An App's OAuth client (oauth.py): its secret, and the callback URLs a sign-in may return to."""

    app_id: int
    secret: str
    callback_urls: list[str] = field(default_factory=list)


class Refused(Exception):
    """GitHub will not make this link between issues: its answer's status and words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Token:
    value: str
    installation_id: int
    expires_at: datetime


class World:
    """Everything the stand-in knows. Call its methods with `world.lock` held, or use the people side
    (people.py), which takes it."""

    def __init__(self, app_id: int, app_public_key: str, app_slug: str = "baton") -> None:
        self.lock = threading.RLock()
        self.app_id = app_id
        self.app_public_key = app_public_key  # PEM: installation tokens are minted for JWTs it verifies
        self.app_slug = app_slug
        self.accounts: dict[str, Account] = {}
        self.installations: dict[int, Installation] = {}
        self.repositories: dict[str, Repository] = {}  # lower-case "owner/name" -> repository
        self.teams: dict[tuple[str, str], dict[str, Membership]] = {}  # lower-case (org, slug) -> login -> it
        self.tokens: dict[str, Token] = {}
        self.user_tokens: dict[str, str] = {}  # a person's own token (personal or OAuth) -> their lower-case login
        self.apps: dict[int, App] = {}  # other GitHub Apps on the repositories (a CI reporting checks)
        self.registered: dict[int, RegisteredApp] = {}  # Apps made from a manifest, by id (also in `apps`)
        # one-time codes of the App-manifest flow -> (the App, its private key, when the code expires)
        self.manifest_codes: dict[str, tuple[int, str, datetime]] = {}
        self.web_login = "octocat"  # who is signed in on GitHub's web pages (the App-manifest and OAuth flows)
        self.clients: dict[str, Client] = {}  # the Apps' OAuth clients, by client id
        # one-time codes of the OAuth web flow -> (client id, login, redirect_uri, when the code expires)
        self.oauth_codes: dict[str, tuple[str, str, str, datetime]] = {}
        self.token_apps: dict[str, int] = {}  # a user access token (`user_tokens`) -> the App it was made for
        self.ahead = timedelta()  # how far GitHub's clock runs ahead of the wall clock (`advance`)
        # Links between issues, by their ids (global, so across repositories): issue -> the issues blocking it,
        # a parent -> its sub-issues, each in the order they were added; a sub-issue -> its one parent.
        self.blocked_by: dict[int, list[int]] = {}
        self.sub_issues: dict[int, list[int]] = {}
        self.parents: dict[int, int] = {}
        self.issuer = Issuer()  # GitHub Actions' token service: the OIDC tokens of workflow runs (actions.py)
        self._ids = itertools.count(1000)

    def next_id(self) -> int:
        return next(self._ids)

    def now(self) -> datetime:
        """GitHub's clock, to the second as it stamps its objects: the wall clock, plus what `advance` added."""
        return datetime.now(UTC).replace(microsecond=0) + self.ahead

    def advance(self, by: timedelta) -> None:
        """Let time pass on GitHub: what happens next is stamped `by` later than it would be."""
        self.ahead += by

    def account(self, login: str, kind: str = "User") -> Account:
        found = self.accounts.get(login.lower())
        if found is None:
            found = self.accounts[login.lower()] = Account(login, self.next_id(), kind)
        return found

    def user_token(self, login: str) -> str:
        """A new token of `login`'s own, as a personal access token is (`GET /user` tells whose it is)."""
        self.account(login)
        token = f"ghp_{secrets.token_hex(18)}"
        self.user_tokens[token] = login.lower()
        return token

    def add_client(self, app_id: int, callback_urls: list[str] | None = None) -> tuple[str, str]:
        """A new OAuth client for App `app_id` (the world's own, or one registered): its (id, secret)."""
        client_id, secret = f"Iv23li{secrets.token_hex(7)}", secrets.token_hex(20)
        self.clients[client_id] = Client(app_id, secret, list(callback_urls or []))
        return client_id, secret

    @property
    def app(self) -> App:
        return App(self.app_id, self.app_slug, self.app_slug.capitalize(), self.account("baton-team", "Organization"))

    def app_of(self, app_id: int) -> App:
        """The App with this id: Baton, or one of the others."""
        return self.app if app_id == self.app_id else self.apps[app_id]

    def add_app(self, name: str, *, id: int | None = None) -> App:
        """Another GitHub App, owned by an organisation of its own name (a CI that reports check runs)."""
        slug = name.lower().replace(" ", "-")
        app = App(id or self.next_id(), slug, name, self.account(slug, "Organization"),
                  permissions={"checks": "write", "contents": "read", "metadata": "read"},
                  events=("check_run", "check_suite", "push"))  # fmt: skip
        self.apps[app.id] = app
        return app

    @property
    def bot(self) -> Account:
        """The App's own account, as GitHub shows it on what the App writes."""
        return self.account(f"{self.app_slug}[bot]", "Bot")

    def public_key(self, app_id: int) -> str | None:
        """The public half of an App's key (Baton's, or one registered from a manifest), to verify its JWTs."""
        if app_id == self.app_id:
            return self.app_public_key
        registered = self.registered.get(app_id)
        return registered.public_key if registered is not None else None

    def install(
        self, owner: str, *, kind: str = "Organization", id: int | None = None, app_id: int | None = None
    ) -> Installation:
        """The App (Baton's, else the one `app_id` names) installed on `owner`'s account; `id` chooses the
        installation's id (else a fresh one)."""
        installation = Installation(id or self.next_id(), self.account(owner, kind), app_id or self.app_id)
        self.installations[installation.id] = installation
        return installation

    def join_team(self, org: str, slug: str, login: str, *, role: str = "member", state: str = "active") -> None:
        """`login` in team `org/slug` (the team made if new); `state="pending"`: invited, not yet a member."""
        self.account(login)
        self.teams.setdefault((org.lower(), slug.lower()), {})[login.lower()] = Membership(role, state)

    def repository(self, full_name: str) -> Repository | None:
        return self.repositories.get(full_name.lower())

    def create_label(self, repository: Repository, name: str, color: str, description: str | None) -> Label:
        label = Label(self.next_id(), name, color.lstrip("#").lower(), description)
        repository.labels[name.lower()] = label
        return label

    def add_issue(self, repository: Repository, title: str, author: Account, body: str = "") -> Issue:
        """A new issue, numbered after the last issue or pull request."""
        moment = self.now()
        number = max(repository.issues, default=0) + 1
        issue = Issue(number, self.next_id(), title, body, author, moment, moment)
        repository.issues[number] = issue
        return issue

    def add_comment(self, repository: Repository, number: int, author: Account, body: str) -> Comment:
        """A new comment by `author` on issue (or pull request) `number`."""
        moment = self.now()
        comment = Comment(self.next_id(), number, author, body, moment, moment)
        repository.comments[comment.id] = comment
        repository.issues[number].updated_at = moment
        return comment

    def add_repository(
        self, installation: Installation, name: str, *, default_branch: str = "main", id: int | None = None
    ) -> Repository:
        """A repository of the installation's account; `id` chooses its id (else a fresh one)."""
        repository = Repository(id or self.next_id(), installation.account, name, installation.id, default_branch)
        first = sha_of(installation.account.login, name, "initial")
        repository.branches[default_branch] = [first]
        repository.committed[first] = self.now()
        self.repositories[repository.full_name.lower()] = repository
        return repository

    def add_commit(
        self, repository: Repository, branch: str, message: str, *, sha: str | None = None, base: str | None = None
    ) -> tuple[str | None, str]:
        """One commit on `branch` (made from `base`, else the default branch, if the branch is new); `sha`
        chooses its id. Returns the branch's head before (None for a new branch) and the commit."""
        created = branch not in repository.branches
        start = repository.commits(base or repository.default_branch) if created else repository.branches[branch]
        sha = sha or sha_of(repository.full_name, branch, message, len(start))
        repository.branches[branch] = [*start, sha]
        repository.committed[sha] = self.now()
        return (None if created else start[-1]), sha

    def add_pull_request(
        self, repository: Repository, author: Account, branch: str, title: str, body: str = "", *, draft: bool = False
    ) -> PullRequest:
        """A pull request from `branch` into the default branch, numbered after the last issue or pull request."""
        if branch not in repository.branches:
            raise KeyError(f"push to {branch} first")
        moment = self.now()
        number = max(repository.issues, default=0) + 1
        repository.issues[number] = Issue(number, self.next_id(), title, body, author, moment, moment,
                                          pull_request=True)  # fmt: skip
        pull = PullRequest(number, self.next_id(), branch, repository.branches[branch][-1], repository.default_branch,
                           draft=draft)  # fmt: skip
        repository.pulls[number] = pull
        return pull

    def protect(self, repository: Repository, branch: str, required: tuple[str, ...]) -> None:
        """Branch protection on `branch` that requires the status checks named `required` to pass."""
        repository.protection[branch] = tuple(required)

    # -- links between issues: dependencies ("blocked by") and sub-issues -----------------------------------

    def issue_by_id(self, issue_id: int) -> tuple[Repository, Issue] | None:
        """The issue (not a pull request) with this id, in any repository, and its repository."""
        for repository in self.repositories.values():
            for issue in repository.issues.values():
                if issue.id == issue_id and not issue.pull_request:
                    return repository, issue
        return None

    def _linked(self, ids: list[int]) -> list[tuple[Repository, Issue]]:
        found = (self.issue_by_id(one) for one in ids)
        return [pair for pair in found if pair is not None]

    def blockers(self, issue: Issue) -> list[tuple[Repository, Issue]]:
        """The issues blocking `issue`, oldest link first."""
        return self._linked(self.blocked_by.get(issue.id, []))

    def blocked(self, issue: Issue) -> list[tuple[Repository, Issue]]:
        """The issues `issue` blocks."""
        return self._linked([one for one, blockers in self.blocked_by.items() if issue.id in blockers])

    def children(self, issue: Issue) -> list[tuple[Repository, Issue]]:
        return self._linked(self.sub_issues.get(issue.id, []))

    def parent(self, issue: Issue) -> tuple[Repository, Issue] | None:
        parent_id = self.parents.get(issue.id)
        return self.issue_by_id(parent_id) if parent_id is not None else None

    def _other(self, issue_id: int) -> tuple[Repository, Issue]:
        found = self.issue_by_id(issue_id)
        if found is None:
            raise Refused(404, "Not Found")
        return found

    def add_blocked_by(self, issue: Issue, blocking_id: int) -> tuple[Repository, Issue]:
        """`issue` is blocked by the issue with id `blocking_id` from now on: that issue and its repository.
        Refused (422) for the issue itself, a link already there, or one that closes a loop; 404 for an id no
        issue has."""
        repository, blocking = self._other(blocking_id)
        if blocking.id == issue.id:
            raise Refused(422, "An issue cannot block itself")
        blockers = self.blocked_by.setdefault(issue.id, [])
        if blocking.id in blockers:
            raise Refused(422, "Issue is already blocked by this issue")
        if self._blocks(issue.id, blocking.id):
            raise Refused(422, "This dependency would create a cycle")
        blockers.append(blocking.id)
        return repository, blocking

    def _blocks(self, blocking_id: int, issue_id: int) -> bool:
        """Whether `blocking_id` blocks `issue_id`, directly or through others."""
        seen, waiting = set(), [issue_id]
        while waiting:
            current = waiting.pop()
            if current == blocking_id:
                return True
            if current not in seen:
                seen.add(current)
                waiting.extend(self.blocked_by.get(current, []))
        return False

    def remove_blocked_by(self, issue: Issue, blocking_id: int) -> tuple[Repository, Issue]:
        """`issue` is no longer blocked by issue `blocking_id`; 404 when it was not."""
        if blocking_id not in self.blocked_by.get(issue.id, []):
            raise Refused(404, "Not Found")
        self.blocked_by[issue.id].remove(blocking_id)
        return self._other(blocking_id)

    def add_sub_issue(
        self, parent: Issue, parent_owner: str, sub_issue_id: int, *, replace_parent: bool = False
    ) -> tuple[Repository, Issue, tuple[Repository, Issue] | None]:
        """The issue with id `sub_issue_id` becomes the last sub-issue of `parent` (whose repository's owner is
        `parent_owner`): it, its repository, and the parent it had before (`replace_parent`). Refused (422) for
        the parent itself, an issue of another owner, or one that has a parent already, unless `replace_parent`."""
        repository, sub_issue = self._other(sub_issue_id)
        if sub_issue.id == parent.id:
            raise Refused(422, "An issue cannot be a sub-issue of itself")
        if repository.owner.login.lower() != parent_owner.lower():
            raise Refused(422, "Sub-issues must belong to the same owner as their parent")
        before = self.parent(sub_issue)
        if before is not None and (before[1].id == parent.id or not replace_parent):
            raise Refused(422, "An issue may only have one parent")
        ancestor = self.parents.get(parent.id)
        while ancestor is not None:
            if ancestor == sub_issue.id:
                raise Refused(422, "An issue cannot be a sub-issue of its own sub-issue")
            ancestor = self.parents.get(ancestor)
        if before is not None:
            self.sub_issues[before[1].id].remove(sub_issue.id)
        self.sub_issues.setdefault(parent.id, []).append(sub_issue.id)
        self.parents[sub_issue.id] = parent.id
        return repository, sub_issue, before

    def remove_sub_issue(self, parent: Issue, sub_issue_id: int) -> tuple[Repository, Issue]:
        """Issue `sub_issue_id` is no longer a sub-issue of `parent`; 404 when it was not."""
        if self.parents.get(sub_issue_id) != parent.id:
            raise Refused(404, "Not Found")
        del self.parents[sub_issue_id]
        self.sub_issues[parent.id].remove(sub_issue_id)
        return self._other(sub_issue_id)
