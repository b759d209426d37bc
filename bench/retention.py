"""Storage: what 10,000 webhook deliveries cost in the database, as received and decided, then after the prune
of payloads (`BATON_KEEP_PAYLOADS`, 14 days) and of rows (`BATON_KEEP_DELIVERIES`, 90 days).

Per run: `--deliveries` `/claim` comments (`--claimers` per issue, as `bench/decide_rate.py` makes them, against
the stand-in GitHub in a process of its own) are stored in the inbox and decided by Baton with its default
settings, recording what a claim race records (events, operations, answers for GitHub). The database's size is
read then, after `Retention.prune` as it runs 15 days later, and as it runs 91 days later. SQLite: the file's
size (SQLite reuses freed pages but does not give them back: the file shrinks only after `VACUUM`, also shown);
PostgreSQL: the tables' and indexes' size (`pg_total_relation_size`) after `VACUUM`, which frees the space
for reuse (autovacuum does this by itself on a live database). Prints the size per 10,000 deliveries at each
step, and each growing table's share.

Usage (from the repository root):

    python bench/retention.py                      # SQLite, then PostgreSQL
    python bench/retention.py --database sqlite --deliveries 20000
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from contextlib import ExitStack, closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from sqlalchemy import Engine, text

from baton.demo.stage import key_pair
from baton.environment.settings import Settings
from baton.intake import decide
from baton.process.runtime import BATCH
from baton.process.wiring import assemble
from baton.store.gauges import COUNTED
from baton.store.inbox import Incoming
from baton.store.retention import Keep, Retention

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.claim_race import scratch_postgres, scratch_sqlite
from bench.webhook_race import INSTALLATION, claims, payload, stand_in

MB = 1024 * 1024
EXAMPLES = (
    Path(__file__).resolve().parents[1] / "tests/node_modules/@octokit/webhooks-examples/api.github.com/index.json"
)


def _example() -> dict[str, Any]:
    """GitHub's own example of an `issue_comment` `created` delivery (`npm ci --prefix tests` installs them)."""
    if not EXAMPLES.exists():
        sys.exit(f"bench/retention.py needs GitHub's example payloads at {EXAMPLES}: run `npm ci --prefix tests`")
    events = {event["name"]: event["examples"] for event in json.loads(EXAMPLES.read_text())}
    return next(one for one in events["issue_comment"] if one.get("action") == "created")


_EXAMPLE: dict[str, Any] = {}


def full_size(minimal: bytes) -> str:
    """A delivery as large as GitHub's: the fields Baton reads (`minimal`) laid over GitHub's example, so each
    object carries every field GitHub sends (about 11 KB where `minimal` has 0.3)."""
    example = _EXAMPLE["issue_comment"] if _EXAMPLE else _EXAMPLE.setdefault("issue_comment", _example())
    ours = json.loads(minimal)
    merged = {**example, **ours}
    for name, value in ours.items():
        if isinstance(value, dict) and isinstance(example.get(name), dict):
            merged[name] = {**example[name], **value}
    return json.dumps(merged)


def sizes(engine: Engine) -> tuple[float, float | None, dict[str, float]]:
    """The database's size in bytes; what VACUUM would leave of it (SQLite: the pages in use; PostgreSQL: None,
    the size is read after VACUUM); each counted table's size with its indexes (PostgreSQL only)."""
    if engine.dialect.name == "sqlite":  # the file, and a copy of it after VACUUM
        path = engine.url.database
        assert path is not None
        with tempfile.TemporaryDirectory() as folder, closing(sqlite3.connect(path)) as source:
            copy = Path(folder) / "copy.db"
            with closing(sqlite3.connect(copy)) as target:
                source.backup(target)
                size = float(copy.stat().st_size)
                target.execute("VACUUM")
            return size, float(copy.stat().st_size), {}
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("VACUUM")
        tables = {
            table.name: float(
                connection.execute(text("SELECT pg_total_relation_size(:name)"), {"name": table.name}).scalar_one()
            )
            for table in COUNTED
        }
        total = connection.execute(
            text(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                "c.relnamespace WHERE c.relkind = 'r' AND n.nspname = current_schema()"
            )
        ).scalar_one()
    return float(total), None, tables


def run(url: str, api: str, key: str, deliveries: int, claimers: int) -> list[tuple[str, tuple]]:  # type: ignore[type-arg]
    settings = Settings(database_url=url, webhook_secret=SecretStr("bench"), app_id=1, private_key=SecretStr(key),
                        github_api_url=api)  # fmt: skip
    issues = deliveries // claimers
    said = claims(api, [(r, c) for r in range(issues) for c in range(claimers)])
    parts = assemble(settings)
    try:
        stored = [
            Incoming(f"r{r}-c{c}", "issue_comment", "created", INSTALLATION, full_size(payload(r, c, said[r, c])))
            for r in range(issues)
            for c in range(claimers)
        ]
        for start in range(0, len(stored), 1000):
            parts.inbox.receive_all(stored[start : start + 1000])
            while taken := parts.inbox.take_pending(BATCH):
                decide(parts.inbox, parts.intake, taken)
        steps = [("received and decided", sizes(parts.engine))]
        retention, now = Retention(parts.engine, parts.work.units.clock), datetime.now(UTC)
        for days, label in ((15, "15 days later: payloads pruned"), (91, "91 days later: rows pruned")):
            pruned = retention.prune(Keep(), now + timedelta(days=days))
            steps.append((f"{label} ({pruned.payloads} payloads, {pruned.hooks} rows)", sizes(parts.engine)))
        return steps
    finally:
        parts.engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))  # fmt: skip
    parser.add_argument("--deliveries", type=int, default=10_000)
    parser.add_argument("--claimers", type=int, default=20)
    args = parser.parse_args(argv)
    key, public_key = key_pair()
    per = 10_000 / args.deliveries
    with stand_in(public_key, issues=args.deliveries // args.claimers) as api:
        for engine in ["sqlite", "postgresql"] if args.database == "both" else [args.database]:
            with ExitStack() as stack:
                url = stack.enter_context(
                    scratch_sqlite() if engine == "sqlite" else scratch_postgres(args.postgres_url)
                )
                started = time.perf_counter()
                steps = run(url, api, key, args.deliveries, args.claimers)
                print(f"{engine}: {args.deliveries:,} deliveries ({args.claimers} /claim comments an issue), "
                      f"{time.perf_counter() - started:.0f} s; size per 10,000 deliveries:")  # fmt: skip
                for label, (size, vacuumed, tables) in steps:
                    shown = f"{size * per / MB:8.1f} MB"
                    if vacuumed is not None:
                        shown += f" (after VACUUM {vacuumed * per / MB:.1f} MB)"
                    print(f"  {label:<58} {shown}")
                    if tables:
                        print(
                            "    "
                            + ", ".join(
                                f"{name} {value * per / MB:.1f} MB"
                                for name, value in sorted(tables.items(), key=lambda item: -item[1])
                                if value >= MB / 10
                            )
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
