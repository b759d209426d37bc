"""Baton's app in-process with its lanes off and a fake directory of permissions, and the signed
comment webhooks the webhook tests send it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import func, select

from baton.domain import Access, Permission, TicketKey
from baton.environment.settings import Settings
from baton.github.configs import DefaultConfigs
from baton.github.webhooks import signature
from baton.intake import DirectoryUnavailable
from baton.store import tables as t
from baton.web import create_app
from support.keys import app_key

SECRET = "It's a Secret to Everybody"
APP_ID = 4711
INSTALLATION, REPOSITORY_ID, REPOSITORY = 99, 1296269, "octo/shop"


@dataclass
class FakeDirectory:
    """Permissions as a test sets them; `down` makes every lookup fail as if GitHub were unreachable."""

    permissions: dict[str, Permission] = field(default_factory=dict)
    down: bool = False
    asked: list[str] = field(default_factory=list)

    def access(self, installation_id: int, repository: str, login: str) -> Access:
        self.asked.append(login)
        if self.down:
            raise DirectoryUnavailable("GitHub did not answer")
        permission = self.permissions.get(login, Permission.READ)
        return Access(permission, permission.value, collaborator=permission is not Permission.NONE)

    def member(self, installation_id: int, team: str, login: str) -> bool:
        return False


@dataclass
class Hub:
    client: TestClient
    directory: FakeDirectory
    app: Any
    sent: int = 0

    def post(self, event: str, payload: Any, *, delivery: str | None = None, **headers: str) -> Any:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.sent += 1
        sent_headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or f"delivery-{self.sent}",
            "X-Hub-Signature-256": signature(SECRET.encode(), body),
            "Content-Type": "application/json",
        }
        sent_headers.update(headers)
        return self.client.post("/webhooks/github", content=body, headers=sent_headers)

    def count(self, table: Any) -> int:
        with self.app.state.work.units.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(table)).scalar_one())

    def inbox(self, delivery: str) -> tuple[str, int, str | None]:
        with self.app.state.work.units.engine.connect() as connection:
            row = connection.execute(
                select(
                    t.webhook_deliveries.c.status, t.webhook_deliveries.c.attempts, t.webhook_deliveries.c.error
                ).where(t.webhook_deliveries.c.id == delivery)
            ).one()
        return row.status, row.attempts, row.error

    def ticket(self, number: int) -> Any:
        return self.app.state.work.ticket(TicketKey(INSTALLATION, REPOSITORY_ID, number))


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    directory = FakeDirectory({"maria": Permission.MAINTAIN})
    settings = Settings(
        database_url=database_url, webhook_secret=SecretStr(SECRET), app_id=APP_ID, private_key=SecretStr(app_key())
    )
    app = create_app(settings, directory=directory, configs=DefaultConfigs(), lanes=False)
    with TestClient(app) as client:
        yield Hub(client, directory, app)
    app.state.work.units.engine.dispose()


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
