"""Claim-next race: 20 agents ask Baton for their next task at the same instant, over HTTP, each with its own
GitHub token, on a repository of 30 open tasks of which 5 are blocked and 3 of high priority.

Starts `baton serve` with the settings a user gets by default (SQLite, one process; or PostgreSQL with two
`baton serve` processes, the agents spread over them), with GitHub replaced by the stand-in GitHub in a process of
its own, all on 127.0.0.1, as `bench/api_race.py` does. GitHub tells Baton it was installed on `octo/race` (a
signed `installation` webhook) and Baton offers its 30 open issues; then GitHub tells it (signed webhooks, as
GitHub sends them) that 5 of the oldest are blocked by another open issue, and that 3 of the newest had their
briefs edited to `priority: p0`. Each agent calls claim-next once before the race, for a label no task carries
(404 `none_ready`), so that Baton knows whose token it is and the agent's access; then the agents (threads, one
kept-alive socket each, the request built before the barrier) wait on one barrier and each sends one `POST
/api/v1/repos/octo/race/tasks/claim`. Printed per engine:

- the requests the agents made, the conflicts (409, 412) among the answers, and the tasks handed out (all
  different?),
- latency p50/p99: from the barrier until the agent holds its task (claim-next: one HTTP round trip),
- whether the 3 high-priority tasks went first (the first three claims recorded) and no blocked task was handed
  out, and whether the tasks handed out are the first 20 in Baton's order (priority, then oldest);
- beside it, on a fresh database, the same race run the way `baton next` worked before claim-next: each agent
  lists the ready tasks, then claims each at the revision listed until one is won (`--no-peer` skips it).

Usage (from the repository root):

    python bench/claim_next.py                          # SQLite, then PostgreSQL (2 serve)
    python bench/claim_next.py --database sqlite
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from baton.demo.stage import key_pair
from baton.github.webhooks import signature
from baton.store import make_engine
from baton.store import tables as t

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.api_race import database, install, offered
from bench.webhook_race import HTTP, INSTALLATION, REPOSITORY, REPOSITORY_ID, SECRET, TOKEN, answered, baton, stand_in

CLAIM_NEXT, LIST_THEN_CLAIM = "claim-next", "list, then claim"


@dataclass
class Report:
    engine: str
    serves: int
    way: str = CLAIM_NEXT
    statuses: list[int] = field(default_factory=list)  # each agent's last answer
    handed: list[int] = field(default_factory=list)  # the issue each 200 gave
    latencies: list[float] = field(default_factory=list)  # seconds
    blocked: list[int] = field(default_factory=list)
    high: list[int] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # the ready tasks, in the order Baton hands them out
    claimed_first: list[int] = field(default_factory=list)  # the issues claimed, in the order recorded
    requests: int = 0  # what the agents sent in the race
    conflicts: int = 0  # the answers 409 (taken) and 412 (changed since listed) among them

    @property
    def high_first(self) -> bool:
        """The high-priority tasks were the first claims recorded."""
        return sorted(self.claimed_first[: len(self.high)]) == sorted(self.high)

    @property
    def in_order(self) -> bool:
        """The tasks handed out are the first ones in Baton's order (the high-priority ones among them)."""
        return set(self.handed) == set(self.order[: len(self.handed)]) and set(self.high) <= set(self.handed)


def deliver(port: int, event: str, delivery: str, payload: dict[str, Any]) -> None:
    """A signed webhook, as GitHub sends it."""
    around = {"repository": {"id": REPOSITORY_ID, "full_name": REPOSITORY}, "installation": {"id": INSTALLATION},
              "sender": {"login": "octo", "type": "User"}}  # fmt: skip
    body = json.dumps({**payload, **around}).encode()
    answer = HTTP.post(f"http://127.0.0.1:{port}/webhooks/github", content=body, headers={
        "X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
        "X-Hub-Signature-256": signature(SECRET.encode(), body)})  # fmt: skip
    answer.raise_for_status()


def prepare(port: int, tasks: int, blocked: int, high: int) -> tuple[list[int], list[int], list[int]]:
    """The oldest `blocked` tasks get blocked by the next one; the newest `high` get `priority: p0`. Waits until
    Baton lists them so. The blocked, the high, and the ready tasks in Baton's order."""
    blocked_ones, high_ones = list(range(1, blocked + 1)), list(range(tasks - high + 1, tasks + 1))
    for number in blocked_ones:
        deliver(port, "issue_dependencies", f"block-{number}", {
            "action": "blocked_by_added", "blocked_issue": {"number": number, "state": "open"},
            "blocking_issue": {"number": blocked + 1, "state": "open"},
            "blocking_issue_repo": {"full_name": REPOSITORY}})  # fmt: skip
    for number in high_ones:
        deliver(port, "issues", f"edit-{number}", {
            "action": "edited", "changes": {"body": {"from": ""}},
            "issue": {"number": number, "title": f"Issue {number}", "user": {"login": "octo"}, "state": "open",
                      "body": "```yaml\ntask: Urgent\npriority: p0\n```"}})  # fmt: skip
    deadline = time.monotonic() + 60
    while True:
        answer = HTTP.get(f"http://127.0.0.1:{port}/api/v1/tasks", params={"repo": REPOSITORY, "blocked": "true",
                          "limit": 100}, headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        listed = answer.json()["tasks"] if answer.status_code == 200 else []
        seen_blocked = [task["issue"] for task in listed if task["blocked_by"]]
        seen_high = [task["issue"] for task in listed if task["priority"] == 0]
        if sorted(seen_blocked) == blocked_ones and sorted(seen_high) == high_ones:
            return blocked_ones, high_ones, [task["issue"] for task in listed if not task["blocked_by"]]
        if time.monotonic() > deadline:
            raise TimeoutError(f"Baton lists {seen_blocked} blocked and {seen_high} high after 60 s")
        time.sleep(0.2)


WARM_UP = "bench-warm-up"  # a label no task carries: the warm-up call claims nothing


def post(port: int, token: str, path: str, headers: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n{headers}"
            "Content-Length: 0\r\n\r\n").encode()  # fmt: skip


def one_task(way: str, connection: socket.socket, reader: Any, port: int, token: str) -> tuple[int, bytes, int, int]:
    """What an agent does to get a task: claim-next (one request), or what `baton next` did before it (list the
    ready tasks, then claim each at the revision listed until one is won). Its last answer's status and body, the
    requests it made and the conflicts it met."""
    if way == CLAIM_NEXT:
        status, body = answered(connection, reader, post(port, token, f"/api/v1/repos/{REPOSITORY}/tasks/claim"))
        return status, body, 1, int(status == 409)
    listing = (f"GET /api/v1/tasks?repo={REPOSITORY} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"Authorization: Bearer {token}\r\n\r\n").encode()  # fmt: skip
    status, body = answered(connection, reader, listing)
    requests, conflicts = 1, 0
    for task in json.loads(body)["tasks"]:
        path = f"/api/v1/repos/{REPOSITORY}/issues/{task['issue']}/claim"
        status, body = answered(connection, reader, post(port, token, path, f'If-Match: "{task["revision"]}"\r\n'))
        requests += 1
        if status not in (409, 412):
            break
        conflicts += 1
    return status, body, requests, conflicts


def run(database_url: str, *, agents: int = 20, tasks: int = 30, blocked: int = 5, high: int = 3,
        serves: int = 1, way: str = CLAIM_NEXT) -> Report:  # fmt: skip
    """The race on the database at `database_url` (which it leaves as the race left it); `way`: how each agent
    gets its task (`one_task`)."""
    report = Report("postgresql" if database_url.startswith("postgresql") else "sqlite", serves, way)
    key, public_key = key_pair()
    with ExitStack() as stack:
        api = stack.enter_context(stand_in(public_key, issues=tasks))
        ports, _ = stack.enter_context(baton(database_url, api, key, serves=serves, workers=0, overrides={}))
        install(ports[0], api)
        offered(ports[0], tasks)
        report.blocked, report.high, report.order = prepare(ports[0], tasks, blocked, high)
        logins = [f"agent-{n:02d}" for n in range(agents)]
        tokens = httpx.post(f"{api}/_standin/tokens", json={"logins": logins}).json()["tokens"]
        for index, login in enumerate(logins):  # Baton learns whose each token is, and the agent's access there
            where = f"http://127.0.0.1:{ports[index % len(ports)]}/api/v1/repos/{REPOSITORY}/tasks/claim"
            warm = HTTP.post(where, json={"labels": [WARM_UP]}, headers={"Authorization": f"Bearer {tokens[login]}"})
            if warm.status_code != 404 or warm.json()["code"] != "none_ready":
                raise RuntimeError(f"the warm-up call answered {warm.status_code}: {warm.text[:200]}")
        go = threading.Barrier(agents)
        answers: list[tuple[int, bytes, float, int, int]] = []
        failures: list[BaseException] = []
        lock = threading.Lock()

        def agent(index: int) -> None:
            port = ports[index % len(ports)]
            try:
                with socket.create_connection(("127.0.0.1", port)) as connection:
                    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    reader = connection.makefile("rb")
                    go.wait()
                    start = time.perf_counter()
                    status, body, requests, conflicts = one_task(way, connection, reader, port, tokens[logins[index]])
                    with lock:
                        answers.append((status, body, time.perf_counter() - start, requests, conflicts))
            except BaseException as error:
                failures.append(error)
                go.abort()

        threads = [threading.Thread(target=agent, args=(i,)) for i in range(agents)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
    for status, body, seconds, requests, conflicts in answers:
        report.statuses.append(status)
        report.latencies.append(seconds)
        report.requests += requests
        report.conflicts += conflicts
        if status == 200:
            report.handed.append(json.loads(body)["issue"])
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            report.claimed_first = list(connection.execute(
                select(t.tickets.c.number).join(t.events, t.events.c.ticket_id == t.tickets.c.id)
                .where(t.events.c.type == "claimed").order_by(t.events.c.id)
            ).scalars())  # fmt: skip
    finally:
        engine.dispose()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--serves", type=int, default=2, help="baton serve processes for the PostgreSQL run")
    parser.add_argument("--no-peer", dest="peer", action="store_false",
                        help="skip the same race run the way `baton next` worked before claim-next")  # fmt: skip
    args = parser.parse_args(argv)
    kinds = ["sqlite", "postgresql"] if args.database == "both" else [args.database]
    reports = []
    for kind in kinds:
        for way in (CLAIM_NEXT, LIST_THEN_CLAIM) if args.peer else (CLAIM_NEXT,):
            with database(kind) as url:  # a fresh one for each race
                reports.append(run(url, agents=args.agents, serves=1 if kind == "sqlite" else args.serves, way=way))
    print(f"{args.agents} agents want a task each, at once, from {REPOSITORY}: 30 open tasks, 5 blocked, 3 of "
          "priority p0; Baton's defaults. claim-next: one POST .../tasks/claim each; list, then claim: GET "
          "/api/v1/tasks, then POST .../issues/N/claim with If-Match on each listed task until one is won (what "
          "`baton next` did before claim-next). Requests are those of the race (each agent made one claim-next "
          "for a label no task carries before it).")  # fmt: skip
    print(f"{'engine':<11} {'serve':>5} {'way':<17} {'requests':>8} {'conflicts':>9} {'handed out':>10} "
          f"{'different':>9} {'p50':>8} {'p99':>8}  p0 first  blocked handed  the first 20 in order")  # fmt: skip
    good = True
    for report in reports:
        latencies = sorted(report.latencies)
        p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
        different = len(set(report.handed)) == len(report.handed)
        blocked_handed = len(set(report.handed) & set(report.blocked))
        p50 = statistics.median(latencies)
        print(f"{report.engine:<11} {report.serves:>5} {report.way:<17} {report.requests:>8} {report.conflicts:>9} "
              f"{len(report.handed):>10} {'yes' if different else 'NO':>9} {p50 * 1000:>6.1f}ms "
              f"{p99 * 1000:>6.1f}ms  {'yes' if report.high_first else 'no':>8}  {blocked_handed:>14}  "
              f"{'yes' if report.in_order else 'NO'}")  # fmt: skip
        if report.way == CLAIM_NEXT:
            good &= report.conflicts == 0 and different and not blocked_handed and report.in_order
            good &= len(report.handed) == report.requests
    for report in reports:
        print(f"{report.engine}, {report.way}: last answers {dict(Counter(report.statuses))}; claims recorded in "
              f"this order: {report.claimed_first}")  # fmt: skip
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
