"""Agent API race: 20 agents claim one issue at the same instant over HTTP, each with its own GitHub token,
per round; the answer is in the response.

Starts `baton serve` with the settings a user gets by default (SQLite, one process; or PostgreSQL with two
`baton serve` processes, the agents spread over them), with GitHub replaced by the stand-in GitHub in a
process of its own, all on 127.0.0.1. GitHub tells Baton it was installed on `octo/race` (a signed
`installation` webhook); Baton offers its open issues. Each agent gets a token of its own from the stand-in
and calls once before the race, so Baton knows whose token it is (identities are cached); then, per round,
the agents (threads, one kept-alive socket each, requests built before the barrier) wait on one barrier and
post `POST /api/v1/repos/octo/race/issues/N/claim` together. Printed per run:

- rounds with exactly one 200 and nineteen 409s, each naming the winner or saying the agent holds as many
  claims as the repository allows (`max_active_claims`, 3 by default: an agent that won three rounds is refused
  the rest),
- claim latency p50/p99 (the HTTP round trip, every claim of every round),
- claims answered per second: every claim sent, from the first round's start to the last round's end,
- the per-login rate Baton allowed (its default, which the race stays under),
- where Baton decided the claims (`baton_api_commands_total`): on the event loop (SQLite, nothing to ask GitHub)
  or in a thread.

Usage (from the repository root):

    python bench/api_race.py                          # SQLite, then PostgreSQL (2 serve)
    python bench/api_race.py --database sqlite --agents 20 --rounds 50
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from baton.demo.stage import key_pair
from baton.github.webhooks import signature

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.claim_race import scratch_postgres
from bench.webhook_race import APP_ID, HTTP, REPOSITORY, REPOSITORY_ID, SECRET, TOKEN, answered, baton, stand_in

POSTGRES = os.environ.get("BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def install(port: int, api: str) -> None:
    """GitHub tells Baton the App was installed on octo/race (what it does on a real installation)."""
    body = json.dumps({
        "action": "created",
        "installation": {"id": 1, "account": {"login": "octo", "id": 1, "type": "Organization"}, "app_id": APP_ID},
        "repositories": [{"id": REPOSITORY_ID, "name": "race", "full_name": REPOSITORY, "private": False}],
        "sender": {"login": "octo-admin", "id": 2, "type": "User"},
    }).encode()  # fmt: skip
    answer = httpx.post(f"http://127.0.0.1:{port}/webhooks/github", content=body, headers={
        "X-GitHub-Event": "installation", "X-GitHub-Delivery": "bench-install", "Content-Type": "application/json",
        "X-Hub-Signature-256": signature(SECRET.encode(), body)})  # fmt: skip
    answer.raise_for_status()


def offered(port: int, count: int, timeout: float = 120.0) -> None:
    """Wait until Baton offers `count` tasks on octo/race."""
    deadline = time.monotonic() + timeout
    while True:
        answer = HTTP.get(f"http://127.0.0.1:{port}/api/v1/repos/{REPOSITORY}/issues/{count}",
                           headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip  # the last one offered
        if answer.status_code == 200 and answer.json()["state"] == "open":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"Baton offered {answer.text[:200]} after {timeout} s")
        time.sleep(0.2)


def claim_request(port: int, token: str, number: int) -> bytes:
    return (
        f"POST /api/v1/repos/{REPOSITORY}/issues/{number}/claim HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: 0\r\n\r\n"
    ).encode()


@contextmanager
def database(kind: str) -> Iterator[str]:
    if kind == "sqlite":
        folder = Path(f"/tmp/baton-api-race-{os.getpid()}")
        folder.mkdir(exist_ok=True)
        path = folder / "baton.db"
        for leftover in folder.glob("baton.db*"):
            leftover.unlink()
        try:
            yield f"sqlite:///{path}"
        finally:
            for leftover in folder.glob("baton.db*"):
                leftover.unlink()
            folder.rmdir()
    else:
        with scratch_postgres(POSTGRES) as url:
            yield url


def run(kind: str, *, agents: int, rounds: int, serves: int, url: str | None = None) -> dict[str, Any]:
    """The race on a scratch database of engine `kind` (sqlite, postgresql), or on the database `url` names."""
    key, public_key = key_pair()
    with ExitStack() as stack:
        url = url or stack.enter_context(database(kind))
        api = stack.enter_context(stand_in(public_key, issues=rounds))
        ports, _ = stack.enter_context(baton(url, api, key, serves=serves, workers=0, overrides={}))
        install(ports[0], api)
        offered(ports[0], rounds)
        logins = [f"agent-{n:02d}" for n in range(agents)]
        tokens = httpx.post(f"{api}/_standin/tokens", json={"logins": logins}).json()["tokens"]
        for index, login in enumerate(logins):  # Baton learns whose each token is before the race
            base = f"http://127.0.0.1:{ports[index % len(ports)]}"
            warm = httpx.get(f"{base}/api/v1/tasks", params={"repo": REPOSITORY},
                             headers={"Authorization": f"Bearer {tokens[login]}"})  # fmt: skip
            warm.raise_for_status()
        go, done = threading.Barrier(agents + 1), threading.Barrier(agents + 1)
        answers: list[tuple[int, str, int, bytes, float]] = []  # round, login, status, body, seconds
        failures: list[BaseException] = []

        def agent(index: int) -> None:
            login, port = logins[index], ports[index % len(ports)]
            try:
                with socket.create_connection(("127.0.0.1", port)) as connection:
                    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    reader = connection.makefile("rb")
                    for r in range(rounds):
                        raw = claim_request(port, tokens[login], r + 1)
                        go.wait()
                        start = time.perf_counter()
                        status, body = answered(connection, reader, raw)
                        answers.append((r, login, status, body, time.perf_counter() - start))
                        done.wait()
            except BaseException as error:
                failures.append(error)
                go.abort()
                done.abort()

        threads = [threading.Thread(target=agent, args=(i,)) for i in range(agents)]
        for thread in threads:
            thread.start()
        began = time.perf_counter()
        for _ in range(rounds):
            go.wait()
            done.wait()
        elapsed = time.perf_counter() - began
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        where = decided_where([f"http://127.0.0.1:{port}" for port in ports])

    right, wrong = 0, []
    for r in range(rounds):
        mine = [a for a in answers if a[0] == r]
        statuses = Counter(a[2] for a in mine)
        winners = [a[1] for a in mine if a[2] == 200]
        # a refusal names the winner, or says the agent holds as many claims as the repository allows
        named = winners and all(f"@{winners[0]}".encode() in a[3] or json.loads(a[3]).get("code") == "claim_limit"
                                for a in mine if a[2] == 409)  # fmt: skip
        if statuses == Counter({200: 1, 409: agents - 1}) and named:
            right += 1
        else:
            wrong.append(f"round {r + 1}: {dict(statuses)} " + "; ".join(sorted({a[3].decode()[:160] for a in mine
                                                                                if a[2] != 409})))  # fmt: skip
    latencies = sorted(a[4] for a in answers)
    return {
        "engine": kind, "serve": serves, "rounds": rounds, "right": right,
        "p50": statistics.median(latencies) * 1000, "p99": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "claims/s": len(answers) / elapsed, "wrong": wrong, "where": where,
    }  # fmt: skip


def decided_where(urls: list[str]) -> dict[str, float]:
    """The agent API commands the Baton processes at `urls` decided, by where (`baton_api_commands_total`:
    event_loop, thread), as their `/metrics` show them; the warming calls list tasks and are not among them."""
    where: dict[str, float] = {}
    for url in urls:
        shown = httpx.get(f"{url}/metrics").text
        for found in re.finditer(r'^baton_api_commands_total\{where="(\w+)"\} (\S+)$', shown, re.MULTILINE):
            where[found[1]] = where.get(found[1], 0.0) + float(found[2])
    return where


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--serves", type=int, default=2, help="baton serve processes for the PostgreSQL run")
    args = parser.parse_args(argv)
    kinds = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    results = [run(kind, agents=args.agents, rounds=args.rounds, serves=1 if kind == "sqlite" else args.serves)
               for kind in kinds]  # fmt: skip
    print(f"{args.agents} agents x {args.rounds} rounds over the agent API, Baton's defaults "
          f"(BATON_API_REQUESTS_PER_MINUTE=600 per login)")  # fmt: skip
    print(f"{'engine':<11} {'serve':>5} {'one 200 + 409s naming it':>25} {'claim p50':>10} {'claim p99':>10} "
          f"{'claims/s':>9}")  # fmt: skip
    for result in results:
        print(f"{result['engine']:<11} {result['serve']:>5} {result['right']:>18}/{result['rounds']:<6} "
              f"{result['p50']:>8.1f}ms {result['p99']:>8.1f}ms {result['claims/s']:>9.0f}")  # fmt: skip
    for result in results:
        where = result["where"]
        print(f"{result['engine']}: commands decided on the event loop {where.get('event_loop', 0):.0f}, in a thread "
              f"{where.get('thread', 0):.0f}")  # fmt: skip
    for result in results:
        for line in result["wrong"][:5]:
            print(f"{result['engine']}: {line}")
    return 0 if all(r["right"] == r["rounds"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
