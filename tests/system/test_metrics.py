"""`/metrics` and the structured logs, through the real path: Baton served over HTTP against the stand-in
GitHub, webhooks signed and sent to it, `baton serve` and `baton worker` run as processes of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from baton.cli import main
from baton.domain import Policy
from baton.environment.clock import ManualClock
from baton.environment.settings import Settings
from baton.github.routes import operation
from baton.github.webhooks import signature
from baton.store.outbox.writing import Outbox
from baton.web import create_app
from baton.web.webhooks import MAX_BODY
from github_standin.server import RATE_LIMIT
from github_standin.serving import Served
from support.keys import app_key
from support.lanes import open_stage
from support.local_http import HTTP
from support.standin_scene import Scene, opened

SHOP = "octo/shop"
PERMISSION = "GET /repos/{owner}/{repo}/collaborators/{username}/permission"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    answer = HTTP.get(f"{url}/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain"), answer.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of `name` over the series carrying `labels` (whatever their other labels)."""
    wanted = set(labels.items())
    return sum(found for (each, keys), found in samples.items() if each == name and wanted <= keys)


def post(scene: Scene, delivery: str, body: bytes, *, event: str = "ping", key: str | None = None) -> int:
    secret = key or scene.stage.settings.webhook_secret.get_secret_value()  # type: ignore[union-attr]
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
               "X-Hub-Signature-256": signature(secret.encode(), body)}  # fmt: skip
    return HTTP.post(f"{scene.stage.baton_url}/webhooks/github", content=body, headers=headers).status_code


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)
    return found


@pytest.mark.both_engines
def test_metrics_count_deliveries_decisions_and_github_calls_and_read_the_outbox(database_url: str) -> None:
    clock = ManualClock()
    with opened(database_url, clock=clock) as scene:
        scene.settle()
        installation = str(scene.repository.installation_id)
        winner, loser = scene.stage.person("agent-a", "write"), scene.stage.person("agent-b", "write")
        winner.comment(SHOP, scene.number, "/claim")
        scene.settle()
        loser.comment(SHOP, scene.number, "/claim")
        scene.settle()
        ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        assert post(scene, "ping-1", ping) == 202
        assert post(scene, "ping-1", ping) == 202  # GitHub delivering it again
        assert post(scene, "ping-2", ping, key="not the secret") == 401
        assert post(scene, "ping-3", b"{not json") == 400
        scene.settle()

        before = scrape(scene.stage.baton_url)
        assert value(before, "baton_outbox_issues", installation=installation) == 1  # the issue, not shown yet
        oldest_due = value(before, "baton_outbox_oldest_due_seconds", installation=installation)
        assert oldest_due is not None and oldest_due >= 0  # on the test's clock, which has not moved
        while scene.drain():
            pass
        assert Outbox(scene.app.state.work.units.engine, scene.app.state.work.units.clock).pending() == 0
        # The claim goes quiet past the repository's `stale_after`: the sweep flags it stale.
        clock.advance(timedelta(seconds=Policy().stale_after + 60))
        scene.app.state.parts.sweep.sweep()
        scene.settle()
        while scene.drain():
            pass
        after = scrape(scene.stage.baton_url)
        # Without lanes, the backfill an installation stores for itself waits for a decide lane.
        waiting = len(scene.app.state.inbox.listed("pending", 100)) + len(
            scene.app.state.inbox.listed("processing", 100)
        )
        with scene.hub.world.lock:
            sent = Counter(d.event for d in scene.hub.deliveries)
            calls = list(scene.rest.calls)

    # Every delivery the stand-in sent was stored once; the pings as sent by hand.
    for event, count in sent.items():
        assert value(after, "baton_webhook_deliveries_total", event=event, outcome="stored") == count, event
    assert value(after, "baton_webhook_deliveries_total", event="ping", outcome="stored") == 1
    assert value(after, "baton_webhook_deliveries_total", event="ping", outcome="duplicate") == 1
    assert value(after, "baton_webhook_deliveries_total", event="unverified", outcome="bad_signature") == 1
    assert value(after, "baton_webhook_deliveries_total", event="ping", outcome="bad_body") == 1
    assert total(after, "baton_webhook_deliveries_total") == sum(sent.values()) + 4
    # Each 202 was timed; each stored delivery was decided once, and timed from its receipt.
    assert value(after, "baton_webhook_ack_seconds_count") == sum(sent.values()) + 2
    assert value(after, "baton_delivery_decision_seconds_count") == sum(sent.values()) + 1
    assert (value(after, "baton_webhook_ack_seconds_sum") or 0) > 0

    assert value(after, "baton_decisions_total", command="claim", result="applied", source="webhook") == 1
    assert value(after, "baton_decisions_total", command="claim", result="refused", source="webhook") == 1
    assert total(after, "baton_decisions_total") == 2

    # Every call the stand-in saw was counted, under its route's name and its status.
    seen = Counter((operation(c.method, c.path.partition("?")[0]), str(c.status)) for c in calls)
    counted = {(dict(keys)["operation"], dict(keys)["status"]): found
               for (name, keys), found in after.items() if name == "baton_github_requests_total"}  # fmt: skip
    assert counted == dict(seen)
    assert counted[PERMISSION, "200"] >= 1
    assert not [name for name, _ in counted if name.endswith(" other")]
    used = len([c for c in calls if c.installation == int(installation)])
    assert value(after, "baton_github_rate_limit_remaining", installation=installation) == RATE_LIMIT - used

    assert value(after, "baton_database_up") == 1
    assert value(after, "baton_outbox_issues", installation=installation) == 0
    assert value(after, "baton_outbox_oldest_due_seconds", installation=installation) == 0
    assert value(after, "baton_outbox_parked_issues", installation=installation) == 0
    assert value(before, "baton_stale_claims", installation=installation) == 0
    assert value(after, "baton_stale_claims", installation=installation) == 1
    assert value(after, "baton_deliveries_waiting") == waiting


def test_two_apps_in_one_process_count_apart(sqlite_url: str, tmp_path: Path) -> None:
    with opened(sqlite_url) as first, opened(f"sqlite:///{tmp_path}/other.db") as second:
        first.settle()
        second.settle()
        ping = json.dumps({"zen": "Design for failure.", "hook_id": 1}).encode()
        assert post(first, "only-here", ping) == 202
        ours, theirs = scrape(first.stage.baton_url), scrape(second.stage.baton_url)
    assert value(ours, "baton_webhook_deliveries_total", event="ping", outcome="stored") == 1
    assert value(theirs, "baton_webhook_deliveries_total", event="ping", outcome="stored") is None


# -- processes of their own: `baton worker`, `baton serve` ---------------------------------------------


def lines_of(log: Path) -> list[dict[str, Any]]:
    """Every line of a process's output so far, each of which must be one JSON object (a line still being
    written is left for the next look)."""
    return [json.loads(line) for line in log.read_text().split("\n")[:-1]]


@contextmanager
def process(command: str, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        running = subprocess.Popen([sys.executable, "-m", "baton.cli", command], env=env, cwd=log.parent,
                                   stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            yield running
        finally:
            running.terminate()
            running.wait(30)


def environment(stage: Any, **extra: str) -> dict[str, str]:
    settings = stage.settings
    return {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
            "BATON_DATABASE_URL": settings.database_url, "BATON_APP_ID": str(settings.app_id),
            "BATON_PRIVATE_KEY": app_key(), "BATON_GITHUB_API_URL": stage.github_url,
            "BATON_ANSWER_DELAY": "0.3", "BATON_WRITE_INTERVAL": "0", **extra}  # fmt: skip


def secrets_of(stage: Any) -> list[str]:
    with stage.hub.world.lock:
        tokens = list(stage.hub.world.tokens)
    key_lines = [line for line in app_key().splitlines() if line and not line.startswith("-----")]
    return [stage.settings.webhook_secret.get_secret_value(), *key_lines, *tokens]


def delivery_of(stage: Any, comment_id: int) -> Any:
    """The webhook that told Baton of a comment (others, caused by Baton's own writes, may come in between)."""
    with stage.hub.world.lock:
        return next(d for d in stage.hub.deliveries
                    if d.event == "issue_comment" and json.loads(d.body)["comment"]["id"] == comment_id)  # fmt: skip


def running_at(log: Path) -> str | None:
    """Where `baton serve` listens, once uvicorn says so."""
    said = [line["message"] for line in lines_of(log) if "Uvicorn running on" in line["message"]]
    return said[0].split()[3] if said else None


def decision(lines: list[dict[str, Any]], delivery: str) -> dict[str, Any]:
    found = [line for line in lines if line["logger"] == "baton.decisions" and line.get("delivery") == delivery]
    assert len(found) == 1, lines
    return found[0]


def test_a_worker_serves_the_metrics_of_its_own_decisions_and_logs_them_as_json(
    sqlite_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    with open_stage(sqlite_url, worker="external", spool_dir=str(tmp_path / "spool")) as stage:
        env = environment(stage, BATON_METRICS_PORT="0", BATON_LOG_FORMAT="json")
        with process("worker", env, log):
            port = until(lambda: next((line["port"] for line in lines_of(log) if "port" in line), None), 60,
                         "the worker to say where its metrics are")  # fmt: skip
            worker = f"http://127.0.0.1:{port}"
            number = stage.person("olivia", "admin").open_issue(SHOP, "A task")
            claim = delivery_of(stage, stage.person("agent-a", "write").comment(SHOP, number, "/claim"))
            samples = until(
                lambda: (found := scrape(worker))
                and value(found, "baton_decisions_total", command="claim", result="applied", source="webhook")
                and found,
                60, "the worker to decide the claim",
            )  # fmt: skip
            until(lambda: total(scrape(worker), "baton_github_requests_total", status="201") > 0, 60,
                  "the worker to write on GitHub")  # fmt: skip
            # A round's delays are observed once the round is stored, a moment after its decisions are counted.
            samples = until(lambda: (found := scrape(worker))
                            and (value(found, "baton_delivery_decision_seconds_count") or 0) >= 2 and found, 60,
                            "the worker to observe both deliveries' delays")  # fmt: skip
            served = scrape(stage.baton_url)
        secrets = secrets_of(stage)
    # The worker decided; the web process that acknowledged it did not.
    assert (value(samples, "baton_delivery_decision_seconds_count") or 0) >= 2  # the issue and the claim
    assert value(served, "baton_decisions_total", command="claim", result="applied", source="webhook") is None
    assert (value(served, "baton_webhook_deliveries_total", event="issue_comment", outcome="stored") or 0) >= 1
    lines = lines_of(log)
    assert decision(lines, claim.id) | {"time": None} == {
        "time": None, "level": "INFO", "logger": "baton.decisions", "delivery": claim.id, "repository": SHOP,
        "number": number, "command": "claim", "actor": "agent-a", "outcome": "applied", "code": None,
        "event": "claimed", "revision": 2, "source": "webhook",
        "message": f"decided /claim by agent-a on {SHOP}#{number}: applied (claimed), revision 2 (delivery {claim.id})",
    }  # fmt: skip
    assert not [line for line in lines if line["logger"] == "baton.github"]  # GitHub's calls are DEBUG lines
    text = log.read_text()
    assert not [secret for secret in secrets if secret in text]


def test_baton_serve_logs_json_lines_and_its_github_calls_at_debug(sqlite_url: str, tmp_path: Path) -> None:
    """The stage's own app only acknowledges (BATON_WORKER=external); webhooks then go to a `baton serve` of
    their own, which decides them and writes to GitHub."""
    log = tmp_path / "serve.log"
    with open_stage(sqlite_url, worker="external", spool_dir=str(tmp_path / "spool")) as stage:
        secret = stage.settings.webhook_secret.get_secret_value()
        env = environment(stage, BATON_LOG_FORMAT="json", BATON_LOG_LEVEL="debug", BATON_WEBHOOK_SECRET=secret,
                          BATON_SPOOL_DIR=str(tmp_path / "serve-spool"), BATON_PORT="0")  # fmt: skip
        with process("serve", env, log):
            running = until(lambda: running_at(log), 60, "baton serve to start")
            stage.hub.hook_url = f"{running}/webhooks/github"
            number = stage.person("olivia", "admin").open_issue(SHOP, "A task")
            claim = delivery_of(stage, stage.person("agent-a", "write").comment(SHOP, number, "/claim"))
            assert claim.status == 202, claim.answer
            until(lambda: any(r.content == "+1" for r in stage.repository.reactions.get(number, [])), 60, "the 👍")
        secrets = secrets_of(stage)
    lines = lines_of(log)
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    said = decision(lines, claim.id)
    assert (said["repository"], said["number"], said["command"], said["actor"], said["outcome"], said["revision"]) == (
        SHOP, number, "claim", "agent-a", "applied", 2)  # fmt: skip
    github = [line for line in lines if line["logger"] == "baton.github"]
    assert github and all(line["level"] == "DEBUG" for line in github)
    reacted = [line for line in github if line["operation"].endswith("/issues/comments/{comment_id}/reactions")]
    assert reacted and reacted[0]["status"] == "201" and reacted[0]["duration_ms"] >= 0, github
    text = log.read_text()
    assert not [secret for secret in secrets if secret in text]
    assert "authorization" not in text.lower()


def test_a_log_setting_baton_cannot_use_is_named_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BATON_DATABASE_URL", f"sqlite:///{tmp_path}/baton.db")
    monkeypatch.setenv("BATON_LOG_FORMAT", "xml")
    monkeypatch.setenv("BATON_LOG_LEVEL", "loud")
    for command in ("serve", "worker"):
        assert main([command]) == 2
        said = capsys.readouterr().err
        assert said.count("\n") == 1 and said.startswith("baton: "), said
        assert "BATON_LOG_FORMAT='xml': Input should be 'text' or 'json'" in said, said
        assert "BATON_LOG_LEVEL='LOUD'" in said, said
    assert not (tmp_path / "baton.db").exists()  # nothing started


def test_a_delivery_too_large_and_one_while_webhooks_are_off_are_counted(tmp_path: Path) -> None:
    with opened(f"sqlite:///{tmp_path}/baton.db") as scene:
        assert post(scene, "huge", b" " * (MAX_BODY + 1)) == 413
        scene.settle()
        samples = scrape(scene.stage.baton_url)
        sent = len(scene.hub.deliveries)
    assert value(samples, "baton_webhook_deliveries_total", event="unverified", outcome="too_large") == 1
    assert value(samples, "baton_webhook_ack_seconds_count") == sent  # the 202s alone are timed
    without_app = create_app(Settings(database_url=f"sqlite:///{tmp_path}/alone.db", spool_dir=str(tmp_path / "s")))
    with Served(without_app) as served:
        assert HTTP.post(f"{served.url}/webhooks/github", content=b"{}").status_code == 503
        samples = scrape(served.url)
    assert value(samples, "baton_webhook_deliveries_total", event="unverified", outcome="disabled") == 1
    assert value(samples, "baton_database_up") == 1


@pytest.mark.parametrize(
    ("method", "path", "named"),
    [
        ("POST", "/repos/octo/shop/issues/7/labels", "POST /repos/{owner}/{repo}/issues/{issue_number}/labels"),
        ("DELETE", "/repos/octo/shop/issues/7/labels/baton%3Aopen",
         "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
        ("GET", "/repos/octo/shop/issues/comments/55", "GET /repos/{owner}/{repo}/issues/comments/{comment_id}"),
        ("GET", "/repos/octo/shop/issues/7/comments", "GET /repos/{owner}/{repo}/issues/{issue_number}/comments"),
        ("GET", "/repos/octo/shop/issues/7/timeline", "GET /repos/{owner}/{repo}/issues/{issue_number}/timeline"),
        ("GET", "/repos/octo/shop/contents/.github/baton.yml", "GET /repos/{owner}/{repo}/contents/{path}"),
        ("POST", "/app/installations/1000/access_tokens", "POST /app/installations/{installation_id}/access_tokens"),
        # near misses: a number where a name goes, a method the route does not take, a route Baton never calls
        ("GET", "/repos/octo/shop/issues/seven", "GET other"),
        ("PUT", "/repos/octo/shop/issues/7/labels", "PUT other"),
        ("GET", "/repos/octo/shop/issues/7/events", "GET other"),
    ],
)  # fmt: skip
def test_a_call_to_github_is_named_by_its_route(method: str, path: str, named: str) -> None:
    assert operation(method, path) == named
