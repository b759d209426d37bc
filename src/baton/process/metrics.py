"""Baton's metrics, in Prometheus's text format: `GET /metrics` on `baton serve`, and on `baton worker` at
`BATON_METRICS_PORT` (docs/operations.md lists them).

Each process counts what it does itself (hooks acknowledged, commands decided, GitHub calls) in a
registry of its own, built by `Metrics()` in `baton.process.wiring.assemble`: nothing is kept at module level, so the
many apps of a test process never share a count. Counting is an increment in memory; the figures that
describe the database (the outbox, hooks waiting, stale claims) are read from it only when scraped
(`baton.store.gauges`), so every process shows the same, and the paths that acknowledge and decide make no
query for them. Labels name events, commands, routes and installation ids, never a repository or a person.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine

from baton.domain import RULES
from baton.environment.clock import Clock
from baton.store import gauges
from baton.store.engine import describe

if TYPE_CHECKING:
    from baton.service.work import Outcome, Request
    from baton.store.inbox import Hook

log = logging.getLogger("baton.metrics")

# Seconds: an acknowledgement takes milliseconds; a decision follows within the answer delay, or much later.
ACK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DECISION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)


class Metrics:
    def __init__(self, clock: Clock, engine: Engine | None = None) -> None:
        """With an `engine`, the registry also reports what that database holds, read at each scrape. `clock`:
        the time a hook's wait for its decision and the database's ages are measured at."""
        self.clock = clock
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.hooks = Counter(
            "baton_webhook_deliveries", "Webhook deliveries received, by event and what became of them "
            "(stored, retried, duplicate, spooled, bad_signature, bad_body, too_large, disabled, error).",
            ["event", "outcome"], registry=r,
        )  # fmt: skip
        self.ack_seconds = Histogram(
            "baton_webhook_ack_seconds", "From a webhook's arrival to its 202 answer.", buckets=ACK_BUCKETS, registry=r
        )
        self.decision_seconds = Histogram(
            "baton_delivery_decision_seconds",
            "From a delivery's first acknowledgement (its stored receive time) to its being decided.",
            buckets=DECISION_BUCKETS, registry=r,
        )  # fmt: skip
        self.decisions = Counter(
            "baton_decisions", "Commands decided, by command, result (applied, refused, noted, duplicate) and "
            "where they came from (webhook, api).", ["command", "result", "source"], registry=r,
        )  # fmt: skip
        self.api_commands = Counter(
            "baton_api_commands", "Agent API commands on issues, by where their batch was decided: event_loop (at "
            "once, on SQLite, with nothing to ask GitHub) or thread.", ["where"], registry=r,
        )  # fmt: skip
        self._api_children = {where: self.api_commands.labels(where) for where in ("event_loop", "thread")}
        self.github_requests = Counter(
            "baton_github_requests", "Calls to GitHub, by operation (method and route template) and HTTP status "
            "(error: no answer).", ["operation", "status"], registry=r,
        )  # fmt: skip
        self.rate_limit = Gauge(
            "baton_github_rate_limit_remaining", "Requests left in the current rate-limit window, as GitHub last "
            "reported it (x-ratelimit-remaining), by installation (app: the App's own calls).",
            ["installation"], registry=r,
        )  # fmt: skip
        # Children by label values, looked up without the metric's lock (a dict read); `labels()` only the first time.
        self._hook_children: dict[tuple[str, str], Counter] = {}
        self._decision_children: dict[tuple[str, str, str], Counter] = {}
        self._limits: dict[str, tuple[int, int]] = {}
        self._limits_lock = threading.Lock()
        if engine is not None:
            r.register(DatabaseGauges(engine, clock))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def serve(self, host: str, port: int) -> WSGIServer:
        """`/metrics` on a small server of its own, in a thread (`baton worker`, which has no web app); port 0:
        any free one (`server_port` tells which). `shutdown()` stops it."""
        server, _ = start_http_server(port, host, self.registry)
        return server

    # -- the webhook endpoint --------------------------------------------------------------------------

    def hook(self, event: str, outcome: str, seconds: float | None = None) -> None:
        """A hook answered; `seconds` from its arrival to a 202 answer."""
        key = (event, outcome)
        child = self._hook_children.get(key)
        if child is None:
            child = self._hook_children[key] = self.hooks.labels(event, outcome)
        child.inc()
        if seconds is not None:
            self.ack_seconds.observe(seconds)

    # -- deciding --------------------------------------------------------------------------------------

    def decided_hooks(self, hooks: Iterable[Hook], now: datetime | None = None) -> None:
        now = now or self.clock.now()
        for hook in hooks:
            self.decision_seconds.observe(max(0.0, (now - hook.received_at).total_seconds()))

    def decided(self, requests: Sequence[Request], outcomes: Sequence[Outcome]) -> None:
        for request, outcome in zip(requests, outcomes, strict=True):
            # A misspelt command is named as typed: counted as one name, so no comment adds a series.
            command = outcome.command if outcome.command in RULES else "unknown"
            result = "duplicate" if outcome.duplicate else outcome.kind
            key = (command, result, "api" if request.via == "api" else "webhook")
            child = self._decision_children.get(key)
            if child is None:
                child = self._decision_children[key] = self.decisions.labels(*key)
            child.inc()

    def api_batch(self, where: str, commands: int) -> None:
        """Agent API commands decided together, `where`: event_loop or thread (`web/agent_api.py`)."""
        self._api_children[where].inc(commands)

    # -- GitHub ----------------------------------------------------------------------------------------

    def github_call(self, account: str, operation: str, status: str, limit: tuple[int, int] | None) -> None:
        self.github_requests.labels(operation, status).inc()
        if limit is None:
            return
        remaining, reset = limit
        with self._limits_lock:
            # Answers can come back out of order: within one window (one reset time) the smallest count is the
            # latest; a later reset time is a new window.
            known = self._limits.get(account)
            if known is None or reset > known[1] or (reset == known[1] and remaining < known[0]):
                self._limits[account] = (remaining, reset)
                self.rate_limit.labels(account).set(remaining)


def _by_installation(name: str, documentation: str) -> GaugeMetricFamily:
    """A gauge of the database's figures with one value per installation (label `installation`)."""
    return GaugeMetricFamily(name, documentation, labels=["installation"])


class DatabaseGauges(Collector):
    """The database's figures, read at each scrape (`baton.store.gauges`). While the database cannot be read,
    `baton_database_up` is 0 and the others are left out (the scrape itself still answers)."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def describe(self) -> list[Metric]:
        return []  # the families are known only once read; the registry then takes them as they come

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("baton_database_up", "1 when the database answered this scrape's queries, else 0.")
        try:
            readings = gauges.read(self.engine, self.clock.now())
        except Exception as error:  # the scrape says the database is down instead of failing
            log.warning("metrics: the database could not be read (%s)", describe(error))
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        issues = _by_installation("baton_outbox_issues", "Issues whose labels, assignee, status comment or answers "
                                  "are still to be shown on GitHub, by installation.")  # fmt: skip
        oldest = _by_installation("baton_outbox_oldest_due_seconds", "How long the most overdue of those issues "
                                  "has been due (0: none is due yet), by installation.")  # fmt: skip
        parked = _by_installation("baton_outbox_parked_issues", "Issues GitHub refused to show, waiting for their "
                                  "next change (`baton refused`), by installation.")  # fmt: skip
        to_offer = _by_installation("baton_issues_to_offer", "Issues offered (by offering or a backfill) whose label "
                                    "GitHub does not show yet: they are written within offering's share of the "
                                    "write budget, by installation.")  # fmt: skip
        stale = _by_installation("baton_stale_claims", "Claimed tickets flagged stale (quiet past their "
                                 "repository's quiet period), by installation.")  # fmt: skip
        for installation_id in sorted({*readings.outbox, *readings.stale}):
            backlog, label = readings.outbox.get(installation_id, gauges.Backlog()), [str(installation_id)]
            issues.add_metric(label, backlog.issues)
            oldest.add_metric(label, backlog.oldest_due_seconds)
            parked.add_metric(label, backlog.parked)
            to_offer.add_metric(label, backlog.to_offer)
            stale.add_metric(label, readings.stale.get(installation_id, 0))
        waiting = GaugeMetricFamily(
            "baton_deliveries_waiting", "Webhook deliveries stored and not decided yet (pending or being decided)."
        )
        waiting.add_metric([], readings.waiting)
        waited = GaugeMetricFamily(
            "baton_deliveries_oldest_waiting_seconds", "How long the oldest of those deliveries has waited (0: none)."
        )
        waited.add_metric([], readings.oldest_waiting_seconds)
        rows = GaugeMetricFamily(
            "baton_stored_rows", "Rows stored in each table that grows with use (on PostgreSQL, its planner's "
            "estimate); `baton db prune` and the daily prune keep the webhook deliveries, redeliveries, "
            "idempotency keys and board sessions in bounds.", labels=["table"],
        )  # fmt: skip
        for table, count in readings.rows.items():
            rows.add_metric([table], count)
        answers = _by_installation("baton_answers_oldest_waiting_seconds", "How long the oldest 👍 or reply not "
                                   "yet on GitHub has waited (while GitHub fails, it is tried for a day), by "
                                   "installation; 0: none waits.")  # fmt: skip
        for installation_id in sorted({*readings.outbox, *readings.answers_waiting}):
            answers.add_metric([str(installation_id)], readings.answers_waiting.get(installation_id, 0.0))
        yield from (issues, oldest, parked, to_offer, stale, waiting, waited, rows, answers)
