"""The board's pages as a person gets them: how long `baton serve` takes to answer `/` (the four columns), the
`/board` fragment the page fetches every five seconds, a ticket page and `/charts`, with many tickets stored.

A database of its own (SQLite in a temporary folder, or a scratch PostgreSQL database), migrated, holds
`--tickets` tickets spread over the states as a long-lived installation has them (most accepted), each with
its `created` event, over twenty repositories and twenty runners, the claims started over the last weeks (those
quiet for three days flagged stale, as Baton's sweep would have); on PostgreSQL, vacuumed and analyzed (as
autovacuum keeps a database that grew so big).
Then one `baton serve` with the defaults a user gets (and BATON_API_TOKEN, to sign in with; no App, so
webhooks are off: only the pages are asked for) answers, one request at a time, over one kept-alive
connection, `--repeat` times each page. Printed per database and size: the median and p95 answer time, and
the page's size. The refresh is asked for twice: as a first time, and as the page's script asks while nothing
changes, with the `If-None-Match` of the columns it has (answered 304, with no body). Then the bytes one refresh
costs on the wire (status line, headers and body) each way.

Usage (from the repository root):

    python bench/board_pages.py                         # 500 and 5,000 tickets, SQLite then PostgreSQL
    python bench/board_pages.py --database sqlite --tickets 20000 --repeat 50
    python bench/board_pages.py --tickets 50000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from baton.store import make_engine, tables, upgrade

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.claim_race import scratch_postgres, scratch_sqlite
from bench.webhook_race import free_port, wait_for

POSTGRES = os.environ.get("BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
TOKEN = "board-bench-token"
# How a long-lived installation's tickets are spread over the states: most of the work is done.
SHARES = (("accepted", 55), ("open", 15), ("claimed", 12), ("delivered", 8), ("withdrawn", 6), ("draft", 4))


def seed(url: str, count: int) -> None:
    engine = make_engine(url)
    try:
        upgrade(engine)
        now = datetime.now(UTC)
        states = [state for state, share in SHARES for _ in range(share)]
        rows, events, activity = [], [], []
        quiet = timedelta(days=3)  # a claim's default `stale_after`
        for index in range(count):
            state = states[index % len(states)]
            started = now - timedelta(minutes=index * 7 % (60 * 24 * 40))
            runner = None if state in ("open", "draft", "withdrawn") else f"agent-{index % 20}"
            rows.append({
                "id": index + 1, "installation_id": 1, "repository_id": 100 + index % 20, "number": index + 1,
                "repository": f"octo/repo-{index % 20}", "state": state, "revision": 3, "owner": "maria",
                "runner": runner, "attempt": 1 if runner else 0, "deliveries": 1 if state in ("delivered",
                "accepted") else 0, "brief": None, "title": f"Task number {index + 1} of the backlog",
                "created_at": started, "updated_at": started, "state_since": started,
            })  # fmt: skip
            events.append({"ticket_id": index + 1, "type": "created", "actor": "maria", "role": "requester",
                           "attempt": 0, "revision": 1, "operation_id": None, "created_at": started,
                           "data": {"state": "open", "owner": "maria", "brief": None}})  # fmt: skip
            if state == "claimed":  # quiet since the claim, and flagged stale once quiet long enough, as the sweep does
                activity.append({"ticket_id": index + 1, "last_activity_at": started, "source": "command",
                                 "stale_at": started + quiet if now - started > quiet else None})  # fmt: skip
        with engine.begin() as connection:
            connection.execute(tables.tickets.insert(), rows)
            connection.execute(tables.events.insert(), events)
            connection.execute(tables.ticket_activity.insert(), activity)
        if engine.dialect.name == "postgresql":
            # vacuumed and analyzed, as autovacuum keeps a database that grew this big over time: the planner's
            # statistics, and the visibility map that lets a count read an index alone
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.exec_driver_sql("VACUUM ANALYZE")
    finally:
        engine.dispose()


@contextmanager
def serving(url: str) -> Iterator[str]:
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
           "BATON_DATABASE_URL": url, "BATON_API_TOKEN": TOKEN}  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "baton.cli", "serve", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(30)


def wire_bytes(answer: httpx.Response) -> int:
    """What an answer costs on the wire: its status line, its headers and its body (uncompressed, as served)."""
    status = len(f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}\r\n")
    return status + sum(len(name) + len(value) + 4 for name, value in answer.headers.raw) + 2 + len(answer.content)


def measure(base: str, repeat: int) -> tuple[dict[str, tuple[float, float, int]], dict[str, tuple[int, int]]]:
    """Per page: median and p95 answer time in ms, and the answer's size in bytes; and per way of refreshing,
    its answer's status and bytes on the wire."""
    with httpx.Client(base_url=base, timeout=60) as client:
        signed = client.post("/sign-in", data={"token": TOKEN, "next": "/"})
        assert signed.status_code == 303, signed.text
        # the figures are taken once the columns stay the same for a second (a claim that Baton's quiet-claim sweep
        # flags stale changes them)
        deadline, columns = time.monotonic() + 300, [b"", client.get("/board").content]
        while columns[-1] != columns[-2] and time.monotonic() < deadline:
            time.sleep(1)
            columns = [columns[-1], client.get("/board").content]
        pages = {"/": ("/", False), "/board (the refresh)": ("/board", False), "/board (unchanged)": ("/board", True),
                 "/t/… (a ticket)": ("/t/octo/repo-0/1", False), "/charts": ("/charts", False)}  # fmt: skip
        figures = {}
        refreshes = {}
        for name, (path, conditional) in pages.items():
            warm = client.get(path)  # the first answer compiles its statements
            assert warm.status_code == 200, path
            # the tag of the columns the page shows (a Baton without tags answers in full); a card's time in its
            # state moving to other words ("39 days" to "40 days") changes them, and a refresh then gets them
            tag = warm.headers.get("etag")
            headers = {"If-None-Match": tag} if conditional and tag else {}
            times, size = [], 0
            for _ in range(repeat):
                start = time.perf_counter()
                answer = client.get(path, headers=headers)
                times.append((time.perf_counter() - start) * 1000)
                assert answer.status_code in (200, 304), (path, answer.status_code)
                size = len(answer.content)
            times.sort()
            figures[name] = (statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)], size)
            if path == "/board":
                refreshes[name] = (answer.status_code, wire_bytes(answer))
        return figures, refreshes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--tickets", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    kinds = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    print("baton serve with Baton's defaults, and BATON_API_TOKEN set to sign in with (no App: webhooks are off)")
    print(f"{'database':<11} {'tickets':>7}  {'page':<22} {'p50 ms':>8} {'p95 ms':>8} {'size KB':>8}")
    for kind in kinds:
        for count in args.tickets:
            scratch: Any = scratch_sqlite() if kind == "sqlite" else scratch_postgres(POSTGRES)
            with scratch as url:
                seed(url, count)
                with serving(url) as base:
                    figures, refreshes = measure(base, args.repeat)
                    for page, (p50, p95, size) in figures.items():
                        print(f"{kind:<11} {count:>7}  {page:<22} {p50:>8.1f} {p95:>8.1f} {size / 1024:>8.1f}")
                    for page, (status, size) in refreshes.items():
                        print(f"{kind:<11} {count:>7}  {page:<22} answered {status}, {size:,} bytes on the wire")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
