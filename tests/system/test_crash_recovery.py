"""Processes killed with SIGKILL at random points lose nothing and double nothing.

Two `baton serve` and two `baton worker` processes share one PostgreSQL database and the stand-in GitHub
(a process of its own). Claims for a dozen issues arrive as signed webhooks while, twenty times, one of
Baton's four processes is killed with SIGKILL and started again: while deliveries are being received,
decided and written to GitHub. On SQLite, one `baton serve` with its lanes (the default) is killed ten
times: there it decides comments on its event loop without taking them first (`Runtime._decide_here`), so a
kill in the middle of that transaction must leave them pending, to be decided once after the restart.

A delivery that was not answered 202 is sent again, as GitHub's "redeliver" would (same delivery id). Then,
for every delivery answered 202: it is decided, once; every issue has exactly one runner, one `claimed`
event, one 👍 on the winner's comment, its label, its assignee and one status comment on GitHub, and no
answer shown twice.

Settings differ from the defaults only to keep the test short: writes are spaced 0.1 s instead of 1 s
(`BATON_WRITE_INTERVAL`), refusals wait 0.5 s instead of 2 s for their shared reply (`BATON_ANSWER_DELAY`), and
the installation may make 1,000 writes a minute instead of 80 (`BATON_WRITES_PER_MINUTE`): the test's writes
come close to 80, and when a kill makes some of them twice the rest would wait for the next minute.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, func, select

from baton.demo.stage import key_pair
from baton.github.webhooks import signature
from baton.store import normalise_url
from baton.store import tables as t
from bench.claim_race import scratch_postgres
from bench.webhook_race import (
    APP_ID,
    REPOSITORY,
    SECRET,
    claims,
    free_port,
    payload,
    stand_in,
    wait_for,
    writes,
)
from support.local_http import HTTP
from support.processes import stop

ISSUES, CLAIMERS, KILLS = 12, 6, 20
STATUS_MARKER = "<!-- baton:status -->"
REPLY_IDS = re.compile(r"<!-- baton:reply (\d+(?: \d+)*) -->")


class Fleet:
    """Baton's processes, each started again after it is killed; a serve process keeps its port."""

    def __init__(self, env: dict[str, str], logs: Path, serves: int, workers: int) -> None:
        self.env, self.logs = env, logs
        self.ports = [free_port() for _ in range(serves)]
        self.commands = [
            [sys.executable, "-m", "baton.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
            for port in self.ports
        ] + [[sys.executable, "-m", "baton.cli", "worker"]] * workers
        self.processes: list[subprocess.Popen[bytes]] = []
        self.lock = threading.Lock()
        self.started = Counter[int]()

    def start(self, index: int) -> subprocess.Popen[bytes]:
        self.started[index] += 1
        log = open(self.logs / f"process-{index}-{self.started[index]}.log", "wb")  # noqa: SIM115
        return subprocess.Popen(self.commands[index], env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def __enter__(self) -> Fleet:
        self.processes.append(self.start(0))
        first = self.logs / "process-0-1.log"
        wait_for(f"http://127.0.0.1:{self.ports[0]}/healthz", self.processes[0], first)  # it migrates the database
        self.processes += [self.start(index) for index in range(1, len(self.commands))]
        for index, port in enumerate(self.ports):
            wait_for(f"http://127.0.0.1:{port}/healthz", self.processes[index], self.logs / f"process-{index}-1.log")
        return self

    def kill_and_restart(self, index: int) -> None:
        with self.lock:
            self.processes[index].send_signal(signal.SIGKILL)
            self.processes[index].wait(10)
            self.processes[index] = self.start(index)

    def __exit__(self, *exc: object) -> None:
        stop(*self.processes)


def send(port: int, delivery: str, body: bytes) -> int | None:
    """POST one signed `issue_comment` delivery; its status, or None when no answer came."""
    headers = {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": delivery,
               "X-Hub-Signature-256": signature(SECRET.encode(), body), "Content-Type": "application/json"}  # fmt: skip
    try:
        return HTTP.post(f"http://127.0.0.1:{port}/webhooks/github", content=body, headers=headers,
                          timeout=5).status_code  # fmt: skip
    except httpx.HTTPError:
        return None


@pytest.mark.long
@pytest.mark.postgres
def test_twenty_kill_9s_lose_no_acknowledged_delivery_and_double_nothing(
    postgres_url: str, tmp_path: Path, figure: Callable[[str], None]
) -> None:
    with scratch_postgres(postgres_url) as url:
        kill_and_check(url, {"BATON_WORKER": "external"}, 2, 2, KILLS, tmp_path, figure)


@pytest.mark.long
def test_ten_kill_9s_of_a_sqlite_serve_deciding_at_hand_lose_nothing_and_double_nothing(
    tmp_path: Path, figure: Callable[[str], None]
) -> None:
    url = f"sqlite:///{tmp_path / 'baton.db'}"
    kill_and_check(url, {}, 1, 0, KILLS // 2, tmp_path, figure)


def kill_and_check(url: str, settings: dict[str, str], serves: int, workers: int, kills_made: int, tmp_path: Path,
                   figure: Callable[[str], None]) -> None:  # fmt: skip
    """The deliveries sent while Baton's processes are killed `kills_made` times, then every claim checked."""
    key, public_key = key_pair()
    random_ = random.Random(os.environ.get("BATON_FAULT_SEED", "kill-9"))
    with ExitStack() as stack:
        api = stack.enter_context(stand_in(public_key, issues=ISSUES))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
               "BATON_DATABASE_URL": url, "BATON_WEBHOOK_SECRET": SECRET, "BATON_APP_ID": str(APP_ID),
               "BATON_PRIVATE_KEY": key, "BATON_GITHUB_API_URL": api,
               "BATON_WRITE_INTERVAL": "0.1", "BATON_ANSWER_DELAY": "0.5",
               "BATON_WRITES_PER_MINUTE": "1000", **settings}  # fmt: skip
        fleet = stack.enter_context(Fleet(env, tmp_path, serves=serves, workers=workers))
        comment_ids = claims(api, [(r, c) for r in range(ISSUES) for c in range(CLAIMERS)])
        pending = {f"r{r}-c{c}": payload(r, c, comment_ids[r, c]) for r in range(ISSUES) for c in range(CLAIMERS)}
        acknowledged: set[str] = set()

        def sender() -> None:  # deliveries in random order, each sent again until it is answered 202
            order = list(pending)
            random_.shuffle(order)
            while order:
                delivery = order.pop(0)
                if send(random_.choice(fleet.ports), delivery, pending[delivery]) == 202:
                    acknowledged.add(delivery)
                else:
                    order.append(delivery)
                    time.sleep(0.05)
                time.sleep(0.1)

        sending = threading.Thread(target=sender)
        sending.start()
        kills = Counter[str]()
        began = time.monotonic()
        for _ in range(kills_made):  # over about 12 s (PostgreSQL): while receiving, deciding and writing
            time.sleep(random_.uniform(0.3, 0.9))
            index = random_.randrange(len(fleet.commands))
            fleet.kill_and_restart(index)
            kills["serve" if index < len(fleet.ports) else "worker"] += 1
        sending.join(120)
        assert not sending.is_alive() and acknowledged == set(pending)

        # Everything acknowledged is decided and shown on GitHub, however long the recovery takes (bounded).
        engine = create_engine(normalise_url(url))
        stack.callback(engine.dispose)
        deadline = time.monotonic() + 240
        while True:
            with engine.connect() as connection:
                statuses = dict(
                    connection.execute(select(t.webhook_deliveries.c.id, t.webhook_deliveries.c.status)).all()
                )
                outbox = connection.execute(select(func.count()).select_from(t.outbox)).scalar_one()
            undecided = [d for d in acknowledged if statuses.get(d) not in ("done", "ignored")]
            if (not undecided and not outbox) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        recovered = time.monotonic() - began
        assert undecided == [], {d: statuses.get(d) for d in undecided}
        assert outbox == 0

        with engine.connect() as connection:
            runners = dict(connection.execute(select(t.tickets.c.number, t.tickets.c.runner)).all())
            claimed = Counter(
                number for number, in connection.execute(
                    select(t.tickets.c.number).join(t.events, t.events.c.ticket_id == t.tickets.c.id)
                    .where(t.events.c.type == "claimed"))
            )  # fmt: skip
            operations = connection.execute(select(func.count()).select_from(t.operations)).scalar_one()
            untaken = connection.execute(  # decided on the event loop without being taken (SQLite)
                select(func.count()).select_from(t.webhook_deliveries)
                .where(t.webhook_deliveries.c.id.in_(acknowledged), t.webhook_deliveries.c.attempts == 0)
            ).scalar_one()  # fmt: skip
        shown = HTTP.get(f"{api}/_standin/issues", params={"repository": REPOSITORY}).json()["issues"]
        written = [w for w in writes(api) if w["repository"] == REPOSITORY]

    # 0 lost: every claim decided once, every issue with exactly one runner among its claimers
    assert operations == ISSUES * CLAIMERS
    if not workers:  # the lanes in `baton serve`, on SQLite: most claims decided at hand, never taken
        assert untaken > 0
    assert claimed == Counter({number: 1 for number in range(1, ISSUES + 1)})
    assert sorted(runners) == list(range(1, ISSUES + 1))
    # 0 doubled on GitHub: what each issue shows matches the database, once
    for issue in shown:
        number, runner = issue["number"], runners[issue["number"]]
        assert runner in {f"agent-{c:02d}" for c in range(CLAIMERS)}
        assert issue["labels"] == ["baton:claimed"], issue
        assert issue["assignees"] == [runner], issue
        ours = [c for c in issue["comments"] if c["login"] == "baton[bot]"]
        assert len([c for c in ours if c["body"].startswith(STATUS_MARKER)]) == 1, ours
        answered = [int(i) for c in ours for found in REPLY_IDS.finditer(c["body"]) for i in found.group(1).split()]
        assert len(answered) == len(set(answered)), ours  # no answer in two replies
        thumbs = [r for r in issue["reactions"] if r["login"] == "baton[bot]"]
        winner = comment_ids[number - 1, int(runner.split("-")[1])]
        assert [(r["comment"], r["content"]) for r in thumbs] == [(winner, "+1")], issue
    # Writes made twice (a process killed after GitHub took a write, before the database recorded it): a 👍
    # posted again (GitHub keeps one), or a comment posted that is not among those GitHub shows.
    thumbs_posted = Counter(w["path"] for w in written if w["path"].endswith("/reactions"))
    comments_posted = Counter(w["issue"] for w in written if w["method"] == "POST" and w["path"].endswith("/comments"))
    comments_kept = {i["number"]: sum(c["login"] == "baton[bot]" for c in i["comments"]) for i in shown}
    repeated = sum(n - 1 for n in thumbs_posted.values()) + sum(
        n - comments_kept.get(number, 0) for number, n in comments_posted.items()
    )
    figure(f"{kills_made} SIGKILLs ({kills['serve']} serve, {kills['worker']} worker), {len(acknowledged)} deliveries "
          f"acknowledged ({untaken} decided on the event loop, untaken), 0 lost, 0 doubled; every issue shown "
          f"right {recovered:.1f} s after the first kill; "
          f"GitHub writes made twice: {repeated}")  # fmt: skip
