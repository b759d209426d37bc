"""Write lanes: one installation's backlog never delays another's, and many processes share one budget.

Baton runs with its default settings (one write per second per installation, 80 a minute, 500 an hour),
GitHub replaced by the stand-in GitHub in a process of its own (`python -m github_standin`), which logs
when each write arrives and for which installation.

1. Two installations (SQLite, one `baton serve`): installation 1 gets `--queued` single `/claim`s on as
   many issues (4 writes each: 👍, label, assignee, status comment; 300 writes by default); once its
   writes flow, installation 2 gets one `/claim`, `--probes` times, a few seconds apart. Printed: from
   each of installation 2's decisions to its first write at the stand-in (median, max), and how many of
   installation 1's writes were still queued.
2. Four `baton worker` processes (PostgreSQL) work through `--issues` races of 3 claimers stored for one
   installation. Printed over `--watch` seconds: the writes the stand-in saw, the most in any 60 seconds, the
   smallest gap between two arrivals, and writes per second.

Usage (from the repository root):

    python bench/write_lanes.py
    python bench/write_lanes.py --part 1 --queued 75
"""

from __future__ import annotations

import argparse
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from baton.demo.stage import key_pair
from baton.store import make_engine, normalise_url, upgrade
from baton.store import tables as t
from baton.store.inbox import Inbox, Incoming
from bench.claim_race import scratch_postgres
from bench.webhook_race import baton, claims, exchange, payload, request, stand_in, writes


def post(port: int, deliveries: list[tuple[str, bytes]]) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        answers = connection.makefile("rb")
        for delivery, body in deliveries:
            status = exchange(connection, answers, request(port, delivery, body))
            assert status.split()[1] == b"202", status


def writes_of(api: str, installation: int) -> list[float]:
    return sorted(w["at"] for w in writes(api) if w["installation"] == installation)


def two_installations(queued: int, probes: int) -> dict[str, Any]:
    key, public_key = key_pair()
    with ExitStack() as stack:
        url = f"sqlite:///{stack.enter_context(tempfile.TemporaryDirectory())}/lanes.db"
        api = stack.enter_context(stand_in(public_key, installations=2, issues=max(queued, probes)))
        [port], _ = stack.enter_context(baton(url, api, key, serves=1, workers=0, overrides={}))
        # a claimer of its own for each issue: one agent may hold only 3 claims in a repository
        busy = claims(api, [(n, n) for n in range(queued)], installation=1)
        quiet = claims(api, [(n, n) for n in range(probes)], installation=2)
        post(port, [(f"busy-{n}", payload(n, n, busy[n, n], installation=1)) for n in range(queued)])
        while len(writes_of(api, 1)) < 3:  # installation 1's backlog is being written
            time.sleep(0.1)
        engine = create_engine(normalise_url(url))
        waits = []
        for probe in range(probes):
            delivery = f"quiet-{probe}"
            seen = len(writes_of(api, 2))
            post(port, [(delivery, payload(probe, probe, quiet[probe, probe], installation=2))])
            deadline = time.monotonic() + 30
            while len(writes_of(api, 2)) <= seen and time.monotonic() < deadline:
                time.sleep(0.02)
            first = writes_of(api, 2)[seen]
            with engine.connect() as connection:
                decided = connection.execute(
                    select(t.webhook_deliveries.c.processed_at).where(t.webhook_deliveries.c.id == delivery)
                ).scalar_one()
            waits.append(first - (decided if decided.tzinfo else decided.replace(tzinfo=UTC)).timestamp())
            time.sleep(3)
        engine.dispose()
        busy_written = len(writes_of(api, 1))
    return {"waits": waits, "busy_left": queued * 4 - busy_written, "busy_written": busy_written}


def four_workers(postgres_url: str, issues: int, watch: float) -> dict[str, Any]:
    key, public_key = key_pair()
    with ExitStack() as stack:
        url = stack.enter_context(scratch_postgres(postgres_url))
        api = stack.enter_context(stand_in(public_key, issues=issues))
        said = claims(api, [(r, c) for r in range(issues) for c in range(3)])
        engine = make_engine(url)
        upgrade(engine)
        Inbox(engine).receive_all([
            Incoming(f"r{r}-c{c}", "issue_comment", "created", 1, payload(r, c, said[r, c]).decode())
            for r in range(issues) for c in range(3)
        ])  # fmt: skip
        engine.dispose()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
               "BATON_DATABASE_URL": url, "BATON_APP_ID": "1", "BATON_PRIVATE_KEY": key,
               "BATON_GITHUB_API_URL": api}  # fmt: skip
        command = [sys.executable, "-m", "baton.cli", "worker"]
        workers = [
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(4)
        ]
        try:
            time.sleep(watch)
            times = writes_of(api, 1)
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(15)
    most = max((sum(1 for other in times if at <= other < at + 60) for at in times), default=0)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    return {"writes": len(times), "most_in_60s": most, "min_gap": min(gaps, default=float("nan")),
            "median_gap": statistics.median(gaps) if gaps else float("nan"),
            "per_s": (len(times) - 1) / span if span else 0.0}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["1", "2", "both"], default="both")
    parser.add_argument("--queued", type=int, default=75,
                        help="claims queued on installation 1 (4 writes each)")  # fmt: skip
    parser.add_argument("--probes", type=int, default=5)
    parser.add_argument("--issues", type=int, default=40)
    parser.add_argument("--watch", type=float, default=75.0)
    parser.add_argument("--postgres-url", default=os.environ.get(
        "BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))  # fmt: skip
    args = parser.parse_args(argv)
    print("Baton's default settings", flush=True)
    if args.part in ("1", "both"):
        r = two_installations(args.queued, args.probes)
        waits = " ".join(f"{w:.2f}" for w in r["waits"])
        print(f"two installations: {args.queued * 4} writes queued on one; the other's decision -> first write "
              f"s: {waits} (median {statistics.median(r['waits']):.2f}, max {max(r['waits']):.2f}); "
              f"{r['busy_written']} of the queued writes made meanwhile", flush=True)  # fmt: skip
    if args.part in ("2", "both"):
        r = four_workers(args.postgres_url, args.issues, args.watch)
        print(f"four workers, one installation, {args.watch:.0f} s: {r['writes']} writes, most in 60 s "
              f"{r['most_in_60s']}, smallest gap {r['min_gap']:.3f} s, median gap {r['median_gap']:.3f} s, "
              f"{r['per_s']:.2f} writes/s", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
