"""The evidence rails: every rule of the repository and deployment rails, their words, linking, and the
promise that facts may arrive late, twice and in any order."""

from __future__ import annotations

import ast
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.domain import DeploymentState, Evidence, RepositoryState
from baton.domain.evidence import (
    BranchFact,
    CheckFact,
    CompareFact,
    DeliveryReport,
    DeploymentFact,
    DeploymentStatusFact,
    EvidenceRail,
    Fact,
    Includes,
    LookupFact,
    PullRequestFact,
    apply,
    deployment_state,
    deployment_text,
    environments,
    failing_checks,
    instant,
    lead_pull_request,
    mismatch_text,
    repository_text,
    same_commit,
    unanswered_comparisons,
    verification,
)
from baton.reading.linking import (
    branch_issue,
    branch_links,
    linked_issues,
    pull_request_links,
)
from baton.store.evidence_codec import fact_from_dict, fact_to_dict, from_dict, to_dict

ROOT = Path(__file__).resolve().parents[2]
REPO = "octo/shop"
TICKET = 42

HEAD = "1a2b3c4" + "d" * 33
NEWER = "5e6f7a8" + "b" * 33
OLDER = "0c0ffee" + "a" * 33
MERGE = "9f8e7d6" + "c" * 33
LATER = "7777777" + "e" * 33
EARLIER = "3333333" + "f" * 33
OTHER_MERGE = "abcdef1" + "0" * 33


# Helpers the product does not use: a fold of many facts, the rail's state, the three lines of words together,
# and every ticket a pull request or a branch concerns.


def apply_all(rail: EvidenceRail, facts: Iterable[Fact]) -> EvidenceRail:
    for fact in facts:
        rail = apply(rail, fact)
    return rail


def repository_state(rail: EvidenceRail) -> RepositoryState:
    return rail.repository


def evidence_lines(rail: EvidenceRail, includes: Includes | None = None) -> tuple[str, ...]:
    """The status comment's evidence lines, e.g. `Repository: Pull request #57 open (head 1a2b3c4,
    verified)`, a `Mismatch:` line when the report and GitHub disagree, and `Deployment: Not deployed`."""
    lines = [f"Repository: {repository_text(rail)}"]
    mismatch = mismatch_text(rail)
    if mismatch is not None:
        lines.append(f"Mismatch: {mismatch}")
    lines.append(f"Deployment: {deployment_text(rail, includes)}")
    return tuple(lines)


def _reported_branch(evidence: Evidence, branch: str) -> bool:
    return evidence.branch is not None and evidence.branch.removeprefix("refs/heads/") == branch


def pull_request_tickets(
    number: int, body: str | None, head_ref: str, repository: str, reports: Mapping[int, Evidence] | None = None
) -> list[int]:
    """Every ticket a pull request links now, ascending: its own links, and the tickets whose latest
    delivery (`reports`: ticket number → evidence) reported this pull request or its head branch."""
    branch = head_ref.removeprefix("refs/heads/")
    reported = {
        ticket
        for ticket, evidence in (reports or {}).items()
        if evidence.pull_request == number or _reported_branch(evidence, branch)
    }
    return sorted(pull_request_links(body, head_ref, repository) | reported)


def branch_tickets(branch: str, reports: Mapping[int, Evidence] | None = None) -> list[int]:
    """Every ticket a branch links, ascending: by its name, and by a delivery that reported it."""
    name = branch.removeprefix("refs/heads/")
    reported = {ticket for ticket, evidence in (reports or {}).items() if _reported_branch(evidence, name)}
    return sorted(branch_links(branch) | reported)


R, U, B, O, M, X = (
    RepositoryState.NOT_APPLICABLE,
    RepositoryState.UNREPORTED,
    RepositoryState.BRANCH_REPORTED,
    RepositoryState.PULL_REQUEST_OPEN,
    RepositoryState.MERGED,
    RepositoryState.BLOCKED,
)


def at(minute: int) -> str:
    return f"2024-05-01T10:{minute:02d}:00Z"


def pr(
    number: int = 57,
    minute: int = 1,
    *,
    state: str = "open",
    sha: str = HEAD,
    ref: str = "42-empty-state",
    body_links: frozenset[int] = frozenset({TICKET}),
    merged: bool = False,
    merge_sha: str | None = None,
    **changes: object,
) -> PullRequestFact:
    fact = PullRequestFact(
        number=number,
        head_ref=ref,
        head_sha=sha,
        base_ref="main",
        state="closed" if merged else state,
        stamp=at(minute),
        merged=merged,
        merge_commit_sha=MERGE if merged and merge_sha is None else merge_sha,
        links=body_links | branch_links(ref),
    )
    return replace(fact, **changes)  # type: ignore[arg-type]


def merged(number: int = 57, minute: int = 5, **changes: object) -> PullRequestFact:
    return pr(number, minute, merged=True, **changes)


def push(name: str = "42-empty-state", sha: str | None = HEAD, minute: int = 1) -> BranchFact:
    return BranchFact(name, at(minute), sha, links=branch_links(name))


def delete(name: str = "42-empty-state", minute: int = 9) -> BranchFact:
    return BranchFact(name, at(minute), None, deleted=True, links=branch_links(name))


def report(minute: int = 0, **evidence: object) -> DeliveryReport:
    return DeliveryReport(Evidence(**evidence), at(minute))  # type: ignore[arg-type]


def check(name: str = "build", conclusion: str | None = "failure", sha: str = HEAD, minute: int = 2,
          required: bool = True) -> CheckFact:  # fmt: skip
    return CheckFact(sha, name, at(minute), conclusion, required)


def deployment(ident: int = 1, sha: str = MERGE, environment: str = "production", minute: int = 10) -> DeploymentFact:
    return DeploymentFact(ident, sha, environment, at(minute))


def status(state: str, ident: int = 1, minute: int = 11, **extra: str) -> DeploymentStatusFact:
    return DeploymentStatusFact(ident, state, at(minute), **extra)


def rail(*facts: Fact, applicable: bool = True) -> EvidenceRail:
    return apply_all(EvidenceRail(TICKET, applicable), facts)


# ---------------------------------------------------------------------------------------------- repository


@dataclass
class Case:
    id: str
    facts: tuple[Fact, ...]
    state: RepositoryState
    text: str
    applicable: bool = True


REPOSITORY_CASES = [
    # nothing, or nothing that is this ticket's
    Case("nothing", (), U, "Unreported"),
    Case("unrelated-branch", (push("feature-x"),), U, "Unreported"),
    Case("unrelated-pr", (pr(60, ref="feature-x", body_links=frozenset({7})),), U, "Unreported"),
    Case("not-applicable", (pr(), push()), R, "Not applicable", applicable=False),
    # claims and branches
    Case("reported-branch", (report(branch="agent/42-x"),), B, "Branch agent/42-x reported, not verified yet"),
    Case("reported-commit", (report(commit=HEAD),), B, "Commit 1a2b3c4 reported, not verified yet"),
    Case("reported-pr-unseen", (report(pull_request=57),), B, "Pull request #57 reported, not verified yet"),
    Case("branch-by-name", (push(),), B, "Branch 42-empty-state (head 1a2b3c4, verified)"),
    Case("branch-created", (push(sha=None),), B, "Branch 42-empty-state created, no commit seen yet"),
    Case("reported-branch-verified", (report(branch="wip"), push("wip")), B, "Branch wip (head 1a2b3c4, verified)"),
    Case("reported-branch-deleted", (report(branch="42-empty-state"), push(), delete()), X,
         "Blocked — branch 42-empty-state was deleted without a pull request"),
    Case("name-linked-branch-deleted", (push(), delete()), U, "Unreported"),
    Case("deleted-in-the-same-second", (report(branch="wip"), push("wip", minute=3), delete("wip", minute=3)), X,
         "Blocked — branch wip was deleted without a pull request"),
    Case("branch-recreated", (push(), delete(minute=2), push(sha=None, minute=3)), B,
         "Branch 42-empty-state created, no commit seen yet"),
    # one open pull request
    Case("open", (pr(),), O, "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("draft", (pr(draft=True),), O, "Pull request #57 open (draft, head 1a2b3c4, verified)"),
    Case("linked-by-report-only", (report(pull_request=57), pr(body_links=frozenset(), ref="wip")), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("linked-by-reported-branch", (report(branch="wip"), pr(body_links=frozenset(), ref="wip")), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("conflicts", (pr(mergeable_state="dirty"),), X, "Blocked — pull request #57 has merge conflicts with main"),
    Case("protection-blocked-is-not-blocked", (pr(mergeable_state="blocked"),), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("behind-is-not-blocked", (pr(mergeable_state="behind"),), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("failing-checks-listed", (pr(failing_checks=("test", "build")),), X,
         "Blocked — pull request #57 has failing required checks: build, test"),
    Case("conflicts-and-failing", (pr(mergeable_state="dirty", failing_checks=("build",)),), X,
         "Blocked — pull request #57 has merge conflicts with main, and failing required checks: build"),
    Case("failing-required-check", (pr(), check()), X, "Blocked — pull request #57 has failing required checks: build"),
    Case("failing-optional-check", (pr(), check(required=False)), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("running-check", (pr(), check(conclusion=None)), O, "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("own-check-ignored", (pr(), check("baton/acceptance")), O, "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("check-on-old-head", (pr(sha=NEWER), check(sha=HEAD)), O, "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("rerun-passes", (pr(failing_checks=("build",)), check(conclusion="success", minute=3)), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("older-check-overruled-by-listing", (check(minute=0), pr(failing_checks=())), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("conflicts-of-an-old-head", (pr(mergeable_state="dirty"), push(sha=NEWER, minute=4)), O,
         "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("older-synchronize-ignored", (pr(sha=NEWER, minute=5), pr(sha=OLDER, minute=3)), O,
         "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("older-push-ignored", (pr(sha=NEWER, minute=5), push(sha=OLDER, minute=3)), O,
         "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("fork-ignores-our-branch", (pr(fork=True), push(sha=NEWER, minute=4)), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    # merged is final
    Case("merged", (pr(), merged()), M, "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("merged-then-closed-again", (merged(), pr(minute=7, state="closed")), M,
         "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("merged-then-synchronize", (merged(), pr(minute=8, sha=NEWER)), M,
         "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("merged-then-reopened", (merged(), pr(minute=8)), M, "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("merged-then-branch-deleted", (push(), merged(), delete()), M,
         "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("merged-then-unlinked-by-edit", (merged(ref="feature-x"), merged(minute=9, ref="feature-x",
                                                                            body_links=frozenset())), U, "Unreported"),
    # closed without merging
    Case("closed", (pr(), pr(minute=3, state="closed")), X, "Blocked — pull request #57 was closed without merging"),
    Case("two-closed", (pr(55, state="closed", ref="42-a"), pr(57, state="closed")), X,
         "Blocked — pull requests #55 and #57 were closed without merging"),
    Case("closed-head-still-there", (push(), pr(minute=3, state="closed")), X,
         "Blocked — pull request #57 was closed without merging"),
    Case("closed-in-the-same-second", (pr(minute=3, sha=NEWER), pr(minute=3, state="closed")), X,
         "Blocked — pull request #57 was closed without merging"),
    Case("reopened", (pr(), pr(minute=3, state="closed"), pr(minute=4)), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("closed-then-new-branch", (pr(state="closed"), push("42-retry", NEWER, 6)), B,
         "Branch 42-retry (head 5e6f7a8, verified); pull request #57 closed without merging"),
    Case("closed-then-new-pr-reported", (pr(state="closed"), report(7, pull_request=60)), B,
         "Pull request #60 reported, not verified yet; pull request #57 closed without merging"),
    # several pull requests
    Case("merged-and-open", (merged(), pr(60, ref="42-follow-up", sha=NEWER)), M,
         "Pull request #57 merged (merge commit 9f8e7d6); pull request #60 open (head 5e6f7a8, verified)"),
    Case("merged-and-closed", (merged(), pr(55, state="closed", ref="42-a")), M,
         "Pull request #57 merged (merge commit 9f8e7d6); pull request #55 closed without merging"),
    Case("open-and-closed", (pr(55, state="closed", ref="42-a"), pr(57)), O,
         "Pull request #57 open (head 1a2b3c4, verified); pull request #55 closed without merging"),
    Case("blocked-and-open", (pr(55, ref="42-a", mergeable_state="dirty"), pr(57, sha=NEWER)), O,
         "Pull request #57 open (head 5e6f7a8, verified); "
         "pull request #55 open (head 1a2b3c4, verified; merge conflicts with main)"),
    Case("all-open-blocked", (pr(55, ref="42-a", mergeable_state="dirty"), pr(57, failing_checks=("build",))), X,
         "Blocked — pull request #55 has merge conflicts with main; "
         "pull request #57 has failing required checks: build"),
    Case("reported-pr-leads", (report(pull_request=60), pr(57), pr(60, ref="42-b", sha=NEWER, minute=0)), O,
         "Pull request #60 open (head 5e6f7a8, verified); pull request #57 open (head 1a2b3c4, verified)"),
]  # fmt: skip


@pytest.mark.parametrize("case", REPOSITORY_CASES, ids=lambda c: c.id)
def test_repository_rail(case: Case) -> None:
    result = rail(*case.facts, applicable=case.applicable)
    assert repository_state(result) == case.state
    assert repository_text(result) == case.text
    assert (result.reason is not None) == (case.state == X)
    if case.state == X:
        assert case.text == f"Blocked — {result.reason}"


@pytest.mark.parametrize("case", REPOSITORY_CASES, ids=lambda c: c.id)
def test_every_rule_holds_in_every_order(case: Case) -> None:
    assert rail(*reversed(case.facts), applicable=case.applicable) == rail(*case.facts, applicable=case.applicable)


def test_the_reference_story() -> None:
    """The reference story's evidence (docs/design.md §10, steps 3 to 7): deliver, push, open "Fixes #N", merge,
    deploy. The acceptance (step 8) is not evidence."""
    story = rail(report(branch="42-empty-state", commit=HEAD[:7]))
    assert story.repository == B and story.deployment == DeploymentState.NOT_DEPLOYED
    story = apply(story, push(minute=1))
    story = apply(story, pr(minute=2))
    assert evidence_lines(story) == (
        "Repository: Pull request #57 open (head 1a2b3c4, verified)",
        "Deployment: Not deployed",
    )
    assert (story.verified_head_sha, story.checked_at) == (HEAD, at(2))
    story = apply_all(story, [merged(minute=6), deployment(minute=10), status("success")])
    assert evidence_lines(story) == (
        "Repository: Pull request #57 merged (merge commit 9f8e7d6)",
        "Deployment: Deployed to production (9f8e7d6)",
    )


def test_the_verified_head_follows_pushes_and_stops_at_the_merge() -> None:
    opened = rail(report(pull_request=57), pr(minute=1), push(sha=NEWER, minute=3))
    assert (opened.verified_head_sha, opened.checked_at) == (NEWER, at(3))
    done = apply_all(opened, [merged(minute=5, sha=NEWER), push(sha=LATER, minute=8)])
    assert (done.verified_head_sha, done.checked_at) == (NEWER, at(5))
    branch_only = rail(push(minute=4))
    assert (branch_only.verified_head_sha, branch_only.checked_at) == (HEAD, at(4))
    assert rail(report(branch="wip", commit=HEAD)).verified_head_sha is None


def test_a_rail_that_is_not_applicable_says_nothing_else() -> None:
    result = rail(report(branch="x", commit=OLDER), pr(), merged(), deployment(), status("success"), applicable=False)
    assert (result.repository, result.deployment) == (R, DeploymentState.NOT_APPLICABLE)
    assert (result.verified_head_sha, result.mismatch, result.reason) == (None, None, None)
    assert evidence_lines(result) == ("Repository: Not applicable", "Deployment: Not applicable")
    assert replace(result, applicable=True).repository == M


def test_failing_checks_lists_only_required_concluded_failures_on_the_head() -> None:
    result = rail(
        pr(),
        check("build"),
        check("lint", "timed_out"),
        check("docs", "skipped"),
        check("flaky", "failure", required=False),
        check("old", "failure", sha=OLDER),
        check("baton/acceptance", "failure"),
    )
    lead = lead_pull_request(result)
    assert lead is not None and failing_checks(result, lead) == ("build", "lint")


# ---------------------------------------------------------------------------------------------- mismatch


@pytest.mark.parametrize(
    ("facts", "mismatch"),
    [
        ((report(commit=HEAD[:7]), pr()), None),
        ((report(commit=HEAD.upper()), pr()), None),
        ((report(commit=OLDER), pr()), "reported commit 0c0ffee is not the head of pull request #57 (1a2b3c4)"),
        ((report(commit=HEAD[:5]), pr()), "reported commit 1a2b3 is not the head of pull request #57 (1a2b3c4)"),
        ((report(branch="wip", pull_request=57), pr()),
         "reported branch wip, but pull request #57 is from 42-empty-state"),
        ((report(commit=OLDER), merged()),
         "reported commit 0c0ffee was not the head of pull request #57 when it was merged (1a2b3c4)"),
        ((report(branch="42-empty-state", commit=OLDER), push()),
         "reported commit 0c0ffee is not the head of branch 42-empty-state (1a2b3c4)"),
        ((report(branch="42-empty-state", commit=HEAD), push()), None),
        ((report(commit=OLDER, pull_request=57),), None),
        ((report(commit=HEAD), pr(), push(sha=NEWER, minute=5)),
         "reported commit 1a2b3c4 is not the head of pull request #57 (5e6f7a8)"),
        ((report(branch="wip", commit=OLDER), pr(body_links=frozenset(), ref="wip")),
         "reported commit 0c0ffee is not the head of pull request #57 (1a2b3c4)"),
    ],
    ids=["abbreviated", "uppercase", "other-commit", "too-short", "other-branch", "merged", "branch-head",
         "branch-agrees", "unverified", "head-moved", "via-branch"],
)  # fmt: skip
def test_mismatch(facts: tuple[Fact, ...], mismatch: str | None) -> None:
    result = rail(*facts)
    assert result.mismatch == mismatch
    lines = evidence_lines(result)
    if mismatch is None:
        assert not any(line.startswith("Mismatch:") for line in lines)
    else:
        assert lines[1] == f"Mismatch: {mismatch_text(result)}"
        assert mismatch_text(result) == mismatch[0].upper() + mismatch[1:]


def test_a_later_delivery_replaces_what_it_reports_and_keeps_what_it_leaves_out() -> None:
    result = rail(report(0, branch="42-a", commit=OLDER, pull_request=55), report(5, commit=HEAD))
    assert (result.reported_branch, result.reported_commit, result.reported_pull_request) == ("42-a", HEAD, 55)
    assert len(result.reports) == 2
    assert rail(report(5, commit=HEAD), report(0, branch="42-a", commit=OLDER)).reported_commit == HEAD
    assert rail(report(tests=("ok",))) == rail()


# ---------------------------------------------------------------------------------------------- verification


def miss(about: str, ref: str, minute: int = 3) -> LookupFact:
    return LookupFact(about, ref, False, at(minute))


@pytest.mark.parametrize(
    ("facts", "states", "text"),
    [
        ((report(branch="typo"),), ["unverified"], "Branch typo reported, not verified yet"),
        ((report(branch="typo"), miss("branch", "typo")), ["not_found"], "Branch typo reported, not found on GitHub"),
        # a miss before the report that named it speaks for an earlier delivery only
        ((report(5, branch="typo"), miss("branch", "typo")), ["unverified"], "Branch typo reported, not verified yet"),
        (
            (report(branch="typo"), miss("branch", "typo"), push("typo", minute=4)),
            ["verified"],
            "Branch typo (head 1a2b3c4, verified)",
        ),
        (
            (report(pull_request=77), miss("pull_request", "77")),
            ["not_found"],
            "Pull request #77 reported, not found on GitHub",
        ),
        (
            (report(commit="0c0ffee"), miss("commit", "0c0ffee")),
            ["not_found"],
            "Commit 0c0ffee reported, not found on GitHub",
        ),
        (
            (report(commit="1a2b3c4"), LookupFact("commit", "1a2b3c4", True, at(3))),
            ["verified"],
            "Commit 1a2b3c4 (verified)",
        ),
        # a pull request that leads still names a reported commit GitHub does not know
        (
            (report(commit="0c0ffee"), miss("commit", "0c0ffee"), pr()),
            ["not_found"],
            "Pull request #57 open (head 1a2b3c4, verified); commit 0c0ffee reported, not found on GitHub",
        ),
        (
            (report(branch="42-empty-state", commit="1a2b3c4", pull_request=57), pr()),
            ["verified", "verified", "verified"],
            "Pull request #57 open (head 1a2b3c4, verified)",
        ),
    ],
)
def test_verification(facts: tuple[Fact, ...], states: list[str], text: str) -> None:
    for order in (facts, tuple(reversed(facts))):
        result = rail(*order)
        assert [item.state for item in verification(result)] == states
        assert repository_text(result) == text
        assert from_dict(json.loads(json.dumps(to_dict(result)))) == result


# ---------------------------------------------------------------------------------------------- deployment

D = DeploymentState


@pytest.mark.parametrize(
    ("facts", "state", "text"),
    [
        ((), D.NOT_DEPLOYED, "Not deployed"),
        ((pr(), deployment(sha=HEAD), status("success")), D.NOT_DEPLOYED, "Not deployed"),
        ((merged(),), D.NOT_DEPLOYED, "Not deployed"),
        ((merged(), deployment()), D.DEPLOYING, "Deploying to production (9f8e7d6)"),
        ((merged(), deployment(), status("queued")), D.DEPLOYING, "Deploying to production (9f8e7d6)"),
        ((merged(), deployment(), status("pending")), D.DEPLOYING, "Deploying to production (9f8e7d6)"),
        ((merged(), deployment(), status("in_progress")), D.DEPLOYING, "Deploying to production (9f8e7d6)"),
        ((merged(), deployment(), status("success")), D.DEPLOYED, "Deployed to production (9f8e7d6)"),
        ((merged(), deployment(), status("failure")), D.FAILED, "Failed in production (9f8e7d6)"),
        ((merged(), deployment(), status("error")), D.FAILED, "Failed in production (9f8e7d6)"),
        ((merged(), deployment(), status("success", minute=12), status("in_progress", minute=11)), D.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
        ((merged(), deployment(), status("in_progress", minute=12), status("success", minute=12)), D.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
        ((merged(), deployment(), status("success"), status("inactive", minute=20)), D.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
        ((merged(), deployment(), status("inactive")), D.NOT_DEPLOYED, "Not deployed"),
        ((merged(), deployment(1), status("failure", 1), deployment(2), status("inactive", 2)), D.FAILED,
         "Failed in production (9f8e7d6)"),
        ((merged(), deployment(1), status("success", 1), deployment(2), status("failure", 2)), D.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
        ((merged(), deployment(1), status("failure", 1), deployment(2), status("queued", 2)), D.DEPLOYING,
         "Deploying to production (9f8e7d6)"),
        ((merged(), deployment(1), status("queued", 1), deployment(2), status("failure", 2)), D.FAILED,
         "Failed in production (9f8e7d6)"),
        ((merged(), deployment(1, environment="staging"), status("success", 1), deployment(2), status("failure", 2)),
         D.DEPLOYED, "Deployed to staging (9f8e7d6); failed in production (9f8e7d6)"),
        ((merged(), status("success", sha=MERGE, environment="production")), D.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
        ((merged(), status("success")), D.NOT_DEPLOYED, "Not deployed"),
        ((merged(), deployment(sha=LATER), status("success")), D.NOT_DEPLOYED, "Not deployed"),
        ((merged(), deployment(sha=LATER), status("success"), CompareFact(MERGE, LATER, "ahead")), D.DEPLOYED,
         "Deployed to production (7777777)"),
        ((merged(), deployment(sha=LATER), status("success"), CompareFact(LATER, MERGE, "behind")), D.DEPLOYED,
         "Deployed to production (7777777)"),
        ((merged(), deployment(sha=EARLIER), status("success"), CompareFact(MERGE, EARLIER, "behind")),
         D.NOT_DEPLOYED, "Not deployed"),
        ((merged(), deployment(sha=LATER), status("success"), CompareFact(MERGE, LATER, "diverged")),
         D.NOT_DEPLOYED, "Not deployed"),
        ((merged(), merged(60, ref="42-b", merge_sha=OTHER_MERGE), deployment(), status("success")), D.NOT_DEPLOYED,
         "Not deployed"),
        ((merged(), merged(60, ref="42-b", merge_sha=OTHER_MERGE), deployment(sha=LATER), status("success"),
          CompareFact(MERGE, LATER, "ahead"), CompareFact(OTHER_MERGE, LATER, "identical")), D.DEPLOYED,
         "Deployed to production (7777777)"),
    ],
    ids=["nothing", "unmerged-head-deployed", "merged-only", "no-status-yet", "queued", "pending", "in-progress",
         "success", "failure", "error", "statuses-out-of-order", "same-second", "inactive-after-success",
         "inactive-only", "superseded-skipped", "success-is-final", "newest-in-motion", "newest-failed",
         "two-environments", "status-before-deployment", "status-without-commit", "later-commit-unknown",
         "later-commit-ahead", "later-commit-reverse-record", "earlier-commit", "diverged", "one-of-two-merges",
         "both-merges"],
)  # fmt: skip
def test_deployment_rail(facts: tuple[Fact, ...], state: DeploymentState, text: str) -> None:
    result = rail(*facts)
    assert result.deployment == state == deployment_state(result)
    assert deployment_text(result) == text
    assert rail(*reversed(facts)) == result


def test_the_caller_can_answer_what_the_rail_cannot() -> None:
    result = rail(merged(), deployment(sha=LATER), status("success"), deployment(2, sha=EARLIER), status("queued", 2))
    assert result.deployment == D.NOT_DEPLOYED
    assert unanswered_comparisons(result) == tuple(sorted([(MERGE, LATER), (MERGE, EARLIER)]))
    asked: list[tuple[str, str]] = []

    def includes(base: str, head: str) -> bool | None:
        asked.append((base, head))
        return {LATER: True, EARLIER: False}.get(head)

    assert deployment_state(result, includes) == D.DEPLOYED
    assert deployment_text(result, includes) == "Deployed to production (7777777)"
    assert set(asked) == {(MERGE, LATER), (MERGE, EARLIER)}
    answered = apply_all(result, [CompareFact(MERGE, LATER, "ahead"), CompareFact(MERGE, EARLIER, "behind")])
    assert (answered.deployment, unanswered_comparisons(answered)) == (D.DEPLOYED, ())
    assert [(e.environment, e.state, e.deployment_id) for e in environments(answered)] == [
        ("production", D.DEPLOYED, 1)
    ]


# ---------------------------------------------------------------------------------------------- facts


@pytest.mark.parametrize(
    "build",
    [
        lambda: pr(stamp="yesterday"),
        lambda: pr(state="merged"),
        lambda: replace(pr(), merged=True),
        lambda: push(minute=1).__class__("x", "2024-13-01T00:00:00Z"),
        lambda: status("done"),
        lambda: CompareFact(MERGE, LATER, "newer"),
        lambda: DeliveryReport(Evidence(), "soon"),
    ],
    ids=["stamp", "state", "merged-open", "branch-stamp", "deployment-status", "comparison", "report-stamp"],
)
def test_a_malformed_fact_is_refused_when_built(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


def test_stamps_compare_as_instants() -> None:
    assert instant("2024-05-01T12:00:00+02:00") == instant("2024-05-01T10:00:00Z") == instant("2024-05-01T10:00:00")
    later = rail(pr(sha=OLDER, stamp="2024-05-01T12:30:00+02:00"), pr(sha=NEWER, stamp="2024-05-01T10:31:00Z"))
    assert later.verified_head_sha == NEWER


def test_same_commit() -> None:
    assert same_commit(HEAD, HEAD[:7]) and same_commit(HEAD[:9].upper(), HEAD)
    assert not same_commit(HEAD, HEAD[:6]) and not same_commit(HEAD, None) and not same_commit(HEAD, NEWER)


def test_applying_a_fact_the_rail_already_holds_returns_the_rail_itself() -> None:
    facts: list[Fact] = [pr(), push(), check(), deployment(), status("queued"), CompareFact(MERGE, LATER, "ahead"),
                         report(branch="42-empty-state")]  # fmt: skip
    result = apply_all(EvidenceRail(TICKET), facts)
    for fact in facts:
        assert apply(result, fact) is result


def test_a_rail_built_by_hand_equals_the_one_apply_builds() -> None:
    built = rail(pr(60, ref="42-b"), pr(57), push("42-b"), push("42-a"))
    assert EvidenceRail(TICKET, pull_requests=built.pull_requests[::-1], branches=built.branches[::-1]) == built
    with pytest.raises(TypeError):
        EvidenceRail(TICKET, repository=M)  # type: ignore[call-arg]


# ---------------------------------------------------------------------------------------------- purity


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", [alias.name for alias in node.names]))
    return found


def test_the_evidence_rail_has_no_path_to_the_work_rail() -> None:
    package = sorted((ROOT / "src/baton/domain/evidence").glob("*.py"))
    siblings = {(1, path.stem) for path in package}
    names_used: set[str] = set()
    for path in package:
        for level, module, names in _imports(path):
            assert "transitions" not in module and "transitions" not in names, f"{path.name} imports {module} {names}"
            if level > 0:
                # the package root re-exports the work transitions, so only the plain values may be imported
                assert (level, module) in {(2, "model"), *siblings}, f"{path.name} imports {'.' * level}{module}"
            else:
                assert not module.startswith("baton"), f"{path.name} imports {module}"
        names_used |= {node.id for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Name)}
    assert not names_used & {"WorkState", "Ticket", "decide", "evolve", "transitions"}
    for cls in (EvidenceRail, PullRequestFact, BranchFact, CheckFact, DeploymentFact, DeploymentStatusFact):
        assert not any("WorkState" in str(f.type) or "Ticket" in str(f.type) for f in fields(cls))


# ---------------------------------------------------------------------------------------------- linking


@pytest.mark.parametrize(
    ("branch", "issue"),
    [
        ("42", 42), ("42-empty-state", 42), ("42_empty_state", 42), ("agent/42-empty-state", 42),
        ("agent-a/42-empty-state", 42), ("feature/issue-42", 42), ("feature/Issue_42-x", 42), ("issue42", 42),
        ("issues/42", 42), ("users/bob/42-x", 42), ("refs/heads/agent/42-x", 42),
        ("v1.42", None), ("release-2024", None), ("fix-3-bugs-in-99", None), ("1.2-maintenance", None),
        ("42/empty-state", None), ("042-x", None), ("0", None), ("42.1", None), ("agent-7/fix", None),
        ("refs/tags/42", None), ("main", None), ("", None), ("dependabot/npm_and_yarn/lodash-4.17.21", None),
        ("1234567890-too-long", None),
    ],
)  # fmt: skip
def test_branch_issue(branch: str, issue: int | None) -> None:
    assert branch_issue(branch) == issue
    assert branch_links(branch) == (frozenset() if issue is None else frozenset({issue}))


def test_pull_request_links_read_the_body_and_the_head_branch() -> None:
    assert pull_request_links("Fixes #42 and closes octo/shop#43", "feature-x", REPO) == {42, 43}
    assert pull_request_links("Fixes other/repo#42", "7-thing", REPO) == {7}
    assert pull_request_links(None, "42-x", REPO) == {42}
    assert pull_request_links("Refs #42", "main", REPO) == frozenset()


def test_pull_request_tickets_add_what_deliveries_reported() -> None:
    reports = {
        5: Evidence(pull_request=57),
        6: Evidence(branch="refs/heads/wip"),
        8: Evidence(branch="elsewhere", pull_request=99),
    }
    assert pull_request_tickets(57, "Fixes #42", "wip", REPO, reports) == [5, 6, 42]
    assert pull_request_tickets(57, "", "main", REPO) == []
    assert branch_tickets("refs/heads/wip", reports) == [6]
    assert branch_tickets("42-x") == [42]


def test_an_edited_body_unlinks_and_relinks_in_any_order() -> None:
    before = pr(ref="feature-x", body_links=frozenset(linked_issues("Fixes #42", REPO)))
    edited = pr(minute=4, ref="feature-x", body_links=frozenset(linked_issues("Fixes #43", REPO)))
    assert rail(before).repository == O
    assert rail(before, edited).repository == rail(edited, before).repository == U
    assert EvidenceRail(43, pull_requests=rail(edited).pull_requests).repository == O
    relinked = pr(minute=6, ref="feature-x", body_links=frozenset({42}))
    assert rail(edited, relinked, before).repository == O
    kept = pr(minute=4, ref="42-x", body_links=frozenset())
    assert rail(pr(ref="42-x"), kept).repository == O  # the head branch still carries the number


# ---------------------------------------------------------------------------------------------- order and repetition

SHAS = [HEAD, NEWER, OLDER, MERGE, LATER]
STAMPS = ["2024-05-01T10:00:00Z", "2024-05-01T10:01:00Z", "2024-05-01T12:01:00+02:00", "2024-05-01T10:02:00",
          "2024-05-01T10:03:00Z"]  # fmt: skip
maybe_sha = st.none() | st.sampled_from(SHAS)

pull_requests = st.builds(
    lambda number, ref, lifecycle, merge_sha, **rest: PullRequestFact(
        number=number, head_ref=ref, base_ref="main", state=lifecycle[0], merged=lifecycle[1],
        merge_commit_sha=merge_sha, links=rest.pop("body") | branch_links(ref), **rest,
    ),
    number=st.sampled_from([55, 57]),
    ref=st.sampled_from(["42-empty-state", "feature-x"]),
    lifecycle=st.sampled_from([("open", False), ("closed", False), ("closed", True)]),
    merge_sha=st.none() | st.sampled_from([MERGE, OTHER_MERGE]),
    head_sha=st.sampled_from(SHAS),
    stamp=st.sampled_from(STAMPS),
    draft=st.booleans(),
    mergeable_state=st.sampled_from([None, "clean", "dirty", "blocked"]),
    failing_checks=st.sampled_from([None, (), ("build",)]),
    body=st.sampled_from([frozenset(), frozenset({TICKET}), frozenset({7})]),
    fork=st.booleans(),
)  # fmt: skip
branches = st.builds(
    lambda name, **rest: BranchFact(name=name, links=branch_links(name), **rest),
    name=st.sampled_from(["42-empty-state", "feature-x", "42-retry"]),
    stamp=st.sampled_from(STAMPS),
    sha=maybe_sha,
    deleted=st.booleans(),
)
checks = st.builds(
    CheckFact,
    sha=st.sampled_from(SHAS),
    name=st.sampled_from(["build", "baton/acceptance"]),
    stamp=st.sampled_from(STAMPS),
    conclusion=st.sampled_from([None, "success", "failure"]),
    required=st.booleans(),
)
deployments = st.builds(
    DeploymentFact,
    id=st.sampled_from([1, 2, 3]),
    sha=st.sampled_from([MERGE, LATER, HEAD]),
    environment=st.sampled_from(["production", "staging"]),
    stamp=st.sampled_from(STAMPS),
)
deployment_statuses = st.builds(
    DeploymentStatusFact,
    deployment_id=st.sampled_from([1, 2, 3]),
    state=st.sampled_from(["queued", "in_progress", "success", "failure", "error", "inactive"]),
    stamp=st.sampled_from(STAMPS),
    sha=st.none() | st.sampled_from([MERGE, LATER]),
    environment=st.none() | st.sampled_from(["production", "staging"]),
)
comparisons = st.builds(
    CompareFact,
    base=st.sampled_from([MERGE, OTHER_MERGE]),
    head=st.sampled_from([LATER, HEAD]),
    status=st.sampled_from(["ahead", "identical", "behind", "diverged"]),
)
reports = st.builds(
    lambda stamp, **evidence: DeliveryReport(Evidence(**evidence), stamp),
    stamp=st.sampled_from(STAMPS),
    branch=st.none() | st.sampled_from(["42-empty-state", "wip"]),
    commit=st.none() | st.sampled_from([HEAD, HEAD[:7], OLDER]),
    pull_request=st.none() | st.sampled_from([57, 60]),
)
facts = st.lists(
    st.one_of(pull_requests, branches, checks, deployments, deployment_statuses, comparisons, reports), max_size=24
)


def _stamp_order(fact: Fact) -> datetime:
    return instant(getattr(fact, "stamp", "1970-01-01T00:00:00Z"))


@pytest.mark.long
@settings(max_examples=300, deadline=None)
@given(facts=facts, applicable=st.booleans(), data=st.data())
def test_facts_in_any_order_and_any_number_of_times_give_the_rail_of_the_stamp_order(
    facts: list[Fact], applicable: bool, data: st.DataObject
) -> None:
    empty = EvidenceRail(TICKET, applicable)
    in_order = apply_all(empty, sorted(facts, key=_stamp_order))
    repeats = data.draw(st.lists(st.sampled_from(facts), max_size=12)) if facts else []
    shuffled = data.draw(st.permutations([*facts, *repeats]))
    assert apply_all(empty, shuffled) == in_order
    for fact in facts:
        assert apply(in_order, fact) == in_order
    # every derived value goes with the rail, so the words are the same too
    assert evidence_lines(apply_all(empty, shuffled)) == evidence_lines(in_order)


@settings(max_examples=150, deadline=None)
@given(facts=facts, applicable=st.booleans())
def test_a_rail_survives_storage(facts: list[Fact], applicable: bool) -> None:
    result = apply_all(EvidenceRail(TICKET, applicable), facts)
    stored = json.loads(json.dumps(to_dict(result)))
    assert from_dict(stored) == result
    assert stored["repository"] == result.repository.value and stored["deployment"] == result.deployment.value
    for fact in facts:
        assert fact_from_dict(json.loads(json.dumps(fact_to_dict(fact)))) == fact


# Pushes made within one second: GitHub's stamps cannot order them, the push's `before` can.


def _chain(count: int) -> list[BranchFact]:
    # each later commit id sorts before the one it continues from, so only `before` can tell the order
    shas = [f"{9 - n:07d}" + "a" * 33 for n in range(count + 1)]
    return [
        BranchFact("42-empty-state", at(1), shas[n + 1], before=shas[n], links=frozenset({TICKET}))
        for n in range(count)
    ]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=str)
def test_pushes_in_one_second_are_ordered_by_what_each_continues_from(order: tuple[int, ...]) -> None:
    pushes = _chain(3)
    shown = rail(report(branch="42-empty-state", commit=pushes[-1].sha), *(pushes[i] for i in order))
    assert shown.verified_head_sha == pushes[-1].sha
    assert shown.mismatch is None
    assert from_dict(json.loads(json.dumps(to_dict(shown)))) == shown


def test_a_newer_second_replaces_the_pushes_of_an_older_one() -> None:
    first, second = _chain(2)
    later = BranchFact("42-empty-state", at(2), OLDER, before=None, links=frozenset({TICKET}))
    assert rail(first, later, second).verified_head_sha == OLDER
    assert rail(later, second, first).verified_head_sha == OLDER


def test_a_rail_stored_before_pushes_were_kept_reads_its_head() -> None:
    stored = to_dict(rail(push()))
    for branch in stored["branches"]:
        del branch["pushes"]
    assert from_dict(stored).verified_head_sha == HEAD
