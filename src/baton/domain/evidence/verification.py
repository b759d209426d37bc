"""Whether GitHub agrees that what a delivery reported exists: each reported branch, commit and pull request is
`verified` (GitHub showed it), `unverified` (not yet: a webhook or a lookup may still show it) or `not_found`
(GitHub answered that it does not know it, after the retries, since it was reported).

A branch is verified by a push or deletion of it, or a pull request from it; a pull request by any fact about
it; a commit by being a head, a merge commit, a checked or deployed commit the rail knows, or by GitHub
finding it when asked. A miss (`LookupFact` with `found` false) counts only when it is as new as the report
that named the item: a later delivery naming the same thing is looked up afresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .facts import LookupFact, branch_name, instant, same_commit, short

if TYPE_CHECKING:
    from .rail import EvidenceRail

VERIFIED = "verified"
UNVERIFIED = "unverified"
NOT_FOUND = "not_found"


@dataclass(frozen=True)
class ReportedItem:
    """One reported branch, commit or pull request, and whether GitHub agrees it exists."""

    kind: str  # "branch", "commit" or "pull_request"
    ref: str  # the branch's name, the commit as reported, the pull request's number in digits
    state: str  # VERIFIED, UNVERIFIED or NOT_FOUND

    @property
    def words(self) -> str:
        """`branch 42-empty-state`, `commit 1a2b3c4`, `pull request #57`."""
        if self.kind == "commit":
            return f"commit {short(self.ref)}"
        if self.kind == "pull_request":
            return f"pull request #{self.ref}"
        return f"branch {self.ref}"


def _matches(lookup: LookupFact, kind: str, ref: str) -> bool:
    if lookup.about != kind:
        return False
    if kind == "commit":
        return same_commit(lookup.ref, ref)
    if kind == "branch":
        return branch_name(lookup.ref) == ref
    return lookup.ref == ref


def _reported_at(rail: EvidenceRail, kind: str) -> str | None:
    """The stamp of the newest report that named an item of this kind."""
    stamps = [
        report.stamp
        for report in rail.reports
        if (kind == "branch" and report.evidence.branch is not None)
        or (kind == "commit" and report.evidence.commit is not None)
        or (kind == "pull_request" and report.evidence.pull_request is not None)
    ]
    return max(stamps, key=instant, default=None)


def _item(rail: EvidenceRail, kind: str, ref: str, seen: bool) -> ReportedItem:
    lookups = [lookup for lookup in rail.lookups if _matches(lookup, kind, ref)]
    if seen or any(lookup.found for lookup in lookups):
        return ReportedItem(kind, ref, VERIFIED)
    reported = _reported_at(rail, kind)
    missed = [lookup for lookup in lookups if not lookup.found]
    if any(reported is None or instant(lookup.stamp) >= instant(reported) for lookup in missed):
        return ReportedItem(kind, ref, NOT_FOUND)
    return ReportedItem(kind, ref, UNVERIFIED)


def _known_commits(rail: EvidenceRail) -> set[str]:
    known: set[str] = set()
    for pr in rail.pull_requests:
        known.add(pr.latest.head_sha)
        if pr.merge is not None:
            known.add(pr.merge.head_sha)
            if pr.merge.merge_commit_sha is not None:
                known.add(pr.merge.merge_commit_sha)
    for branch in rail.branches:
        for fact in (branch.latest, *branch.pushes):
            known.update(sha for sha in (fact.sha, fact.before) if sha is not None and sha.strip("0"))
    known.update(check.sha for check in rail.checks)
    known.update(sha for deployment in rail.deployments if (sha := deployment.sha) is not None)
    return known


def verification(rail: EvidenceRail) -> tuple[ReportedItem, ...]:
    """The newest reported branch, pull request and commit, in that order, each with what GitHub said of it."""
    if not rail.applicable:
        return ()
    items: list[ReportedItem] = []
    if rail.reported_branch is not None:
        name = branch_name(rail.reported_branch)
        branch = rail.branch(name)
        pushed = branch is not None and (bool(branch.pushes) or branch.deletion is not None)
        opened = any(branch_name(pr.head_ref) == name for pr in rail.pull_requests)
        items.append(_item(rail, "branch", name, pushed or opened))
    if rail.reported_pull_request is not None:
        number = rail.reported_pull_request
        items.append(_item(rail, "pull_request", str(number), rail.pull_request(number) is not None))
    if rail.reported_commit is not None:
        commit = rail.reported_commit
        seen = any(same_commit(commit, sha) for sha in _known_commits(rail))
        items.append(_item(rail, "commit", commit, seen))
    return tuple(items)


def not_found(rail: EvidenceRail) -> tuple[ReportedItem, ...]:
    """The reported items GitHub does not know."""
    return tuple(item for item in verification(rail) if item.state == NOT_FOUND)


def unverified(rail: EvidenceRail) -> tuple[ReportedItem, ...]:
    """The reported items GitHub has not shown yet, and has not said it does not know: what to ask it about."""
    return tuple(item for item in verification(rail) if item.state == UNVERIFIED)
