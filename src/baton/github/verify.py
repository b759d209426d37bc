"""Asking GitHub what a rail cannot verify from webhooks alone, and turning the answers into facts.

A `/deliver` report is a claim until GitHub agrees. When no webhook has shown the reported branch, pull
request or commit yet, `GET …/branches/{branch}`, `GET …/pulls/{n}` and `GET …/commits/{ref}` do; the compare
API orders a deployed commit after a merge; a base branch's protection says which failing checks are required.
Only reads. A reported item GitHub answers 404 or 422 for is asked about again 1, 3 and 7 seconds after that
first answer (`RETRIES`: GitHub can lag right after a push), and then recorded as not found (a `LookupFact`),
which the rail shows until a webhook or a later delivery says otherwise. For the other questions 403, 404 or
422 teach nothing, never an error. Other failures propagate, and the writer retries the issue later.

Once per ticket, the issue's timeline (`GET …/issues/{n}/timeline`) names the pull requests that mentioned it
before Baton heard of it (`cross-referenced` events), and `GET …/pulls/{n}` shows each as a fact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import reduce
from itertools import accumulate
from typing import Any

from githubkit.exception import RequestFailed

from baton.domain.evidence import (
    EvidenceRail,
    LookupFact,
    ReportedItem,
    Repository,
    Sighting,
    Subject,
    apply,
    subjects,
    unanswered_comparisons,
    unrequired_failures,
    unverified,
)
from baton.environment.clock import Clock

from . import facts
from .client import GitHubApp
from .issues import PAGE, TIMELINE_PAGES
from .refusals import rate_limit
from .webhooks import dig, issue_number, text

NOTHING_TO_LEARN = frozenset({403, 404, 422})
GONE = frozenset({403, 404, 410, 422})  # an issue's timeline GitHub does not show: it names nothing
LOOKED_UP = 30  # of the pull requests an issue's timeline names, the newest this many are asked about
MISSING = frozenset({404, 422})
# Seconds between the questions about a reported item GitHub did not find: asked again 1, 3 and 7 s after the
# first miss; still missing then, it is not found.
RETRIES = (1.0, 2.0, 4.0)
SLACK = 0.05  # seconds: a question asked this early of its time (clocks read apart) counts as on time
FORGET_AFTER = 600.0  # seconds after which a miss not followed up (the issue never came back) is forgotten


@dataclass(frozen=True)
class Answers:
    """What GitHub answered (`found`, facts to record) and, while a reported item is being asked again, when
    (`again`: counted from the question, not from whatever the writer does after it)."""

    found: list[Sighting]
    again: datetime | None = None


class Unknowable(Exception):
    """GitHub refused to say (403 that is not a rate limit): neither found nor missing."""


def _lookup(call: Callable[..., Any], *args: Any) -> Any:
    """GitHub's answer about a reported item; None when it does not know it (404, 422)."""
    try:
        return call(*args).json()
    except RequestFailed as error:
        if rate_limit(error) is None:
            if error.response.status_code in MISSING:
                return None
            if error.response.status_code == 403:
                raise Unknowable() from error
        raise


def cross_referenced(item: Any, repository: str) -> int | None:
    """The number of the pull request of `repository` ("owner/name") that a timeline entry says mentioned the
    issue; None for any other entry (a mention from an issue, or from another repository's pull request)."""
    if not isinstance(item, dict) or item.get("event") != "cross-referenced":
        return None
    source = dig(item, "source", "issue")
    if not isinstance(source, dict) or not source.get("pull_request"):
        return None
    where = text(source, "repository_url").rstrip("/").lower()
    if not where.endswith(f"/repos/{repository.lower()}"):
        return None
    return issue_number(source, "number")


def _answer(call: Callable[..., Any], *args: Any) -> Any:
    try:
        return call(*args).json()
    except RequestFailed as error:
        if error.response.status_code in NOTHING_TO_LEARN and rate_limit(error) is None:
            return None
        raise


class Verifier:
    """`ttl`: how long a base branch's required checks are remembered; failing checks that are not required
    would otherwise have them asked again each time the ticket is shown."""

    def __init__(self, github: GitHubApp, clock: Clock, ttl: float = 300.0) -> None:
        self.github = github
        self.clock = clock  # the time a lookup's fact is stamped with, and a question asked again is due at
        self.ttl = ttl
        self._required: dict[tuple[int, str, str], tuple[float, frozenset[str]]] = {}
        # (installation, repository, ticket, kind, ref) -> (when first missed, misses so far)
        self._misses: dict[tuple[int, str, int, str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def required(self, repository: Repository, base_ref: str) -> frozenset[str]:
        key = (repository.key.installation_id, repository.name.lower(), base_ref)
        now = time.monotonic()
        with self._lock:
            cached = self._required.get(key)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        owner, _, name = repository.name.partition("/")
        client = self.github.installation(repository.key.installation_id)
        answer = _answer(client.rest.repos.get_branch, owner, name, base_ref)
        required = facts.required_checks(answer) if answer is not None else frozenset()
        with self._lock:
            self._required[key] = (now, required)
        return required

    def answers(self, repository: Repository, rail: EvidenceRail) -> Answers:
        """Facts for what the rail asks about: its unverified reports, its open comparisons, its failing checks."""
        client = self.github.installation(repository.key.installation_id)
        owner, _, name = repository.name.partition("/")
        found: list[Sighting] = []
        again: list[datetime] = []

        # the branch and pull request first: their heads may verify the reported commit
        for kinds in (("branch", "pull_request"), ("commit",)):
            asked = reduce(apply, (sighting.fact for sighting in found), rail)
            for item in unverified(asked):
                if item.kind not in kinds:
                    continue
                try:
                    sighting = self._look_up(client, owner, name, repository, rail.ticket, item)
                except Unknowable:
                    continue
                if sighting is not None:
                    found.append(sighting)
                    self._found(repository, rail.ticket, item)
                    continue
                wait = self._missed(repository, rail.ticket, item)
                if wait is None:
                    stamp = self.clock.now().isoformat(timespec="microseconds")
                    found.append(Sighting(LookupFact(item.kind, item.ref, False, stamp), frozenset({rail.ticket})))
                else:
                    again.append(self.clock.now() + timedelta(seconds=wait))

        for base, head in unanswered_comparisons(rail):
            answer = _answer(client.rest.repos.compare_commits, owner, name, f"{base}...{head}")
            comparison = facts.compare(answer, base, head) if answer is not None else None
            if comparison is not None:
                found.append(Sighting(comparison))

        for base_ref, failing in sorted(unrequired_failures(rail).items()):
            required = self.required(repository, base_ref)
            found.extend(Sighting(replace(check, required=True)) for check in failing if check.name in required)
        return Answers(found, min(again, default=None))

    def timeline(self, repository: Repository, rail: EvidenceRail) -> list[Sighting]:
        """The pull requests of this repository that the issue's timeline names (`cross-referenced` events
        whose source is a pull request) and the rail does not hold yet, as `GET …/pulls/{n}` shows them: work
        begun before Baton heard of the issue. Whether one links the ticket is the usual linking's to say (its
        body's closing keywords, its head branch's name); a bare mention links nothing. An issue GitHub no
        longer shows (403, 404, 410, 422) names nothing; other failures propagate."""
        client = self.github.installation(repository.key.installation_id)
        owner, _, name = repository.name.partition("/")
        named: list[int] = []
        items: Any = None
        for page in range(1, TIMELINE_PAGES + 1):
            try:
                items = client.rest.issues.list_events_for_timeline(
                    owner, name, rail.ticket, per_page=PAGE, page=page
                ).json()
            except RequestFailed as error:
                if error.response.status_code in GONE and rate_limit(error) is None:
                    break
                raise
            if not isinstance(items, list):
                break
            for item in items:
                mentioned = cross_referenced(item, repository.name)
                if mentioned is not None and mentioned not in named:
                    named.append(mentioned)
            if len(items) < PAGE:
                break
        held = subjects(rail)
        found: list[Sighting] = []
        for pr_number in [n for n in named if Subject.pull_request(n) not in held][-LOOKED_UP:]:
            answer = _answer(client.rest.pulls.get, owner, name, pr_number)
            sighting = facts.pull_request(answer, repository) if answer is not None else None
            if sighting is not None:
                found.append(sighting)
        return found

    def _look_up(
        self, client: Any, owner: str, name: str, repository: Repository, ticket: int, item: ReportedItem
    ) -> Sighting | None:
        """The fact GitHub's answer about a reported item gives; None when GitHub does not know it."""
        match item.kind:
            case "branch":
                fact = facts.branch(_lookup(client.rest.repos.get_branch, owner, name, item.ref), item.ref)
                return Sighting(fact, fact.links) if fact is not None else None
            case "pull_request":
                answer = _lookup(client.rest.pulls.get, owner, name, int(item.ref))
                return facts.pull_request(answer, repository) if answer is not None else None
            case _:
                if _lookup(client.rest.repos.get_commit, owner, name, item.ref) is None:
                    return None
                stamp = self.clock.now().isoformat(timespec="microseconds")
                return Sighting(LookupFact("commit", item.ref, True, stamp), frozenset({ticket}))

    @staticmethod
    def _key(repository: Repository, ticket: int, item: ReportedItem) -> tuple[int, str, int, str, str]:
        return (repository.key.installation_id, repository.name.lower(), ticket, item.kind, item.ref)

    def _found(self, repository: Repository, ticket: int, item: ReportedItem) -> None:
        with self._lock:
            self._misses.pop(self._key(repository, ticket, item), None)

    def _missed(self, repository: Repository, ticket: int, item: ReportedItem) -> float | None:
        """GitHub did not find a reported item: the seconds until it is asked again, or None once it has been
        asked again `sum(RETRIES)` seconds after the first miss (it is then recorded as not found). The times
        count from the first miss, not from the writes made meanwhile, so a busy writer does not stretch them."""
        key = self._key(repository, ticket, item)
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, (since, _) in self._misses.items() if now - since > FORGET_AFTER]:
                del self._misses[stale]
            first, misses = self._misses.get(key, (now, 0))
            later = [point for point in accumulate(RETRIES) if point > now - first + SLACK]
            if misses and not later:
                self._misses.pop(key, None)
                return None
            self._misses[key] = (first, misses + 1)
            return first + later[0] - now
