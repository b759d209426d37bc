"""The evidence rail: what it keeps of each subject, `apply()`, which folds one more fact into it, and what
the rail says.

The rail keeps, per subject (a pull request's number, a branch's name, a check's commit and name, a
deployment's id), a join of what it was told: the newest fact by its stamp, plus the few facts that stay true
once seen (a merge, a deployment's success). A join does not care about order or repetition, so late,
repeated or shuffled hooks give the rail the ordered ones give. Which tickets a subject links is decided
here too. What the rail says — the repository rail's state (merged, open, blocked …), its reason, the verified
head and the mismatch with the delivery's report; and the deployment rail's state, per environment — is
derived from what the rail keeps, each time it is built, never stored beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..model import DeploymentState, Evidence, RepositoryState
from .facts import (
    CONFLICTS,
    IN_MOTION,
    OWN_CHECK,
    PASSING,
    BranchFact,
    CheckFact,
    CompareFact,
    DeliveryReport,
    DeploymentFact,
    DeploymentStatusFact,
    Fact,
    Includes,
    LookupFact,
    PullRequestFact,
    branch_name,
    canonical_order,
    instant,
    order,
    same_commit,
    short,
)

Kept = TypeVar("Kept")  # what the rail keeps of one subject

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
            pull_requests = _joined(
                rail.pull_requests,
                lambda pr: pr.number,
                fact.number,
                lambda pr: PullRequest.of(fact) if pr is None else pr.joined(fact),
            )
            return rail if pull_requests is None else replace(rail, pull_requests=pull_requests)
        case BranchFact():
            branches = _joined(
                rail.branches,
                lambda b: b.name,
                branch_name(fact.name),
                lambda b: Branch.of(fact) if b is None else b.joined(fact),
            )
            return rail if branches is None else replace(rail, branches=branches)
        case CheckFact():
            checks = _joined(
                rail.checks,
                lambda c: (c.sha.lower(), c.name),
                (fact.sha.lower(), fact.name),
                lambda c: fact if c is None else max(c, fact, key=order),
            )
            return rail if checks is None else replace(rail, checks=checks)
        case DeploymentFact() | DeploymentStatusFact():
            ident = fact.id if isinstance(fact, DeploymentFact) else fact.deployment_id
            deployments = _joined(
                rail.deployments, lambda d: d.id, ident, lambda d: (d or Deployment(ident)).joined(fact)
            )
            return rail if deployments is None else replace(rail, deployments=deployments)
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


def _joined(
    kept: tuple[Kept, ...], key: Callable[[Kept], Hashable], subject: Hashable, join: Callable[[Kept | None], Kept]
) -> tuple[Kept, ...] | None:
    """`kept` with its item about `subject` (by `key`) joined with one more fact by `join`, which is given None
    for a subject not kept yet; None when the join changes nothing."""
    current = next((item for item in kept if key(item) == subject), None)
    joined = join(current)
    if joined == current:
        return None
    return (*(item for item in kept if key(item) != subject), joined)


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


# ---------------------------------------------------------------------------------------------- what the rail says


@dataclass(frozen=True)
class EnvironmentDeployment:
    """Where a ticket's merged change stands in one environment."""

    environment: str
    state: DeploymentState
    sha: str
    deployment_id: int


@dataclass(frozen=True)
class Assessment:
    """What the rail derives on construction for its repository rail (see `assess`)."""

    repository: RepositoryState
    reason: str | None = None
    verified_head_sha: str | None = None
    checked_at: str | None = None
    mismatch: str | None = None


# ---------------------------------------------------------------------------------------------- repository


def pull_request_head(rail: EvidenceRail, pr: PullRequest) -> tuple[str, str]:
    """A pull request's head commit as GitHub last showed it, and the stamp of the fact that showed it.

    Merged: the head it was merged at. Open: the newer of its newest fact and the newest push to its head
    branch (not for a fork's, whose branches are not this repository's). Closed: its last fact's head.
    """
    if pr.merge is not None:
        return pr.merge.head_sha, pr.merge.stamp
    latest = pr.latest
    if latest.state == "open" and not latest.fork:
        branch = rail.branch(latest.head_ref)
        pushed = branch.head if branch is not None and branch.sha is not None else None
        if pushed is not None and pushed.sha is not None and instant(pushed.stamp) > instant(latest.stamp):
            return pushed.sha, pushed.stamp
    return latest.head_sha, latest.stamp


def failing_checks(rail: EvidenceRail, pr: PullRequest) -> tuple[str, ...]:
    """The required checks that failed on the pull request's current head.

    The pull request fact's `failing_checks` (when known, and about this head) and check facts on this
    head are statements about each check; the newer statement wins, and a check fact wins a tie. A check
    that has not concluded is not failing: the pull request is then waiting, not blocked. Baton's own
    `baton/acceptance` never counts, so the work rail cannot feed back into the evidence rail.
    """
    sha, _ = pull_request_head(rail, pr)
    latest = pr.latest
    listed = latest.failing_checks if same_commit(latest.head_sha, sha) else None
    since = instant(latest.stamp) if listed is not None else None
    newer = {
        check.name: check
        for check in rail.checks
        if same_commit(check.sha, sha) and (since is None or instant(check.stamp) >= since)
    }
    failing = {name for name in listed or () if name not in newer}
    failing |= {
        name
        for name, check in newer.items()
        if check.required and check.conclusion is not None and check.conclusion not in PASSING
    }
    return tuple(sorted(failing - {OWN_CHECK}))


def pull_request_problems(rail: EvidenceRail, pr: PullRequest) -> str | None:
    sha, _ = pull_request_head(rail, pr)
    problems = []
    # GitHub's `blocked` and `behind` are not problems of the change: `blocked` is what a required review
    # or a pending `baton/acceptance` looks like, `behind` merges cleanly once updated
    if pr.latest.mergeable_state == CONFLICTS and same_commit(pr.latest.head_sha, sha):
        problems.append(f"merge conflicts with {pr.base_ref}")
    failing = failing_checks(rail, pr)
    if failing:
        problems.append(f"failing required checks: {', '.join(failing)}")
    return ", and ".join(problems) or None


def blocker(rail: EvidenceRail, pr: PullRequest) -> str | None:
    """Why an open pull request cannot be merged as it stands, in plain words; None when nothing stops it."""
    problems = pull_request_problems(rail, pr)
    return None if problems is None else f"pull request #{pr.number} has {problems}"


def _category(rail: EvidenceRail, pr: PullRequest) -> int:
    if pr.merged:
        return 0
    if pr.open:
        return 1 if blocker(rail, pr) is None else 2
    return 3


def lead_pull_request(rail: EvidenceRail) -> PullRequest | None:
    """The linked pull request the rail speaks of first: merged before open before blocked before closed;
    within those, the one the delivery reported, then the one GitHub updated last."""
    linked = rail.linked_pull_requests()
    if not linked:
        return None
    best = min(_category(rail, pr) for pr in linked)
    group = [pr for pr in linked if _category(rail, pr) == best]
    reported = [pr for pr in group if pr.number == rail.reported_pull_request]
    return reported[0] if reported else max(group, key=lambda pr: order(pr.latest))


def _live_branches(rail: EvidenceRail) -> list[str]:
    """Branches that carry work for the ticket now: linked ones that exist, and a reported one GitHub has
    said nothing about yet (a claim). The head of a pull request closed unmerged is not one: its work
    was turned down with it."""
    closed = {branch_name(pr.head_ref) for pr in rail.linked_pull_requests() if pr.closed_unmerged}
    names = {b.name for b in rail.linked_branches() if b.exists}
    if rail.reported_branch is not None and rail.branch(rail.reported_branch) is None:
        names.add(branch_name(rail.reported_branch))
    return sorted(names - closed)


def lead_branch(rail: EvidenceRail) -> tuple[str, Branch | None] | None:
    """The branch the rail speaks of when no pull request leads: the reported one, else the one pushed to
    last, else the last by name."""
    live = _live_branches(rail)
    if not live:
        return None
    if rail.reported_branch is not None and branch_name(rail.reported_branch) in live:
        return branch_name(rail.reported_branch), rail.branch(rail.reported_branch)
    kept = [b for name in live if (b := rail.branch(name)) is not None]
    pushed = [(order(b.head), b) for b in kept if b.head is not None and b.sha is not None]
    if pushed:
        newest = max(pushed, key=lambda found: found[0])[1]
        return newest.name, newest
    return live[-1], rail.branch(live[-1])


def _numbers(numbers: list[int]) -> str:
    refs = [f"#{n}" for n in sorted(numbers)]
    return refs[0] if len(refs) == 1 else ", ".join(refs[:-1]) + f" and {refs[-1]}"


def _closed_reason(closed: list[PullRequest]) -> str:
    numbers = [pr.number for pr in closed]
    if len(numbers) == 1:
        return f"pull request {_numbers(numbers)} was closed without merging"
    return f"pull requests {_numbers(numbers)} were closed without merging"


def _repository(rail: EvidenceRail) -> tuple[RepositoryState, str | None]:
    linked = rail.linked_pull_requests()
    if any(pr.merged for pr in linked):
        return RepositoryState.MERGED, None
    opened = [pr for pr in linked if pr.open]
    if opened:
        blockers = [blocker(rail, pr) for pr in opened]
        if all(blockers):
            return RepositoryState.BLOCKED, "; ".join(b for b in blockers if b)
        return RepositoryState.PULL_REQUEST_OPEN, None
    closed = [pr for pr in linked if pr.closed_unmerged]
    if _live_branches(rail) or unseen_pull_request(rail) is not None:
        return RepositoryState.BRANCH_REPORTED, None
    if closed:
        return RepositoryState.BLOCKED, _closed_reason(closed)
    reported = rail.branch(rail.reported_branch) if rail.reported_branch is not None else None
    if reported is not None and not reported.exists:
        return RepositoryState.BLOCKED, f"branch {reported.name} was deleted without a pull request"
    if rail.reported_commit is not None:
        return RepositoryState.BRANCH_REPORTED, None
    return RepositoryState.UNREPORTED, None


def unseen_pull_request(rail: EvidenceRail) -> int | None:
    """The reported pull request, while GitHub has said nothing about it."""
    number = rail.reported_pull_request
    return number if number is not None and rail.pull_request(number) is None else None


def _mismatch(rail: EvidenceRail, subject: PullRequest | None) -> str | None:
    problems = []
    reported_pr = rail.pull_request(rail.reported_pull_request) if rail.reported_pull_request is not None else None
    subject = reported_pr or subject
    if subject is not None:
        if rail.reported_branch is not None and branch_name(rail.reported_branch) != branch_name(subject.head_ref):
            problems.append(
                f"reported branch {rail.reported_branch}, but pull request #{subject.number} "
                f"is from {branch_name(subject.head_ref)}"
            )
        if rail.reported_commit is not None:
            sha, _ = pull_request_head(rail, subject)
            if not same_commit(rail.reported_commit, sha):
                when = "was not the head of" if subject.merged else "is not the head of"
                merged = " when it was merged" if subject.merged else ""
                problems.append(
                    f"reported commit {short(rail.reported_commit)} {when} pull request #{subject.number}"
                    f"{merged} ({short(sha)})"
                )
    elif rail.reported_commit is not None and rail.reported_branch is not None:
        branch = rail.branch(rail.reported_branch)
        if branch is not None and branch.sha is not None and not same_commit(rail.reported_commit, branch.sha):
            problems.append(
                f"reported commit {short(rail.reported_commit)} is not the head of branch {branch.name} "
                f"({short(branch.sha)})"
            )
    return "; ".join(problems) or None


def assess(rail: EvidenceRail) -> Assessment:
    if not rail.applicable:
        return Assessment(RepositoryState.NOT_APPLICABLE)
    state, reason = _repository(rail)
    subject = lead_pull_request(rail)
    verified: str | None = None
    checked: str | None = None
    if subject is not None:
        verified, checked = pull_request_head(rail, subject)
    elif (lead := lead_branch(rail)) is not None:
        branch = lead[1]
        if branch is not None and branch.sha is not None and branch.head is not None:
            verified, checked = branch.sha, branch.head.stamp
    return Assessment(state, reason, verified, checked, _mismatch(rail, subject))


def accepted_heads(rail: EvidenceRail) -> tuple[str, ...]:
    """The commits an acceptance given now covers: the heads of the linked open and merged pull requests,
    and the commit the delivery reported."""
    heads = {pull_request_head(rail, pr)[0] for pr in rail.linked_pull_requests() if pr.open or pr.merged}
    if rail.reported_commit is not None:
        heads.add(rail.reported_commit)
    return tuple(sorted(heads))


def unverified_branch(rail: EvidenceRail) -> str | None:
    """The reported branch, while GitHub has shown no commit of it (and no deletion)."""
    if rail.reported_branch is None:
        return None
    branch = rail.branch(rail.reported_branch)
    return branch_name(rail.reported_branch) if branch is None or (branch.exists and branch.sha is None) else None


def unrequired_failures(rail: EvidenceRail) -> dict[str, list[CheckFact]]:
    """Per base branch, the checks that did not pass on the head of a linked open pull request and are not
    known to be required: the base branch's protection says which are."""
    found: dict[str, list[CheckFact]] = {}
    for pr in rail.linked_pull_requests():
        if not pr.open:
            continue
        head, _ = pull_request_head(rail, pr)
        for check in rail.checks:
            failed = check.conclusion is not None and check.conclusion not in PASSING
            if failed and not check.required and check.name != OWN_CHECK and same_commit(check.sha, head):
                found.setdefault(pr.base_ref, []).append(check)
    return found


# ---------------------------------------------------------------------------------------------- deployment


def _answer(rail: EvidenceRail, base: str, later: str, includes: Includes | None) -> bool | None:
    if same_commit(base, later):
        return True
    for comparison in rail.comparisons:
        if same_commit(comparison.base, base) and same_commit(comparison.head, later):
            return comparison.status in ("ahead", "identical")
        if same_commit(comparison.base, later) and same_commit(comparison.head, base):
            return comparison.status in ("behind", "identical")
    return includes(base, later) if includes is not None else None


def merge_commits(rail: EvidenceRail) -> tuple[str, ...]:
    """The merge commits of the ticket's merged pull requests: what a deployment must contain."""
    return tuple(sorted({sha for pr in rail.linked_pull_requests() if (sha := pr.merge_commit_sha) is not None}))


def unanswered_comparisons(rail: EvidenceRail) -> tuple[tuple[str, str], ...]:
    """(merge commit, deployed commit) pairs the rail cannot order yet: ask the compare API
    (`GET /repos/{owner}/{repo}/compare/{base}...{head}`) and apply the answers as `CompareFact`s."""
    if not rail.applicable:
        return ()
    wanted = {
        (merge, sha)
        for merge in merge_commits(rail)
        for deployment in rail.deployments
        if (sha := deployment.sha) is not None and _answer(rail, merge, sha, None) is None
    }
    return tuple(sorted(wanted))


def environments(rail: EvidenceRail, includes: Includes | None = None) -> tuple[EnvironmentDeployment, ...]:
    """Where the ticket's merged change stands, per environment that has a deployment containing it.

    A deployment counts when its commit is at or after every merge commit of the ticket; `includes`
    answers what the rail's recorded comparisons do not. Per environment: deployed once any such deployment
    succeeded; otherwise the newest one decides, skipping those made `inactive` before they succeeded
    (superseded): no status yet or queued/pending/in_progress is deploying, failure/error is failed.
    """
    merges = merge_commits(rail)
    if not rail.applicable or not merges:
        return ()
    grouped: dict[str, list[Deployment]] = {}
    for deployment in rail.deployments:
        sha = deployment.sha
        if sha is None or not all(_answer(rail, merge, sha, includes) is True for merge in merges):
            continue
        grouped.setdefault(deployment.environment or "an unnamed environment", []).append(deployment)
    found = []
    for environment, deployments in sorted(grouped.items()):
        succeeded = [d for d in deployments if d.succeeded]
        if succeeded:
            newest = succeeded[-1]
            state = DeploymentState.DEPLOYED
        else:
            live = [d for d in deployments if d.status != "inactive"]
            if not live:
                continue
            newest = live[-1]
            state = DeploymentState.DEPLOYING if newest.status in (None, *IN_MOTION) else DeploymentState.FAILED
        assert newest.sha is not None
        found.append(EnvironmentDeployment(environment, state, newest.sha, newest.id))
    return tuple(found)


def deployment_state(rail: EvidenceRail, includes: Includes | None = None) -> DeploymentState:
    """Deployed in any environment, else deploying in any, else failed in any, else not deployed."""
    if not rail.applicable:
        return DeploymentState.NOT_APPLICABLE
    states = {found.state for found in environments(rail, includes)}
    for state in (DeploymentState.DEPLOYED, DeploymentState.DEPLOYING, DeploymentState.FAILED):
        if state in states:
            return state
    return DeploymentState.NOT_DEPLOYED
