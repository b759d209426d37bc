"""Baton's app in-process with its lanes off, a fake directory of permissions standing in for GitHub's, and a
hub that signs hooks, posts them to the app and reads back what the app stored; with the signed
comment webhooks the webhook tests send it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import func, select

from baton.domain import Access, Permission, TicketKey
from baton.domain.evidence import EvidenceRail
from baton.environment.clock import SYSTEM, Clock
from baton.environment.settings import Settings
from baton.github.configs import DefaultConfigs
from baton.github.webhooks import signature
from baton.intake import Configs, DirectoryUnavailable
from baton.store import tables as t
from baton.web import create_app
from support.keys import app_key
from support.payloads import Repo
from support.read_api import AUTH

SECRET = "It's a Secret to Everybody"
APP_ID = 4711
INSTALLATION, REPOSITORY_ID, REPOSITORY = 99, 1296269, "octo/shop"
WORK_TABLES = (t.tickets, t.attempts, t.deliveries, t.reviews, t.events, t.operations)
EVIDENCE_REPO = Repo()  # where the evidence helpers' comments go unless a test names another repository


@dataclass
class FakeDirectory:
    """Baton's `Directory` as a test sets it: each login's permission (READ for anyone not named) and each
    team's members ("org/team-slug"). `down` makes every lookup fail as if GitHub were unreachable (a retry
    can mend it); `broken` makes every lookup fail with an error no retry mends. `asked` lists the logins
    looked up, in order."""

    permissions: dict[str, Permission] = field(default_factory=dict)
    teams: dict[str, set[str]] = field(default_factory=dict)
    down: bool = False
    broken: bool = False
    asked: list[str] = field(default_factory=list)

    def access(self, installation_id: int, repository: str, login: str) -> Access:
        self.asked.append(login)
        if self.broken:
            raise KeyError("permission")
        if self.down:
            raise DirectoryUnavailable("GitHub did not answer")
        permission = self.permissions.get(login, Permission.READ)
        return Access(permission, permission.value, collaborator=permission is not Permission.NONE)

    def member(self, installation_id: int, team: str, login: str) -> bool:
        return login in self.teams.get(team, set())


@dataclass
class Hub:
    """A test's GitHub side of the webhooks: it signs and posts hooks to `app` (numbered `delivery-1`,
    `delivery-2`, ... unless the test names them) and reads back what the app stored. `utf8` sends payloads'
    text as UTF-8, as GitHub does, instead of JSON's \\u escapes."""

    client: TestClient
    directory: FakeDirectory
    app: Any
    sent: int = 0
    utf8: bool = False

    def post(self, event: str, payload: Any, hook: str | None = None, **headers: str) -> Any:
        """The app's answer to the hook (`payload` as bytes is sent as it is)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=not self.utf8).encode()
        self.sent += 1
        sent_headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": hook or f"delivery-{self.sent}",
            "X-Hub-Signature-256": signature(SECRET.encode(), body),
            "Content-Type": "application/json",
        }
        sent_headers.update(headers)
        return self.client.post("/webhooks/github", content=body, headers=sent_headers)

    def send(self, event: str, payload: Any, hook: str | None = None) -> str:
        """Post the hook, which the app must take (202); its id."""
        response = self.post(event, payload, hook)
        assert response.status_code == 202, response.text
        return str(response.request.headers["X-GitHub-Delivery"])

    def decide(self, event: str, payload: Any, hook: str | None = None) -> str:
        """Send the hook, which the app must decide at once (`done` or `ignored`); its id."""
        hook = self.send(event, payload, hook)
        assert self.status(hook) in ("done", "ignored"), hook
        return hook

    def _connect(self) -> Any:
        return self.app.state.work.units.engine.connect()

    def count(self, table: Any) -> int:
        with self._connect() as connection:
            return int(connection.execute(select(func.count()).select_from(table)).scalar_one())

    def rows(self, table: Any) -> list[tuple[Any, ...]]:
        with self._connect() as connection:
            return [tuple(row) for row in connection.execute(select(table).order_by(*table.primary_key.columns))]

    def work(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of the work tables, which evidence must never change."""
        return {table.name: self.rows(table) for table in WORK_TABLES}

    def inbox(self, hook: str) -> tuple[str, int, str | None]:
        """The hook's status, attempts and error in the inbox."""
        c = t.webhook_deliveries.c
        with self._connect() as connection:
            row = connection.execute(select(c.status, c.attempts, c.error).where(c.id == hook)).one()
        return row.status, row.attempts, row.error

    def status(self, hook: str) -> str:
        return self.inbox(hook)[0]

    def statuses(self) -> set[str]:
        """The statuses of every hook in the inbox."""
        with self._connect() as connection:
            c = t.webhook_deliveries.c
            return set(connection.execute(select(c.status).group_by(c.status)).scalars())

    def due(self) -> set[int]:
        """The issue numbers with writes waiting in the outbox."""
        return {row[2] for row in self.rows(t.outbox)}

    def ticket(self, number: int) -> Any:
        return self.app.state.work.ticket(TicketKey(INSTALLATION, REPOSITORY_ID, number))

    # The evidence tests' comments and reads, on a `support.payloads.Repo`

    def comment(self, login: str, body: str, number: int = 42, repo: Repo = EVIDENCE_REPO) -> None:
        self.sent += 1
        self.decide("issue_comment", repo.comment(login, body, number=number, comment_id=self.sent))

    def claim(self, number: int = 42, runner: str = "agent-a", repo: Repo = EVIDENCE_REPO) -> None:
        self.comment(runner, "/claim", number, repo)

    def deliver(self, text: str, number: int = 42, runner: str = "agent-a", repo: Repo = EVIDENCE_REPO) -> None:
        self.comment(runner, f"/deliver {text}", number, repo)

    def rail(self, number: int = 42, repo: Repo = EVIDENCE_REPO) -> EvidenceRail:
        rail: EvidenceRail = self.app.state.work.evidence.rail(TicketKey(repo.installation, repo.repository_id, number))
        return rail

    def api(self, number: int = 42, repo: Repo = EVIDENCE_REPO) -> dict[str, Any]:
        """The issue as the read API answers it."""
        response = self.client.get(f"/api/v1/repos/{repo.name}/issues/{number}", headers=AUTH)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def evidence_events(self, number: int = 42, repo: Repo = EVIDENCE_REPO) -> list[str]:
        key = TicketKey(repo.installation, repo.repository_id, number)
        return [event["type"] for event in self.app.state.work.evidence.reads.events(key)]


def settings(database_url: str, *, credentials: bool = True, token: str | None = None) -> Settings:
    """Baton's settings on the test's database, with the hub's secret; with `credentials`, an App's id and key
    (no GitHub answers them: the fake directory stands in); with `token`, the read API open to it."""
    chosen: dict[str, Any] = {"database_url": database_url, "webhook_secret": SecretStr(SECRET)}
    if credentials:
        chosen.update(app_id=APP_ID, private_key=SecretStr(app_key()))
    if token is not None:
        chosen["api_token"] = SecretStr(token)
    return Settings(**chosen)


@contextmanager
def open_hub(
    settings: Settings,
    directory: FakeDirectory | None = None,
    *,
    configs: Configs | None = None,
    lanes: bool = False,
    clock: Clock = SYSTEM,
    raise_server_exceptions: bool = True,
    utf8: bool = False,
) -> Iterator[Hub]:
    """The app on `settings` with `directory` (everyone reads when none is given) and `configs` (the
    defaults), its lanes off unless `lanes`, and a hub posting to it."""
    directory = FakeDirectory() if directory is None else directory
    app = create_app(settings, directory=directory, configs=configs or DefaultConfigs(), lanes=lanes, clock=clock)
    try:
        with TestClient(app, raise_server_exceptions=raise_server_exceptions) as client:
            yield Hub(client, directory, app, utf8=utf8)
    finally:
        app.state.work.units.engine.dispose()


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    with open_hub(settings(database_url), FakeDirectory({"maria": Permission.MAINTAIN})) as made:
        yield made


def comment(login: str, body: str, *, number: int = 42, comment_id: int = 1, on_pr: bool = False,
            via_app: int | None = None) -> dict[str, Any]:  # fmt: skip
    issue: dict[str, Any] = {"number": number, "id": 5000 + number, "user": {"login": "olivia"}, "body": ""}
    if on_pr:
        issue["pull_request"] = {"url": f"https://api.github.com/repos/{REPOSITORY}/pulls/{number}"}
    payload = {
        "action": "created",
        "issue": issue,
        "comment": {"id": comment_id, "body": body, "user": {"login": login, "type": "User"}},
        "repository": {"id": REPOSITORY_ID, "full_name": REPOSITORY},
        "installation": {"id": INSTALLATION},
        "sender": {"login": login, "type": "User"},
    }
    if via_app is not None:
        payload["comment"]["performed_via_github_app"] = {"id": via_app}
    return payload


def pr_comment(login: str, body: str, pr_body: str, *, comment_id: int) -> dict[str, Any]:
    payload = comment(login, body, number=57, comment_id=comment_id, on_pr=True)
    payload["issue"]["body"] = pr_body
    return payload


def replies_on(hub: Hub, number: int) -> list[tuple[str, str]]:
    with hub.app.state.work.units.engine.connect() as connection:
        rows = connection.execute(
            select(t.outbox_items.c.author, t.outbox_items.c.message)
            .where(t.outbox_items.c.number == number, t.outbox_items.c.kind == "reply")
            .order_by(t.outbox_items.c.id)
        ).all()
    return [(row.author, row.message) for row in rows]
