"""The read API through the real app, on SQLite and on PostgreSQL: shapes, filters, history, auth."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import event
from sqlalchemy.engine import make_url

from baton.domain import Actor, Command, Permission, Policy, WorkState
from baton.domain.weekly import weekly
from baton.environment.settings import Settings
from baton.store.reads import Reads
from baton.store.tables import tickets
from baton.store.timeline import TimelineReads
from baton.web import create_app
from support import read_api
from support.read_api import (
    ACCEPTED_42,
    AGENT_A,
    AGENT_B,
    API,
    AUTH,
    EMPTY_EVIDENCE,
    FIRST,
    MAINTAINER,
    OWNER,
    SHOP,
    T0,
    TIMELINE_42,
    TOKEN,
    ZOO,
    Clock,
    Rail,
    at,
    full_life,
)

# the read API's app, client and store (tests/support/read_api.py)
make_app, app, client, clock, rail = read_api.make_app, read_api.app, read_api.client, read_api.clock, read_api.rail

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
        "priority": 2,
        "ready": True,
        "blocked_by": [],
        "parent": None,
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
    app = create_app(settings, clock=clock)
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
@pytest.mark.both_engines
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


@pytest.mark.both_engines
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
    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
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


@pytest.mark.both_engines
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
