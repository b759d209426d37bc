"""Where a fact belongs: a sighting is a fact with what its hook says beyond the fact itself, and the
subjects (`pr:57`, `branch:42-empty-state`, `sha:…`) say which rails it reaches. A rail that holds a subject
is reached by every fact about it; a deployment also reaches the merged rails it may ship.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..model import DeploymentState, RepositoryKey
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
    instant,
)
from .rail import EvidenceRail, environments, pull_request_head, unanswered_comparisons

# A deployment created before a merge cannot contain it; the margin absorbs clocks that disagree a little.
DEPLOYMENT_MARGIN = timedelta(minutes=5)


@dataclass(frozen=True, order=True)
class Subject:
    """What a fact is about, as the facts log and the link index file it. `key` is the stored text: `pr:57`,
    `branch:42-empty-state`, `sha:…`, `deployment:9`, `compare:…...…`, `report` or `timeline`."""

    key: str

    @classmethod
    def pull_request(cls, number: int) -> Subject:
        return cls(f"pr:{number}")

    @classmethod
    def branch(cls, name: str) -> Subject:
        """A branch, by the name as the caller has it: pass `branch_name(ref)` for a ref that may be a full one."""
        return cls(f"branch:{name}")

    @classmethod
    def commit(cls, sha: str) -> Subject:
        return cls(f"sha:{sha.lower()}")

    @classmethod
    def deployment(cls, ident: int) -> Subject:
        return cls(f"deployment:{ident}")

    @classmethod
    def comparison(cls, base: str, head: str) -> Subject:
        return cls(f"compare:{base.lower()}...{head.lower()}")

    @classmethod
    def report(cls) -> Subject:
        """A delivery's report: a claim on one ticket's rail, never logged for the repository."""
        return cls("report")

    @classmethod
    def timeline(cls) -> Subject:
        """The issue's timeline on GitHub: a rail holds it once it was read for the ticket (work from before
        Baton heard of the issue). No fact is about it."""
        return cls("timeline")


@dataclass(frozen=True)
class Repository:
    """The repository a hook is about: its key (the installation that reports it, GitHub's id) and its
    name, which can change while the key does not."""

    key: RepositoryKey
    name: str  # "owner/name"


@dataclass(frozen=True)
class Sighting:
    """A fact, with what its hook says about where it belongs beyond the fact itself.

    `links`: issue numbers the fact links by its own content (closing keywords, a branch name).
    `reach`: more subjects whose rails it reaches (a check names its pull requests and branch).
    `environment`: a deployment's environment, when it may ship every merged ticket not yet deployed there.
    """

    fact: Fact
    links: frozenset[int] = frozenset()
    reach: frozenset[Subject] = frozenset()
    environment: str | None = None


def subject(fact: Fact) -> Subject:
    """The one subject a fact is about: how the log files it and how rails find it."""
    match fact:
        case PullRequestFact():
            return Subject.pull_request(fact.number)
        case BranchFact():
            return Subject.branch(branch_name(fact.name))
        case CheckFact():
            return Subject.commit(fact.sha)
        case DeploymentFact():
            return Subject.deployment(fact.id)
        case DeploymentStatusFact():
            return Subject.deployment(fact.deployment_id)
        case CompareFact():
            return Subject.comparison(fact.base, fact.head)
        case DeliveryReport():
            return Subject.report()
        case LookupFact():
            if fact.about == "pull_request":
                return Subject.pull_request(int(fact.ref))
            if fact.about == "commit":
                return Subject.commit(fact.ref)
            return Subject.branch(branch_name(fact.ref))


def reaches(sighting: Sighting) -> set[Subject]:
    """The subjects whose rails a sighting reaches: its fact's, those its hook names, a pull request's branch."""
    fact = sighting.fact
    keys = {subject(fact), *sighting.reach}
    if isinstance(fact, PullRequestFact) and not fact.fork:
        keys.add(Subject.branch(branch_name(fact.head_ref)))
    return keys


def subjects(rail: EvidenceRail) -> set[Subject]:
    """What a rail holds, as the link index files it: its pull requests, their branches and current heads,
    its branches, its deployments, the comparisons it waits for, and what the delivery reported."""
    keys: set[Subject] = set()
    for pr in rail.pull_requests:
        keys.add(Subject.pull_request(pr.number))
        keys.add(Subject.commit(pull_request_head(rail, pr)[0]))
        if not pr.latest.fork:
            keys.add(Subject.branch(branch_name(pr.head_ref)))
    keys.update(Subject.branch(branch.name) for branch in rail.branches)
    keys.update(Subject.deployment(deployment.id) for deployment in rail.deployments)
    keys.update(Subject.comparison(base, head) for base, head in unanswered_comparisons(rail))
    if rail.reported_branch is not None:
        keys.add(Subject.branch(branch_name(rail.reported_branch)))
    if rail.reported_pull_request is not None:
        keys.add(Subject.pull_request(rail.reported_pull_request))
    return keys


def merge_stamps(rail: EvidenceRail) -> dict[str, str]:
    """Merge commit → the stamp of its merge, for the rail's linked merged pull requests."""
    return {
        pr.merge.merge_commit_sha: pr.merge.stamp
        for pr in rail.linked_pull_requests()
        if pr.merge is not None and pr.merge.merge_commit_sha is not None
    }


def may_ship(rail: EvidenceRail, fact: Fact, environment: str) -> bool:
    """Whether a deployment may ship a merged rail's change: made after its merges, to an environment the
    rail is not deployed to yet."""
    made = getattr(fact, "stamp", None)
    merges = merge_stamps(rail).values()
    if made is None or not merges or any(instant(made) < instant(at) - DEPLOYMENT_MARGIN for at in merges):
        return False
    return not any(e.environment == environment and e.state is DeploymentState.DEPLOYED for e in environments(rail))
