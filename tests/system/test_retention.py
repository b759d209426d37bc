"""What Baton keeps, and for how long, through the real paths: the daily prune that `baton serve` runs in its lanes
(here the app with its lanes, over HTTP, against the stand-in GitHub), `baton db prune` as a command, and
`/metrics`' rows per table. A processed delivery loses its payload after 14 days and its row after 90, keeping its
id meanwhile so that a redelivery changes nothing; failed and pending deliveries, and every event, are kept;
idempotency keys go after a day, expired board sessions at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, func, insert, select

from baton.cli.main import main
from baton.demo.stage import Stage
from baton.environment.clock import SYSTEM
from baton.github.webhooks import signature
from baton.service.retention import Pruning
from baton.store import make_engine, upgrade
from baton.store import tables as t
from baton.store.retention import Keep, Retention
from baton.store.sweeps import Sweeps
from support.keys import app_key, app_public_key
from support.local_http import HTTP

ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = json.dumps({"action": "created", "zen": "Keep it logically awesome."})

# id -> (status, days since it was processed)
DELIVERIES = {
    "fresh": ("done", 1),
    "fortnight-old": ("done", 20),
    "ignored-long-ago": ("ignored", 100),
    "done-long-ago": ("done", 100),
    "failed-long-ago": ("failed", 100),
    "pending-long-ago": ("pending", 100),
}


def _seed(engine: Engine, now: datetime) -> None:
    with engine.begin() as connection:
        for delivery, (status, days) in DELIVERIES.items():
            at = now - timedelta(days=days)
            connection.execute(insert(t.webhook_deliveries).values(
                id=delivery, event="ping", action=None, installation_id=None, status=status,
                attempts=1, error=None, received_at=at, processed_at=at, next_attempt_at=None))  # fmt: skip
            connection.execute(insert(t.webhook_payloads).values(id=delivery, payload=PAYLOAD))
        for key, hours in (("old-key", 30), ("new-key", 1)):
            connection.execute(insert(t.api_requests).values(
                login="agent-a", key=key, fingerprint="f" * 64, status=200, body="{}",
                created_at=now - timedelta(hours=hours)))  # fmt: skip
        for session, hours in (("ended", -1), ("signed-in", 8)):
            connection.execute(insert(t.board_sessions).values(
                id=session.ljust(64, "0"), login="olivia", token="sealed", repositories=[],
                checked_at=now, expires_at=now + timedelta(hours=hours)))  # fmt: skip
        for attempt_id, days in ((1, 100), (2, 1)):
            connection.execute(insert(t.redeliveries).values(
                delivery_id=attempt_id, guid=f"guid-{attempt_id}", event="issue_comment", status="asked",
                asked_at=now - timedelta(days=days)))  # fmt: skip


def _deliveries(engine: Engine) -> dict[str, tuple[str, str]]:
    """Each delivery's status and payload ("" where it has none)."""
    c, p = t.webhook_deliveries.c, t.webhook_payloads.c
    query = select(c.id, c.status, p.payload).outerjoin(t.webhook_payloads, p.id == c.id)
    with engine.connect() as connection:
        return {row.id: (row.status, row.payload or "") for row in connection.execute(query)}


def _pruned(engine: Engine) -> bool:
    """Whether a prune has ended (the `sweeps` row of the daily prune says when)."""
    c = t.sweeps.c
    with engine.connect() as connection:
        return connection.execute(select(c.swept_at).where(c.name == "retention")).scalar() is not None


def _count(engine: Engine, table: Any) -> int:
    with engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(table)).scalar_one())


def _rows(metrics: str) -> dict[str, float]:
    return {
        sample.labels["table"]: sample.value
        for family in text_string_to_metric_families(metrics)
        if family.name == "baton_stored_rows"
        for sample in family.samples
    }


@pytest.mark.both_engines
def test_the_daily_prune_of_baton_serve_empties_old_payloads_then_rows_and_keeps_what_must_stay(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    try:
        _seed(engine, datetime.now(UTC))
        with engine.connect() as connection:
            events = connection.execute(select(func.count()).select_from(t.events)).scalar_one()
        with Stage.open(database_url, key=(app_key(), app_public_key())) as stage:  # its lanes prune as they start
            deadline = time.monotonic() + 60
            while not _pruned(engine):
                assert time.monotonic() < deadline, "the serving app never pruned"
                time.sleep(0.1)
            kept = {delivery: found for delivery, found in _deliveries(engine).items() if delivery in DELIVERIES}
            assert kept.pop("pending-long-ago")[1] == PAYLOAD  # not processed when the prune ran: kept whole
            assert kept == {
                "fresh": ("done", PAYLOAD),
                "fortnight-old": ("done", ""),  # its id kept, its payload gone
                "failed-long-ago": ("failed", PAYLOAD),  # `baton replay` may still need it
            }
            with engine.connect() as connection:
                keys = connection.execute(select(t.api_requests.c.key)).scalars().all()
                sessions = connection.execute(select(t.board_sessions.c.login)).scalars().all()
                redeliveries = connection.execute(select(t.redeliveries.c.delivery_id)).scalars().all()
                assert connection.execute(select(func.count()).select_from(t.events)).scalar_one() == events
            assert keys == ["new-key"] and len(sessions) == 1 and redeliveries == [2]

            rows = _rows(HTTP.get(f"{stage.baton_url}/metrics", timeout=10).text)
            if engine.dialect.name == "sqlite":  # PostgreSQL shows its planner's estimate
                # the four seeded that stay, and what the stand-in has sent since (each counted once it arrived)
                assert 4 <= rows["webhook_deliveries"] <= _count(engine, t.webhook_deliveries), rows
                assert rows["api_requests"] == 1, rows
            assert {"webhook_deliveries", "events", "evidence_events", "api_requests", "board_sessions"} <= set(rows)

            # GitHub redelivers the delivery whose payload went: its id is known, so nothing is decided again.
            body = PAYLOAD.encode()
            secret = stage.settings.webhook_secret
            assert secret is not None
            answer = HTTP.post(f"{stage.baton_url}/webhooks/github", content=body, timeout=10, headers={
                "X-GitHub-Event": "ping", "X-GitHub-Delivery": "fortnight-old", "Content-Type": "application/json",
                "X-Hub-Signature-256": signature(secret.get_secret_value().encode(), body)})  # fmt: skip
            assert answer.status_code in (200, 202), answer.text
            time.sleep(0.5)
            assert _deliveries(engine)["fortnight-old"] == ("done", "")

        monkeypatch.setenv("BATON_DATABASE_URL", database_url)  # nor can an operator replay it by mistake
        assert main(["replay", "fortnight-old"]) == 2
        said = capsys.readouterr().err
        assert said.count("\n") == 1 and "its payload was pruned" in said, said
    finally:
        engine.dispose()


def test_two_processes_pruning_at_once_prune_once(database_url: str) -> None:
    """Two processes' daily prunes start at the same moment: the database lets one take the prune, the other
    finds it taken, and what is removed is removed once."""
    engine = make_engine(database_url)
    upgrade(engine)
    try:
        _seed(engine, datetime.now(UTC))
        prunings = [Pruning(Retention(engine, SYSTEM), Sweeps(engine, SYSTEM), Keep()) for _ in range(2)]
        together = threading.Barrier(2)
        results: list[Any] = [None, None]

        def prune(n: int) -> None:
            together.wait()
            results[n] = prunings[n].prune(since=timedelta(days=1))

        threads = [threading.Thread(target=prune, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        done = [result for result in results if result is not None]
        assert len(done) == 1, results
        assert (done[0].payloads, done[0].hooks, done[0].keys, done[0].sessions) == (1, 2, 1, 1)
        assert _count(engine, t.webhook_deliveries) == 4
    finally:
        engine.dispose()


@pytest.mark.both_engines
def test_one_process_prunes_a_day_whichever_asks(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    try:
        _seed(engine, datetime.now(UTC))
        one, other = (Pruning(Retention(engine, SYSTEM), Sweeps(engine, SYSTEM), Keep()) for _ in range(2))
        pruned = one.prune(since=timedelta(days=1))
        assert pruned is not None and (pruned.payloads, pruned.hooks, pruned.keys) == (1, 2, 1)
        assert other.prune(since=timedelta(days=1)) is None  # pruned less than a day ago, by the other process
        assert other.step() == 3600.0 and _count(engine, t.webhook_deliveries) == 4
    finally:
        engine.dispose()


def test_baton_db_prune_says_what_it_removed_by_kind(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        _seed(engine, datetime.now(UTC))
    finally:
        engine.dispose()
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env["BATON_DATABASE_URL"] = sqlite_url

    def prune(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "baton.cli", "db", "prune", *arguments], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip

    done = prune("--older-than", "12h", "--json")  # rows are kept at least GitHub's 3 days of redeliveries
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"payloads": 1, "deliveries": 3, "redeliveries": 1, "keys": 1, "sessions": 1}
    done = prune()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "webhook deliveries: 0 payloads emptied (processed more than 2w ago), 0 removed (more than 90d ago)",
        "redeliveries asked for: 0 removed",
        "idempotency keys: 0 removed (older than 1d)",
        "board sessions: 0 removed (expired)",
    ]
    done = prune("--older-than", "soon")
    assert done.returncode == 2 and "'soon' is not a duration such as 7d, 36h or 2w" in done.stderr
