"""The respx fake of GitHub the evidence-projection tests (tests/test_evidence_projection.py) still run on:
one repository with one issue, its pull requests, branches, comparisons and check runs, and faults.

The other projection tests (tests/test_projection.py) run on the stand-in GitHub (`github_standin`); these
move there once it has what they need of GitHub (branch protection with required checks, other apps' check
runs as webhooks, commits with the ids a test chooses), and this module goes."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import respx
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import func, select, update

from baton.domain.status import LABELS
from baton.github.webhooks import signature
from baton.settings import Settings
from baton.store import tables as t
from baton.web import create_app
from keys import app_key

API = "https://github.example.test/api/v3"
SECRET = "webhook-secret"
INSTALLATION, REPOSITORY_ID, NUMBER = 99, 7, 42
ISSUE = f"/repos/octo/shop/issues/{NUMBER}"


@dataclass
class FakeGitHub:
    """One repository with one issue, as much of GitHub as the worker touches."""

    repo_labels: set[str] = field(default_factory=lambda: set(LABELS))
    labels: set[str] = field(default_factory=set)
    assignees: list[str] = field(default_factory=list)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    reactions: list[tuple[int | None, str]] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    faults: dict[str, list[Any]] = field(default_factory=dict)  # "METHOD path-regex" -> answers to give first
    # what the evidence rail asks about, and Baton's check runs
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    branches: dict[str, dict[str, Any]] = field(default_factory=dict)
    comparisons: dict[str, str] = field(default_factory=dict)  # "base...head" -> status
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    next_id: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fault(self, request: httpx.Request) -> httpx.Response | None:
        for pattern, answers in self.faults.items():
            method, path = pattern.split(" ", 1)
            if request.method == method and re.fullmatch(path, request.url.path.removeprefix("/api/v3")) and answers:
                answer = answers.pop(0)
                if isinstance(answer, Exception):
                    raise answer
                return answer  # type: ignore[no-any-return]
        return None

    def comment_json(self, comment: dict[str, Any]) -> dict[str, Any]:
        return {**comment, "user": {"login": "baton[bot]", "id": 1, "type": "Bot"}, "html_url": "", "url": "",
                "issue_url": "", "node_id": "x", "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z", "author_association": "NONE"}  # fmt: skip

    def handle(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            faulty = self.fault(request)
            if faulty is not None:
                return faulty
            path = request.url.path.removeprefix("/api/v3")
            body = json.loads(request.content) if request.content else {}
            write = request.method in ("POST", "PATCH", "PUT", "DELETE")
            if write and not path.startswith("/app/"):
                self.writes.append(f"{request.method} {path}")
            elif not write:
                self.reads.append(path)
            return self.route(request.method, path, body, request)

    def route(self, method: str, path: str, body: Any, request: httpx.Request) -> httpx.Response:
        if path == f"/app/installations/{INSTALLATION}/access_tokens":
            expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return httpx.Response(201, json={"token": "ghs_t", "expires_at": expires})
        if re.fullmatch(r"/repos/octo/shop/collaborators/[^/]+/permission", path):
            login = path.split("/")[-2]
            permission = "maintain" if login == "maria" else "read"
            return httpx.Response(200, json={"permission": permission, "role_name": permission})
        if "/contents/" in path:
            return httpx.Response(404, json={"message": "Not Found"})
        if path == ISSUE and method == "GET":
            return httpx.Response(200, json={
                "number": NUMBER, "labels": [{"name": n} for n in sorted(self.labels)],
                "assignees": [{"login": a} for a in self.assignees]})  # fmt: skip
        if path == f"{ISSUE}/labels" and method == "POST":
            self.labels.update(body["labels"])
            self.repo_labels.update(body["labels"])
            return httpx.Response(200, json=[{"name": n} for n in sorted(self.labels)])
        if path.startswith(f"{ISSUE}/labels/") and method == "DELETE":
            self.labels.discard(path.rsplit("/", 1)[1].replace("%3A", ":"))
            return httpx.Response(200, json=[])
        if path.startswith("/repos/octo/shop/labels/") and method == "GET":
            name = path.rsplit("/", 1)[1].replace("%3A", ":")
            return httpx.Response(200 if name in self.repo_labels else 404, json={"name": name})
        if path == "/repos/octo/shop/labels" and method == "POST":
            self.repo_labels.add(body["name"])
            return httpx.Response(201, json=body)
        if path == f"{ISSUE}/assignees":
            for login in body["assignees"]:
                if method == "POST" and login not in self.assignees:
                    self.assignees.append(login)
                if method == "DELETE" and login in self.assignees:
                    self.assignees.remove(login)
            return httpx.Response(201 if method == "POST" else 200, json={"number": NUMBER})
        if path == f"{ISSUE}/comments" and method == "GET":
            page = int(request.url.params.get("page", "1"))
            listed = [self.comment_json(c) for c in self.on(NUMBER)][(page - 1) * 100 : page * 100]
            return httpx.Response(200, json=listed)
        if path == f"{ISSUE}/comments" and method == "POST":
            self.next_id += 1
            self.comments[self.next_id] = {"id": self.next_id, "body": body["body"], "issue": NUMBER}
            return httpx.Response(201, json=self.comment_json(self.comments[self.next_id]))
        if match := re.fullmatch(r"/repos/octo/shop/issues/comments/(\d+)", path):
            comment = self.comments.get(int(match.group(1)))
            if comment is None:
                return httpx.Response(404, json={"message": "Not Found"})
            if method == "PATCH":
                comment["body"] = body["body"]
            return httpx.Response(200, json=self.comment_json(comment))
        if match := re.fullmatch(r"/repos/octo/shop/issues/comments/(\d+)/reactions", path):
            self.reactions.append((int(match.group(1)), body["content"]))
            return httpx.Response(201, json={"id": 1, "content": body["content"]})
        if path == f"{ISSUE}/reactions":
            self.reactions.append((None, body["content"]))
            return httpx.Response(201, json={"id": 1, "content": body["content"]})
        return self.evidence(method, path, body, request)

    def evidence(self, method: str, path: str, body: Any, request: httpx.Request) -> httpx.Response:
        if match := re.fullmatch(r"/repos/octo/shop/issues/(\d+)(/.*)?", path):
            return self.other_issue(int(match.group(1)), method, match.group(2) or "", body)
        if (match := re.fullmatch(r"/repos/octo/shop/pulls/(\d+)", path)) and method == "GET":
            pull = self.pulls.get(int(match.group(1)))
            return httpx.Response(200, json=pull) if pull else httpx.Response(404, json={"message": "Not Found"})
        if (match := re.fullmatch(r"/repos/octo/shop/branches/(.+)", path)) and method == "GET":
            branch = self.branches.get(match.group(1))
            return httpx.Response(200, json=branch) if branch else httpx.Response(404, json={"message": "Not Found"})
        if (match := re.fullmatch(r"/repos/octo/shop/compare/(.+)", path)) and method == "GET":
            status = self.comparisons.get(match.group(1))
            return httpx.Response(200, json={"status": status}) if status else httpx.Response(404, json={})
        if path == "/repos/octo/shop/check-runs" and method == "POST":
            self.next_id += 1
            self.check_runs[self.next_id] = {"id": self.next_id, **body}
            return httpx.Response(201, json=self.check_runs[self.next_id])
        if (match := re.fullmatch(r"/repos/octo/shop/check-runs/(\d+)", path)) and method == "PATCH":
            run = self.check_runs[int(match.group(1))]
            run.update(body)
            if body.get("status") != "completed":
                run.pop("conclusion", None)
            return httpx.Response(200, json=run)
        if (match := re.fullmatch(r"/repos/octo/shop/commits/([^/]+)/check-runs", path)) and method == "GET":
            runs = [r for r in self.check_runs.values() if r["head_sha"] == match.group(1)
                    and r["name"] == request.url.params.get("check_name", r["name"])]  # fmt: skip
            return httpx.Response(200, json={"total_count": len(runs), "check_runs": runs})
        return httpx.Response(404, json={"message": f"the fake has no {method} {path}"})

    def on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c.get("issue", NUMBER) == number]

    def other_issue(self, number: int, method: str, rest: str, body: Any) -> httpx.Response:
        """Any issue but #42, as far as showing a ticket goes: its comments are kept, its labels are not."""
        if rest == "" and method == "GET":
            return httpx.Response(200, json={"number": number, "labels": [], "assignees": []})
        if rest == "/comments" and method == "GET":
            return httpx.Response(200, json=[self.comment_json(c) for c in self.on(number)])
        if rest == "/comments" and method == "POST":
            self.next_id += 1
            self.comments[self.next_id] = {"id": self.next_id, "body": body["body"], "issue": number}
            return httpx.Response(201, json=self.comment_json(self.comments[self.next_id]))
        return httpx.Response(201 if method == "POST" else 200, json=[] if "labels" in rest else {"number": number})

    def runs(self, head_sha: str) -> list[tuple[str, str | None, str]]:
        """Baton's check runs on a head, oldest first: (status, conclusion, title)."""
        return [(r["status"], r.get("conclusion"), r["output"]["title"]) for r in self.check_runs.values()
                if r["head_sha"] == head_sha]  # fmt: skip

    def status(self) -> str:
        bodies = [c["body"] for c in self.on(NUMBER) if c["body"].startswith("<!-- baton:status -->")]
        assert len(bodies) == 1, bodies
        return str(bodies[0])

    def replies(self) -> list[str]:
        return [c["body"] for c in self.on(NUMBER) if "<!-- baton:reply" in c["body"]]


@dataclass
class Scene:
    client: TestClient
    github: FakeGitHub
    app: Any
    sent: int = 0

    def comment(self, login: str, body: str) -> None:
        self.sent += 1
        payload = json.dumps({
            "action": "created",
            "issue": {"number": NUMBER, "id": 1, "user": {"login": "olivia"}},
            "comment": {"id": self.sent, "body": body, "user": {"login": login}},
            "repository": {"id": REPOSITORY_ID, "full_name": "octo/shop"},
            "installation": {"id": INSTALLATION},
            "sender": {"login": login, "type": "User"},
        }).encode()  # fmt: skip
        headers = {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": f"d{self.sent}",
                   "X-Hub-Signature-256": signature(SECRET.encode(), payload)}  # fmt: skip
        assert self.client.post("/webhooks/github", content=payload, headers=headers).status_code == 202

    def label(self, login: str, name: str, added: bool) -> None:
        """Someone changes a label on GitHub: the fake changes, and GitHub tells Baton."""
        (self.github.labels.add if added else self.github.labels.discard)(name)
        self.sent += 1
        payload = json.dumps({
            "action": "labeled" if added else "unlabeled",
            "label": {"name": name},
            "issue": {"number": NUMBER, "id": 1, "user": {"login": "olivia"}},
            "repository": {"id": REPOSITORY_ID, "full_name": "octo/shop"},
            "installation": {"id": INSTALLATION},
            "sender": {"login": login, "type": "User"},
        }).encode()  # fmt: skip
        headers = {"X-GitHub-Event": "issues", "X-GitHub-Delivery": f"d{self.sent}",
                   "X-Hub-Signature-256": signature(SECRET.encode(), payload)}  # fmt: skip
        assert self.client.post("/webhooks/github", content=payload, headers=headers).status_code == 202

    def post(self, event: str, payload: dict[str, Any]) -> None:
        """GitHub tells Baton something (a push, a pull request, a deployment …)."""
        self.sent += 1
        body = json.dumps(payload).encode()
        headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": f"d{self.sent}",
                   "X-Hub-Signature-256": signature(SECRET.encode(), body)}  # fmt: skip
        assert self.client.post("/webhooks/github", content=body, headers=headers).status_code == 202

    def drain(self) -> int:
        return int(self.app.state.writer.drain())

    def due_now(self) -> None:
        """Skip waiting out a retry delay, and any pause GitHub asked for."""
        with self.app.state.work.units.engine.begin() as connection:
            connection.execute(update(t.outbox).values(due_at=datetime.now(UTC) - timedelta(seconds=1)))
            connection.execute(update(t.write_budgets).values(paused_until=None, next_at=None))

    def outbox(self) -> list[Any]:
        with self.app.state.work.units.engine.connect() as connection:
            return list(connection.execute(select(t.outbox)).all())

    def unsent(self) -> int:
        with self.app.state.work.units.engine.connect() as connection:
            query = select(func.count()).select_from(t.outbox_items).where(t.outbox_items.c.sent_at.is_(None))
            return int(connection.execute(query).scalar_one())


@pytest.fixture
def scene(database_url: str) -> Iterator[Scene]:
    fake = FakeGitHub()
    settings = Settings(
        database_url=database_url, webhook_secret=SecretStr(SECRET), app_id=4711, private_key=SecretStr(app_key()),
        github_api_url=API, answer_delay=0, write_interval=0,
    )  # fmt: skip
    app = create_app(settings, lanes=False)
    with respx.mock(base_url=API, assert_all_called=False) as router:
        router.route().mock(side_effect=fake.handle)
        with TestClient(app) as client:
            yield Scene(client, fake, app)
