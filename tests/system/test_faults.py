"""Faults, through the real paths: a delivery the database refuses among good ones, a process killed while it
holds a delivery, connections the server closed, and the database unreachable while webhooks arrive.

The PostgreSQL faults are made on a database of the test's own: its backends are terminated
(`pg_terminate_backend`), and it is made unreachable by refusing connections to it (`ALLOW_CONNECTIONS
false`) and given back after. Every process and server binds to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Engine, func, insert, select, text

from baton.demo.stage import APP_ID as STAGE_APP_ID
from baton.domain import Permission, TicketKey, WorkState
from baton.environment.clock import SYSTEM
from baton.environment.settings import Settings
from baton.github.configs import DefaultConfigs
from baton.github.webhooks import signature
from baton.store import make_engine
from baton.store import tables as t
from baton.store.inbox import LEASE, Inbox, Incoming
from baton.web import create_app
from github_standin.server import Fault
from support.databases import scratch_database, url_of
from support.keys import app_key
from support.lanes import open_stage
from support.processes import stop
from support.standin_scene import opened
from support.webhook_hub import APP_ID, INSTALLATION, REPOSITORY_ID, SECRET, FakeDirectory, comment

pytestmark = pytest.mark.faults

SHOP = "octo/shop"
_inbox = t.webhook_deliveries


def until(check: Callable[[], Any], timeout: float, what: str) -> float:
    """Wait for `check()` to hold; returns the seconds it took."""
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > timeout:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(0.05)
    return time.monotonic() - began


def signed(body: bytes, event: str, delivery: str) -> dict[str, str]:
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
            "X-Hub-Signature-256": signature(SECRET.encode(), body)}  # fmt: skip


def app_on(database_url: str, spool: Path, directory: FakeDirectory | None = None) -> FastAPI:
    """Baton's app without lanes: a delivery is decided right after its answer."""
    settings = Settings(database_url=database_url, webhook_secret=SecretStr(SECRET), app_id=APP_ID,
                        private_key=SecretStr(app_key()), spool_dir=str(spool))  # fmt: skip
    return create_app(settings, directory=directory or FakeDirectory(), configs=DefaultConfigs(), lanes=False)


def rows(engine: Engine, *where: Any) -> list[Any]:
    with engine.connect() as connection:
        return list(connection.execute(select(_inbox.c.id, _inbox.c.status, _inbox.c.attempts).where(*where)).all())


def spooled(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.delivery")) if directory.exists() else []


# -- a database of the test's own, that can be made unreachable -------------------------------------------


class Database:
    def __init__(self, admin: Engine, name: str) -> None:
        self.admin, self.name = admin, name
        self.url = url_of(admin, name)

    def terminate(self) -> int:
        """Close every connection to the database, from the server's side (as a restart does)."""
        with self.admin.connect() as connection:
            return len(connection.execute(
                text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = :name AND pid <> pg_backend_pid()"), {"name": self.name}
            ).all())  # fmt: skip

    def allow(self, allowed: bool) -> None:
        with self.admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{self.name}" ALLOW_CONNECTIONS {str(allowed).lower()}'))

    @contextmanager
    def down(self) -> Iterator[None]:
        """The database unreachable: its connections closed and new ones refused, until the block ends."""
        self.allow(False)
        try:
            self.terminate()
            yield
        finally:
            self.allow(True)


@pytest.fixture
def database() -> Iterator[Database]:
    with scratch_database("baton_faults") as (admin, name):
        made = Database(admin, name)
        try:
            yield made
        finally:
            made.allow(True)


# -- 2. one bad delivery among good ones --------------------------------------------------------------------


def _refuse_row(engine: Engine, delivery: str) -> None:
    """Make the database itself refuse one delivery's row (as it refuses a value out of a column's range)."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(
                text(
                    "CREATE FUNCTION refuse_row() RETURNS trigger AS $$ BEGIN "
                    "RAISE EXCEPTION 'value out of range' USING ERRCODE = '22003'; END $$ LANGUAGE plpgsql"
                )
            )
            connection.execute(text(
                "CREATE TRIGGER refuse_row BEFORE INSERT ON webhook_deliveries FOR EACH ROW "
                f"WHEN (NEW.id = '{delivery}') EXECUTE FUNCTION refuse_row()"))  # fmt: skip
        else:
            connection.execute(text(
                f"CREATE TRIGGER refuse_row BEFORE INSERT ON webhook_deliveries WHEN NEW.id = '{delivery}' "
                "BEGIN SELECT RAISE(ABORT, 'value out of range'); END"))  # fmt: skip


@pytest.mark.both_engines
def test_a_delivery_the_database_refuses_fails_alone_and_the_others_stored_with_it_are_processed(
    database_url: str, tmp_path: Path
) -> None:
    agents = [f"agent-{n}" for n in range(10)]
    app = app_on(database_url, tmp_path / "spool", FakeDirectory({agent: Permission.WRITE for agent in agents}))
    engine = app.state.work.units.engine
    _refuse_row(engine, "refused")
    bodies = [(f"good-{n}", json.dumps(comment(agent, "/claim", number=100 + n, comment_id=n + 1)).encode())
              for n, agent in enumerate(agents)]  # fmt: skip
    bodies.insert(6, ("refused", json.dumps(comment("agent-0", "/claim", number=99, comment_id=99)).encode()))

    async def send_together() -> dict[str, int]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://baton") as client:
            answers = await asyncio.gather(*(
                client.post("/webhooks/github", content=body, headers=signed(body, "issue_comment", delivery))
                for delivery, body in bodies
            ))  # fmt: skip
        return {delivery: answer.status_code for (delivery, _), answer in zip(bodies, answers, strict=True)}

    try:
        answered = asyncio.run(send_together())
        assert answered == {**{f"good-{n}": 202 for n in range(10)}, "refused": 500}
        assert sorted(rows(engine)) == sorted((f"good-{n}", "done", 1) for n in range(10))
        for n, agent in enumerate(agents):
            ticket = app.state.work.ticket(TicketKey(INSTALLATION, REPOSITORY_ID, 100 + n))
            assert ticket is not None and ticket.state is WorkState.CLAIMED and ticket.runner == agent
        assert spooled(tmp_path / "spool") == []
    finally:
        engine.dispose()


# -- 8. a process killed while it holds a delivery ----------------------------------------------------------


def _worker(url: str, github_url: str, folder: Path, name: str, **extra: str) -> subprocess.Popen[bytes]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
           "BATON_DATABASE_URL": url, "BATON_APP_ID": str(STAGE_APP_ID), "BATON_PRIVATE_KEY": app_key(),
           "BATON_GITHUB_API_URL": github_url, "BATON_ANSWER_DELAY": "0.3", "BATON_WRITE_INTERVAL": "0",
           **extra}  # fmt: skip
    log = open(folder / f"{name}.log", "wb")  # noqa: SIM115 - the process writes it until it ends
    return subprocess.Popen([sys.executable, "-m", "baton.cli", "worker"], env=env, cwd=folder,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip


def _status(engine: Engine, delivery: str) -> tuple[str, int]:
    found = rows(engine, _inbox.c.id == delivery)
    return (found[0].status, found[0].attempts) if found else ("absent", 0)


@pytest.mark.long
@pytest.mark.postgres
def test_a_delivery_held_by_a_killed_worker_is_taken_back_within_seconds_and_decided_once(
    postgres_url: str, tmp_path: Path, figure: Callable[[str], None]
) -> None:
    """`baton worker` is killed (SIGKILL) while it waits on GitHub for the permission of a `/claim`'s author;
    another worker takes the delivery back as soon as the lease of the dead one runs out, not minutes later.
    While the first lived, its lease held, though the lookup lasted longer than the lease."""
    engine = make_engine(postgres_url)
    workers: list[subprocess.Popen[bytes]] = []
    with open_stage(postgres_url, worker="external", spool_dir=str(tmp_path / "spool")) as stage:  # fmt: skip
        try:
            olivia, agent = stage.person("olivia", "admin"), stage.person("agent-a", "write")
            number = olivia.open_issue(SHOP, "A task")
            workers.append(_worker(postgres_url, stage.github_url, tmp_path, "first"))
            until(lambda: all(r.status in ("done", "ignored") for r in rows(engine)), 60, "the issue to be decided")
            stage.hub.rest.inject(Fault("GET", r"/collaborators/agent-a/permission$", status=None, delay=30))
            comment_id = agent.comment(SHOP, number, "/claim")
            with stage.hub.world.lock:  # the comment's webhook, not one of the status comment Baton writes meanwhile
                claim = next(d for d in stage.hub.deliveries if d.event == "issue_comment"
                             and json.loads(d.body)["comment"]["id"] == comment_id)  # fmt: skip
            assert claim.status == 202
            until(lambda: _status(engine, claim.id) == ("processing", 1), 30, "the first worker to take the claim")
            held = time.monotonic()
            workers.append(_worker(postgres_url, stage.github_url, tmp_path, "second"))
            # The first worker lives on, waiting for GitHub past its lease: its heartbeat keeps the delivery.
            time.sleep(LEASE.total_seconds() + 1 - (time.monotonic() - held))
            assert _status(engine, claim.id) == ("processing", 1)
            os.kill(workers[0].pid, signal.SIGKILL)
            workers[0].wait(10)
            taken_back = until(lambda: _status(engine, claim.id)[0] == "done", 60, "the claim to be decided")
            figure(f"a delivery held by a killed worker decided {taken_back:.1f} s after the kill "
                   f"(lease {LEASE.total_seconds():.0f} s), once")  # fmt: skip
            # Seconds, not minutes: the lease runs out and another worker's next poll takes the delivery (about
            # the lease here; the bound is three times that, which a loaded machine stays within).
            assert taken_back < 3 * LEASE.total_seconds() + 5, f"taken back {taken_back:.1f} s after the kill"
            assert _status(engine, claim.id) == ("done", 2)
            with engine.connect() as connection:
                claimed = connection.execute(
                    select(func.count()).select_from(t.events).where(t.events.c.type == "claimed")
                ).scalar_one()
            assert claimed == 1
            ticket = stage.app.state.work.ticket(TicketKey(stage.repository.installation_id,
                                                           stage.repository.id, number))  # fmt: skip
            assert ticket is not None and ticket.state is WorkState.CLAIMED and ticket.runner == "agent-a"
            assert workers[1].poll() is None
        finally:
            stop(*workers)
    stage.app.state.work.units.engine.dispose()
    engine.dispose()


# -- 9. connections the server closed; the lanes through an outage ------------------------------------------


@pytest.mark.postgres
def test_the_first_delivery_after_the_servers_connections_were_closed_is_stored(
    database: Database, tmp_path: Path
) -> None:
    app = app_on(database.url, tmp_path / "spool")
    engine = app.state.work.units.engine
    try:
        with TestClient(app) as client:

            def send(delivery: str) -> dict[str, Any]:
                body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
                answer = client.post("/webhooks/github", content=body, headers=signed(body, "ping", delivery))
                assert answer.status_code == 202, answer.text
                return dict(answer.json())

            assert send("before")["received"] == "new"
            assert database.terminate() >= 1  # the pool's connections, as a restart of the server leaves them
            assert send("after")["received"] == "new"
        assert sorted(rows(engine)) == [("after", "ignored", 1), ("before", "ignored", 1)]
        assert spooled(tmp_path / "spool") == []
    finally:
        engine.dispose()


@pytest.mark.long
@pytest.mark.postgres
def test_a_worker_says_once_that_the_database_is_unreachable_and_once_that_it_is_back(
    database: Database, tmp_path: Path, figure: Callable[[str], None]
) -> None:
    engine = make_engine(database.url)
    # No GitHub here: nothing is due to be written, and a ping needs no GitHub to be decided.
    worker = _worker(database.url, "http://127.0.0.1:9", tmp_path, "worker")
    log = tmp_path / "worker.log"
    try:
        until(lambda: b"deciding webhook deliveries" in log.read_bytes(), 30, "the worker to start")
        time.sleep(1)
        with database.down():
            time.sleep(6)
        until(lambda: b"reachable again" in log.read_bytes(), 30, "the worker to find the database again")
        Inbox(engine, SYSTEM).receive(Incoming("ping-after", "ping", None, None, "{}"))
        until(lambda: _status(engine, "ping-after")[0] == "ignored", 30, "the worker to decide a delivery")
    finally:
        stop(worker)
        engine.dispose()
    lines = log.read_text().splitlines()
    assert len([line for line in lines if "unreachable" in line]) == 1, lines
    assert len([line for line in lines if "reachable again" in line]) == 1, lines
    assert not [line for line in lines if "Traceback" in line], lines
    figure(f"a 6 s database outage: the worker logged {len(lines) - 1} lines, no traceback")


# -- 12. webhooks while the database is unreachable ----------------------------------------------------------


@pytest.mark.long
@pytest.mark.postgres
def test_deliveries_received_while_the_database_is_unreachable_are_spooled_then_decided_once(
    database: Database, tmp_path: Path, figure: Callable[[str], None], caplog: pytest.LogCaptureFixture
) -> None:
    spool = tmp_path / "spool"
    count = 10
    with open_stage(database.url, spool_dir=str(spool)) as stage:
        engine = stage.app.state.work.units.engine
        olivia = stage.person("olivia", "admin")
        agents = [stage.person(f"agent-{n}", "write") for n in range(count)]
        numbers = [olivia.open_issue(SHOP, f"Task {n}") for n in range(count)]

        def quiet() -> bool:
            """Every issue offered and shown (its label: the status comment comes with the claim), and every
            webhook GitHub sent about it (Baton's own writes come back as webhooks too) answered and decided:
            nothing else arrives during the outage."""
            with stage.hub.world.lock:
                shown = all("baton:open" in stage.repository.issues[n].labels for n in numbers)
                answered = all(d.status is not None for d in stage.hub.deliveries)
            return shown and answered and all(r.status in ("done", "ignored") for r in rows(engine))

        until(quiet, 60, "the issues to be offered, shown and every webhook about them decided")
        time.sleep(1)
        until(quiet, 60, "the webhooks of the last writes to be decided")
        with database.down():
            time.sleep(3)  # the lanes meet the outage before any webhook arrives
            for agent, number in zip(agents, numbers, strict=True):
                agent.comment(SHOP, number, "/claim")
            claims = stage.hub.deliveries[-count:]
            assert [d.status for d in claims] == [202] * count
            assert [json.loads(d.answer)["received"] for d in claims] == ["spooled"] * count
            assert len(spooled(spool)) == count
            # a redelivery of a spooled delivery while the database is away: kept too, changes nothing later
            again = stage.hub.redeliver(claims[0])
            assert again.status == 202
            assert len(spooled(spool)) == count + 1
        back = time.monotonic()
        ids = [d.id for d in claims]
        until(lambda: [r.status for r in rows(engine, _inbox.c.id.in_(ids))] == ["done"] * count, 60,
              "the spooled deliveries to be decided")  # fmt: skip
        until(lambda: spooled(spool) == [], 10, "the spool to be empty")
        assert list(spool.glob("*.refused")) == []
        with engine.connect() as connection:
            claimed = (
                connection.execute(
                    select(t.events.c.actor).where(t.events.c.type == "claimed").order_by(t.events.c.actor)
                )
                .scalars()
                .all()
            )
        assert claimed == [f"agent-{n}" for n in range(count)]  # none lost, none doubled
        figure(f"{count} claims (and a redelivery) sent while the database was unreachable: all 202 and spooled, "
               f"all decided {time.monotonic() - back:.1f} s after it returned; 0 lost, 0 doubled")  # fmt: skip
        for agent, number in zip(agents, numbers, strict=True):
            ticket = stage.app.state.work.ticket(TicketKey(stage.repository.installation_id, stage.repository.id,
                                                           number))  # fmt: skip
            assert ticket is not None and ticket.state is WorkState.CLAIMED and ticket.runner == agent.login
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()
    # The outage as `baton serve` tells it: once by its lanes, once by its spool's lane, each way.
    said = [record.getMessage() for record in caplog.records if record.name.startswith("baton")]
    assert 1 <= len([line for line in said if "database is unreachable (" in line]) <= 2, said
    assert 1 <= len([line for line in said if "reachable again" in line]) <= 2, said
    assert len([line for line in said if "deliveries are kept in" in line]) == 1, said


@pytest.mark.postgres
def test_spooled_deliveries_keep_their_order_and_one_the_database_refuses_is_set_aside(
    database: Database, tmp_path: Path
) -> None:
    spool = tmp_path / "spool"
    app = app_on(database.url, spool)
    engine = app.state.work.units.engine
    _refuse_row(engine, "refused")
    body = json.dumps({"zen": "Design for failure.", "hook_id": 1}).encode()
    try:
        with TestClient(app) as client:

            def send(delivery: str) -> str:
                answer = client.post("/webhooks/github", content=body, headers=signed(body, "ping", delivery))
                assert answer.status_code == 202, answer.text
                return str(answer.json()["received"])

            with database.down():
                assert [send(d) for d in ("first", "refused", "second")] == ["spooled"] * 3
            # The database is back, but deliveries wait in the spool: a new one joins them, behind them.
            assert send("third") == "spooled"
            assert app.state.spool.drain(app.state.inbox) == 3
            assert app.state.spool.drain(app.state.inbox) == 0
            assert send("fourth") == "new"
        with engine.connect() as connection:
            stored = connection.execute(select(_inbox.c.id).order_by(_inbox.c.received_at)).scalars().all()
        assert stored == ["first", "second", "third", "fourth"]
        assert spooled(spool) == []
        assert [path.read_bytes().split(b"\n")[1] for path in spool.glob("*.refused")] == [body]
    finally:
        engine.dispose()


def test_a_delivery_whose_lease_ran_out_is_taken_again_and_one_cut_off_too_often_fails(
    sqlite_url: str, tmp_path: Path
) -> None:
    """As if processes had died holding them: one delivery once, another for the eighth time."""
    engine = make_engine(sqlite_url)
    lapsed = datetime.now(UTC) - LEASE - timedelta(seconds=1)
    with engine.begin() as connection:
        connection.execute(insert(_inbox), [
            {"id": f"cut-{attempts}", "event": "ping", "action": None, "installation_id": None, "payload": "{}",
             "status": "processing", "attempts": attempts, "received_at": lapsed, "processed_at": lapsed}
            for attempts in (1, 8)
        ])  # fmt: skip
    engine.dispose()
    with open_stage(sqlite_url, spool_dir=str(tmp_path / "spool")) as stage:
        engine = stage.app.state.work.units.engine
        until(lambda: {r.status for r in rows(engine, _inbox.c.id.like("cut-%"))} <= {"ignored", "failed"}, 30,
              "both to be taken again")  # fmt: skip
        assert _status(engine, "cut-1") == ("ignored", 2)
        assert _status(engine, "cut-8") == ("failed", 9)
        assert stage.app.state.inbox.status("cut-8")[2].startswith("Interrupted: ")
    stage.app.state.work.units.engine.dispose()


# -- 13. the API, MCP and board while the database is unreachable ----------------------------------------------


def _families(full_name: str, number: int, agent: str, reader: str, session: str) -> dict[str, list[Any]]:
    """Every route family that reads the database, as (method, path, body, headers) on one keep-alive connection."""
    issue = f"/api/v1/repos/{full_name}/issues/{number}"
    mine = {"Authorization": f"Bearer {agent}", "Content-Type": "application/json"}
    read = {"Authorization": f"Bearer {reader}"}
    board = {"Cookie": f"baton_session={session}"}
    mcp = {**mine, "Accept": "application/json, text/event-stream"}
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "list_tasks", "arguments": {"repo": full_name}}}).encode()  # fmt: skip
    return {
        "agent API": [
            ("POST", f"{issue}/claim", b"{}", mine),
            ("POST", f"{issue}/deliver", b'{"summary": "done", "branch": "cart"}', mine),
            ("POST", f"/api/v1/repos/{full_name}/issues", b'{"title": "A new task"}', mine),
            ("POST", f"/api/v1/repos/{full_name}/tasks/claim", b"{}", mine),
            ("GET", f"/api/v1/tasks?repo={full_name}", None, mine),
        ],
        "read API": [
            ("GET", issue, None, read),
            ("GET", f"{issue}/events", None, read),
            ("GET", "/api/v1/tickets", None, read),
            ("GET", "/api/v1/deliveries", None, read),
            ("GET", issue, None, mine),  # a person's own token
        ],
        "MCP": [("POST", "/mcp", listing, mcp)],
        "board": [
            ("GET", "/", None, board),
            ("GET", "/board", None, board),
            ("GET", f"/t/{full_name}/{number}", None, board),
            ("GET", "/charts", None, board),
        ],
    }


@pytest.mark.long
@pytest.mark.postgres
def test_while_the_database_is_unreachable_the_api_mcp_and_board_answer_503_on_an_open_connection(
    database: Database, caplog: pytest.LogCaptureFixture, figure: Callable[[str], None]
) -> None:
    token = "read-token-for-the-outage"
    with opened(database.url, api_token=SecretStr(token)) as scene:
        scene.settle()
        agent = scene.stage.person("agent-a", "write").token()
        signed_in = httpx.post(f"{scene.stage.baton_url}/sign-in", data={"token": token, "next": "/"})
        session = signed_in.cookies["baton_session"]
        families = _families(scene.full_name, scene.number, agent, token, session)
        where = urlsplit(scene.stage.baton_url)
        connection = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=30)

        def ask(method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, str | None, Any]:
            connection.request(method, path, body=body, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
            said = json.loads(content) if answer.getheader("Content-Type", "").startswith("application/json") else None
            return answer.status, answer.getheader("Retry-After"), said

        def normal() -> list[tuple[str, int]]:
            return [(call[1], ask(*call)[0]) for calls in families.values() for call in calls
                    if call[0] == "GET"]  # fmt: skip

        before = normal()
        assert all(status < 500 for _, status in before), before  # every route answers, and the identities are known
        sock = connection.sock
        caplog.clear()
        statuses: list[int] = []
        # One outage per family, each begun by a request of that family: each family's own use of the database
        # is what finds the outage; then every family is answered 503 while it lasts.
        for first in families:
            with database.down():
                for name in [first, *[other for other in families if other != first]]:
                    for call in families[name]:
                        status, retry_after, said = ask(*call)
                        statuses.append(status)
                        assert (status, retry_after) == (503, "5"), (first, name, call[:2], status, said)
                        assert said is not None and said["error"] == "unavailable", said
                        assert "database" in said["message"]
                        assert connection.sock is sock, "the connection was closed"
            until(lambda: all(status < 500 for _, status in normal()), 30, "the routes to answer again")
            assert connection.sock is sock, "the connection was closed"
        again = ask("POST", *families["agent API"][0][1:])
        assert again[0] == 200 and again[2]["state"] == "claimed", again
        connection.close()
    said = [record.getMessage() for record in caplog.records if record.name == "baton.web"]
    assert len([line for line in said if "cannot be reached" in line]) == len(families), said
    assert len([line for line in said if "answers again after" in line]) == len(families), said
    assert not [record for record in caplog.records if record.exc_info is not None], said
    assert 500 not in statuses
    figure(f"{len(families)} database outages: {len(statuses)} requests on one connection, all 503 with "
           f"Retry-After, 0 × 500, the connection kept; one line as each began and one as it ended")  # fmt: skip
