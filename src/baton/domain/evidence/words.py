"""The evidence rails in plain words, as the status comment shows them."""

from __future__ import annotations

from ..model import DeploymentState, RepositoryState
from .assessment import (
    environments,
    lead_branch,
    lead_pull_request,
    pull_request_head,
    pull_request_problems,
    unseen_pull_request,
)
from .facts import Includes, short
from .rail import EvidenceRail, PullRequest


def _pr_words(rail: EvidenceRail, pr: PullRequest) -> str:
    """One pull request, without its leading "Pull request", e.g. `#57 open (head 1a2b3c4, verified)`."""
    if pr.merged:
        sha = pr.merge_commit_sha
        return f"#{pr.number} merged" + (f" (merge commit {short(sha)})" if sha else "")
    if pr.open:
        sha, _ = pull_request_head(rail, pr)
        draft = "draft, " if pr.latest.draft else ""
        problems = pull_request_problems(rail, pr)
        if problems is not None:
            return f"#{pr.number} open ({draft}head {short(sha)}, verified; {problems})"
        return f"#{pr.number} open ({draft}head {short(sha)}, verified)"
    return f"#{pr.number} closed without merging"


def _branch_words(rail: EvidenceRail) -> str:
    phrases = []
    claimed = unseen_pull_request(rail)
    if claimed is not None:
        phrases.append(f"pull request #{claimed} reported, not verified yet")
    lead = lead_branch(rail)
    if lead is not None:
        name, branch = lead
        if branch is None:
            phrases.append(f"branch {name} reported, not verified yet")
        elif branch.sha is None:
            phrases.append(f"branch {name} created, no commit seen yet")
        else:
            phrases.append(f"branch {name} (head {short(branch.sha)}, verified)")
    if not phrases and rail.reported_commit is not None:
        phrases.append(f"commit {short(rail.reported_commit)} reported, not verified yet")
    text = "; ".join(phrases)
    return text[:1].upper() + text[1:]


def repository_text(rail: EvidenceRail) -> str:
    """The repository rail in plain words, as the status comment shows it after `Repository:`."""
    match rail.repository:
        case RepositoryState.NOT_APPLICABLE:
            return "Not applicable"
        case RepositoryState.UNREPORTED:
            return "Unreported"
        case RepositoryState.BLOCKED:
            return f"Blocked — {rail.reason}"
    lead = lead_pull_request(rail)
    if lead is not None and rail.repository != RepositoryState.BRANCH_REPORTED:
        text = f"Pull request {_pr_words(rail, lead)}"
        others = [pr for pr in rail.linked_pull_requests() if pr.number != lead.number]
    else:
        text = _branch_words(rail)
        others = list(rail.linked_pull_requests())
    return "; ".join([text, *(f"pull request {_pr_words(rail, pr)}" for pr in others)])


def deployment_text(rail: EvidenceRail, includes: Includes | None = None) -> str:
    """The deployment rail in plain words, as the status comment shows it after `Deployment:`."""
    if not rail.applicable:
        return "Not applicable"
    found = environments(rail, includes)
    if not found:
        return "Not deployed"
    order = [DeploymentState.DEPLOYED, DeploymentState.DEPLOYING, DeploymentState.FAILED]
    words = {
        DeploymentState.DEPLOYED: "deployed to",
        DeploymentState.DEPLOYING: "deploying to",
        DeploymentState.FAILED: "failed in",
    }
    phrases = [
        f"{words[e.state]} {e.environment} ({short(e.sha)})"
        for e in sorted(found, key=lambda e: (order.index(e.state), e.environment))
    ]
    text = "; ".join(phrases)
    return text[0].upper() + text[1:]


def mismatch_text(rail: EvidenceRail) -> str | None:
    """What the runner reported that GitHub contradicts, as the status comment shows it after `Mismatch:`."""
    if rail.mismatch is None:
        return None
    return rail.mismatch[0].upper() + rail.mismatch[1:]
