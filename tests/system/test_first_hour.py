"""The first hour of an installation on a repository with a backlog, through the real path: Baton's app and
the stand-in GitHub as HTTP servers on 127.0.0.1, webhooks signed, writes counted on the stand-in.

Offering a backlog takes at most half of any minute's writes (here a budget of 30 a minute, set with
`BATON_WRITES_PER_MINUTE`, so that the share is spent within the test), and claims made meanwhile are
answered at once; an offered issue shows its label only, until a command gives it its status comment;
`/metrics` counts the issues left to offer; `baton backfill` tells its progress.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from baton.demo.stage import Stage
from baton.demo.story import seen
from baton.domain.status import LABELS, STATUS_MARKER
from baton.environment.clock import SYSTEM
from baton.store import make_engine, upgrade
from baton.store.budget import Budgets, Limits
from github_standin import shapes
from github_standin.world import Repository
from support.keys import app_key, app_public_key
from support.local_http import HTTP

PER_MINUTE = 30
SHARE = PER_MINUTE // 2
BACKLOG = 300


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)
    return found


def install_backlog(stage: Stage, issues: int) -> Repository:
    """The App installed on `acme/backlog`, which holds `issues` open issues (and Baton's labels already)."""
    world = stage.hub.world
    with world.lock:
        installation = world.install("acme")
        backlog = world.add_repository(installation, "backlog")
        for name, (colour, description) in LABELS.items():
            world.create_label(backlog, name, colour, description)
        author = world.account("olivia")
        for n in range(issues):
            world.add_issue(backlog, f"Old task {n + 1}", author)
        payload = shapes.installation_event(
            installation.id, world.app, installation.account, world.account("acme-admin"),
            [backlog.shape(stage.github_url)], api_url=stage.github_url,
        )  # fmt: skip
    stage.hub.deliver("installation", payload)
    return backlog


def offering_writes(stage: Stage, backlog: Repository, claimed: set[int]) -> list[float]:
    """When each label was added to an issue nobody claimed (offering's writes), as the stand-in saw them."""
    added = re.compile(rf"^/repos/{backlog.full_name}/issues/(\d+)/labels$")
    with stage.hub.world.lock:
        return [
            call.at
            for call in stage.hub.rest.writes()
            if call.method == "POST" and (m := added.match(call.path)) and int(m.group(1)) not in claimed
        ]


def most_in_a_minute(moments: list[float]) -> int:
    moments = sorted(moments)
    return max((sum(1 for later in moments[i:] if later < start + 60) for i, start in enumerate(moments)), default=0)


def gauges(stage: Stage, installation_id: int) -> dict[str, float]:
    """The installation's gauges, as `/metrics` shows them."""
    answer = HTTP.get(f"{stage.baton_url}/metrics")
    assert answer.status_code == 200, answer.text
    return {
        sample.name: float(sample.value)
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
        if sample.labels == {"installation": str(installation_id)}
    }


def to_offer(stage: Stage, installation_id: int) -> float | None:
    return gauges(stage, installation_id).get("baton_issues_to_offer")


def share_spent(stage: Stage, installation_id: int) -> float | None:
    """Issues left to offer, once every ticket exists and none is due: offering waits for the next minute
    although the budget has room (answers only take the rest)."""
    found = gauges(stage, installation_id)
    left = found.get("baton_issues_to_offer")
    if left is None or left < BACKLOG - SHARE or found.get("baton_outbox_oldest_due_seconds") != 0:
        return None
    return left


@pytest.mark.both_engines
def test_offering_a_backlog_keeps_to_half_the_budget_and_claims_are_answered_first(database_url: str) -> None:
    options = {"write_interval": 0.1, "writes_per_minute": PER_MINUTE}
    with Stage.open(database_url, key=(app_key(), app_public_key()), **options) as stage:
        backlog = install_backlog(stage, BACKLOG)
        installation = backlog.installation_id
        # every issue has its ticket, and offering stops at its share of the minute, half the budget unused
        before = until(lambda: share_spent(stage, installation), 60, "offering to wait for the next minute")
        assert len(offering_writes(stage, backlog, set())) == SHARE

        claims: dict[int, tuple[str, int]] = {}
        for login in ("agent-a", "agent-b", "agent-c"):
            with stage.hub.world.lock:
                backlog.permissions[login] = "write"
                number = next(n for n, issue in sorted(backlog.issues.items()) if not issue.labels and n not in claims)
            claims[number] = (login, stage.hub.person(login).comment(backlog.full_name, number, "/claim"))

        def answered() -> bool:
            for number, (login, comment) in claims.items():
                shown = seen(backlog, number, stage.hub.world.lock)
                if not (
                    "+1" in shown.reactions.get(comment, ())
                    and shown.labels == ("baton:claimed",)
                    and shown.assignees == (login,)
                    and f"Claimed — attempt 1 by @{login}" in (shown.status or "")
                ):
                    return False
            return True

        # the claims are answered in full while offering waits for the next minute
        until(answered, 30, "the claims' 👍, label, assignee and status comment")
        offered = offering_writes(stage, backlog, set(claims))
        assert most_in_a_minute(offered) <= SHARE, offered
        with stage.hub.world.lock:
            labelled = [n for n, issue in backlog.issues.items() if "baton:open" in issue.labels]
            statuses = {c.issue: c.id for c in backlog.comments.values() if c.body.startswith(STATUS_MARKER)}
            edits = [c.path for c in stage.hub.rest.writes() if c.method == "PATCH"]
        assert 0 < len(labelled) < BACKLOG - len(claims)  # offering is far from finished
        # an offered issue shows its label only; a claimed one its status comment, written once with the claim
        assert set(statuses) == set(claims)
        assert not [path for path in edits if path.endswith(tuple(f"/comments/{c}" for c in statuses.values()))]

        after = to_offer(stage, installation)
        assert after is not None and after <= BACKLOG - SHARE - len(claims) < before
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()


def test_baton_backfill_tells_its_progress_a_line_per_hundred_or_a_bar_on_a_terminal(database_url: str) -> None:
    with Stage.open(database_url, key=(app_key(), app_public_key()), lanes=False) as stage:
        world = stage.hub.world
        with world.lock:
            for n in range(250):
                world.add_issue(stage.repository, f"Old task {n + 1}", world.account("olivia"))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
               "BATON_DATABASE_URL": database_url, "BATON_APP_ID": str(stage.settings.app_id),
               "BATON_PRIVATE_KEY": app_key(), "BATON_GITHUB_API_URL": stage.github_url}  # fmt: skip
        command = [sys.executable, "-m", "baton.cli", "backfill", stage.full_name]

        piped = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert piped.returncode == 0, piped.stderr
        assert piped.stderr.splitlines() == [
            "octo/shop: 100 of 250 issues offered", "octo/shop: 200 of 250 issues offered",
            "octo/shop: 250 of 250 issues offered",
        ]  # fmt: skip
        assert piped.stdout.splitlines() == [
            "octo/shop: 250 offered",
            "octo/shop: GitHub shows their labels within offering's share of the write budget (40 a minute, 250 an "
            "hour), in about 6 min; answers to commands go first",
        ]

        # again, its standard error a terminal: one line, drawn again in place (the issues are tracked now)
        terminal, other_end = pty.openpty()
        drawn = bytearray()

        def read() -> None:
            while True:
                try:
                    chunk = os.read(terminal, 65536)
                except OSError:  # the other end is closed and everything was read
                    return
                if not chunk:
                    return
                drawn.extend(chunk)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            on_terminal = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=other_end, timeout=300)
        finally:
            os.close(other_end)
            reader.join(10)
            os.close(terminal)
        assert on_terminal.returncode == 0
        assert on_terminal.stdout.decode() == "octo/shop: 250 already tracked\n"
        text = drawn.decode().replace("\r\n", "\n")  # the terminal's own line ending
        assert text.count("\n") == 1 and text.endswith("\n"), text[-200:]
        frames = text.rstrip("\n").split("\r")
        assert frames[-1] == f"octo/shop [{'#' * 30}] 250/250 issues offered"
        assert f"octo/shop [{'#' * 12}{'.' * 18}] 100/250 issues offered" in frames


def test_offerings_share_is_counted_in_the_database_for_every_process(database_url: str) -> None:
    """Two budgets on one database (two processes): offering writes logged by one hold back the other's,
    while the writes that are not offering's still find room."""
    engine = make_engine(database_url)
    upgrade(engine)
    try:
        limits = Limits(interval=0.0, per_minute=6, per_hour=10)  # offering: 3 a minute, 5 an hour
        one, other = Budgets(engine, limits, SYSTEM), Budgets(engine, limits, SYSTEM)
        now = datetime.now(UTC)
        assert other.slot(7, now, offering=True) == now
        for seconds in (50, 40, 30):
            one.spend(7, now - timedelta(seconds=seconds), offering=True)
        # three offering writes in the last minute: the next one waits until the first is a minute old
        assert abs((other.slot(7, now, offering=True) - (now + timedelta(seconds=10))).total_seconds()) < 0.01
        assert other.slot(7, now) == now  # an answer goes at once
        for minutes in (58, 57):
            one.spend(7, now - timedelta(minutes=minutes), offering=True)
        # five offering writes in the hour: the next waits until the oldest of them is an hour old
        assert abs((other.slot(7, now, offering=True) - (now + timedelta(minutes=2))).total_seconds()) < 0.01
        assert other.slot(7, now) == now  # five of the hour's ten writes are left for the rest
        assert other.slot(8, now, offering=True) == now  # another installation's share is its own
    finally:
        engine.dispose()
