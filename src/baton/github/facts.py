"""Evidence facts from GitHub's payloads: webhooks, and the REST API's objects of the same shape.

Read leniently, field by field: a payload that lacks what a fact needs gives no fact (never an error), and
the rest of the hook is still used. Only branches count (a tag is not work), and Baton's own check run
never feeds the rail it reports on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from baton.domain.evidence import (
    OWN_CHECK,
    BranchFact,
    CheckFact,
    CompareFact,
    DeploymentFact,
    DeploymentStatusFact,
    PullRequestFact,
    Repository,
    Sighting,
    Subject,
)
from baton.domain.model import RepositoryKey
from baton.reading.linking import branch_links, pull_request_links

from .webhooks import commit_sha, dig, full_name, issue_number, number, ref_name, text

NO_COMMIT = "0" * 40  # what a push names as the head of a deleted branch


def repository_of(payload: Any) -> Repository | None:
    """The repository a hook is about, keyed as tickets are; None without an installation (a GitHub
    App's hooks always carry one)."""
    installation_id = number(payload, "installation", "id")
    repository_id = number(payload, "repository", "id")
    name = full_name(payload, "repository", "full_name")
    if installation_id is None or repository_id is None or not name:
        return None
    return Repository(RepositoryKey(installation_id, repository_id), name)


def _build(make: Callable[[], Any]) -> Any:
    """A fact, or None where the payload gave values the fact refuses (a stamp that is not a time)."""
    try:
        return make()
    except (ValueError, TypeError):
        return None


def pull_request(pull: Any, repository: Repository) -> Sighting | None:
    """A pull request object, from a `pull_request` or `pull_request_review` webhook or `GET …/pulls/{n}`."""
    pr_number = issue_number(pull, "number")
    head_ref, head_sha = ref_name(pull, "head", "ref"), commit_sha(pull, "head", "sha")
    base_ref, merge_commit_sha = ref_name(pull, "base", "ref"), commit_sha(pull, "merge_commit_sha")
    state, stamp = text(pull, "state"), text(pull, "updated_at")
    if pr_number is None or not head_ref or not head_sha or not stamp:
        return None
    # review payloads carry no `merged`; `merged_at` says the same
    merged = dig(pull, "merged") is True or bool(text(pull, "merged_at"))
    head_repository = number(pull, "head", "repo", "id")
    links = pull_request_links(text(pull, "body"), head_ref, repository.name)
    fact = _build(
        lambda: PullRequestFact(
            number=pr_number,
            head_ref=head_ref,
            head_sha=head_sha,
            base_ref=base_ref,
            state="closed" if merged else state,
            stamp=stamp,
            merged=merged,
            merge_commit_sha=merge_commit_sha or None,
            draft=dig(pull, "draft") is True,
            mergeable_state=text(pull, "mergeable_state") or None,
            links=links,
            fork=head_repository is not None and head_repository != repository.key.repository_id,
        )
    )
    return None if fact is None else Sighting(fact, links)


def _pull_request_event(payload: Any, repository: Repository, received: str) -> list[Sighting]:
    found = pull_request(dig(payload, "pull_request"), repository)
    return [] if found is None else [found]


def _branch(
    name: str, stamp: str, sha: str | None = None, deleted: bool = False, before: str | None = None
) -> list[Sighting]:
    fact = _build(lambda: BranchFact(name, stamp, sha, deleted, branch_links(name), before))
    return [] if fact is None else [Sighting(fact, fact.links)]


def _push(payload: Any, repository: Repository, received: str) -> list[Sighting]:
    ref = ref_name(payload, "ref")
    if not ref.startswith("refs/heads/"):
        return []  # a tag
    name = ref.removeprefix("refs/heads/")
    after = commit_sha(payload, "after")
    if dig(payload, "deleted") is True or after == NO_COMMIT:
        return _branch(name, received, deleted=True)
    if not after:
        return []
    # the push's own time is its head commit's; a push that names none (rare) is placed when it arrived
    before = commit_sha(payload, "before")
    return _branch(name, text(payload, "head_commit", "timestamp") or received, after,
                   before=before if before and before != NO_COMMIT else None)  # fmt: skip


def _ref_event(deleted: bool) -> Callable[[Any, Repository, str], list[Sighting]]:
    def build(payload: Any, repository: Repository, received: str) -> list[Sighting]:
        ref = ref_name(payload, "ref")
        if text(payload, "ref_type") != "branch" or not ref:
            return []
        return _branch(ref, received, deleted=deleted)

    return build


def _reach(pulls: Any, branch: str) -> frozenset[Subject]:
    """The pull requests and branch a check's webhook names beside its commit."""
    keys = {Subject.pull_request(n) for item in pulls or [] if (n := issue_number(item, "number")) is not None}
    if branch:
        keys.add(Subject.branch(branch))
    return frozenset(keys)


def _check_run(payload: Any, repository: Repository, received: str) -> list[Sighting]:
    run = dig(payload, "check_run")
    name, sha = text(run, "name"), commit_sha(run, "head_sha")
    stamp = text(run, "completed_at") or text(run, "started_at")
    if not name or not sha or not stamp or name == OWN_CHECK:
        return []
    conclusion = (text(run, "conclusion") or None) if text(run, "status") == "completed" else None
    fact = _build(lambda: CheckFact(sha, name, stamp, conclusion))
    if fact is None:
        return []
    return [Sighting(fact, reach=_reach(dig(run, "pull_requests"), ref_name(run, "check_suite", "head_branch")))]


def _check_suite(payload: Any, repository: Repository, received: str) -> list[Sighting]:
    suite = dig(payload, "check_suite")
    app = text(suite, "app", "name") or text(suite, "app", "slug")
    sha = commit_sha(suite, "head_sha")
    stamp = text(suite, "updated_at") or text(suite, "created_at")
    if not app or not sha or not stamp or text(suite, "status") != "completed":
        return []
    # a suite is every check of one app on one commit; it is named after the app
    fact = _build(lambda: CheckFact(sha, app, stamp, text(suite, "conclusion") or None))
    if fact is None:
        return []
    return [Sighting(fact, reach=_reach(dig(suite, "pull_requests"), ref_name(suite, "head_branch")))]


def _environment(deployment: Any) -> str | None:
    """Where a deployment may ship every earlier merge; a transient environment (a preview) ships none."""
    if dig(deployment, "transient_environment") is True:
        return None
    return text(deployment, "environment") or None


def _deployment(payload: Any, repository: Repository, received: str) -> list[Sighting]:
    deployment = dig(payload, "deployment")
    ident, sha = number(deployment, "id"), commit_sha(deployment, "sha")
    environment, stamp = text(deployment, "environment"), text(deployment, "created_at")
    if ident is None or not sha or not stamp:
        return []
    fact = _build(lambda: DeploymentFact(ident, sha, environment, stamp))
    return [] if fact is None else [Sighting(fact, environment=_environment(deployment))]


def _deployment_status(payload: Any, repository: Repository, received: str) -> list[Sighting]:
    deployment, status = dig(payload, "deployment"), dig(payload, "deployment_status")
    ident, state, stamp = number(deployment, "id"), text(status, "state"), text(status, "created_at")
    if ident is None or not state or not stamp:
        return []
    environment = text(status, "environment") or text(deployment, "environment") or None
    sha = commit_sha(deployment, "sha") or None
    fact = _build(lambda: DeploymentStatusFact(ident, state, stamp, sha, environment))
    return [] if fact is None else [Sighting(fact, environment=_environment(deployment))]


def compare(answer: Any, base: str, head: str) -> CompareFact | None:
    """`GET …/compare/{base}...{head}`'s answer: is `head` at or after `base`."""
    result: CompareFact | None = _build(lambda: CompareFact(base, head, text(answer, "status")))
    return result


def branch(answer: Any, name: str) -> BranchFact | None:
    """`GET …/branches/{name}`'s answer: the branch's head commit, stamped with the commit's time."""
    sha = commit_sha(answer, "commit", "sha")
    stamp = text(answer, "commit", "commit", "committer", "date") or text(answer, "commit", "commit", "author", "date")
    if not sha or not stamp:
        return None
    result: BranchFact | None = _build(lambda: BranchFact(name, stamp, sha, False, branch_links(name)))
    return result


def required_checks(answer: Any) -> frozenset[str]:
    """The status checks a branch's protection requires, as `GET …/branches/{name}` shows them."""
    contexts = dig(answer, "protection", "required_status_checks", "contexts", default=[])
    checks = dig(answer, "protection", "required_status_checks", "checks", default=[])
    names = {c for c in contexts if isinstance(c, str)}
    names |= {text(c, "context") for c in checks if text(c, "context")}
    return frozenset(names)


@dataclass(frozen=True)
class EvidenceEvent:
    """A webhook that carries evidence: the actions that do ("" for an event sent without one), and what reads
    its payload, repository and arrival time into facts."""

    actions: tuple[str, ...]
    build: Callable[[Any, Repository, str], list[Sighting]]


# The webhooks that carry evidence, by event name; intake routes exactly these events and actions here.
EVIDENCE_EVENTS: dict[str, EvidenceEvent] = {
    "create": EvidenceEvent(("",), _ref_event(deleted=False)),
    "delete": EvidenceEvent(("",), _ref_event(deleted=True)),
    "push": EvidenceEvent(("",), _push),
    "pull_request": EvidenceEvent(("opened", "reopened", "edited", "synchronize", "closed", "ready_for_review",
                                   "converted_to_draft"), _pull_request_event),
    "pull_request_review": EvidenceEvent(("submitted", "edited", "dismissed"), _pull_request_event),
    "check_run": EvidenceEvent(("created", "completed"), _check_run),
    "check_suite": EvidenceEvent(("completed",), _check_suite),
    "deployment": EvidenceEvent(("created",), _deployment),
    "deployment_status": EvidenceEvent(("created",), _deployment_status),
}  # fmt: skip


def observe(event: str, payload: Any, repository: Repository, received: str) -> list[Sighting]:
    found = EVIDENCE_EVENTS.get(event)
    return [] if found is None else found.build(payload, repository, received)
