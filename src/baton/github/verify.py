"""Asking GitHub what a rail cannot verify from webhooks alone, and turning the answers into facts.

A `/deliver` report is a claim until GitHub agrees. When no webhook has shown the reported branch or pull
request yet, `GET …/branches/{branch}` and `GET …/pulls/{n}` do; the compare API orders a deployed commit
after a merge; a base branch's protection says which failing checks are required. Only reads: GitHub
answering 403, 404 or 422 means there is nothing to learn (a branch never pushed, a pull request that is an
issue), never an error. Other failures propagate, and the worker retries the issue later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from githubkit.exception import RequestFailed

from baton.domain.evidence import (
    EvidenceRail,
    Repository,
    Sighting,
    unanswered_comparisons,
    unrequired_failures,
    unseen_pull_request,
    unverified_branch,
)

from . import facts
from .client import GitHubApp
from .refusals import rate_limit

NOTHING_TO_LEARN = frozenset({403, 404, 422})


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

    def __init__(self, github: GitHubApp, ttl: float = 300.0) -> None:
        self.github = github
        self.ttl = ttl
        self._required: dict[tuple[int, str, str], tuple[float, frozenset[str]]] = {}
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

    def answers(self, repository: Repository, rail: EvidenceRail) -> list[Sighting]:
        """Facts for what the rail asks about: its unverified report, its open comparisons, its failing checks."""
        client = self.github.installation(repository.key.installation_id)
        owner, _, name = repository.name.partition("/")
        found: list[Sighting] = []

        branch = unverified_branch(rail)
        if branch is not None:
            fact = facts.branch(_answer(client.rest.repos.get_branch, owner, name, branch), branch)
            if fact is not None:
                found.append(Sighting(fact, fact.links))

        pull = unseen_pull_request(rail)
        if pull is not None:
            answer = _answer(client.rest.pulls.get, owner, name, pull)
            sighting = facts.pull_request(answer, repository) if answer is not None else None
            if sighting is not None:
                found.append(sighting)

        for base, head in unanswered_comparisons(rail):
            answer = _answer(client.rest.repos.compare_commits, owner, name, f"{base}...{head}")
            comparison = facts.compare(answer, base, head) if answer is not None else None
            if comparison is not None:
                found.append(Sighting(comparison))

        for base_ref, failing in sorted(unrequired_failures(rail).items()):
            required = self.required(repository, base_ref)
            found.extend(Sighting(replace(check, required=True)) for check in failing if check.name in required)
        return found
