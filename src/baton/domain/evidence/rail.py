"""The evidence rail: what it keeps of each subject, and `apply()`, which folds one more fact into it.

The rail keeps, per subject (a pull request's number, a branch's name, a check's commit and name, a
deployment's id), a join of what it was told: the newest fact by its stamp, plus the few facts that stay true
once seen (a merge, a deployment's success). A join does not care about order or repetition, so late,
repeated or shuffled deliveries give the rail the ordered ones give. Which tickets a subject links is decided
here too; the states are derived in `assessment`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..model import DeploymentState, Evidence, RepositoryState
from .assessment import assess, deployment_state
from .facts import (
    BranchFact,
    CheckFact,
    CompareFact,
    DeliveryReport,
    DeploymentFact,
    DeploymentStatusFact,
    Fact,
    LookupFact,
    PullRequestFact,
    branch_name,
    canonical_order,
    instant,
    order,
)

# ---------------------------------------------------------------------------------------------- kept


@dataclass(frozen=True)
class PullRequest:
    """What the rail keeps of one pull request: its newest fact and, once merged, the merge.

    A merge is final: the head, the merge commit and the state come from the merge fact, whatever arrives
    later. Links still follow the newest fact, so an edited body can unlink a merged pull request.
    """

    latest: PullRequestFact
    merge: PullRequestFact | None = None

    @classmethod
    def of(cls, fact: PullRequestFact) -> PullRequest:
        return cls(fact, fact if fact.merged else None)

    def joined(self, fact: PullRequestFact) -> PullRequest:
        latest = max(self.latest, fact, key=order)
        merge = self.merge
        if fact.merged:
            # the earliest fact that says merged is the merge itself; later ones only echo it
            merge = fact if merge is None else min(merge, fact, key=order)
        return PullRequest(latest, merge)

    @property
    def number(self) -> int:
        return self.latest.number

    @property
    def merged(self) -> bool:
        return self.merge is not None

    @property
    def open(self) -> bool:
        return self.merge is None and self.latest.state == "open"

    @property
    def closed_unmerged(self) -> bool:
        return self.merge is None and self.latest.state == "closed"

    @property
    def head_ref(self) -> str:
        return (self.merge or self.latest).head_ref

    @property
    def base_ref(self) -> str:
        return (self.merge or self.latest).base_ref

    @property
    def merge_commit_sha(self) -> str | None:
        return self.merge.merge_commit_sha if self.merge is not None else None


@dataclass(frozen=True)
class Branch:
    """What the rail keeps of one branch: the newest fact, the pushes of the newest second (`pushes`, in a
    fixed order) and the newest deletion."""

    latest: BranchFact
    pushes: tuple[BranchFact, ...] = ()
    deletion: BranchFact | None = None

    @classmethod
    def of(cls, fact: BranchFact) -> Branch:
        return cls(fact).joined(fact)

    def joined(self, fact: BranchFact) -> Branch:
        latest = max(self.latest, fact, key=order)
        pushes, deletion = self.pushes, self.deletion
        if fact.deleted:
            deletion = fact if deletion is None else max(deletion, fact, key=order)
        elif fact.sha is not None:
            newest = instant(pushes[0].stamp) if pushes else None
            if newest is None or instant(fact.stamp) > newest:
                pushes = (fact,)
            elif instant(fact.stamp) == newest and fact not in pushes:
                pushes = tuple(sorted((*pushes, fact), key=canonical_order))
        return Branch(latest, pushes, deletion)

    @property
    def head(self) -> BranchFact | None:
        """The newest push: of the pushes made in its second, the one no other push continues from."""
        if not self.pushes:
            return None
        continued = {push.before for push in self.pushes}
        ends = [push for push in self.pushes if push.sha not in continued] or list(self.pushes)
        return max(ends, key=order)

    @property
    def name(self) -> str:
        return branch_name(self.latest.name)

    @property
    def exists(self) -> bool:
        return not self.latest.deleted

    @property
    def sha(self) -> str | None:
        """The head commit, once a push named it and no deletion came after that push."""
        if not self.exists or self.head is None:
            return None
        if self.deletion is not None and order(self.deletion) > order(self.head):
            return None  # re-created since, and not pushed to yet
        return self.head.sha


@dataclass(frozen=True)
class Deployment:
    """What the rail keeps of one deployment: its creation (when seen) and every status, oldest first."""

    id: int
    created: DeploymentFact | None = None
    statuses: tuple[DeploymentStatusFact, ...] = ()

    def joined(self, fact: DeploymentFact | DeploymentStatusFact) -> Deployment:
        if isinstance(fact, DeploymentFact):
            created = fact if self.created is None else max(self.created, fact, key=order)
            return replace(self, created=created)
        return replace(self, statuses=tuple(sorted({*self.statuses, fact}, key=order)))

    @property
    def sha(self) -> str | None:
        if self.created is not None:
            return self.created.sha
        return min((s.sha for s in self.statuses if s.sha is not None), default=None)

    @property
    def environment(self) -> str | None:
        if self.created is not None:
            return self.created.environment
        return min((s.environment for s in self.statuses if s.environment is not None), default=None)

    @property
    def status(self) -> str | None:
        """The newest status; None before the first, which GitHub shows as pending."""
        return self.statuses[-1].state if self.statuses else None

    @property
    def succeeded(self) -> bool:
        """Once a deployment succeeded, the change reached its environment; later statuses do not undo it."""
        return any(s.state == "success" for s in self.statuses)


# ---------------------------------------------------------------------------------------------- the rail


@dataclass(frozen=True)
class EvidenceRail:
    """Both evidence rails of ticket `ticket` (an issue number of one repository).

    Build the empty rail with `EvidenceRail(ticket=42)` and feed it facts with `apply()`. A non-code
    ticket is `EvidenceRail(42, applicable=False)` (or `replace(rail, applicable=False)`): both rails are
    then `not_applicable`, whatever facts arrive. `lookups` are what GitHub answered when asked for a reported
    branch, commit or pull request (`verification` reads them). The fields after `lookups` are derived on
    construction; they cannot be passed in.
    """

    ticket: int
    applicable: bool = True
    pull_requests: tuple[PullRequest, ...] = ()
    branches: tuple[Branch, ...] = ()
    checks: tuple[CheckFact, ...] = ()
    deployments: tuple[Deployment, ...] = ()
    comparisons: tuple[CompareFact, ...] = ()
    reports: tuple[DeliveryReport, ...] = ()
    lookups: tuple[LookupFact, ...] = ()

    reported_branch: str | None = field(init=False, default=None)
    reported_commit: str | None = field(init=False, default=None)
    reported_pull_request: int | None = field(init=False, default=None)
    verified_head_sha: str | None = field(init=False, default=None)
    checked_at: str | None = field(init=False, default=None)
    mismatch: str | None = field(init=False, default=None)
    repository: RepositoryState = field(init=False, default=RepositoryState.UNREPORTED)
    reason: str | None = field(init=False, default=None)
    deployment: DeploymentState = field(init=False, default=DeploymentState.NOT_DEPLOYED)

    def __post_init__(self) -> None:
        # a rail built by hand compares equal to the same rail built by apply()
        canonical: dict[str, tuple[Any, ...]] = {
            "pull_requests": tuple(sorted(self.pull_requests, key=lambda pr: pr.number)),
            "branches": tuple(sorted(self.branches, key=lambda b: b.name)),
            "checks": tuple(sorted(self.checks, key=lambda c: (c.sha.lower(), c.name))),
            "deployments": tuple(sorted(self.deployments, key=lambda d: d.id)),
            "comparisons": tuple(sorted(self.comparisons, key=canonical_order)),
            "reports": tuple(sorted(set(self.reports), key=order)),
            "lookups": tuple(sorted(set(self.lookups), key=order)),
        }
        for name, value in canonical.items():
            object.__setattr__(self, name, value)
        evidence = [report.evidence for report in self.reports]  # oldest first: the newest report wins
        object.__setattr__(self, "reported_branch", _last(e.branch for e in evidence))
        object.__setattr__(self, "reported_commit", _last(e.commit for e in evidence))
        object.__setattr__(self, "reported_pull_request", _last(e.pull_request for e in evidence))
        assessment = assess(self)
        for name in ("repository", "reason", "verified_head_sha", "checked_at", "mismatch"):
            object.__setattr__(self, name, getattr(assessment, name))
        object.__setattr__(self, "deployment", deployment_state(self))

    def pull_request(self, number: int) -> PullRequest | None:
        return next((pr for pr in self.pull_requests if pr.number == number), None)

    def branch(self, name: str) -> Branch | None:
        return next((b for b in self.branches if b.name == branch_name(name)), None)

    def linked_pull_requests(self) -> tuple[PullRequest, ...]:
        """The pull requests that link this ticket now: by their body or head branch, or by the report."""
        return tuple(pr for pr in self.pull_requests if _pr_linked(self, pr))

    def linked_branches(self) -> tuple[Branch, ...]:
        return tuple(b for b in self.branches if _branch_linked(self, b))


def _last(values: Iterable[Any]) -> Any:
    found = None
    for value in values:
        if value is not None:
            found = value
    return found


# ---------------------------------------------------------------------------------------------- apply


def apply(rail: EvidenceRail, fact: Fact) -> EvidenceRail:
    """The rail with one more fact. Pure; applying a fact twice, or facts in any order, gives the same rail."""
    match fact:
        case PullRequestFact():
            current = rail.pull_request(fact.number)
            kept = PullRequest.of(fact) if current is None else current.joined(fact)
            if kept == current:
                return rail
            others = [pr for pr in rail.pull_requests if pr.number != fact.number]
            return replace(rail, pull_requests=(*others, kept))
        case BranchFact():
            branch = rail.branch(fact.name)
            kept_branch = Branch.of(fact) if branch is None else branch.joined(fact)
            if kept_branch == branch:
                return rail
            rest = [b for b in rail.branches if b.name != kept_branch.name]
            return replace(rail, branches=(*rest, kept_branch))
        case CheckFact():
            key = (fact.sha.lower(), fact.name)
            check = next((c for c in rail.checks if (c.sha.lower(), c.name) == key), None)
            newest = fact if check is None else max(check, fact, key=order)
            if newest == check:
                return rail
            return replace(rail, checks=(*(c for c in rail.checks if (c.sha.lower(), c.name) != key), newest))
        case DeploymentFact() | DeploymentStatusFact():
            ident = fact.id if isinstance(fact, DeploymentFact) else fact.deployment_id
            deployment = next((d for d in rail.deployments if d.id == ident), None)
            kept_deployment = (deployment or Deployment(ident)).joined(fact)
            if kept_deployment == deployment:
                return rail
            return replace(rail, deployments=(*(d for d in rail.deployments if d.id != ident), kept_deployment))
        case CompareFact():
            if fact in rail.comparisons:
                return rail
            return replace(rail, comparisons=(*rail.comparisons, fact))
        case DeliveryReport():
            return _report(rail, fact)
        case LookupFact():
            if fact in rail.lookups:
                return rail
            return replace(rail, lookups=(*rail.lookups, fact))


def _report(rail: EvidenceRail, fact: DeliveryReport) -> EvidenceRail:
    """Keep the newest report of each kind (branch, commit, pull request): a later delivery that leaves
    one out still stands by what the earlier one said about it."""
    reports = {*rail.reports, fact}
    kinds: list[Callable[[Evidence], object]] = [
        lambda e: e.branch,
        lambda e: e.commit,
        lambda e: e.pull_request,
    ]
    kept = {
        max(with_kind, key=order)
        for kind in kinds
        if (with_kind := [r for r in reports if kind(r.evidence) is not None])
    }
    if kept == set(rail.reports):
        return rail
    return replace(rail, reports=tuple(kept))


# ---------------------------------------------------------------------------------------------- linking


def _pr_linked(rail: EvidenceRail, pr: PullRequest) -> bool:
    if rail.ticket in pr.latest.links or pr.number == rail.reported_pull_request:
        return True
    return rail.reported_branch is not None and branch_name(rail.reported_branch) == branch_name(pr.head_ref)


def _branch_linked(rail: EvidenceRail, branch: Branch) -> bool:
    if rail.ticket in branch.latest.links:
        return True
    return rail.reported_branch is not None and branch_name(rail.reported_branch) == branch.name
