"""The read API through the real app, on SQLite and on PostgreSQL: shapes, filters, history, auth."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import event
from sqlalchemy.engine import make_url

from baton.domain import Actor, Command, Evidence, Permission, Policy, RepositoryKey, TicketKey, WorkState
from baton.domain.evidence import PullRequestFact, Repository, Sighting
from baton.domain.weekly import weekly
from baton.environment.settings import Settings
from baton.reading.linking import pull_request_links
from baton.service import work as service_work
from baton.service.work import Issue, WorkService
from baton.store import evidence as store_evidence
from baton.store import statements
from baton.store.reads import Reads
from baton.store.tables import tickets
from baton.store.timeline import TimelineReads
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


class Clock:
    """The time the store writes: every statement of a command gets `now`, which the test moves."""

    def __init__(self) -> None:
        self.now = T0

    def set(self, minutes: int) -> None:
        self.now = T0 + timedelta(minutes=minutes)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return clock.now if tz is None else clock.now.astimezone(tz)

    # the store's timestamps, delivery reports, the evidence rails
    for module in (statements, service_work, store_evidence):
        monkeypatch.setattr(module, "datetime", Frozen)
    return clock


@pytest.fixture
def make_app(database_url: str) -> Iterator[Callable[..., FastAPI]]:
    """Apps on the test's database; each one's engine is disposed at the end."""
    apps: list[FastAPI] = []

    def make(token: str | None = TOKEN, url: str = database_url) -> FastAPI:
        app = create_app(Settings(database_url=url, api_token=None if token is None else SecretStr(token)))
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


# ---------------------------------------------------------------------------------------------- one ticket


def test_the_ticket_after_a_full_life_is_exactly_what_happened(client: TestClient, rail: Rail) -> None:
    full_life(rail)
    response = client.get("/api/v1/repos/octo/shop/issues/42")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == ACCEPTED_42


def test_a_ticket_mid_life_shows_the_running_attempt_and_an_untouched_one_shows_nothing(
    client: TestClient, rail: Rail
) -> None:
    rail.do(SHOP, 42, Command("claim"), AGENT_A, 0)
    rail.do(SHOP, 42, Command("deliver", text="Empty state added.", evidence=FIRST), AGENT_A, 10)
    rail.do(SHOP, 42, Command("send-back", text="The empty state vanishes on error."), MAINTAINER, 20)
    body = client.get("/api/v1/repos/octo/shop/issues/42").json()
    assert (body["state"], body["revision"], body["runner"], body["attempt"]) == ("claimed", 4, "agent-a", 2)
    assert body["attempts"][1] == {
        "number": 2,
        "runner": "agent-a",
        "started_revision": 4,
        "started_at": at(20),
        "ended_at": None,
        "end_reason": None,
    }
    assert [d["number"] for d in body["deliveries"]] == [1]
    assert [r["verdict"] for r in body["reviews"]] == ["sent_back"]

    rail.open(SHOP, 100, 50)
    assert client.get("/api/v1/repos/octo/shop/issues/100").json() == {
        "repository": "octo/shop",
        "issue": 100,
        "state": "open",
        "revision": 1,
        "runner": None,
        "owner": "olivia",
        "attempt": 0,
        "created_at": at(50),
        "updated_at": at(50),
        "brief": None,
        "issue_state": {"state": "open", "reason": None, "by": None, "at": None, "merged": False, "flagged": False},
        "attempts": [],
        "deliveries": [],
        "reviews": [],
        "evidence": EMPTY_EVIDENCE,
    }


def test_a_self_verified_acceptance_is_shown_as_not_independent(client: TestClient, rail: Rail) -> None:
    runner = Actor("rita", Permission.MAINTAIN)  # a maintainer, who reviews: here, her own work
    lenient = Policy(allow_self_review=True)
    rail.do(SHOP, 9, Command("claim"), runner, 0, policy=lenient)
    rail.do(SHOP, 9, Command("deliver", text="typo fixed"), runner, 1, policy=lenient)
    rail.do(SHOP, 9, Command("accept", text="trivial"), runner, 2, policy=lenient)
    body = client.get("/api/v1/repos/octo/shop/issues/9").json()
    assert body["state"] == "accepted"
    assert body["reviews"] == [
        {
            "attempt": 1,
            "delivery": 1,
            "reviewer": "rita",
            "role": "reviewer",
            "verdict": "accepted",
            "independent": False,
            "note": "trivial",
            "revision": 4,
            "created_at": at(2),
        }
    ]
    assert body["deliveries"][0]["evidence"] == {
        "branch": None,
        "commit": None,
        "pr": None,
        "tests": [],
        "screenshots": [],
    }


def test_the_repository_in_the_url_matches_in_any_case_and_answers_with_the_stored_name(
    client: TestClient, rail: Rail
) -> None:
    rail.do(ZOO, 3, Command("claim"), AGENT_A, 0)
    for path in ("octo/Zoo", "octo/zoo", "OCTO/ZOO"):
        body = client.get(f"/api/v1/repos/{path}/issues/3").json()
        assert (body["repository"], body["issue"], body["runner"]) == ("octo/Zoo", 3, "agent-a")
        events = client.get(f"/api/v1/repos/{path}/issues/3/events").json()["events"]
        assert [e["type"] for e in events] == ["created", "claimed"]


def test_a_repository_made_again_under_its_old_name_shows_its_newest_ticket(client: TestClient, rail: Rail) -> None:
    rail.do(SHOP, 42, Command("claim"), AGENT_A, 0)
    rail.open(("octo/shop", 7, 1099), 42, 10)  # same name, new repository id
    body = client.get("/api/v1/repos/octo/shop/issues/42").json()
    assert (body["state"], body["runner"], body["created_at"]) == ("open", None, at(10))


def test_unknown_tickets_are_404_with_a_detail_naming_them(client: TestClient, rail: Rail) -> None:
    rail.do(SHOP, 42, Command("claim"), AGENT_A, 0)
    for path in ("octo/shop/issues/43", "octo/shops/issues/42", "other/shop/issues/42"):
        for suffix in ("", "/events"):
            response = client.get(f"/api/v1/repos/{path}{suffix}")
            assert response.status_code == 404, path + suffix
            owner, repo, _, number = path.split("/")
            assert response.json() == {
                "detail": f"Unknown ticket {owner}/{repo}#{number}: Baton does not track that issue."
            }
    assert client.get("/api/v1/repos/octo/shop/issues/0").status_code == 422
    assert client.get("/api/v1/repos/octo/shop/issues/forty-two").status_code == 422


def test_timestamps_are_utc_whatever_the_postgresql_session_time_zone(postgres_url: str, clock: Clock) -> None:
    url = make_url(postgres_url).update_query_dict({"options": "-c timezone=Asia/Kolkata"})
    settings = Settings(database_url=url.render_as_string(hide_password=False), api_token=SecretStr(TOKEN))
    app = create_app(settings)
    try:
        with app.state.work.units.engine.connect() as connection:
            assert connection.exec_driver_sql("SHOW timezone").scalar() == "Asia/Kolkata"
        rail = Rail(app.state.work, clock)
        full_life(rail)
        client = TestClient(app, headers=AUTH)
        assert client.get("/api/v1/repos/octo/shop/issues/42").json() == ACCEPTED_42
        assert client.get("/api/v1/repos/octo/shop/issues/42/events").json() == {"events": TIMELINE_42, "next": None}
    finally:
        app.state.work.units.engine.dispose()


# ---------------------------------------------------------------------------------------------- history


def test_events_are_the_whole_history_oldest_first(client: TestClient, rail: Rail) -> None:
    full_life(rail)
    response = client.get("/api/v1/repos/octo/shop/issues/42/events")
    assert response.status_code == 200
    assert response.json() == {"events": TIMELINE_42, "next": None}


def test_events_belong_to_their_own_ticket_only(client: TestClient, rail: Rail) -> None:
    rail.do(SHOP, 1, Command("claim"), AGENT_A, 0)
    rail.do(SHOP, 2, Command("claim"), AGENT_B, 1)
    rail.do(SHOP, 1, Command("release"), AGENT_A, 2)
    rail.do(ZOO, 1, Command("claim"), AGENT_B, 3)
    one = client.get("/api/v1/repos/octo/shop/issues/1/events").json()["events"]
    assert [(e["type"], e["actor"], e["revision"], e["created_at"]) for e in one] == [
        ("created", "olivia", 1, at(0)),
        ("claimed", "agent-a", 2, at(0)),
        ("released", "agent-a", 3, at(2)),
    ]
    assert one[2]["data"] == {"ended": {"attempt": 1, "reason": "released"}}
    two = client.get("/api/v1/repos/octo/shop/issues/2/events").json()["events"]
    assert [(e["type"], e["actor"]) for e in two] == [("created", "olivia"), ("claimed", "Agent-B")]


# ---------------------------------------------------------------------------------------------- the list


def populate(rail: Rail) -> None:
    full_life(rail)  # octo/shop#42 accepted, agent-a, minutes 0-40
    rail.do(SHOP, 7, Command("claim"), AGENT_B, 41)  # octo/shop#7 claimed by Agent-B
    rail.open(SHOP, 100, 42)  # octo/shop#100 open
    rail.do(ZOO, 3, Command("claim"), AGENT_A, 43)  # octo/Zoo#3 claimed by agent-a
    rail.open(ZOO, 1, 44, draft=True)  # octo/Zoo#1 draft
    rail.do(API, 5, Command("claim"), AGENT_A, 45)
    rail.do(API, 5, Command("deliver", text="done"), AGENT_A, 46)  # acme/api#5 delivered by agent-a
    rail.do(API, 6, Command("withdraw", text="not needed"), OWNER, 47)  # acme/api#6 withdrawn


# Repository case-insensitively ("octo/shop" < "octo/Zoo"), then the number as a number (7 < 42 < 100).
EVERYTHING = [
    {"repository": "acme/api", "issue": 5, "state": "delivered", "revision": 3, "runner": "agent-a",
     "owner": "olivia", "attempt": 1, "updated_at": at(46)},
    {"repository": "acme/api", "issue": 6, "state": "withdrawn", "revision": 2, "runner": None,
     "owner": "olivia", "attempt": 0, "updated_at": at(47)},
    {"repository": "octo/shop", "issue": 7, "state": "claimed", "revision": 2, "runner": "Agent-B",
     "owner": "olivia", "attempt": 1, "updated_at": at(41)},
    {"repository": "octo/shop", "issue": 42, "state": "accepted", "revision": 6, "runner": "agent-a",
     "owner": "olivia", "attempt": 2, "updated_at": at(40)},
    {"repository": "octo/shop", "issue": 100, "state": "open", "revision": 1, "runner": None,
     "owner": "olivia", "attempt": 0, "updated_at": at(42)},
    {"repository": "octo/Zoo", "issue": 1, "state": "draft", "revision": 1, "runner": None,
     "owner": "olivia", "attempt": 0, "updated_at": at(44)},
    {"repository": "octo/Zoo", "issue": 3, "state": "claimed", "revision": 2, "runner": "agent-a",
     "owner": "olivia", "attempt": 1, "updated_at": at(43)},
]  # fmt: skip


def listed(client: TestClient, query: str) -> list[str]:
    response = client.get(f"/api/v1/tickets{query}")
    assert response.status_code == 200, response.text
    return [f"{t['repository']}#{t['issue']}" for t in response.json()["tickets"]]


def test_the_list_without_filters_is_every_ticket_in_order(client: TestClient, rail: Rail) -> None:
    populate(rail)
    assert client.get("/api/v1/tickets").json() == {"tickets": EVERYTHING}
    # Empty parameters, as a form sends them, filter nothing.
    assert client.get("/api/v1/tickets?repo=&state=&runner=").json() == {"tickets": EVERYTHING}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?repo=octo/shop", ["octo/shop#7", "octo/shop#42", "octo/shop#100"]),
        ("?repo=OCTO/Shop", ["octo/shop#7", "octo/shop#42", "octo/shop#100"]),
        ("?repo=octo/zoo", ["octo/Zoo#1", "octo/Zoo#3"]),
        ("?repo=octo", []),
        ("?repo=octo/sho", []),
        ("?state=claimed", ["octo/shop#7", "octo/Zoo#3"]),
        ("?state=draft", ["octo/Zoo#1"]),
        ("?state=accepted", ["octo/shop#42"]),
        ("?runner=agent-a", ["acme/api#5", "octo/shop#42", "octo/Zoo#3"]),
        ("?runner=AGENT-A", ["acme/api#5", "octo/shop#42", "octo/Zoo#3"]),
        ("?runner=agent-b", ["octo/shop#7"]),
        ("?runner=@Agent-B", ["octo/shop#7"]),
        ("?runner=agent", []),
        ("?repo=octo/shop&state=claimed", ["octo/shop#7"]),
        ("?repo=octo/shop&runner=agent-a", ["octo/shop#42"]),
        ("?state=claimed&runner=Agent-A", ["octo/Zoo#3"]),
        ("?repo=octo/ZOO&state=claimed&runner=agent-a", ["octo/Zoo#3"]),
        ("?repo=octo/shop&state=draft", []),
        ("?repo=acme/api&state=delivered&runner=agent-b", []),
        ("?limit=2", ["acme/api#5", "acme/api#6"]),
        ("?limit=1&state=claimed", ["octo/shop#7"]),
        ("?limit=500&repo=acme/api", ["acme/api#5", "acme/api#6"]),
    ],
)
def test_the_list_filters(client: TestClient, rail: Rail, query: str, expected: list[str]) -> None:
    populate(rail)
    assert listed(client, query) == expected


def test_the_list_is_limited_to_100_by_default_and_500_at_most(client: TestClient, rail: Rail) -> None:
    for number in range(1, 106):
        rail.open(SHOP, number, 0)
    assert listed(client, "") == [f"octo/shop#{n}" for n in range(1, 101)]
    assert listed(client, "?limit=500") == [f"octo/shop#{n}" for n in range(1, 106)]
    assert listed(client, "?limit=3&repo=octo/shop") == ["octo/shop#1", "octo/shop#2", "octo/shop#3"]
    for bad in ("0", "-1", "501", "many"):
        response = client.get(f"/api/v1/tickets?limit={bad}")
        assert response.status_code == 422, bad
        assert response.json()["detail"][0]["loc"] == ["query", "limit"]


def test_an_unknown_state_is_422_listing_the_valid_states(client: TestClient, rail: Rail) -> None:
    populate(rail)
    for bad in ("bogus", "CLAIMED", "stale"):
        response = client.get(f"/api/v1/tickets?state={bad}")
        assert response.status_code == 422
        (error,) = response.json()["detail"]
        assert error["loc"] == ["query", "state"]
        assert error["input"] == bad
        assert error["msg"] == (
            f"Unknown state '{bad}': valid states are draft, open, claimed, delivered, accepted, withdrawn."
        )


def test_reads_refuses_a_limit_outside_its_bounds(app: FastAPI) -> None:
    reads = TimelineReads(app.state.work.units.engine)
    assert reads.tickets(limit=1) == []
    for bad in (0, 501):
        with pytest.raises(ValueError, match="limit must be between 1 and 500"):
            reads.tickets(limit=bad)
    assert reads.ticket("octo/shop", 1) is None
    assert reads.timeline("octo/shop", 1) is None


def test_reads_write_nothing(app: FastAPI, rail: Rail) -> None:
    populate(rail)
    reads = TimelineReads(app.state.work.units.engine)
    engine = app.state.work.units.engine
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement.lstrip().split()[0].upper())

    event.listen(engine, "before_cursor_execute", record)
    try:
        assert reads.ticket("octo/shop", 42) is not None
        assert len(reads.tickets(state=WorkState.CLAIMED)) == 2
        assert reads.timeline("octo/shop", 42) is not None
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert set(statements) <= {"SELECT", "BEGIN", "SHOW", "SET"}, statements
    assert statements.count("SELECT") >= 7


def test_reads_do_not_wait_for_a_write_in_progress(app: FastAPI, rail: Rail) -> None:
    """A reader sees the last committed state while a writer holds its transaction open (SQLite's WAL,
    PostgreSQL's snapshots): the read API never queues behind the work."""
    populate(rail)
    engine = app.state.work.units.engine
    reads = Reads(engine)
    before = reads.ticket("octo/shop", 42)
    assert before is not None
    holding, release = threading.Event(), threading.Event()

    def write_slowly() -> None:
        with engine.begin() as connection:  # under SQLite: BEGIN IMMEDIATE and the writer lock
            connection.execute(tickets.update().where(tickets.c.number == 42).values(revision=999))
            holding.set()
            release.wait(10)
            connection.rollback()

    writer = threading.Thread(target=write_slowly)
    writer.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        during = reads.ticket("octo/shop", 42)
        assert time.monotonic() - started < 2.0  # no wait for the writer (its lock would hold 10 s)
        assert during is not None and during.ticket.revision == before.ticket.revision
    finally:
        release.set()
        writer.join(10)


# ---------------------------------------------------------------------------------------------- auth

PATHS = ["/api/v1/repos/octo/shop/issues/42", "/api/v1/repos/octo/shop/issues/42/events", "/api/v1/tickets"]


@pytest.mark.parametrize("path", PATHS)
def test_every_route_needs_the_bearer_token(app: FastAPI, rail: Rail, path: str) -> None:
    full_life(rail)
    client = TestClient(app)
    for headers, detail in [
        ({}, "Missing API token: send it as `Authorization: Bearer <token>`."),
        ({"Authorization": "Basic dDBrOg=="}, "Missing API token: send it as `Authorization: Bearer <token>`."),
        ({"Authorization": f"token {TOKEN}"}, "Missing API token: send it as `Authorization: Bearer <token>`."),
        ({"Authorization": "Bearer"}, "Missing API token: send it as `Authorization: Bearer <token>`."),
        ({"Authorization": "Bearer wrong"}, "Invalid API token."),
        ({"Authorization": f"Bearer {TOKEN}x"}, "Invalid API token."),
        ({"Authorization": f"Bearer {TOKEN[:-1]}"}, "Invalid API token."),
        ({"Authorization": "Bearer tök".encode()}, "Invalid API token."),
    ]:
        response = client.get(path, headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json() == {"detail": detail}
    assert client.get(path, headers=AUTH).status_code == 200
    assert client.get(path, headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_a_token_beyond_ascii_is_compared_as_the_bytes_sent(make_app: Callable[..., FastAPI]) -> None:
    client = TestClient(make_app(token="tök-ü"))
    assert client.get("/api/v1/tickets", headers={"Authorization": "Bearer tök-ü".encode()}).status_code == 200
    assert client.get("/api/v1/tickets", headers={"Authorization": "Bearer tök-u".encode()}).status_code == 401


def test_authentication_comes_before_anything_about_the_request(app: FastAPI) -> None:
    client = TestClient(app)
    for path in ("/api/v1/repos/octo/shop/issues/999", "/api/v1/tickets?state=bogus", "/api/v1/tickets?limit=0"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401, path


@pytest.mark.parametrize("token", [None, ""])
def test_without_a_configured_token_the_api_is_disabled(make_app: Callable[..., FastAPI], token: str | None) -> None:
    client = TestClient(make_app(token=token))
    for path in PATHS:
        for headers in ({}, AUTH, {"Authorization": "Bearer "}):
            response = client.get(path, headers=headers)
            assert response.status_code == 403
            assert response.json() == {
                "detail": "The read API is disabled: no API token is configured. Set BATON_API_TOKEN to enable it, "
                "then send the token as `Authorization: Bearer <token>`."
            }
    assert client.get("/healthz").status_code == 200


def test_the_token_is_never_echoed_or_logged(app: FastAPI, rail: Rail, caplog: pytest.LogCaptureFixture) -> None:
    secret = "s3cret-presented-token"
    full_life(rail)
    client = TestClient(app)
    caplog.set_level(logging.DEBUG)
    responses = [client.get(path, headers={"Authorization": f"Bearer {secret}"}) for path in PATHS]
    responses += [client.get(path, headers=AUTH) for path in PATHS]
    for response in responses:
        assert secret not in response.text and TOKEN not in response.text
        assert all(secret not in value and TOKEN not in value for value in response.headers.values())
    assert secret not in caplog.text and f"Bearer {TOKEN}" not in caplog.text


# ---------------------------------------------------------------------------------------------- documentation


def test_the_examples_in_docs_api_md_are_what_the_api_answers() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
    examples = {}
    for heading, block in re.findall(r"`GET (/api/v1/\S+)`\n\n```json\n(.*?)```", text, re.S):
        examples[heading] = json.loads(block)
    assert examples == {
        "/api/v1/repos/octo/shop/issues/42": ACCEPTED_42,
        "/api/v1/tickets?repo=octo/shop": {"tickets": [t for t in EVERYTHING if t["repository"] == "octo/shop"]},
        "/api/v1/repos/octo/shop/issues/42/events": {"events": TIMELINE_42, "next": None},
    }


# ---------------------------------------------------------------------------------------------- OpenAPI


def test_openapi_documents_the_three_routes_their_shapes_and_the_auth(client: TestClient) -> None:
    response = TestClient(client.app).get("/openapi.json")  # no token needed for the description
    assert response.status_code == 200
    spec = response.json()
    paths = spec["paths"]
    for path in (
        "/api/v1/repos/{owner}/{repo}/issues/{number}",
        "/api/v1/repos/{owner}/{repo}/issues/{number}/events",
        "/api/v1/tickets",
    ):
        operation = paths[path]["get"]
        assert operation["security"] == [{"HTTPBearer": []}], path
        assert {"200", "401", "403"} <= set(operation["responses"]), path
    assert "404" in paths["/api/v1/repos/{owner}/{repo}/issues/{number}"]["get"]["responses"]
    assert spec["components"]["securitySchemes"]["HTTPBearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "The value of BATON_API_TOKEN.",
    }

    schemas = spec["components"]["schemas"]
    ok = paths["/api/v1/repos/{owner}/{repo}/issues/{number}"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/TicketOut"}
    assert set(schemas["TicketOut"]["properties"]) == set(ACCEPTED_42)
    assert set(schemas["EventOut"]["properties"]) == set(TIMELINE_42[0])
    assert set(schemas["SummaryOut"]["properties"]) == set(EVERYTHING[0])
    assert schemas["WorkState"]["enum"] == [state.value for state in WorkState]
    assert schemas["RepositoryState"]["enum"][:2] == ["not_applicable", "unreported"]
    parameters = {p["name"]: p for p in paths["/api/v1/tickets"]["get"]["parameters"]}
    assert set(parameters) == {"repo", "state", "runner", "limit"}
    assert parameters["state"]["schema"]["enum"] == [state.value for state in WorkState]
    limit = parameters["limit"]["schema"]
    assert (limit["default"], limit["minimum"], limit["maximum"]) == (100, 1, 500)


def test_the_charts_read_has_each_ticket_s_whole_flow_since_a_moment(app: FastAPI, rail: Rail) -> None:
    full_life(rail)
    rail.do(ZOO, 1, Command("claim"), AGENT_B, 50)
    rail.do(ZOO, 1, Command("deliver", text="Done.", evidence=FIRST), AGENT_B, 110)
    reads = Reads(app.state.work.units.engine)
    shop = reads.work_times(since=T0 + timedelta(minutes=25), repository="OCTO/shop")
    # the claim before `since` comes too: the attempt it began ends after
    assert [(t.type, t.attempt, t.at) for t in shop] == [
        ("claimed", 1, T0), ("delivered", 1, T0 + timedelta(minutes=10)), ("sent_back", 2, T0 + timedelta(minutes=20)),
        ("delivered", 2, T0 + timedelta(minutes=30)), ("accepted", 2, T0 + timedelta(minutes=40)),
    ]  # fmt: skip
    assert reads.work_times(since=T0 + timedelta(days=1)) == []
    week = weekly(reads.work_times(since=T0), T0 + timedelta(hours=3))[-1]
    assert sorted(week.to_delivery) == [1 / 6, 1 / 6, 1.0] and week.to_acceptance == (1 / 6,) and week.accepted == 1
