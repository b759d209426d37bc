"""The read API's app, client and store on SQLite and PostgreSQL, a clock the store writes, and octo/shop#42's
full life with the timeline it leaves."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr

from baton.domain import Actor, Command, Evidence, Permission, Policy, RepositoryKey, TicketKey
from baton.domain.evidence import PullRequestFact, Repository, Sighting
from baton.environment.clock import ManualClock
from baton.environment.settings import Settings
from baton.reading.linking import pull_request_links
from baton.service.work import Issue, WorkService
from baton.web import create_app

TOKEN = "t0k"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHOP, ZOO, API = ("octo/shop", 7, 1001), ("octo/Zoo", 7, 1002), ("acme/api", 8, 2001)

AGENT_A = Actor("agent-a", Permission.READ, collaborator=True)
AGENT_B = Actor("Agent-B", Permission.READ, collaborator=True)  # GitHub keeps a login's case; lookups ignore it
OWNER = Actor("olivia", Permission.READ, collaborator=True)
MAINTAINER = Actor("maria", Permission.MAINTAIN)

SECOND_HEAD = "5d6e7f8" + "9" * 33
FIRST = Evidence("42-empty-state", "1a2b3c4", 57, ("https://ci.example/run/1",), ())
SECOND = Evidence("42-empty-state", "5d6e7f8", 57, ("https://ci.example/run/2",), ("https://img.example/390.png",))

T0 = datetime(2025, 3, 14, 9, 0, tzinfo=UTC)


def at(minutes: int) -> str:
    """The API's rendering of T0 + minutes."""
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock(ManualClock):
    """The app's time: every statement of a command gets `now`, which the test moves, in minutes from `start`."""

    def __init__(self, start: datetime = T0) -> None:
        super().__init__(start)
        self.start = start

    def set(self, minutes: float) -> None:
        self.advance(self.start + timedelta(minutes=minutes) - self.now())


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_app(database_url: str, clock: Clock) -> Iterator[Callable[..., FastAPI]]:
    """Apps on the test's database; each one's engine is disposed at the end."""
    apps: list[FastAPI] = []

    def make(token: str | None = TOKEN, url: str = database_url) -> FastAPI:
        app = create_app(Settings(database_url=url, api_token=None if token is None else SecretStr(token)), clock=clock)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.state.work.units.engine.dispose()


@pytest.fixture
def app(make_app: Callable[..., FastAPI]) -> FastAPI:
    return make_app()


@pytest.fixture
def client(app: FastAPI) -> TestClient:
    return TestClient(app, headers=AUTH)


class Rail:
    """Commands through the app's own `WorkService`, each at a chosen minute after T0."""

    def __init__(self, service: WorkService, clock: Clock) -> None:
        self.service = service
        self.clock = clock
        self.seen = 0

    def do(
        self,
        repo: tuple[str, int, int],
        number: int,
        command: Command,
        actor: Actor,
        minute: int,
        *,
        expect: str = "applied",
        policy: Policy | None = None,
    ) -> None:
        self.clock.set(minute)
        self.seen += 1
        name, installation, repository_id = repo
        issue = Issue(TicketKey(installation, repository_id, number), name, "olivia")
        outcome = self.service.apply(issue, command, actor, f"c-{self.seen}", policy)
        assert outcome.kind == expect, outcome

    def pull_request(self, repo: tuple[str, int, int], number: int, body: str, head_sha: str, minute: int) -> None:
        """GitHub reports a pull request open (as its webhook would), at `minute`."""
        self.clock.set(minute)
        name, installation, repository_id = repo
        stamp = at(minute)
        fact = PullRequestFact(number, "42-empty-state", head_sha, "main", "open", stamp,
                               links=pull_request_links(body, "42-empty-state", name))  # fmt: skip
        where = Repository(RepositoryKey(installation, repository_id), name)
        self.service.evidence.record(where, [Sighting(fact)], f"d-{minute}")

    def open(self, repo: tuple[str, int, int], number: int, minute: int, *, draft: bool = False) -> None:
        self.clock.set(minute)
        self.seen += 1
        name, installation, repository_id = repo
        issue = Issue(TicketKey(installation, repository_id, number), name, "olivia")
        assert self.service.open_ticket(issue, f"c-{self.seen}", draft=draft).applied


@pytest.fixture
def rail(app: FastAPI, clock: Clock) -> Rail:
    return Rail(app.state.work, clock)


def full_life(rail: Rail) -> None:
    """octo/shop#42: claim, a refused rival claim, deliver, send-back, deliver again, accept."""
    rail.do(SHOP, 42, Command("claim"), AGENT_A, 0)  # c-1
    rail.do(SHOP, 42, Command("claim"), AGENT_B, 5, expect="refused")  # c-2: leaves no event
    rail.do(SHOP, 42, Command("deliver", text="Empty state added.", evidence=FIRST), AGENT_A, 10)  # c-3
    rail.do(SHOP, 42, Command("send-back", text="The empty state vanishes on error."), MAINTAINER, 20)  # c-4
    rail.do(SHOP, 42, Command("deliver", text="Kept on error too.", evidence=SECOND), AGENT_A, 30)  # c-5
    rail.pull_request(SHOP, 57, "Fixes #42", SECOND_HEAD, 35)  # GitHub: pull request #57 opened
    rail.do(SHOP, 42, Command("accept", text="lgtm"), MAINTAINER, 40)  # c-6


def evidence(reported: Evidence) -> dict[str, Any]:
    return {
        "branch": reported.branch,
        "commit": reported.commit,
        "pr": reported.pull_request,
        "tests": list(reported.tests),
        "screenshots": list(reported.screenshots),
    }


ACCEPTED_42 = {
    "repository": "octo/shop",
    "issue": 42,
    "state": "accepted",
    "revision": 6,
    "runner": "agent-a",
    "owner": "olivia",
    "attempt": 2,
    "created_at": at(0),
    "updated_at": at(40),
    "priority": 2,
    "ready": False,
    "blocked_by": [],
    "parent": None,
    "brief": None,
    "issue_state": {"state": "open", "reason": None, "by": None, "at": None, "merged": False, "flagged": False},
    "attempts": [
        {
            "number": 1,
            "runner": "agent-a",
            "started_revision": 2,
            "started_at": at(0),
            "ended_at": at(10),
            "end_reason": "delivered",
        },
        {
            "number": 2,
            "runner": "agent-a",
            "started_revision": 4,
            "started_at": at(20),
            "ended_at": at(30),
            "end_reason": "delivered",
        },
    ],
    "deliveries": [
        {
            "number": 1,
            "attempt": 1,
            "runner": "agent-a",
            "text": "Empty state added.",
            "evidence": evidence(FIRST),
            "revision": 3,
            "created_at": at(10),
        },
        {
            "number": 2,
            "attempt": 2,
            "runner": "agent-a",
            "text": "Kept on error too.",
            "evidence": evidence(SECOND),
            "revision": 5,
            "created_at": at(30),
        },
    ],
    "reviews": [
        {
            "attempt": 1,
            "delivery": 1,
            "reviewer": "maria",
            "role": "reviewer",
            "verdict": "sent_back",
            "independent": True,
            "note": "The empty state vanishes on error.",
            "revision": 4,
            "created_at": at(20),
        },
        {
            "attempt": 2,
            "delivery": 2,
            "reviewer": "maria",
            "role": "reviewer",
            "verdict": "accepted",
            "independent": True,
            "note": "lgtm",
            "revision": 6,
            "created_at": at(40),
        },
    ],
    "evidence": {
        "repository": {
            "state": "pull_request_open",
            "text": "Pull request #57 open (head 5d6e7f8, verified)",
            "reason": None,
            "reported": {"branch": "42-empty-state", "commit": "5d6e7f8", "pull_request": 57},
            "verified_head_sha": SECOND_HEAD,
            "checked_at": at(35),
            "mismatch": None,
            "pull_requests": [
                {
                    "number": 57,
                    "state": "open",
                    "draft": False,
                    "head_ref": "42-empty-state",
                    "head_sha": SECOND_HEAD,
                    "base_ref": "main",
                    "merge_commit_sha": None,
                    "problem": None,
                    "updated_at": at(35),
                }
            ],
            "branches": [],
            "verification": [
                {"kind": "branch", "reported": "42-empty-state", "state": "verified"},
                {"kind": "pull_request", "reported": "57", "state": "verified"},
                {"kind": "commit", "reported": "5d6e7f8", "state": "verified"},
            ],
        },
        "deployment": {"state": "not_deployed", "text": "Not deployed", "environments": [], "deployments": []},
        "updated_at": at(35),
    },
}

# A ticket no fact has reached yet: both evidence rails at their first states.
EMPTY_EVIDENCE = {
    "repository": {
        "state": "unreported",
        "text": "Unreported",
        "reason": None,
        "reported": {"branch": None, "commit": None, "pull_request": None},
        "verified_head_sha": None,
        "checked_at": None,
        "mismatch": None,
        "pull_requests": [],
        "branches": [],
        "verification": [],
    },
    "deployment": {"state": "not_deployed", "text": "Not deployed", "environments": [], "deployments": []},
    "updated_at": None,
}

REVIEW_SENT_BACK = {
    "verdict": "sent_back",
    "attempt": 1,
    "delivery": 1,
    "independent": True,
    "note": "The empty state vanishes on error.",
}
REVIEW_ACCEPTED = {"verdict": "accepted", "attempt": 2, "delivery": 2, "independent": True, "note": "lgtm"}

EVENTS_42 = [
    {
        "type": "created",
        "actor": "olivia",
        "role": "requester",
        "attempt": 0,
        "revision": 1,
        "operation_id": "c-1",
        "data": {"state": "open", "owner": "olivia", "brief": None},
        "created_at": at(0),
    },
    {
        "type": "claimed",
        "actor": "agent-a",
        "role": "runner",
        "attempt": 1,
        "revision": 2,
        "operation_id": "c-1",
        "data": {"runner": "agent-a"},
        "created_at": at(0),
    },
    {
        "type": "delivered",
        "actor": "agent-a",
        "role": "runner",
        "attempt": 1,
        "revision": 3,
        "operation_id": "c-3",
        "data": {
            "delivery": 1,
            "text": "Empty state added.",
            "evidence": evidence(FIRST),
            "ended": {"attempt": 1, "reason": "delivered"},
        },
        "created_at": at(10),
    },
    {
        "type": "sent_back",
        "actor": "maria",
        "role": "reviewer",
        "attempt": 2,
        "revision": 4,
        "operation_id": "c-4",
        "data": {"runner": "agent-a", "review": REVIEW_SENT_BACK},
        "created_at": at(20),
    },
    {
        "type": "delivered",
        "actor": "agent-a",
        "role": "runner",
        "attempt": 2,
        "revision": 5,
        "operation_id": "c-5",
        "data": {
            "delivery": 2,
            "text": "Kept on error too.",
            "evidence": evidence(SECOND),
            "ended": {"attempt": 2, "reason": "delivered"},
        },
        "created_at": at(30),
    },
    {
        "type": "accepted",
        "actor": "maria",
        "role": "reviewer",
        "attempt": 2,
        "revision": 6,
        "operation_id": "c-6",
        "data": {"review": REVIEW_ACCEPTED},
        "created_at": at(40),
    },
]


def _work(number: int, event: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"work-{number}", "rail": "work", **event, "source": None, "repository_state": None,
            "deployment_state": None}  # fmt: skip


def _evidence(number: int, type_: str, source: str, repository: str, data: dict[str, Any], minute: int) -> Any:
    return {"id": f"evidence-{number}", "rail": "repository", "type": type_, "actor": None, "role": None,
            "attempt": None, "revision": None, "operation_id": None, "source": source, "repository_state": repository,
            "deployment_state": "not_deployed", "data": data, "created_at": at(minute)}  # fmt: skip


def _report(reported: Evidence, minute: int) -> dict[str, Any]:
    stamp = (T0 + timedelta(minutes=minute)).isoformat(timespec="microseconds")
    return {"fact": {"kind": "report", "evidence": evidence(reported), "stamp": stamp}}


OPENED_57 = {
    "kind": "pull_request", "number": 57, "head_ref": "42-empty-state", "head_sha": SECOND_HEAD, "base_ref": "main",
    "state": "open", "stamp": at(35), "merged": False, "merge_commit_sha": None, "draft": False,
    "mergeable_state": None, "failing_checks": None, "links": [42], "fork": False,
}  # fmt: skip

# The whole timeline of #42: its work events and, merged in by time, what its evidence rails recorded.
TIMELINE_42 = [
    _work(1, EVENTS_42[0]),
    _work(2, EVENTS_42[1]),
    _work(3, EVENTS_42[2]),
    _evidence(1, "report", "c-3", "branch_reported", _report(FIRST, 10), 10),
    _work(4, EVENTS_42[3]),
    _work(5, EVENTS_42[4]),
    _evidence(2, "report", "c-5", "branch_reported", _report(SECOND, 30), 30),
    _evidence(3, "pull_request", "d-35", "pull_request_open", {"fact": OPENED_57}, 35),
    _work(6, EVENTS_42[5]),
    _evidence(4, "acceptance", "c-6", "pull_request_open", {"revision": 6, "heads": ["5d6e7f8", SECOND_HEAD]}, 40),
]
