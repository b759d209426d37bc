"""The webhook inbox as operators see it: `GET /api/v1/deliveries` through the real app (signed webhooks, real
processing, SQLite and PostgreSQL), and `baton deliveries` / `baton replay` as the commands a shell runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from baton.domain import Permission
from baton.github.configs import DefaultConfigs
from baton.store import make_engine
from baton.store.inbox import Inbox, Incoming
from baton.web import create_app
from support.read_api import AUTH, TOKEN, Clock
from support.webhook_hub import APP_ID, FakeDirectory, Hub, comment, open_hub, settings

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 14, 10, 0, tzinfo=UTC)

# The three deliveries of the example in docs/api.md, with ids as GitHub makes them.
DONE_ID = "39fb5c00-0a6b-11f0-891a-2c6d0e7b9a05"
FAILED_ID = "4a0c6d10-0a6b-11f0-8a2b-3d7e1f8c0b06"
WAITING_ID = "5b1d7e20-0a6b-11f0-9b3c-4e8f2a9d1c07"

FIELDS = {"id", "event", "action", "status", "attempts", "error", "received_at", "next_attempt_at"}


def at(minutes: float) -> str:
    """The API's rendering of T0 + minutes."""
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def clock() -> Clock:
    """The app's time, which the inbox writes (`received_at`, `next_attempt_at`) and the test moves."""
    return Clock(T0)


@dataclass
class Scene:
    hub: Hub
    clock: Clock

    @property
    def app(self) -> Any:
        return self.hub.app

    @property
    def api(self) -> TestClient:
        return TestClient(self.hub.app, headers=AUTH)

    def listed(self, query: str = "") -> list[dict[str, Any]]:
        response = self.api.get(f"/api/v1/deliveries{query}")
        assert response.status_code == 200, response.text
        deliveries: list[dict[str, Any]] = response.json()["deliveries"]
        return deliveries

    def play(self) -> None:
        """The story of the example in docs/api.md: one delivery processed, one failed for good, one waiting."""
        self.clock.set(0)
        assert self.hub.post("issue_comment", comment("agent-a", "/claim"), hook=DONE_ID).status_code == 202
        assert self.hub.inbox(DONE_ID) == ("done", 1, None)

        self.clock.set(5)
        self.hub.directory.broken = True
        claim = comment("agent-b", "/claim", number=7, comment_id=2)
        assert self.hub.post("issue_comment", claim, hook=FAILED_ID).status_code == 202
        assert self.hub.inbox(FAILED_ID) == ("failed", 1, "KeyError: 'permission'")

        self.clock.set(7)
        self.hub.directory.broken = False
        self.hub.directory.down = True
        accept = comment("maria", "/accept", comment_id=3)
        assert self.hub.post("issue_comment", accept, hook=WAITING_ID).status_code == 202
        assert self.hub.inbox(WAITING_ID) == ("pending", 1, "DirectoryUnavailable: GitHub did not answer")
        self.hub.directory.down = False


def _app(url: str, clock: Clock, *, token: str | None = TOKEN) -> FastAPI:
    return create_app(settings(url, token=token), directory=FakeDirectory(), configs=DefaultConfigs(), lanes=False,
                      clock=clock)  # fmt: skip


@pytest.fixture
def make_app(database_url: str, clock: Clock) -> Iterator[Callable[..., FastAPI]]:
    """Apps on the test's database; each one's engine is disposed at the end."""
    apps: list[FastAPI] = []

    def make(token: str | None = TOKEN, url: str = database_url) -> FastAPI:
        app = _app(url, clock, token=token)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.state.work.units.engine.dispose()


@pytest.fixture
def scene(database_url: str, clock: Clock) -> Iterator[Scene]:
    with open_hub(
        settings(database_url, token=TOKEN), FakeDirectory({"maria": Permission.MAINTAIN}), clock=clock
    ) as hub:
        yield Scene(hub, clock)


def store(inbox: Inbox, clock: Clock, deliveries: list[tuple[str, str, str | None]], *, minutes: float = 0) -> None:
    """Deliveries received together at T0 + minutes, straight into the inbox."""
    clock.set(minutes)
    inbox.receive_all([Incoming(id_, event, action, 99, json.dumps({"action": action})) for id_, event, action in
                       deliveries])  # fmt: skip


# ---------------------------------------------------------------------------------------------- the API


def test_a_delivery_failed_for_good_and_one_failed_for_a_passing_reason_are_listed_with_their_reasons(
    scene: Scene,
) -> None:
    scene.play()

    assert scene.listed("?status=failed") == [
        {
            "id": FAILED_ID,
            "event": "issue_comment",
            "action": "created",
            "status": "failed",
            "attempts": 1,
            "error": "KeyError: 'permission'",
            "received_at": at(5),
            "next_attempt_at": None,
        }
    ]
    assert scene.listed("?status=pending") == [
        {
            "id": WAITING_ID,
            "event": "issue_comment",
            "action": "created",
            "status": "pending",
            "attempts": 1,
            "error": "DirectoryUnavailable: GitHub did not answer",
            "received_at": at(7),
            "next_attempt_at": at(7 + 2 / 60),  # the first backoff: two seconds
        }
    ]
    assert [d["id"] for d in scene.listed("?status=done")] == [DONE_ID]
    assert scene.listed("?status=ignored") == []
    assert scene.listed("?status=processing") == []

    # No filter, or an empty one as a form sends it: all of them, newest first.
    everything = scene.listed()
    assert [(d["id"], d["status"]) for d in everything] == [
        (WAITING_ID, "pending"), (FAILED_ID, "failed"), (DONE_ID, "done")
    ]  # fmt: skip
    assert scene.listed("?status=") == everything
    assert scene.listed("?limit=2") == everything[:2]


def test_the_list_follows_the_inbox_as_a_redelivery_mends_a_failed_delivery(scene: Scene) -> None:
    scene.play()
    claim = comment("agent-b", "/claim", number=7, comment_id=2)
    scene.clock.set(9)
    assert scene.hub.post("issue_comment", claim, hook=FAILED_ID).json()["received"] == "retry"

    assert scene.listed("?status=failed") == []
    (mended,) = [d for d in scene.listed() if d["id"] == FAILED_ID]
    assert mended == {
        "id": FAILED_ID,
        "event": "issue_comment",
        "action": "created",
        "status": "done",
        "attempts": 2,
        "error": None,
        "received_at": at(5),  # when it first arrived
        "next_attempt_at": None,
    }
    assert scene.hub.ticket(7).runner == "agent-b"


def test_the_payload_is_never_shown(scene: Scene) -> None:
    marker = "payload-only-marker-8d1f"
    payload = comment("agent-a", f"/claim\n{marker}")
    payload["sender"]["login"] = f"agent-a-{marker}"
    scene.hub.post("issue_comment", payload, hook="d-1")
    scene.hub.directory.down = True
    scene.hub.post("issue_comment", comment("agent-b", f"/claim {marker}", number=8, comment_id=9), hook="d-2")

    response = scene.api.get("/api/v1/deliveries")
    assert response.status_code == 200
    assert marker not in response.text
    assert "payload" not in response.text
    assert [set(d) for d in response.json()["deliveries"]] == [FIELDS, FIELDS]
    assert set(response.json()) == {"deliveries"}


def test_the_limit_is_50_by_default_and_500_at_most(make_app: Callable[..., FastAPI], clock: Clock) -> None:
    app = make_app()
    inbox = Inbox(app.state.work.units.engine, clock)
    for minute in range(55):
        store(inbox, clock, [(f"d-{minute:02}", "star", "created")], minutes=minute)
    client = TestClient(app, headers=AUTH)

    def ids(query: str) -> list[str]:
        return [d["id"] for d in client.get(f"/api/v1/deliveries{query}").json()["deliveries"]]

    newest_first = [f"d-{minute:02}" for minute in reversed(range(55))]
    assert ids("") == newest_first[:50]
    assert ids("?limit=500") == newest_first
    assert ids("?limit=1") == ["d-54"]
    assert ids("?limit=3&status=pending") == ["d-54", "d-53", "d-52"]
    for bad in ("0", "-1", "501", "many"):
        response = client.get(f"/api/v1/deliveries?limit={bad}")
        assert response.status_code == 422, bad
        assert response.json()["detail"][0]["loc"] == ["query", "limit"]


def test_deliveries_received_together_are_listed_by_id(make_app: Callable[..., FastAPI], clock: Clock) -> None:
    app = make_app()
    inbox = Inbox(app.state.work.units.engine, clock)
    store(inbox, clock, [("b", "ping", None), ("a", "star", "created")], minutes=0)
    store(inbox, clock, [("c", "issues", "opened")], minutes=1)
    listed = TestClient(app, headers=AUTH).get("/api/v1/deliveries").json()["deliveries"]
    assert [(d["id"], d["event"], d["action"], d["received_at"]) for d in listed] == [
        ("c", "issues", "opened", at(1)), ("a", "star", "created", at(0)), ("b", "ping", None, at(0))
    ]  # fmt: skip


def test_an_unknown_status_is_422_listing_the_valid_ones(make_app: Callable[..., FastAPI]) -> None:
    client = TestClient(make_app(), headers=AUTH)
    for bad in ("bogus", "FAILED", "retrying", "failed,pending"):
        response = client.get("/api/v1/deliveries", params={"status": bad})
        assert response.status_code == 422, bad
        (error,) = response.json()["detail"]
        assert error["loc"] == ["query", "status"]
        assert error["input"] == bad
        assert error["msg"] == (
            f"Unknown status {bad!r}: valid statuses are pending, processing, done, ignored, failed."
        )


def test_the_list_needs_the_bearer_token_before_anything_else(make_app: Callable[..., FastAPI]) -> None:
    client = TestClient(make_app())
    missing = {"detail": "Missing API token: send it as `Authorization: Bearer <token>`."}
    for path in ("/api/v1/deliveries", "/api/v1/deliveries?status=bogus", "/api/v1/deliveries?limit=0"):
        for headers, detail in [
            ({}, missing),
            ({"Authorization": f"token {TOKEN}"}, missing),
            ({"Authorization": "Bearer wrong"}, {"detail": "Invalid API token."}),
            ({"Authorization": f"Bearer {TOKEN}x"}, {"detail": "Invalid API token."}),
        ]:
            response = client.get(path, headers=headers)
            assert response.status_code == 401, (path, headers)
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json() == detail
    assert client.get("/api/v1/deliveries", headers=AUTH).json() == {"deliveries": []}


@pytest.mark.parametrize("token", [None, ""])
def test_without_a_configured_token_the_list_is_disabled(make_app: Callable[..., FastAPI], token: str | None) -> None:
    client = TestClient(make_app(token=token))
    for headers in ({}, AUTH, {"Authorization": "Bearer "}):
        response = client.get("/api/v1/deliveries?status=failed", headers=headers)
        assert response.status_code == 403
        assert response.json()["detail"].startswith("The read API is disabled: no API token is configured.")


def test_timestamps_are_utc_whatever_the_postgresql_session_time_zone(postgres_url: str, clock: Clock) -> None:
    url = make_url(postgres_url).update_query_dict({"options": "-c timezone=Asia/Kolkata"})
    app = _app(url.render_as_string(hide_password=False), clock)
    try:
        engine = app.state.work.units.engine
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SHOW timezone").scalar() == "Asia/Kolkata"
        inbox = Inbox(engine, clock)
        store(inbox, clock, [("d-1", "issue_comment", "created")], minutes=3)
        clock.set(4)
        inbox.retry("d-1", 30, "DirectoryUnavailable: GitHub did not answer")
        listed = TestClient(app, headers=AUTH).get("/api/v1/deliveries").json()["deliveries"]
        assert [(d["received_at"], d["next_attempt_at"]) for d in listed] == [(at(3), at(4.5))]
    finally:
        app.state.work.units.engine.dispose()


def test_listing_does_not_wait_for_a_write_in_progress(make_app: Callable[..., FastAPI], clock: Clock) -> None:
    """As the other read routes: under SQLite a writer holds the lock, and the list reads the last committed state."""
    app = make_app()
    engine = app.state.work.units.engine
    store(Inbox(engine, clock), clock, [("d-1", "star", "created")])
    holding, release = threading.Event(), threading.Event()

    def write_slowly() -> None:
        with engine.begin() as connection:  # under SQLite: BEGIN IMMEDIATE and the writer lock
            connection.exec_driver_sql("UPDATE webhook_deliveries SET status = 'failed'")
            holding.set()
            release.wait(10)
            connection.rollback()

    writer = threading.Thread(target=write_slowly)
    writer.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        response = TestClient(app, headers=AUTH).get("/api/v1/deliveries")
        assert time.monotonic() - started < 2.0  # no wait for the writer (its lock would hold 10 s)
        assert [d["status"] for d in response.json()["deliveries"]] == ["pending"]
    finally:
        release.set()
        writer.join(10)


def test_openapi_documents_the_list_its_parameters_and_the_auth(make_app: Callable[..., FastAPI]) -> None:
    spec = TestClient(make_app()).get("/openapi.json").json()  # no token needed for the description
    operation = spec["paths"]["/api/v1/deliveries"]["get"]
    assert operation["security"] == [{"HTTPBearer": []}]
    assert {"200", "401", "403", "422"} <= set(operation["responses"])
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/WebhookDeliveryList"}
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert set(parameters) == {"status", "limit"}
    assert parameters["status"]["schema"]["enum"] == ["pending", "processing", "done", "ignored", "failed"]
    assert (parameters["limit"]["schema"]["minimum"], parameters["limit"]["schema"]["maximum"]) == (1, 500)
    assert parameters["limit"]["schema"]["default"] == 50
    schemas = spec["components"]["schemas"]
    assert set(schemas["WebhookDeliveryOut"]["properties"]) == FIELDS


def test_the_examples_in_docs_api_md_are_what_the_api_answers(scene: Scene) -> None:
    scene.play()
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    examples = re.findall(r"`GET (/api/v1/deliveries\S*)`[^\n]*\n\n```json\n(.*?)```", text, re.S)
    assert [path for path, _ in examples] == ["/api/v1/deliveries", "/api/v1/deliveries?status=bogus"]
    for path, block in examples:
        assert scene.api.get(path).json() == json.loads(block), path


# ---------------------------------------------------------------------------------------------- the CLI


@dataclass
class Shell:
    """`python -m baton.cli` in a directory of its own (no `.env` there), with only the database configured."""

    cwd: Path
    url: str

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
        env.update(BATON_DATABASE_URL=self.url, **extra)
        return subprocess.run(
            [sys.executable, "-m", "baton.cli", *args],
            cwd=self.cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip


@pytest.fixture
def shell(tmp_path: Path, sqlite_url: str) -> Shell:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return Shell(cwd, sqlite_url)


@pytest.fixture
def inbox(sqlite_url: str, clock: Clock) -> Iterator[Inbox]:
    engine = make_engine(sqlite_url)
    try:
        yield Inbox(engine, clock)
    finally:
        engine.dispose()


def test_an_empty_inbox_says_so(shell: Shell) -> None:
    failed = shell.run("deliveries", "--failed")
    assert (failed.returncode, failed.stdout, failed.stderr) == (0, "no failed deliveries\n", "")
    every = shell.run("deliveries")
    assert (every.returncode, every.stdout) == (0, "no deliveries\n")


def test_a_failed_delivery_is_listed_with_its_reason_and_replayed(shell: Shell, inbox: Inbox, clock: Clock) -> None:
    store(inbox, clock, [("s-1", "star", "created")], minutes=0)
    store(inbox, clock, [("c-1", "issue_comment", "created"), ("p-1", "ping", None)], minutes=1)
    inbox.finish("s-1", "failed", "some reason")
    inbox.finish("p-1", "ignored")

    listed = shell.run("deliveries", "--failed")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"s-1  {'star.created':<28} {'failed':<10} attempts 0  2025-03-14 10:00:00",
        "    some reason",
    ]
    every = shell.run("deliveries", "--limit", "2").stdout.splitlines()
    assert [line.split()[:3] for line in every] == [
        ["c-1", "issue_comment.created", "pending"], ["p-1", "ping", "ignored"]
    ]  # fmt: skip

    replayed = shell.run("replay", "s-1")
    assert (replayed.returncode, replayed.stdout, replayed.stderr) == (0, "s-1: ignored\n", "")
    assert inbox.status("s-1") == ("ignored", 1, None)  # attempts counted afresh, the reason cleared
    assert shell.run("deliveries", "--failed").stdout == "no failed deliveries\n"
    assert inbox.status("c-1") == ("pending", 0, None)  # replaying one touches no other


def test_a_replay_that_a_running_baton_takes_first_waits_for_its_result(
    sqlite_url: str, inbox: Inbox, clock: Clock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On PostgreSQL a running Baton's lane is woken as the delivery turns pending, and may take it before `baton
    replay` does: replay then waits for that result instead of reporting `processing` and exiting 1."""
    import baton.intake

    store(inbox, clock, [("s-1", "star", "created")])
    inbox.finish("s-1", "failed", "some reason")
    finishing: list[threading.Thread] = []

    def taken_by_the_running_baton(*_: Any) -> None:
        [hook] = inbox.take_pending()  # the running process's lane, first
        assert hook.id == "s-1" and inbox.status("s-1")[0] == "processing"

        def decide() -> None:
            time.sleep(0.5)
            inbox.finish("s-1", "done")

        finishing.append(threading.Thread(target=decide))
        finishing[0].start()

    monkeypatch.setattr(baton.intake, "process", taken_by_the_running_baton)
    monkeypatch.setenv("BATON_DATABASE_URL", sqlite_url)
    for name in [name for name in os.environ if name.startswith("BATON_") and name != "BATON_DATABASE_URL"]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(sqlite_url.removeprefix("sqlite:///").rpartition("/")[0])
    from baton.cli import main

    assert main(["replay", "s-1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"delivery": "s-1", "status": "done", "reason": None}
    finishing[0].join(5)


def test_replaying_an_unknown_delivery_exits_2_and_says_why(shell: Shell, inbox: Inbox, clock: Clock) -> None:
    store(inbox, clock, [("s-1", "star", "created")])
    replayed = shell.run("replay", "no-such-delivery")
    assert replayed.returncode == 2
    assert replayed.stdout == ""
    assert replayed.stderr == (
        "baton: no delivery no-such-delivery to replay (unknown, being processed now, or processed so long ago "
        "that its payload was pruned)\n"
    )
    assert inbox.status("s-1") == ("pending", 0, None)


def test_a_command_replayed_without_the_app_waits_for_it_and_exits_1(shell: Shell, inbox: Inbox, clock: Clock) -> None:
    payload = comment("agent-a", "/claim")
    clock.set(0)
    inbox.receive(Incoming("c-1", "issue_comment", "created", 99, json.dumps(payload)))
    inbox.finish("c-1", "failed", "some reason")

    replayed = shell.run("replay", "c-1")
    assert replayed.returncode == 1
    reason = (
        "DirectoryUnavailable: repository permissions cannot be read: set BATON_APP_ID and BATON_PRIVATE_KEY "
        "(or BATON_PRIVATE_KEY_PATH) so Baton can ask GitHub"
    )
    assert replayed.stdout == f"c-1: pending ({reason})\n"
    assert inbox.status("c-1") == ("pending", 1, reason)
    (waiting,) = inbox.listed("pending")
    assert waiting.next_attempt_at is not None
    listed = shell.run("deliveries", "--status", "pending").stdout.splitlines()
    assert "next try" in listed[0] and listed[1] == f"    {reason}"


def test_replaying_with_unusable_credentials_exits_2_and_changes_nothing(
    shell: Shell, inbox: Inbox, clock: Clock
) -> None:
    store(inbox, clock, [("s-1", "star", "created")])
    inbox.finish("s-1", "failed", "some reason")
    replayed = shell.run("replay", "s-1", BATON_APP_ID=str(APP_ID), BATON_PRIVATE_KEY="not a key")
    assert replayed.returncode == 2
    assert replayed.stdout == ""
    assert replayed.stderr.startswith("baton: The App's private key is not a usable RSA PEM key")
    assert inbox.status("s-1") == ("failed", 0, "some reason")
