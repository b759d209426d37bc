"""Baton and the stand-in GitHub (`github_standin`) on 127.0.0.1, for the projection tests
(tests/system/test_projection.py, tests/system/test_evidence_projection.py): what people do on GitHub, what
GitHub shows, and Baton's outbox.

Baton runs without its background lanes: a delivery is decided right after its answer and the test writes
with `drain()`. What Baton writes comes back to it as webhooks, as from GitHub; `settle()` waits until every
delivery the stand-in sent has been answered and decided."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, select, update

from baton.demo.stage import Stage
from baton.domain import TicketKey
from baton.domain.status import LABELS
from baton.store import tables as t
from github_standin.people import CI, Hub, Person
from github_standin.server import StandIn
from github_standin.world import CheckRun, Comment, Issue, Repository
from support.keys import app_key, app_public_key
from support.local_http import HTTP

BOT = "baton[bot]"


@dataclass
class Scene:
    """Baton and the stand-in GitHub: `octo/shop` (Baton's labels made already) with one issue by olivia."""

    stage: Stage
    number: int
    people: dict[str, Person] = field(default_factory=dict)

    @property
    def app(self) -> Any:
        return self.stage.app

    @property
    def hub(self) -> Hub:
        return self.stage.hub

    @property
    def rest(self) -> StandIn:
        return self.stage.hub.rest

    @property
    def repository(self) -> Repository:
        return self.stage.repository

    @property
    def full_name(self) -> str:
        return self.stage.full_name

    @property
    def issue(self) -> Issue:
        return self.repository.issues[self.number]

    @property
    def key(self) -> TicketKey:
        return TicketKey(self.repository.installation_id, self.repository.id, self.number)

    @property
    def path(self) -> str:
        return f"/repos/{self.full_name}/issues/{self.number}"

    def person(self, login: str) -> Person:
        if login not in self.people:
            kind = "Bot" if login.endswith("[bot]") else "User"
            self.people[login] = (
                self.hub.person(login, kind=kind) if kind == "Bot"
                else self.stage.person(login, "maintain" if login == "maria" else "read")
            )  # fmt: skip
        return self.people[login]

    # -- what people (and other Apps) do on GitHub ---------------------------------------------------

    def comment(
        self, login: str, body: str, *, number: int | None = None, together: threading.Barrier | None = None
    ) -> int:
        """Someone comments; Baton decides the command before the test goes on (unless the comment leaves
        `together` with others, which Baton then decides side by side)."""
        made = self.person(login).comment(self.full_name, number or self.number, body, together=together)
        if together is None:
            self.settle()
        return made

    def label(self, login: str, name: str, added: bool) -> None:
        """Someone changes a label on GitHub: the issue changes, GitHub tells Baton, and Baton decides it."""
        self.person(login).label(self.full_name, self.number, name, add=added)
        self.settle()

    def configure(self, settings: str, by: str = "maria") -> None:
        """Someone pushes `.github/baton.yml` to the default branch: Baton reads it again at the next command."""
        self.person(by).push(self.full_name, self.repository.default_branch, "Baton settings",
                             files={".github/baton.yml": settings})  # fmt: skip
        self.settle()

    def unheard_issue(self, title: str, by: str = "olivia") -> int:
        """An issue GitHub never told Baton about (opened while Baton was not installed, say): it becomes the
        scene's issue."""
        with self.hub.world.lock:
            self.number = self.hub.world.add_issue(self.repository, title, self.hub.world.account(by)).number
        return self.number

    def ci(self) -> CI:
        """GitHub Actions, reporting check runs."""
        return self.hub.ci("GitHub Actions")

    def later(self, minutes: int = 1) -> None:
        """Let time pass on GitHub: what happens next is stamped later than what happened before."""
        with self.hub.world.lock:
            self.hub.world.advance(timedelta(minutes=minutes))

    # -- what GitHub shows ---------------------------------------------------------------------------

    def labels(self) -> set[str]:
        with self.hub.world.lock:
            return set(self.issue.labels)

    def assignees(self) -> list[str]:
        with self.hub.world.lock:
            return list(self.issue.assignees)

    def reactions(self) -> list[tuple[int | None, str]]:
        """(comment id or None for the issue, content), oldest first."""
        with self.hub.world.lock:
            return [(r.comment, r.content) for r in self.repository.reactions.get(self.number, [])]

    def comments(self, by: str = BOT) -> list[Comment]:
        with self.hub.world.lock:
            return [c for c in self.repository.comments.values() if c.issue == self.number and c.user.login == by]

    def status(self) -> str:
        bodies = [c.body for c in self.comments() if c.body.startswith("<!-- baton:status -->")]
        assert len(bodies) == 1, bodies
        return bodies[0]

    def replies(self) -> list[str]:
        return [c.body for c in self.comments() if "<!-- baton:reply" in c.body]

    def writes(self) -> list[str]:
        """Baton's successful changes on GitHub, in order: "METHOD path"."""
        with self.hub.world.lock:
            return [f"{c.method} {c.path}" for c in self.rest.writes()]

    def reads(self) -> list[str]:
        """The paths Baton read (GET), in order."""
        with self.hub.world.lock:
            return [c.path for c in self.rest.calls if c.method == "GET"]

    def check_runs(self) -> list[CheckRun]:
        """Baton's check runs, oldest first."""
        with self.hub.world.lock:
            return [r for r in self.repository.check_runs.values() if r.app_id == self.hub.world.app_id]

    def runs(self, head_sha: str) -> list[tuple[str, str | None, str | None]]:
        """Baton's check runs on a head, oldest first: (status, conclusion, title)."""
        return [(r.status, r.conclusion, r.title) for r in self.check_runs() if r.head_sha == head_sha]

    # -- Baton's side --------------------------------------------------------------------------------

    def tasks(self, **params: str) -> dict[int, dict[str, Any]]:
        """`GET /api/v1/tasks` of the scene's repository as agent-a asks it (`params` added to the query), by
        issue number."""
        token = self.stage.person("agent-a").token()
        answer = HTTP.get(f"{self.stage.baton_url}/api/v1/tasks", params={"repo": self.full_name, **params},
                          headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert answer.status_code == 200, answer.text
        return {task["issue"]: task for task in answer.json()["tasks"]}

    def settle(self, timeout: float = 30.0) -> None:
        """Wait until Baton answered every delivery sent so far (202) and decided it."""
        deadline = time.monotonic() + timeout
        while True:
            with self.hub.world.lock:
                sent = list(self.hub.deliveries)
            if all(d.status is not None for d in sent):
                assert all(d.status == 202 for d in sent), [(d.event, d.status, d.answer) for d in sent]
                deliveries = t.webhook_deliveries
                with self.app.state.work.units.engine.connect() as connection:
                    waiting = connection.execute(
                        select(func.count()).select_from(deliveries)
                        .where(deliveries.c.id.in_([d.id for d in sent]))
                        .where(deliveries.c.status.in_(["pending", "processing"]))
                    ).scalar_one()  # fmt: skip
                if waiting == 0:
                    return
            assert time.monotonic() < deadline, "Baton did not decide every delivery in time"
            time.sleep(0.01)

    def drain(self) -> int:
        self.settle()
        handled = int(self.app.state.writer.drain())
        self.settle()  # what the writes caused GitHub to send back
        return handled

    def drain_until_empty(self, within: float) -> None:
        """Write what falls due, as the lanes would, until the outbox is empty (a retry of a lookup waits its
        time); fails after `within` seconds."""
        self.drain()
        deadline = time.monotonic() + within
        while self.outbox():
            assert time.monotonic() < deadline, f"the outbox still held {self.outbox()} after {within:.0f} s"
            time.sleep(0.1)
            self.drain()

    def due_now(self) -> None:
        """Skip waiting out a retry delay, any pause GitHub asked for, and the write budget's limits."""
        with self.app.state.work.units.engine.begin() as connection:
            connection.execute(update(t.outbox).values(due_at=datetime.now(UTC) - timedelta(seconds=1)))
            connection.execute(update(t.write_budgets).values(paused_until=None, next_at=None))
            connection.execute(delete(t.write_log))  # nor the minute's and the hour's write limits

    def outbox(self) -> list[Any]:
        with self.app.state.work.units.engine.connect() as connection:
            return list(connection.execute(select(t.outbox)).all())

    def unsent(self) -> int:
        with self.app.state.work.units.engine.connect() as connection:
            query = select(func.count()).select_from(t.outbox_items).where(t.outbox_items.c.sent_at.is_(None))
            return int(connection.execute(query).scalar_one())


@pytest.fixture
def github_timeout() -> float:
    """How long Baton waits for a GitHub call (its default; a test may parametrize it shorter)."""
    return 10.0


@contextmanager
def opened(database_url: str, **settings: Any) -> Iterator[Scene]:
    """A scene; `settings` override Baton's."""
    options: dict[str, Any] = {"answer_delay": 0, "write_interval": 0, "lanes": False, **settings}
    with Stage.open(database_url, key=(app_key(), app_public_key()), **options) as stage:
        with stage.hub.world.lock:
            for name, (colour, description) in LABELS.items():
                stage.hub.world.create_label(stage.repository, name, colour, description)
        scene = Scene(stage, 0)
        scene.number = scene.person("olivia").open_issue(stage.full_name, "Empty state for the cart")
        yield scene
        assert stage.hub.all_problems() == []


@pytest.fixture
def scene(database_url: str, github_timeout: float) -> Iterator[Scene]:
    with opened(database_url, github_timeout=github_timeout) as made:
        made.settle()
        yield made


def scene_with(**settings: Any) -> Any:
    """A module's `scene` fixture whose Baton runs with `settings` (as `opened` takes them), settled, on each
    database: `scene = scene_with(api_token=TOKEN)`."""

    @pytest.fixture
    def scene(database_url: str) -> Iterator[Scene]:
        with opened(database_url, **settings) as made:
            made.settle()
            yield made

    return scene
