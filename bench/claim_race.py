"""Claim race: N claimers per round call `/claim` on one fresh ticket at the same instant.

Claimers are threads spread over worker processes; all of them, in every process, wait on one barrier
before each round, so the claims really arrive together. Each process has its own engine and each
thread its own connection. The figures printed:

- rounds with exactly one winner (anything else is a bug),
- claims decided per second (all decisions / wall time of the whole race),
- p50 / p99 latency of one decision (from the barrier's release to the outcome).

Usage (from the repository root):

    python bench/claim_race.py                                   # SQLite and PostgreSQL, defaults below
    python bench/claim_race.py --database sqlite --processes 1 --claimers 20 --rounds 50
    python bench/claim_race.py --postgres-url postgresql://postgres@127.0.0.1:5432/test --processes 4

The PostgreSQL run uses a scratch database created next to the one named (and dropped afterwards).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from typing import Any

from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

from baton.domain import Actor, Command, Permission, Policy, TicketKey
from baton.process.wiring import work_service
from baton.service.work import Issue, WorkService
from baton.store import make_engine, normalise_url, upgrade
from baton.store import tables as t

INSTALLATION, REPOSITORY_ID, REPOSITORY = 1, 4242, "octo/race"
# No claim limit in the race: every claimer may win any number of rounds.
POLICY = Policy(max_active_claims=1_000_000)


def issue(round_: int) -> Issue:
    return Issue(TicketKey(INSTALLATION, REPOSITORY_ID, round_ + 1), REPOSITORY, "owner")


@dataclass(frozen=True)
class Decision:
    round: int
    claimer: str
    kind: str
    code: str | None
    message: str | None
    seconds: float


@dataclass(frozen=True)
class Report:
    engine: str
    processes: int
    claimers: int
    rounds: int
    decisions: list[Decision]
    wall_seconds: float
    stored_runners: dict[int, str | None]  # round -> the runner the database holds
    claimed_events: dict[int, int]  # round -> number of `claimed` events

    def winners(self, round_: int) -> list[str]:
        return [d.claimer for d in self.decisions if d.round == round_ and d.kind == "applied"]

    @property
    def rounds_with_one_winner(self) -> int:
        return sum(
            1
            for r in range(self.rounds)
            if len(self.winners(r)) == 1
            and self.stored_runners[r] == self.winners(r)[0]
            and self.claimed_events[r] == 1
        )

    @property
    def per_second(self) -> float:
        return len(self.decisions) / self.wall_seconds

    def latency_ms(self, q: float) -> float:
        values = sorted(d.seconds for d in self.decisions)
        return 1000 * values[min(len(values) - 1, int(q * len(values)))]

    def line(self) -> str:
        return (
            f"{self.engine:<10} {self.processes:>5} {self.claimers:>8} {self.rounds:>6} "
            f"{self.rounds_with_one_winner:>4}/{self.rounds:<4} {self.per_second:>10.0f} "
            f"{self.latency_ms(0.5):>8.2f} {self.latency_ms(0.99):>8.2f}"
        )


HEADER = (
    f"{'engine':<10} {'procs':>5} {'claimers':>8} {'rounds':>6} {'one-winner':>9} "
    f"{'decided/s':>10} {'p50 ms':>8} {'p99 ms':>8}"
)


def _claimer(service: WorkService, barrier: Barrier, index: int, rounds: int, out: list[Decision]) -> None:
    actor = Actor(f"agent-{index:02d}", Permission.WRITE)  # agents push: write access
    for r in range(rounds):
        barrier.wait()
        start = time.perf_counter()
        outcome = service.apply(issue(r), Command("claim"), actor, f"race-{r}-{index}", POLICY)
        out.append(Decision(r, actor.login, outcome.kind, outcome.code, outcome.message, time.perf_counter() - start))


def _worker(url: str, indices: list[int], rounds: int, barrier: Barrier, results: Any) -> None:
    engine = make_engine(url, pool_size=len(indices), max_overflow=0)
    service = work_service(engine)
    out: list[Decision] = []
    threads = [threading.Thread(target=_claimer, args=(service, barrier, i, rounds, out)) for i in indices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    engine.dispose()
    results.put(out)


def race(url: str, *, claimers: int, rounds: int, processes: int) -> Report:
    """Run the race on a migrated database at `url` (its work tables are emptied first)."""
    engine = make_engine(url)
    upgrade(engine)
    with engine.begin() as connection:
        for table in reversed(t.metadata.sorted_tables):
            connection.execute(table.delete())
    service = work_service(engine)
    for r in range(rounds):
        service.open_ticket(issue(r), f"open-{r}")
    engine.dispose()  # nothing open crosses the fork

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(claimers)
    results = context.Queue()
    groups = [list(range(claimers))[p::processes] for p in range(processes)]
    workers = [
        context.Process(target=_worker, args=(url, group, rounds, barrier, results)) for group in groups if group
    ]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    decisions: list[Decision] = []
    for _ in workers:
        decisions.extend(results.get(timeout=600))
    wall = time.perf_counter() - start
    for worker in workers:
        worker.join()
        if worker.exitcode != 0:
            raise RuntimeError(f"a claim worker failed with exit code {worker.exitcode}")

    engine = make_engine(url)
    with engine.connect() as connection:
        runners = dict(connection.execute(select(t.tickets.c.number, t.tickets.c.runner)).all())
        events = Counter(
            dict(
                connection.execute(
                    select(t.tickets.c.number, func.count())
                    .join(t.events, t.events.c.ticket_id == t.tickets.c.id)
                    .where(t.events.c.type == "claimed")
                    .group_by(t.tickets.c.number)
                ).all()
            )
        )
    engine.dispose()
    return Report(
        make_url(normalise_url(url)).get_backend_name(),
        len(workers),
        claimers,
        rounds,
        decisions,
        wall,
        {r: runners.get(r + 1) for r in range(rounds)},
        {r: events[r + 1] for r in range(rounds)},
    )


@contextmanager
def scratch_postgres(url: str) -> Iterator[str]:
    """A database of its own next to the one `url` names, dropped afterwards."""
    admin = create_engine(normalise_url(url), isolation_level="AUTOCOMMIT")
    name = f"baton_race_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(normalise_url(url)).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def scratch_sqlite() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as directory:
        yield f"sqlite:///{directory}/race.db"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))  # fmt: skip
    parser.add_argument("--claimers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--processes", type=int, nargs="+", default=None,
                        help="process counts to run (default: SQLite 1 and 4, PostgreSQL 1 and 4)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="runs per configuration; medians are printed")
    args = parser.parse_args(argv)

    print(HEADER)
    failures = 0
    engines = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    for engine in engines:
        for processes in args.processes or [1, 4]:
            reports = []
            for _ in range(args.repeat):
                scratch = scratch_sqlite() if engine == "sqlite" else scratch_postgres(args.postgres_url)
                with scratch as url:
                    reports.append(race(url, claimers=args.claimers, rounds=args.rounds, processes=processes))
            for report in reports:
                print(report.line(), flush=True)
                failures += report.rounds - report.rounds_with_one_winner
            if len(reports) > 1:
                print(
                    f"{'median':<10} {processes:>5} {args.claimers:>8} {args.rounds:>6} {'':>9} "
                    f"{statistics.median(r.per_second for r in reports):>10.0f} "
                    f"{statistics.median(r.latency_ms(0.5) for r in reports):>8.2f} "
                    f"{statistics.median(r.latency_ms(0.99) for r in reports):>8.2f}"
                )
    if failures:
        print(f"{failures} rounds did not have exactly one winner", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
