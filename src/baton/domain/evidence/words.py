"""The evidence rails in plain words, as the status comment shows them."""

from __future__ import annotations

from ..model import DeploymentState, RepositoryState
from .facts import Includes, short
from .rail import (
    EvidenceRail,
    PullRequest,
    environments,
    lead_branch,
    lead_pull_request,
    pull_request_head,
    pull_request_problems,
    unseen_pull_request,
)
from .verification import NOT_FOUND, VERIFIED, ReportedItem, not_found, verification

NOT_FOUND_WORDS = "not found on GitHub"


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


def _reported_words(item: ReportedItem) -> str:
    """A reported item GitHub has not verified: `branch typo reported, not found on GitHub`."""
    return f"{item.words} reported, " + (NOT_FOUND_WORDS if item.state == NOT_FOUND else "not verified yet")


def _branch_words(rail: EvidenceRail) -> str:
    phrases = []
    items = {item.kind: item for item in verification(rail)}
    claimed = unseen_pull_request(rail)
    if claimed is not None:
        phrases.append(_reported_words(items["pull_request"]))
    lead = lead_branch(rail)
    if lead is not None:
        name, branch = lead
        reported = items.get("branch")
        if branch is None or (branch.sha is None and reported is not None and reported.state == NOT_FOUND):
            phrases.append(_reported_words(reported) if reported is not None else f"branch {name} reported, "
                           "not verified yet")  # fmt: skip
        elif branch.sha is None:
            phrases.append(f"branch {name} created, no commit seen yet")
        else:
            phrases.append(f"branch {name} (head {short(branch.sha)}, verified)")
    commit = items.get("commit")
    if not phrases and commit is not None:
        verified = commit.state == VERIFIED
        phrases.append(f"{commit.words} (verified)" if verified else _reported_words(commit))
    text = "; ".join(phrases)
    return text[:1].upper() + text[1:]


def _with_not_found(rail: EvidenceRail, text: str) -> str:
    """The rail's words, with each reported item GitHub does not know that they do not name yet."""
    missing = [_reported_words(item) for item in not_found(rail)]
    extra = [phrase for phrase in missing if phrase.lower() not in text.lower()]
    return "; ".join([text, *extra])


def repository_text(rail: EvidenceRail) -> str:
    """The repository rail in plain words, as the status comment shows it after `Repository:`."""
    match rail.repository:
        case RepositoryState.NOT_APPLICABLE:
            return "Not applicable"
        case RepositoryState.UNREPORTED:
            return "Unreported"
        case RepositoryState.BLOCKED:
            return _with_not_found(rail, f"Blocked — {rail.reason}")
    lead = lead_pull_request(rail)
    if lead is not None and rail.repository != RepositoryState.BRANCH_REPORTED:
        text = f"Pull request {_pr_words(rail, lead)}"
        others = [pr for pr in rail.linked_pull_requests() if pr.number != lead.number]
    else:
        text = _branch_words(rail)
        others = list(rail.linked_pull_requests())
    return _with_not_found(rail, "; ".join([text, *(f"pull request {_pr_words(rail, pr)}" for pr in others)]))


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
