"""Where a fact belongs: a sighting is a fact with what its delivery says beyond the fact itself, and the
subjects (`pr:57`, `branch:42-empty-state`, `sha:…`) say which rails it reaches. A rail that holds a subject
is reached by every fact about it; a deployment also reaches the merged rails it may ship.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ..model import DeploymentState
from .assessment import environments, pull_request_head, unanswered_comparisons
from .facts import (
    BranchFact,
    CheckFact,
    CompareFact,
    DeliveryReport,
    DeploymentFact,
    DeploymentStatusFact,
    Fact,
    PullRequestFact,
    branch_name,
    instant,
)
from .rail import EvidenceRail

# A deployment created before a merge cannot contain it; the margin absorbs clocks that disagree a little.
DEPLOYMENT_MARGIN = timedelta(minutes=5)


@dataclass(frozen=True)
class Repository:
    """The repository a delivery is about: the installation that reports it, GitHub's id and its name."""

    installation_id: int
    repository_id: int
    name: str  # "owner/name"


@dataclass(frozen=True)
class Sighting:
    """A fact, with what its delivery says about where it belongs beyond the fact itself.

    `links`: issue numbers the fact links by its own content (closing keywords, a branch name).
    `reach`: more subjects whose rails it reaches (a check names its pull requests and branch).
    `environment`: a deployment's environment, when it may ship every merged ticket not yet deployed there.
    """

    fact: Fact
    links: frozenset[int] = frozenset()
    reach: frozenset[str] = frozenset()
    environment: str | None = None


def subject(fact: Fact) -> str:
    """The one subject a fact is about: how the log files it and how rails find it."""
    match fact:
        case PullRequestFact():
            return f"pr:{fact.number}"
        case BranchFact():
            return f"branch:{branch_name(fact.name)}"
        case CheckFact():
            return f"sha:{fact.sha.lower()}"
        case DeploymentFact():
            return f"deployment:{fact.id}"
        case DeploymentStatusFact():
            return f"deployment:{fact.deployment_id}"
        case CompareFact():
            return f"compare:{fact.base.lower()}...{fact.head.lower()}"
        case DeliveryReport():
            return "report"  # a claim on one ticket's rail, never logged for the repository


def reaches(sighting: Sighting) -> set[str]:
    """The subjects whose rails a sighting reaches: its fact's, those its delivery names, a pull request's branch."""
    fact = sighting.fact
    keys = {subject(fact), *sighting.reach}
    if isinstance(fact, PullRequestFact) and not fact.fork:
        keys.add(f"branch:{branch_name(fact.head_ref)}")
    return keys


def subjects(rail: EvidenceRail) -> set[str]:
    """What a rail holds, as the link index files it: its pull requests, their branches and current heads,
    its branches, its deployments, the comparisons it waits for, and what the delivery reported."""
    keys: set[str] = set()
    for pr in rail.pull_requests:
        keys.add(f"pr:{pr.number}")
        keys.add(f"sha:{pull_request_head(rail, pr)[0].lower()}")
        if not pr.latest.fork:
            keys.add(f"branch:{branch_name(pr.head_ref)}")
    keys.update(f"branch:{branch.name}" for branch in rail.branches)
    keys.update(f"deployment:{deployment.id}" for deployment in rail.deployments)
    keys.update(f"compare:{base.lower()}...{head.lower()}" for base, head in unanswered_comparisons(rail))
    if rail.reported_branch is not None:
        keys.add(f"branch:{branch_name(rail.reported_branch)}")
    if rail.reported_pull_request is not None:
        keys.add(f"pr:{rail.reported_pull_request}")
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
