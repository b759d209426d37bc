"""Missed deliveries come back (`baton.service.redelivery`): the sweep reads the App's webhook delivery log on
the stand-in GitHub over HTTP, with the App's JWT, and asks for each failed delivery Baton never stored, once.

Baton "is down" for the stand-in while its webhooks go to a port nothing listens on: they fail as GitHub's
would (connection refused, `status_code` 0) and are logged as failed. The last test runs a real `baton serve`
process, stops it in the middle of a burst of commands and starts it again, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, insert, select, update

from baton.demo.stage import APP_ID as STAGE_APP_ID
from baton.demo.stage import Stage
from baton.environment.settings import Settings
from baton.github import hooks as github_hooks
from baton.process.wiring import assemble
from baton.service.redelivery import MAX_ASKS, Redelivery, Swept
from baton.store import normalise_url
from baton.store import tables as t
from baton.store.redeliveries import STALE
from bench.webhook_race import free_port, wait_for
from github_standin import shapes
from github_standin.people import Hub
from github_standin.server import Fault
from github_standin.serving import Served
from github_standin.world import Repository, World
from support.keys import app_key, app_public_key
from support.lanes import open_stage, until
from support.local_http import HTTP
from support.processes import stop

pytestmark = pytest.mark.both_engines  # by default on both databases: stopping and restarting in a burst

SHOP = "octo/shop"
ATTEMPTS = r"^/app/hook/deliveries/[0-9]+/attempts$"


@pytest.fixture
def stage(database_url: str) -> Iterator[Stage]:
    """Baton and the stand-in without lanes: a delivery is decided as it is answered, the test sweeps."""
    with open_stage(database_url, lanes=False) as opened:
        yield opened
        assert opened.hub.all_problems() == []
    opened.app.state.work.units.engine.dispose()


@contextmanager
def baton_down(stage: Stage) -> Iterator[None]:
    """Webhooks sent in the block find nobody listening."""
    url = stage.hub.hook_url
    stage.hub.hook_url = f"http://127.0.0.1:{free_port()}/webhooks/github"
    try:
        yield
    finally:
        stage.hub.hook_url = url


def redelivery(stage: Stage) -> Redelivery:
    found = stage.app.state.parts.redelivery
    assert isinstance(found, Redelivery)
    return found


def another_process(stage: Stage) -> Redelivery:
    """The sweep of a second Baton process on the same database and GitHub."""
    parts = assemble(stage.settings, migrate=False)
    assert parts.redelivery is not None
    return parts.redelivery


def asks(stage: Stage) -> list[int]:
    """The entries Baton asked the stand-in to redeliver (the calls GitHub took)."""
    ids = [c.path.split("/")[4] for c in stage.hub.rest.calls if c.method == "POST" and "/attempts" in c.path]
    return [int(i) for i in ids]


def stored(stage: Stage, guid: str) -> str | None:
    with stage.app.state.work.units.engine.connect() as connection:
        row = connection.execute(select(t.webhook_deliveries.c.status).where(t.webhook_deliveries.c.id == guid)).first()
    return None if row is None else str(row.status)


def claims(stage: Stage, count: int) -> list[tuple[str, int]]:
    """`count` agents each claim an issue of their own: (the agent, the issue)."""
    maria = stage.person("maria", "maintain")
    made = []
    for n in range(count):
        made.append((stage.person(f"agent-{n}", "write").login, maria.open_issue(SHOP, f"Task {n}")))
    return made


def claimed(stage: Stage) -> Counter[tuple[str, int]]:
    """Each `claimed` event in Baton's history: (who, which issue)."""
    with stage.app.state.work.units.engine.connect() as connection:
        rows = connection.execute(
            select(t.events.c.actor, t.tickets.c.number)
            .join(t.tickets, t.tickets.c.id == t.events.c.ticket_id)
            .where(t.events.c.type == "claimed")
        ).all()
    return Counter((row.actor, row.number) for row in rows)


def settle(stage: Stage, guids: list[str]) -> None:
    """Wait (bounded) until Baton decided every one of `guids`; the stand-in sends redeliveries from its line."""
    until(lambda: all(stored(stage, guid) in ("done", "ignored") for guid in guids), 20, "the redeliveries")


def test_a_failed_delivery_is_asked_for_once_across_two_sweeps_and_two_processes(stage: Stage) -> None:
    made = claims(stage, 3)
    with baton_down(stage):
        for login, number in made:
            stage.hub.person(login).comment(SHOP, number, "/claim")
    missed = stage.hub.deliveries[-3:]
    assert [d.status for d in missed] == [0, 0, 0]
    failed = {entry.guid: entry.id for entry in stage.hub.hooks.failed()}
    assert set(failed) == {d.id for d in missed}
    ours, theirs = redelivery(stage), another_process(stage)

    # While GitHub holds its redeliveries back, its log shows the same failures to every sweep.
    with stage.hub.held():
        together = threading.Barrier(2)
        results: list[Swept] = []

        def sweep(sweeper: Redelivery) -> None:
            together.wait()
            results.append(sweeper.sweep())

        threads = [threading.Thread(target=sweep, args=(s,)) for s in (ours, theirs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sum(r.asked for r in results) == 3
        assert ours.sweep().asked == theirs.sweep().asked == 0
    assert sorted(asks(stage)) == sorted(failed.values())

    settle(stage, list(failed))
    assert claimed(stage) == Counter(made)  # each claim decided once
    again = [entry for entry in stage.hub.hooks.entries if entry.redelivery]
    assert sorted(entry.guid for entry in again) == sorted(failed) and not any(e.failed for e in again)
    assert ours.sweep().asked == theirs.sweep().asked == 0
    assert len(asks(stage)) == 3
    theirs.store.engine.dispose()


def test_a_delivery_baton_stored_and_one_older_than_72_hours_are_not_asked_for(stage: Stage) -> None:
    (old_login, old_number), (late_login, late_number), (lost_login, lost_number) = claims(stage, 3)
    with baton_down(stage):
        stage.hub.person(old_login).comment(SHOP, old_number, "/claim")
    old = stage.hub.hooks.entries[-1]
    stage.hub.person(late_login).comment(SHOP, late_number, "/claim")
    late = stage.hub.hooks.entries[-1]
    with baton_down(stage):
        stage.hub.person(lost_login).comment(SHOP, lost_number, "/claim")
    lost = stage.hub.hooks.entries[-1]
    with stage.hub.world.lock:
        # Baton stored `late` but answered after GitHub stopped waiting: GitHub logs a timeout.
        late.status, late.status_code = "timed out", 0
        # `old` and everything before it happened three days and an hour ago.
        for entry in stage.hub.hooks.entries[: stage.hub.hooks.entries.index(old) + 1]:
            entry.delivered_at -= timedelta(hours=73)
    settle(stage, [late.guid])
    assert stored(stage, old.guid) is None and stored(stage, lost.guid) is None

    swept = redelivery(stage).sweep()
    assert swept.asked == 1 and asks(stage) == [lost.id]
    settle(stage, [lost.guid])
    assert claimed(stage) == Counter({(late_login, late_number): 1, (lost_login, lost_number): 1})


def test_pages_of_the_log_are_followed_back_to_the_oldest_failure(
    stage: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = claims(stage, 5)
    with baton_down(stage):
        for login, number in made:
            stage.hub.person(login).comment(SHOP, number, "/claim")
    for login, number in made[:2]:  # newer than the failures: successful comments on top of the log
        stage.hub.person(login).comment(SHOP, number, "Working on it")
    monkeypatch.setattr(github_hooks, "PAGE", 2)  # pages of 2, so 5 failures and what came after span several

    assert redelivery(stage).sweep().asked == 5
    listed = [c for c in stage.hub.rest.calls if c.method == "GET" and c.path == "/app/hook/deliveries"]
    assert len(listed) >= 4 and all(c.status == 200 for c in listed)
    settle(stage, [d.guid for d in stage.hub.hooks.failed()])
    assert claimed(stage) == Counter(made)


@pytest.mark.parametrize("status", [502, 403])
def test_github_failing_the_list_is_logged_once_and_the_next_sweep_tries_again(
    stage: Stage, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    ((login, number),) = claims(stage, 1)
    with baton_down(stage):
        stage.hub.person(login).comment(SHOP, number, "/claim")
    message = "Resource not accessible by integration" if status == 403 else None
    stage.hub.rest.inject(Fault("GET", r"^/app/hook/deliveries$", status=status, times=2, message=message))
    sweeper = redelivery(stage)
    with caplog.at_level(logging.INFO, logger="baton"):
        assert sweeper.sweep().failed and sweeper.sweep().failed  # the lane goes on; nothing asked
        assert asks(stage) == []
        assert sweeper.sweep().asked == 1
    said = [r.getMessage() for r in caplog.records if r.name == "baton.redelivery" and r.levelno >= logging.WARNING]
    assert said == [
        f"could not read the App's webhook deliveries (GET /app/hook/deliveries answered {status} "
        f"({message or 'Server Error'})); the next sweep tries again",
        "GitHub's webhook delivery log answers again",
    ]
    assert app_key().splitlines()[1] not in caplog.text
    settle(stage, [stage.hub.deliveries[-1].id])
    assert claimed(stage) == Counter({(login, number): 1})


def test_a_redelivery_github_fails_is_asked_for_again_and_one_it_refuses_is_not(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    (first_login, first), (second_login, second) = claims(stage, 2)
    with baton_down(stage):
        stage.hub.person(first_login).comment(SHOP, first, "/claim")
        stage.hub.person(second_login).comment(SHOP, second, "/claim")
    failing, refusing = stage.hub.hooks.failed()[-2:]
    stage.hub.rest.inject(Fault("POST", rf"^/app/hook/deliveries/{failing.id}/attempts$", status=500))
    stage.hub.rest.inject(Fault("POST", rf"^/app/hook/deliveries/{refusing.id}/attempts$", status=422))
    sweeper = redelivery(stage)
    with caplog.at_level(logging.WARNING, logger="baton"):
        assert sweeper.sweep().failed  # GitHub failed the first: the rest waits for the next sweep
        assert sweeper.sweep().asked == 1
    assert asks(stage) == [failing.id, failing.id, refusing.id]
    assert [c.status for c in stage.hub.rest.calls if c.method == "POST" and "/attempts" in c.path] == [500, 202, 422]
    assert sweeper.sweep().asked == 0 and len(asks(stage)) == 3
    settle(stage, [failing.guid])
    assert claimed(stage) == Counter({(first_login, first): 1})


def test_an_event_baton_keeps_failing_is_asked_for_at_most_a_few_times(stage: Stage) -> None:
    ((login, number),) = claims(stage, 1)
    sweeper = redelivery(stage)
    with baton_down(stage):
        stage.hub.person(login).comment(SHOP, number, "/claim")
        for _ in range(MAX_ASKS + 1):
            sweeper.sweep()
            # the redelivery fails too (Baton is still away); wait for it to be logged
            until(lambda: len(stage.hub.hooks.failed()) == 1 + len(asks(stage)), 10, "the redelivery")
    assert len(asks(stage)) == MAX_ASKS
    assert len({entry.guid for entry in stage.hub.hooks.failed()}) == 1


def test_the_sweep_uses_only_the_apps_jwt(stage: Stage) -> None:
    ((login, number),) = claims(stage, 1)
    with baton_down(stage):
        stage.hub.person(login).comment(SHOP, number, "/claim")
    assert redelivery(stage).sweep().asked == 1
    theirs = [c for c in stage.hub.rest.calls if c.path.startswith("/app/hook/")]
    assert [(c.method, c.status, c.installation) for c in theirs] == [("GET", 200, None), ("POST", 202, None)]

    # The stand-in, as GitHub, refuses the log to an installation token.
    token = HTTP.post(f"{stage.github_url}/app/installations/{stage.repository.installation_id}/access_tokens",
                      headers=_jwt(stage)).json()["token"]  # fmt: skip
    for headers in ({"Authorization": f"token {token}"}, {}):
        answer = HTTP.get(f"{stage.github_url}/app/hook/deliveries", headers=headers)
        assert answer.status_code == 401, answer.text


def _jwt(stage: Stage) -> dict[str, Any]:
    import time

    import jwt

    now = int(time.time())
    claims_ = {"iat": now - 60, "exp": now + 540, "iss": str(stage.settings.app_id)}
    return {"Authorization": f"Bearer {jwt.encode(claims_, app_key(), algorithm='RS256')}"}


def test_the_stand_ins_log_pages_with_a_cursor_and_redelivers_the_same_webhook(stage: Stage) -> None:
    ((login, number),) = claims(stage, 1)
    stage.hub.person(login).comment(SHOP, number, "hello")
    sent = stage.hub.deliveries[-1]
    headers = _jwt(stage)
    seen: list[dict[str, Any]] = []
    url: str | None = f"{stage.github_url}/app/hook/deliveries?per_page=2"
    while url:
        answer = HTTP.get(url, headers=headers)
        assert answer.status_code == 200
        seen += answer.json()
        url = answer.links.get("next", {}).get("url")
    assert [entry["id"] for entry in seen] == [entry.id for entry in reversed(stage.hub.hooks.entries)]
    newest = seen[0]
    assert newest["guid"] == sent.id and newest["event"] == "issue_comment" and newest["action"] == "created"
    assert newest["status_code"] == 202 and newest["status"] == "OK" and newest["redelivery"] is False
    assert newest["repository_id"] == stage.repository.id
    assert newest["installation_id"] == stage.repository.installation_id

    asked = HTTP.post(f"{stage.github_url}/app/hook/deliveries/{newest['id']}/attempts", headers=headers)
    assert asked.status_code == 202 and asked.json() == {}
    until(lambda: stage.hub.hooks.entries[-1].redelivery, 10, "the redelivery")
    again = stage.hub.hooks.entries[-1]
    assert (again.guid, again.body, again.status_code) == (sent.id, sent.body, 202)
    assert stored(stage, sent.id) == "done"  # one delivery in Baton's inbox, not two
    missing = HTTP.post(f"{stage.github_url}/app/hook/deliveries/1/attempts", headers=headers)
    assert missing.status_code == 404 and missing.json()["message"] == "Not Found"


# -- end to end: `baton serve` stopped in the middle of a burst of commands -----------------------------------

REPLY_IDS = re.compile(r"<!-- baton:reply (\d+(?: \d+)*) -->")
ISSUES, AGENTS = 3, 3  # each agent may hold 3 claims: every claim is a race, never a refusal for the limit


class Baton:
    """`baton serve` in a process of its own, stopped (SIGTERM) and started again on the same port."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder, self.port = env, folder, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = open(self.folder / f"serve-{self.starts}.log", "wb")  # noqa: SIM115
        command = [sys.executable, "-m", "baton.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        self.process = subprocess.Popen(command, env=self.env, cwd=self.folder, stdout=log, stderr=subprocess.STDOUT)
        wait_for(f"{self.url}/healthz", self.process, self.folder / f"serve-{self.starts}.log")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None


def shown(repository: Repository) -> tuple[Counter[int], Counter[int]]:
    """Baton's answers as GitHub shows them: its 👍 per comment, and each answer's id in its replies."""
    thumbs: Counter[int] = Counter()
    for reactions in repository.reactions.values():
        thumbs.update(r.comment for r in reactions if r.user.login == "baton[bot]" and r.comment is not None)
    replies: Counter[int] = Counter()
    for comment in repository.comments.values():
        if comment.user.login == "baton[bot]":
            for found in REPLY_IDS.finditer(comment.body):
                replies.update(int(i) for i in found.group(1).split())
    return thumbs, replies


def test_baton_stopped_in_a_burst_of_commands_decides_every_command_once_after_it_starts_again(
    database_url: str, tmp_path: Path
) -> None:
    """BATON_REDELIVER_EVERY stays at its default (300 s): the sweep Baton makes as it starts brings back what
    GitHub failed to deliver while it was down."""
    world = World(STAGE_APP_ID, app_public_key())
    with world.lock:
        installation = world.install("octo")
        repository = world.add_repository(installation, "shop")
        repository.permissions.update({"maria": "maintain", **{f"agent-{n}": "write" for n in range(AGENTS)}})
    hub = Hub.checked(world, "webhook-secret")
    with ExitStack() as stack:
        stack.callback(hub.close)
        github = stack.enter_context(Served(hub.rest.app))
        hub.api_url = github.url
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
               "BATON_DATABASE_URL": database_url, "BATON_WEBHOOK_SECRET": "webhook-secret",
               "BATON_APP_ID": str(STAGE_APP_ID), "BATON_PRIVATE_KEY": app_key(), "BATON_GITHUB_API_URL": github.url,
               "BATON_ANSWER_DELAY": "0.3", "BATON_WRITE_INTERVAL": "0",
               "BATON_WRITES_PER_MINUTE": "1000", "BATON_SPOOL_DIR": str(tmp_path / "spool")}  # fmt: skip
        baton = Baton(env, tmp_path)
        stack.callback(baton.stop)
        baton.start()
        hub.hook_url = f"{baton.url}/webhooks/github"
        with world.lock:
            installed = shapes.installation_event(installation.id, world.app, installation.account,
                                                  world.account("octo-admin"), [repository.shape(github.url)],
                                                  api_url=github.url)  # fmt: skip
        hub.deliver("installation", installed)
        maria = hub.person("maria")
        numbers = [maria.open_issue(SHOP, f"Task {n}") for n in range(ISSUES)]

        # Every agent claims every issue, and maria asks for help on each: 12 commands, one after another;
        # Baton stops after the 4th and starts again after the 9th.
        burst = [(f"agent-{a}", number, "/claim") for a in range(AGENTS) for number in numbers]
        burst += [("maria", number, "/help") for number in numbers]
        comments: list[int] = []
        for n, (login, number, body) in enumerate(burst):
            if n == 4:
                baton.stop()
            if n == 9:
                baton.start()
            comments.append(hub.person(login).comment(SHOP, number, body))
        missed = {d.id for d in hub.deliveries if d.status == 0}
        assert len(missed) >= 5  # the commands sent while Baton was down, and whatever else GitHub sent then

        engine = create_engine(normalise_url(database_url))
        stack.callback(engine.dispose)
        answers = t.outbox_items.c

        def answered() -> bool:
            with engine.connect() as connection:
                sent = connection.execute(
                    select(answers.comment_id).where(answers.sent_at.is_not(None), answers.dropped.is_(None))
                ).scalars()
                return set(comments) <= set(sent)

        def written() -> bool:
            with engine.connect() as connection:
                return connection.execute(select(t.outbox.c.number)).first() is None

        until(answered, 60, "every command to be answered on GitHub")
        until(written, 30, "the last writes")
        baton.stop()  # nothing more is decided or written: what GitHub shows now is final
        with world.lock:
            thumbs, replies = shown(repository)
            again = Counter(e.guid for e in hub.hooks.entries if e.redelivery)
            failed_again = [e for e in hub.hooks.entries if e.redelivery and e.failed]
        with engine.connect() as connection:
            items = connection.execute(select(answers.id, answers.comment_id, answers.kind)).all()
            claims_made = Counter(
                number for (number,) in connection.execute(
                    select(t.tickets.c.number).join(t.events, t.events.c.ticket_id == t.tickets.c.id)
                    .where(t.events.c.type == "claimed"))
            )  # fmt: skip
            runners = dict(connection.execute(select(t.tickets.c.number, t.tickets.c.runner)).all())
            undecided = connection.execute(
                select(t.webhook_deliveries.c.id).where(t.webhook_deliveries.c.status.not_in(("done", "ignored")))
            ).all()

    # Each command decided once: one answer each, shown once on GitHub (a 👍, or in one reply).
    assert Counter(item.comment_id for item in items) == Counter(comments)
    assert thumbs == Counter(item.comment_id for item in items if item.kind == "reaction")
    assert replies == Counter(item.id for item in items if item.kind == "reply")
    assert claims_made == Counter({number: 1 for number in numbers})  # one claim won per issue, none doubled
    assert sorted(runners) == numbers and set(runners.values()) <= {f"agent-{a}" for a in range(AGENTS)}
    assert again == Counter({guid: 1 for guid in missed}) and failed_again == []  # each asked for once
    assert undecided == []
    assert hub.all_problems() == []


def test_an_entry_a_dead_process_was_asking_for_is_taken_over_and_none_is_asked_while_the_sweep_is_off(
    stage: Stage, database_url: str
) -> None:
    ((login, number),) = claims(stage, 1)
    with baton_down(stage):
        stage.hub.person(login).comment(SHOP, number, "/claim")
    (entry,) = stage.hub.hooks.failed()
    engine = stage.app.state.work.units.engine
    with engine.begin() as connection:  # a process took the entry, then died before GitHub answered it
        connection.execute(insert(t.redeliveries).values(delivery_id=entry.id, guid=entry.guid, event=entry.event,
                                                         status="asking", asked_at=datetime.now(UTC)))  # fmt: skip
    assert redelivery(stage).sweep().asked == 0  # someone is asking for it right now
    with engine.begin() as connection:
        connection.execute(update(t.redeliveries).values(asked_at=datetime.now(UTC) - STALE - timedelta(seconds=1)))
    assert redelivery(stage).sweep().asked == 1 and asks(stage) == [entry.id]
    settle(stage, [entry.guid])

    off = assemble(stage.settings.model_copy(update={"redeliver_every": 0.0}), migrate=False)
    assert off.redelivery is None  # BATON_REDELIVER_EVERY=0: no lane, nothing asked
    off.engine.dispose()
    without_app = assemble(Settings(database_url=database_url), migrate=False)
    assert without_app.redelivery is None  # no App, no log to read
    without_app.engine.dispose()


def test_the_stand_ins_log_filters_by_outcome(stage: Stage) -> None:
    ((login, number),) = claims(stage, 1)
    with baton_down(stage):
        stage.hub.person(login).comment(SHOP, number, "/claim")
    with stage.hub.world.lock:
        stage.hub.hooks.entries[-1].status_code = 503  # as if Baton had answered 503
    listed = {
        outcome: [e["status_code"] for e in HTTP.get(f"{stage.github_url}/app/hook/deliveries",
                                                       params={"status": outcome}, headers=_jwt(stage)).json()]
        for outcome in ("success", "failure")
    }  # fmt: skip
    assert listed["failure"] == [503] and listed["success"] and set(listed["success"]) == {202}
