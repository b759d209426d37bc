"""Decide rate: how many stored webhook deliveries one process works through per second.

The part of Baton's work that comes after the 202: take the delivery from the inbox, find who the
actor is, decide the command, record it and its answer for GitHub, finish the delivery. Per run:
`--issues` issues with `--claimers` `/claim` comments each are stored in the inbox (each delivery the whole
payload GitHub sends, about 9.5 KB, as the stand-in shapes it), then one process
decides them all with the code the decide lane of `baton serve` and `baton worker` runs: it takes the
pending deliveries in batches (`Inbox.take_pending`) and decides them (`baton.intake.decide`: the
commands on one ticket in one transaction). GitHub is the stand-in GitHub in a process of its own
(`python -m github_standin`), answering the permission lookups; nothing is written to GitHub (that is the
write lane's work). Baton runs with its default settings. Prints deliveries decided per second for
each run, the median, and the median per second of the deciding process's own CPU time.

Usage (from the repository root):

    python bench/decide_rate.py                          # SQLite, then PostgreSQL
    python bench/decide_rate.py --database sqlite --repeat 5
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from pydantic import SecretStr

from baton.demo.stage import key_pair
from baton.environment.settings import Settings
from baton.intake import decide
from baton.process.runtime import BATCH
from baton.process.wiring import assemble
from baton.store.inbox import Incoming

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.claim_race import scratch_postgres, scratch_sqlite
from bench.webhook_race import INSTALLATION, deliveries, stand_in


def run(database_url: str, api: str, key: str, *, issues: int, claimers: int) -> tuple[float, float]:
    """Deliveries decided per second of wall time, and per second of this process's CPU time."""
    settings = Settings(
        database_url=database_url, webhook_secret=SecretStr("bench"), app_id=1, private_key=SecretStr(key),
        github_api_url=api,
    )  # fmt: skip
    said = deliveries(api, [(r, c) for r in range(issues + 1) for c in range(claimers)])
    parts = assemble(settings)
    try:
        stored = [
            Incoming(f"r{r}-c{c}", "issue_comment", "created", INSTALLATION, said[r, c].decode())
            for r in range(issues + 1)
            for c in range(claimers)
        ]
        parts.inbox.receive_all(stored[:claimers])  # the first issue warms the caches (token, permissions)
        decide(parts.inbox, parts.intake, parts.inbox.take_pending(BATCH))
        parts.inbox.receive_all(stored[claimers:])
        # What is loaded stays out of the collector's walks from here, as `baton serve` and `baton worker` keep it
        # once loaded (`_loaded` in src/baton/cli/main.py): else a full collection of it falls in the first run.
        gc.freeze()
        started, cpu = time.perf_counter(), time.process_time()
        while taken := parts.inbox.take_pending(BATCH):
            decide(parts.inbox, parts.intake, taken)
        decided = len(stored) - claimers
        rates = decided / (time.perf_counter() - started), decided / (time.process_time() - cpu)
        assert parts.inbox.pending() == []
        return rates
    finally:
        parts.engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))  # fmt: skip
    parser.add_argument("--issues", type=int, default=25)
    parser.add_argument("--claimers", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    key, public_key = key_pair()
    print(f"{'engine':<11} {'deliveries':>10} {'decided/s per run':>40} {'median':>7} {'per CPU-s':>10}")
    with stand_in(public_key, issues=args.issues + 1) as api:
        for engine in ["sqlite", "postgresql"] if args.database == "both" else [args.database]:
            rates, per_cpu = [], []
            for _ in range(args.repeat):
                with ExitStack() as stack:
                    url = stack.enter_context(
                        scratch_sqlite() if engine == "sqlite" else scratch_postgres(args.postgres_url)
                    )
                    rate, cpu_rate = run(url, api, key, issues=args.issues, claimers=args.claimers)
                    rates.append(rate)
                    per_cpu.append(cpu_rate)
            shown = " ".join(f"{rate:,.0f}" for rate in rates)
            print(
                f"{engine:<11} {args.issues * args.claimers:>10} {shown:>40} {statistics.median(rates):>7,.0f} "
                f"{statistics.median(per_cpu):>10,.0f}"
            )
    print("per CPU-s: deliveries per second of the deciding process's own CPU time (median; the database server's")
    print("CPU is not in it on PostgreSQL). The machine is shared: wall-clock rates vary from run to run.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
