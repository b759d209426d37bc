"""Webhook race: 20 users comment `/claim` on one issue at the same instant, over real HTTP, per round.

Starts `baton serve` with the settings a user gets by default (SQLite, one process; or PostgreSQL with two
`baton serve` and two `baton worker` processes), with GitHub replaced by the stand-in GitHub in a process of
its own (`python -m github_standin`, unchecked, with its inspection endpoints), all on 127.0.0.1. Each round
is an issue of its own; the claimers' comments are made on the stand-in first, then the claimers (threads, one
kept-alive socket each) wait on one barrier and post their signed `issue_comment` deliveries together, each the
whole payload GitHub sends for the comment (about 9.5 KB, shaped by the stand-in).
Without `--gap`, each round starts as soon as the previous round's winner shows in the read API (asked
every 2 ms once the round's acks are in, on a kept-alive socket of its own); with `--gap 1`, rounds start a
second apart. Printed per run:

- rounds with exactly one winner (the stored runner, one `claimed` event, one 👍 on GitHub),
- claims decided per second: every claim sent, from the first send until every round's winner shows in
  the read API; and the same after the first round, which also pays for the process's first GitHub token,
  settings file and permission lookups (the round's time is printed too),
- ack p50/p99 (the HTTP round trip of the 202),
- how long the three rounds after the first took, and a median round (send until the winner shows in the read
  API): the rounds right after the first also pay for first calls (the losers of the first race looked up in the
  background, the write lane's first writes),
- last ack -> decision p50/p99 per round (until the round's deliveries are all decided; the first race after
  start, which also pays for the process's first token, settings and permission lookups, is printed apart),
- last ack -> 👍 p50/p99 per round (until the stand-in received the winner's 👍),
- GitHub writes per race (max and mean, once the outbox is empty) and peak RSS of Baton's processes.

At its default write pace Baton makes the GitHub writes of 50 races in about four minutes, which the bench waits for
before counting them (`--settle`); `--settle 0` counts what is made once every delivery is decided (the claims/s and
the rest are the same), for comparing two trees by turns.

Any setting that differs from Baton's defaults is printed with the results (`--set NAME=VALUE` adds one).

Usage (from the repository root):

    python bench/webhook_race.py                        # SQLite, then PostgreSQL (2 serve + 2 worker)
    python bench/webhook_race.py --database sqlite --rounds 20 --gap 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

from baton.demo.stage import key_pair
from baton.domain import Policy
from baton.domain.status import LABELS
from baton.github.webhooks import signature
from baton.store import normalise_url
from baton.store import tables as t

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.claim_race import scratch_postgres

SECRET = "bench-secret"
TOKEN = "bench-read-token"
APP_ID = 1
INSTALLATION, REPOSITORY_ID, REPOSITORY = 1, 4242, "octo/race"
CLAIM_LIMIT = Policy().max_active_claims  # a repository's default
# One client for the bench's own calls (and the tests that share these helpers): building one per call loads
# the CA certificates each time, about 20 ms of CPU, which a loop polling every 0.1 s pays again and again.
HTTP = httpx.Client(timeout=60)


def repository_of(installation: int) -> str:
    """Each installation's repository: installation 1 holds octo/race, installation n octo-n/race."""
    return REPOSITORY if installation == INSTALLATION else f"octo-{installation}/race"


def free_port() -> int:
    """A free port on 127.0.0.1 below the kernel's ephemeral range: a port the kernel hands out for port 0 or
    for an outgoing connection could be taken by another process between this answer and the server binding
    it (which may be much later, or again after a restart)."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768
    for port in random.sample(range(10_000, max(first, 20_000)), 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def stand_in(public_key: str, *, installations: int = 1, issues: int = 100) -> Iterator[str]:
    """The stand-in GitHub in a process of its own, so it does not share a GIL with the claimers: the App
    (id APP_ID, `public_key`) installed `installations` times, installation n holding `repository_of(n)`
    with `issues` open issues and Baton's labels, the agents (`agent-*`) its collaborators. Yields its URL."""
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        key = Path(folder) / "app.pub.pem"
        key.write_text(public_key)
        command = [sys.executable, "-m", "github_standin", "--port", str(port), "--app-id", str(APP_ID),
                   "--app-key", str(key), "--issues", str(issues), "--inspect",
                   "--collaborator", "agent-*"]  # fmt: skip
        for n in range(1, installations + 1):
            command += ["--repository", f"{n}:{REPOSITORY_ID + n - 1}:{repository_of(n)}"]
        for label in LABELS:
            command += ["--label", label]
        process = subprocess.Popen(command)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(f"{base}/_standin/writes")
            yield base
        finally:
            process.terminate()
            process.wait(10)


def _commented(api: str, who: list[tuple[int, int]], installation: int, *, payloads: bool = False) -> Any:
    """`/claim` comments on the stand-in, as people wrote them before their webhooks leave: for each
    (round, claimer), agent-<claimer> on issue round + 1 of the installation's repository. The stand-in's answer:
    their ids, and with `payloads` the `issue_comment` delivery of each."""
    comments = [{"issue": r + 1, "login": f"agent-{c:02d}", "body": "/claim"} for r, c in who]
    asked = {"repository": repository_of(installation), "comments": comments, "payloads": payloads}
    answer = HTTP.post(f"{api}/_standin/comments", json=asked, timeout=60)
    answer.raise_for_status()
    return answer.json()


def claims(api: str, who: list[tuple[int, int]], installation: int = INSTALLATION) -> dict[tuple[int, int], int]:
    """The ids of the `/claim` comments made for `who` (`_commented`)."""
    return dict(zip(who, _commented(api, who, installation)["ids"], strict=True))


def deliveries(api: str, who: list[tuple[int, int]], installation: int = INSTALLATION) -> dict[tuple[int, int], bytes]:
    """The `issue_comment` delivery GitHub makes of each `/claim` comment made for `who` (`_commented`), whole
    (about 9.5 KB, as the stand-in shapes it: the issue, the comment, the repository and the sender with every field
    GitHub sends)."""
    made = _commented(api, who, installation, payloads=True)["payloads"]
    return {one: json.dumps(payload).encode() for one, payload in zip(who, made, strict=True)}


def writes(api: str) -> list[dict[str, Any]]:
    """Baton's writes as the stand-in received them, in order: at, installation, method, path, repository,
    issue."""
    return list(HTTP.get(f"{api}/_standin/writes").json()["writes"])


def wait_for(url: str, process: subprocess.Popen[Any] | None = None, log: Path | None = None) -> None:
    """Waits until `url` answers 200, at most 30 s; fails at once if `process` (the server) has ended, with the
    end of its `log`."""
    deadline = time.monotonic() + 30
    while True:
        try:
            if HTTP.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            ended = process is not None and process.poll() is not None
            if ended or time.monotonic() > deadline:
                said = log.read_text(errors="replace")[-4000:] if log is not None and log.exists() else ""
                state = f"ended with {process.returncode}" if ended and process is not None else "not answering"
                raise AssertionError(f"{url}: the server {state}\n{said}") from None
        time.sleep(0.1)


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def payload(round_: int, claimer: int, comment_id: int, installation: int = INSTALLATION) -> bytes:
    """The `issue_comment` delivery of agent-<claimer>'s `/claim` (comment `comment_id`) on issue round + 1."""
    login = f"agent-{claimer:02d}"
    repository = repository_of(installation)
    return json.dumps({
        "action": "created",
        "issue": {"number": round_ + 1, "id": 10_000 + round_, "user": {"login": repository.split("/")[0]},
                  "body": ""},
        "comment": {"id": comment_id, "body": "/claim", "user": {"login": login}},
        "repository": {"id": REPOSITORY_ID + installation - 1, "full_name": repository},
        "installation": {"id": installation},
        "sender": {"login": login, "type": "User"},
    }).encode()  # fmt: skip


def request(port: int, delivery: str, body: bytes) -> bytes:
    return (
        f"POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: {delivery}\r\n"
        f"X-Hub-Signature-256: {signature(SECRET.encode(), body)}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def exchange(connection: socket.socket, answers: Any, raw: bytes) -> bytes:
    """Send one request on a kept-alive socket; the status line of its answer."""
    connection.sendall(raw)
    status: bytes = answers.readline()
    length = 0
    while (line := answers.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    answers.read(length)
    return status


def answered(connection: socket.socket, answers: Any, raw: bytes) -> tuple[int, bytes]:
    """Send one request on a kept-alive socket; its answer's status and body."""
    connection.sendall(raw)
    status = int(answers.readline().split()[1])
    length = 0
    while (line := answers.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return status, answers.read(length)


@contextmanager
def baton(
    database_url: str, api: str, key: str, *, serves: int, workers: int, overrides: dict[str, str]
) -> Iterator[Any]:
    """Baton's processes (the App's private `key`), with its defaults but for `overrides`; yields their ports
    and the processes."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
           "BATON_DATABASE_URL": database_url, "BATON_WEBHOOK_SECRET": SECRET, "BATON_APP_ID": str(APP_ID),
           "BATON_PRIVATE_KEY": key, "BATON_GITHUB_API_URL": api, "BATON_API_TOKEN": TOKEN,
           **({"BATON_WORKER": "external"} if workers else {}), **overrides}  # fmt: skip
    ports = [free_port() for _ in range(serves)]
    processes = []
    try:
        for index, port in enumerate(ports):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "baton.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
            if index == 0:  # the first one migrates the database; the others start after it
                wait_for(f"http://127.0.0.1:{port}/healthz")
        worker = [sys.executable, "-m", "baton.cli", "worker"]
        processes += [
            subprocess.Popen(worker, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(workers)
        ]
        for port in ports:
            wait_for(f"http://127.0.0.1:{port}/healthz")
        yield ports, processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(10)


def run(database_url: str, *, claimers: int, rounds: int, serves: int, workers: int, gap: float,
        overrides: dict[str, str], settle: float) -> dict[str, Any]:  # fmt: skip
    if rounds > CLAIM_LIMIT * claimers:  # every claimer at the limit: a round nobody wins, polled for ever
        raise ValueError(f"{rounds} rounds need more than {claimers} claimers: each may hold {CLAIM_LIMIT} claims "
                         "in a repository (the default max_active_claims), and the bench never delivers")  # fmt: skip
    key, public_key = key_pair()
    with ExitStack() as stack:
        api = stack.enter_context(stand_in(public_key, issues=rounds))
        ports, processes = stack.enter_context(
            baton(database_url, api, key, serves=serves, workers=workers, overrides=overrides)
        )
        # the claimers' comments are on GitHub before their webhooks leave, which carry them as GitHub's do
        bodies = deliveries(api, [(r, index) for r in range(rounds) for index in range(claimers)])
        go, done = threading.Barrier(claimers + 1), threading.Barrier(claimers + 1)
        acks: list[tuple[int, str, float, float]] = []  # round, delivery, ack seconds, ack wall time
        failures: list[BaseException] = []

        def claimer(index: int) -> None:
            # Raw HTTP/1.1 on one kept-alive socket: the requests are built before the barrier, so the
            # ack latency measured is the server's, not the client library's share of one GIL.
            port = ports[index % len(ports)]
            try:
                with socket.create_connection(("127.0.0.1", port)) as connection:
                    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    answers = connection.makefile("rb")
                    for r in range(rounds):
                        delivery = f"r{r}-c{index}"
                        raw = request(port, delivery, bodies[r, index])
                        go.wait()
                        start = time.perf_counter()
                        status = exchange(connection, answers, raw)
                        acks.append((r, delivery, time.perf_counter() - start, time.time()))
                        assert status.split()[1] == b"202", status
                        done.wait()
            except BaseException as error:
                failures.append(error)
                go.abort()
                done.abort()

        threads = [threading.Thread(target=claimer, args=(i,)) for i in range(claimers)]
        for thread in threads:
            thread.start()
        visible: list[float] = []
        sent: list[float] = []
        cpu_before = sum(cpu_seconds(p.pid) for p in processes)
        # The read API is asked as the claimers post: raw HTTP/1.1 on one kept-alive socket, so the machine's time
        # goes to Baton rather than to a client library.
        with socket.create_connection(("127.0.0.1", ports[0])) as reader:
            reader.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            read = reader.makefile("rb")
            began = time.time()
            for r in range(rounds):
                started = time.time()
                ask = (f"GET /api/v1/repos/{REPOSITORY}/issues/{r + 1} HTTP/1.1\r\nHost: 127.0.0.1:{ports[0]}\r\n"
                       f"Authorization: Bearer {TOKEN}\r\n\r\n").encode()  # fmt: skip
                go.wait()
                sent.append(time.time())
                done.wait()
                while True:  # the round's winner, as the read API shows it
                    status, body = answered(reader, read, ask)
                    if status == 200 and json.loads(body).get("runner"):
                        break
                    time.sleep(0.002)
                visible.append(time.time())
                if gap:
                    time.sleep(max(0.0, started + gap - time.time()))
        finished = visible[-1]
        cpu = sum(cpu_seconds(p.pid) for p in processes) - cpu_before
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]

        # A plain engine: the bench only reads, and must not take Baton's SQLite write lock while it waits.
        engine = create_engine(normalise_url(database_url))
        # Every delivery decided (waited for a minute at least), then every GitHub write made (for `settle` seconds).
        waited = time.monotonic()
        deadline = waited + settle
        left = -1
        with engine.connect() as connection:
            while True:
                done_count = connection.execute(
                    select(func.count()).select_from(t.webhook_deliveries)
                    .where(t.webhook_deliveries.c.status.in_(["done", "ignored", "failed"]))
                ).scalar_one()  # fmt: skip
                left = connection.execute(select(func.count()).select_from(t.outbox)).scalar_one()
                decided_all = done_count == claimers * rounds
                now = time.monotonic()
                if (decided_all and (left == 0 or now >= deadline)) or now >= max(deadline, waited + 60):
                    break
                time.sleep(0.5 if decided_all else 0.02)
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
        written = [w for w in writes(api) if w["repository"] == REPOSITORY]

    def epoch(value: datetime | None) -> float | None:
        return None if value is None else (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()

    last_ack = {r: max(at for round_, _, _, at in acks if round_ == r) for r in range(rounds)}
    round_of = {delivery: r for r, delivery, _, _ in acks}
    decided_at: dict[int, float] = {}
    for delivery, at in decided.items():
        moment = epoch(at)
        if delivery in round_of and moment is not None:
            decided_at[round_of[delivery]] = max(decided_at.get(round_of[delivery], 0.0), moment)
    # The first race after start also pays for the process's first GitHub token, settings file and
    # permission lookups and its first statements: it is shown apart, and the percentiles are of the rest.
    first_decision = decided_at.get(0, float("nan")) - last_ack[0]
    to_decision = sorted(decided_at[r] - last_ack[r] for r in range(1, rounds) if r in decided_at)
    thumbs: dict[int, list[float]] = {}  # issue -> when each 👍 arrived
    for write in written:
        if write["path"].endswith("/reactions"):
            thumbs.setdefault(write["issue"], []).append(write["at"])
    to_thumb = sorted(min(thumbs[r + 1]) - last_ack[r] for r in range(rounds) if thumbs.get(r + 1))
    ack = sorted(a[2] for a in acks)
    # where a round's time goes: sending until the last ack, then until decided, then until the read API shows it
    phases = [statistics.median(values) * 1000 for values in (
        [last_ack[r] - sent[r] for r in range(rounds)],
        [decided_at[r] - last_ack[r] for r in range(rounds) if r in decided_at],
        [visible[r] - decided_at[r] for r in range(rounds) if r in decided_at],
    )]  # fmt: skip
    thumbed = (lambda n: n == 1) if left == 0 else (lambda n: n <= 1)  # with writes left, one 👍 at most so far
    one_winner = sum(
        1 for r in range(rounds)
        if runners.get(r + 1) is not None and claimed.get(r + 1) == 1 and thumbed(len(thumbs.get(r + 1, [])))
    )  # fmt: skip
    per_issue = [sum(1 for w in written if w["issue"] == r + 1) for r in range(rounds)]

    def pct(values: list[float], q: float) -> float:
        return 1000 * values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

    return {
        "one_winner": one_winner, "rounds": rounds, "claims_per_s": len(acks) / (finished - began),
        "after_first": (len(acks) - claimers) / (finished - visible[0]) if rounds > 1 else float("nan"),
        "first_round": 1000 * (visible[0] - began),
        # the rounds after the first that pay for more first calls (the losers looked up, the first writes), and a
        # median one: how long each took, from its send until its winner showed
        "next_rounds": [1000 * (visible[r] - sent[r]) for r in range(1, min(rounds, 4))],
        "median_round": 1000 * statistics.median(visible[r] - sent[r] for r in range(rounds)),
        "ack_p50": pct(ack, 0.5), "ack_p99": pct(ack, 0.99),
        "decision_p50": pct(to_decision, 0.5), "decision_p99": pct(to_decision, 0.99),
        "thumb_p50": pct(to_thumb, 0.5), "thumb_p99": pct(to_thumb, 0.99), "thumbs": len(to_thumb),
        "rss_mb": rss, "writes_max": max(per_issue), "writes_mean": statistics.mean(per_issue), "outbox_left": left,
        "phases": phases, "cpu_ms_per_claim": 1000 * cpu / len(acks), "first_decision": 1000 * first_decision,
    }  # fmt: skip


HEADER = (
    f"{'engine':<11} {'serve+worker':>12} {'one-winner':>10} {'claims/s':>8} {'ack p50':>8} {'ack p99':>8} "
    f"{'dec p50':>8} {'dec p99':>8} {'👍 p50':>8} {'👍 p99':>8} {'writes max':>10} {'mean':>5} {'RSS MB':>7}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"))  # fmt: skip
    parser.add_argument("--claimers", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument(
        "--gap",
        type=float,
        default=0.0,
        help="seconds between round starts (0: each round starts when the last one's winner shows)",
    )
    parser.add_argument("--serves", type=int, default=2, help="baton serve processes for the PostgreSQL run")
    parser.add_argument("--workers", type=int, default=2, help="baton worker processes for the PostgreSQL run")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Baton setting other than its default, e.g. --set BATON_WRITE_INTERVAL=0",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=900.0,
        help="seconds to wait for every GitHub write to be made before counting them (0: count what is made once "
        "every delivery is decided, to compare claims/s quickly; a round then needs at most one 👍 so far)",
    )
    args = parser.parse_args(argv)  # fmt: skip
    if args.rounds > CLAIM_LIMIT * args.claimers:  # every claimer at the limit: a round nobody can win
        parser.error(
            f"--rounds is at most {CLAIM_LIMIT} x --claimers: each claimer may hold {CLAIM_LIMIT} claims "
            "in a repository (the default max_active_claims), and the bench never delivers"
        )
    overrides = dict(item.split("=", 1) for item in args.set)
    print("Baton's default settings" + (f", except {overrides}" if overrides else ""), flush=True)
    print(HEADER, flush=True)
    failures = 0
    for engine in ["sqlite", "postgresql"] if args.database == "both" else [args.database]:
        with ExitStack() as stack:
            if engine == "sqlite":
                url = f"sqlite:///{stack.enter_context(tempfile.TemporaryDirectory())}/race.db"
                serves, workers = 1, 0
            else:
                url = stack.enter_context(scratch_postgres(args.postgres_url))
                serves, workers = args.serves, args.workers
            r = run(url, claimers=args.claimers, rounds=args.rounds, serves=serves, workers=workers, gap=args.gap,
                    overrides=overrides, settle=args.settle)  # fmt: skip
        print(f"{engine:<11} {f'{serves}+{workers}':>12} {r['one_winner']:>5}/{r['rounds']:<4} "
              f"{r['claims_per_s']:>8,.0f} {r['ack_p50']:>8.1f} {r['ack_p99']:>8.1f} {r['decision_p50']:>8.1f} "
              f"{r['decision_p99']:>8.1f} {r['thumb_p50']:>8.0f} {r['thumb_p99']:>8.0f} {r['writes_max']:>10} "
              f"{r['writes_mean']:>5.1f} {r['rss_mb']:>7.0f}"
              + (f"  ({r['outbox_left']} issues still to write)" if r["outbox_left"] else ""), flush=True)  # fmt: skip
        print("    a round's median ms: send -> last ack {:.1f}, -> decided {:.1f}, -> in the read API {:.1f}; "
              "Baton's CPU per claim until the last winner showed {:.2f} ms; the first race (not in the dec "
              "columns) decided {:.0f} ms after its last ack; the first round took {:.0f} ms, the others {:,.0f} "
              "claims/s; the next rounds {} ms, a median one {:.1f} ms".format(
                  *r["phases"], r["cpu_ms_per_claim"], r["first_decision"], r["first_round"], r["after_first"],
                  ", ".join(f"{ms:.0f}" for ms in r["next_rounds"]), r["median_round"]), flush=True)  # fmt: skip
        failures += r["rounds"] - r["one_winner"]
    print("times in ms; claims/s: every claim sent / (first send -> every round's winner in the read API)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
