"""Webhook race: 20 users comment `/claim` on one issue at the same instant, over real HTTP, per round.

Starts `baton serve` as a process (SQLite; and PostgreSQL with `baton worker` processes), with GitHub
replaced by a local recording stub (bench/github_stub.py), all on 127.0.0.1. Each round opens a new
issue; the claimers (threads, one HTTP connection each) wait on one barrier and post their signed
`issue_comment` deliveries together. Printed per run:

- rounds with exactly one winner (the stored runner, one `claimed` event, one 👍 on GitHub),
- deliveries acknowledged per second, and the ack latency p50/p99 (HTTP round trip of the 202),
- ack-to-decision p50/p99 (from the 202 to the outcome being stored),
- peak RSS of the Baton processes,
- GitHub write requests per round (max and mean).

By default each round starts as soon as the last is acknowledged, so Baton is under sustained load
(over a thousand deliveries a second) and decisions queue; `--gap 0.5` spaces the rounds as real races
would be, which shows the latency of one race on its own.

Usage (from the repository root):

    python bench/webhook_race.py                       # SQLite, then PostgreSQL with 2 workers
    python bench/webhook_race.py --database sqlite --rounds 20
    python bench/webhook_race.py --gap 0.5                 # rounds half a second apart
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, func, select

from baton.github.webhooks import signature
from baton.sandbox.stage import key_pair
from baton.store import normalise_url
from baton.store import tables as t

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.claim_race import scratch_postgres

SECRET = "bench-secret"
INSTALLATION, REPOSITORY_ID, REPOSITORY = 1, 4242, "octo/race"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def stub_server() -> Iterator[str]:
    """The stub in a process of its own, so it does not share a GIL with the claimers."""
    port = free_port()
    stub = subprocess.Popen([sys.executable, str(Path(__file__).with_name("github_stub.py")), str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/_stub/state")
        yield base
    finally:
        stub.terminate()
        stub.wait(10)


def wait_for(url: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url).status_code == 200:
                return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def payload(round_: int, claimer: int) -> bytes:
    login = f"agent-{claimer:02d}"
    return json.dumps({
        "action": "created",
        "issue": {"number": round_ + 1, "id": 10_000 + round_, "user": {"login": "owner"}, "body": ""},
        "comment": {"id": round_ * 100 + claimer + 1, "body": "/claim", "user": {"login": login}},
        "repository": {"id": REPOSITORY_ID, "full_name": REPOSITORY},
        "installation": {"id": INSTALLATION},
        "sender": {"login": login, "type": "User"},
    }).encode()  # fmt: skip


def run(database_url: str, *, claimers: int, rounds: int, workers: int, gap: float) -> dict[str, Any]:
    key, _ = key_pair()
    with ExitStack() as stack:
        api = stack.enter_context(stub_server())
        port = free_port()
        env = {**os.environ, "BATON_DATABASE_URL": database_url, "BATON_WEBHOOK_SECRET": SECRET,
               "BATON_APP_ID": "1", "BATON_PRIVATE_KEY": key, "BATON_GITHUB_API_URL": api,
               "BATON_ANSWER_DELAY": "0.3", "BATON_WRITE_INTERVAL": "0",
               "BATON_WORKER": "external" if workers else "inprocess"}  # fmt: skip
        serve = subprocess.Popen([sys.executable, "-m", "baton.cli", "serve", "--host", "127.0.0.1",
                                  "--port", str(port)], env=env, stderr=subprocess.DEVNULL)  # fmt: skip
        processes = [serve] + [
            subprocess.Popen(
                [sys.executable, "-m", "baton.cli", "worker"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(workers)
        ]
        stack.callback(lambda: [p.terminate() for p in processes] and [p.wait(10) for p in processes])
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/healthz")

        # the claimers' comments, so the stub counts their 👍 on the right issue
        comments = {r * 100 + index + 1: r + 1 for r in range(rounds) for index in range(claimers)}
        httpx.post(f"{api}/_stub/comments", json={str(k): v for k, v in comments.items()}).raise_for_status()
        barrier = threading.Barrier(claimers)
        acks: list[tuple[int, str, float, float]] = []  # round, delivery, ack seconds, ack wall time

        def claimer(index: int) -> None:
            # Raw HTTP/1.1 on one kept-alive socket: the requests are built before the barrier, so the
            # ack latency measured is the server's, not the client library's share of one GIL.
            with socket.create_connection(("127.0.0.1", port)) as connection:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                answers = connection.makefile("rb")
                for r in range(rounds):
                    body = payload(r, index)
                    delivery = f"r{r}-c{index}"
                    request = (
                        f"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        f"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: {delivery}\r\n"
                        f"X-Hub-Signature-256: {signature(SECRET.encode(), body)}\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                    ).encode() + body
                    barrier.wait()
                    start = time.perf_counter()
                    connection.sendall(request)
                    status = answers.readline()
                    length = 0
                    while (line := answers.readline()) not in (b"\r\n", b""):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    answers.read(length)
                    elapsed = time.perf_counter() - start
                    assert status.split()[1] == b"202", status
                    acks.append((r, delivery, elapsed, time.time()))
                    if gap:
                        barrier.wait()  # the round is over for everyone; the next starts `gap` later
                        time.sleep(gap)

        threads = [threading.Thread(target=claimer, args=(i,)) for i in range(claimers)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sending = time.perf_counter() - began

        # A plain engine: the bench only reads, and must not take Baton's SQLite write lock while it waits.
        engine = create_engine(normalise_url(database_url))
        settle = time.monotonic() + 120
        with engine.connect() as connection:
            while time.monotonic() < settle:
                done = connection.execute(
                    select(func.count()).select_from(t.webhook_deliveries)
                    .where(t.webhook_deliveries.c.status.in_(["done", "ignored", "failed"]))
                ).scalar_one()  # fmt: skip
                left = connection.execute(select(func.count()).select_from(t.outbox)).scalar_one()
                if done == claimers * rounds and left == 0:
                    break
                time.sleep(0.2)
                connection.rollback()
            decided = dict(
                connection.execute(select(t.webhook_deliveries.c.id, t.webhook_deliveries.c.processed_at)).all()
            )
            runners = dict(connection.execute(select(t.tickets.c.number, t.tickets.c.runner)).all())
            claimed = dict(connection.execute(
                select(t.tickets.c.number, func.count()).join(t.events, t.events.c.ticket_id == t.tickets.c.id)
                .where(t.events.c.type == "claimed").group_by(t.tickets.c.number)).all())  # fmt: skip
        engine.dispose()
        rss = sum(peak_rss_mb(p.pid) for p in processes)
        state = httpx.get(f"{api}/_stub/state").json()

    def to_epoch(value: datetime | None) -> float | None:
        if value is None:
            return None
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()

    to_decision = sorted(
        decided_at - acked
        for _, delivery, _, acked in acks
        if (decided_at := to_epoch(decided.get(delivery))) is not None
    )
    ack = sorted(a[2] for a in acks)
    one_winner = sum(
        1 for r in range(rounds)
        if runners.get(r + 1) is not None and claimed.get(r + 1) == 1 and state["reactions"].get(str(r + 1)) == 1
    )  # fmt: skip
    writes = [state["writes"].get(str(r + 1), 0) for r in range(rounds)]

    def pct(values: list[float], q: float) -> float:
        return 1000 * values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

    return {
        "one_winner": one_winner, "rounds": rounds, "acks_per_s": len(acks) / sending,
        "ack_p50": pct(ack, 0.5), "ack_p99": pct(ack, 0.99),
        "decision_p50": pct(to_decision, 0.5), "decision_p99": pct(to_decision, 0.99),
        "rss_mb": rss, "writes_max": max(writes), "writes_mean": statistics.mean(writes),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))  # fmt: skip
    parser.add_argument("--claimers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument(
        "--gap", type=float, default=0.0, help="seconds between rounds (0: each round starts when the last is acked)"
    )
    parser.add_argument("--workers", type=int, default=2, help="baton worker processes for the PostgreSQL run")
    parser.add_argument(
        "--sqlite-workers", type=int, default=0, help="baton worker processes for the SQLite run (0: in baton serve)"
    )
    args = parser.parse_args(argv)
    print(f"{'engine':<11} {'workers':>7} {'one-winner':>10} {'acks/s':>7} {'ack p50':>8} {'ack p99':>8} "
          f"{'dec p50':>8} {'dec p99':>8} {'RSS MB':>7} {'writes/round max':>16} {'mean':>5}")  # fmt: skip
    failures = 0
    for engine in ["sqlite", "postgresql"] if args.database == "both" else [args.database]:
        with ExitStack() as stack:
            if engine == "sqlite":
                url = f"sqlite:///{stack.enter_context(tempfile.TemporaryDirectory())}/race.db"
                workers = args.sqlite_workers
            else:
                url = stack.enter_context(scratch_postgres(args.postgres_url))
                workers = args.workers
            r = run(url, claimers=args.claimers, rounds=args.rounds, workers=workers, gap=args.gap)
        print(f"{engine:<11} {workers:>7} {r['one_winner']:>5}/{r['rounds']:<4} {r['acks_per_s']:>7.0f} "
              f"{r['ack_p50']:>8.2f} {r['ack_p99']:>8.2f} {r['decision_p50']:>8.1f} {r['decision_p99']:>8.1f} "
              f"{r['rss_mb']:>7.0f} {r['writes_max']:>16} {r['writes_mean']:>5.1f}", flush=True)  # fmt: skip
        failures += r["rounds"] - r["one_winner"]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
