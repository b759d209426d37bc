"""Evidence facts: what a webhook, the REST API or the runner's `/deliver` report says about one pull request,
branch, check, deployment or commit comparison of one repository; the order that says which of two facts is
newer; and the small helpers every part of the evidence rails uses (stamps, commit ids, branch names).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any

from ..model import Evidence

OWN_CHECK = "baton/acceptance"
PASSING = frozenset({"success", "neutral", "skipped"})
CONFLICTS = "dirty"
PULL_REQUEST_STATES = frozenset({"open", "closed"})
DEPLOYMENT_STATUSES = ("queued", "pending", "in_progress", "success", "failure", "error", "inactive")
IN_MOTION = frozenset({"queued", "pending", "in_progress"})
COMPARE_STATUSES = frozenset({"ahead", "identical", "behind", "diverged"})
SHORT = 7  # how GitHub abbreviates a commit, and the shortest report that can be checked against a full sha

Includes = Callable[[str, str], bool | None]
"""`includes(base, head)`: is commit `head` at or after commit `base` (does it contain it)? None: unknown."""


def instant(stamp: str) -> datetime:
    """A fact's stamp as an aware instant. ISO-8601 with `Z` or an offset; a stamp without one is UTC."""
    moment = datetime.fromisoformat(stamp)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _known(value: str, allowed: Collection[str], what: str) -> None:
    """A fact's field that names one of a fixed set (`what`): anything else is a ValueError."""
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}")


def stamp(moment: datetime) -> str:
    """A moment as GitHub stamps its objects, to the second in UTC: `2024-05-01T10:00:00Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def short(sha: str) -> str:
    return sha[:SHORT]


def same_commit(a: str | None, b: str | None) -> bool:
    """Whether two commit ids name one commit; a report may abbreviate, down to `SHORT` characters."""
    if a is None or b is None:
        return False
    a, b = a.strip().lower(), b.strip().lower()
    shorter, longer = sorted((a, b), key=len)
    return a == b or (len(shorter) >= SHORT and longer.startswith(shorter))


def branch_name(ref: str) -> str:
    """A branch as GitHub names it in a pull request; pushes say `refs/heads/…`."""
    return ref.removeprefix("refs/heads/")


# ---------------------------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class PullRequestFact:
    """One pull request as a `pull_request` webhook or the REST API showed it, stamped with its `updated_at`.

    `merge_commit_sha` counts only when `merged`: GitHub also fills it for an open pull request, with a
    test merge that is not part of any branch. `mergeable_state` and `failing_checks` are None when
    unknown; both describe `head_sha`. `links` are the tickets the pull request's own content links, from
    `baton.reading.linking.pull_request_links`: closing keywords in its body and its head branch's name.
    """

    number: int
    head_ref: str
    head_sha: str
    base_ref: str
    state: str
    stamp: str
    merged: bool = False
    merge_commit_sha: str | None = None
    draft: bool = False
    mergeable_state: str | None = None
    failing_checks: tuple[str, ...] | None = None
    links: frozenset[int] = frozenset()
    fork: bool = False

    def __post_init__(self) -> None:
        instant(self.stamp)
        if self.state not in PULL_REQUEST_STATES:
            raise ValueError(f"a pull request is open or closed, not {self.state!r}")
        if self.merged and self.state != "closed":
            raise ValueError("a merged pull request is closed")


@dataclass(frozen=True)
class BranchFact:
    """A branch created, pushed to or deleted. `sha` is None for `create`, which names no commit.

    The stamp of a push is its head commit's timestamp; `links` come from `baton.reading.linking.branch_links`.
    GitHub's stamps have one-second resolution, so pushes made in one second are ordered by `before`.
    """

    name: str
    stamp: str
    sha: str | None = None
    deleted: bool = False
    links: frozenset[int] = frozenset()
    before: str | None = None  # a push's previous head: it orders pushes made in the same second

    def __post_init__(self) -> None:
        instant(self.stamp)


@dataclass(frozen=True)
class CheckFact:
    """One check's result on one commit. `conclusion` is None while it runs; `required` is the caller's
    reading of branch protection."""

    sha: str
    name: str
    stamp: str
    conclusion: str | None = None
    required: bool = False

    def __post_init__(self) -> None:
        instant(self.stamp)


@dataclass(frozen=True)
class DeploymentFact:
    id: int
    sha: str
    environment: str
    stamp: str

    def __post_init__(self) -> None:
        instant(self.stamp)


@dataclass(frozen=True)
class DeploymentStatusFact:
    """A `deployment_status`. Its webhook carries the deployment too; `sha` and `environment` let the rail
    place a status that arrives before its deployment."""

    deployment_id: int
    state: str
    stamp: str
    sha: str | None = None
    environment: str | None = None

    def __post_init__(self) -> None:
        instant(self.stamp)
        _known(self.state, DEPLOYMENT_STATUSES, "deployment status")


@dataclass(frozen=True)
class CompareFact:
    """The compare API's answer for `base...head`. Commits never change, so it needs no stamp."""

    base: str
    head: str
    status: str

    def __post_init__(self) -> None:
        _known(self.status, COMPARE_STATUSES, "comparison status")


@dataclass(frozen=True)
class DeliveryReport:
    """What a `/deliver` reported, stamped with the delivery's time. A claim until GitHub's facts agree."""

    evidence: Evidence
    stamp: str

    def __post_init__(self) -> None:
        instant(self.stamp)


LOOKUP_KINDS = ("branch", "commit", "pull_request")


@dataclass(frozen=True)
class LookupFact:
    """What GitHub answered when Baton asked it for a reported branch, commit or pull request: `found`, or not
    (404 or 422 after every retry). Stamped with when Baton asked, to the microsecond: a miss speaks against
    the reports made before it, never against a later delivery's, which is looked up afresh. `ref` is a
    branch's name, a commit id as reported, or a pull request's number in digits."""

    about: str  # one of LOOKUP_KINDS
    ref: str
    found: bool
    stamp: str

    def __post_init__(self) -> None:
        instant(self.stamp)
        _known(self.about, LOOKUP_KINDS, "lookup kind")


Fact = (
    PullRequestFact
    | BranchFact
    | CheckFact
    | DeploymentFact
    | DeploymentStatusFact
    | CompareFact
    | DeliveryReport
    | LookupFact
)


def canonical_order(value: object) -> tuple[Any, ...]:
    """A sort key that tells apart any two different facts, so "newest" is a total order and a tie between
    two facts with the same stamp is decided the same way whichever arrives first."""
    if value is None:
        return (0,)
    if is_dataclass(value) and not isinstance(value, type):
        return (1, tuple(canonical_order(getattr(value, f.name)) for f in fields(value)))
    if isinstance(value, frozenset):
        return (1, tuple(sorted(canonical_order(item) for item in value)))
    if isinstance(value, tuple):
        return (1, tuple(canonical_order(item) for item in value))
    return (1, value)


def _rank(fact: Fact) -> tuple[Any, ...]:
    """What wins between two facts stamped in the same second: the one further along."""
    match fact:
        case PullRequestFact():
            return (fact.merged, fact.state == "closed")
        case BranchFact():
            return (fact.deleted, fact.sha is not None)
        case CheckFact():
            return (fact.conclusion is not None,)
        case DeploymentStatusFact():
            return (min(DEPLOYMENT_STATUSES.index(fact.state), 3) + (fact.state == "inactive"),)
        case LookupFact():
            return (fact.found,)
        case _:
            return ()


def order(fact: Fact) -> tuple[Any, ...]:
    """The sort key of facts: by stamp, then the one further along, then `canonical_order`; the newest of
    several facts is `max(…, key=order)`."""
    stamp = getattr(fact, "stamp", None)
    return (
        instant(stamp) if stamp is not None else datetime.min.replace(tzinfo=UTC),
        _rank(fact),
        canonical_order(fact),
    )
