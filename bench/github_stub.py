"""A small recording stand-in for GitHub's REST API, served on 127.0.0.1, for benchmarks.

It keeps per-issue labels, assignees, comments and reactions in memory, answers the calls Baton's
writer makes, and records every write: per issue, and per installation with the time it arrived (each
installation's token names it), and when each issue's 👍 arrived. It is not a faithful GitHub (that is
the stand-in in `github_standin`); it is enough to measure Baton.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

_ISSUE = re.compile(r"/repos/[^/]+/[^/]+/issues/(\d+)(/.*)?")
_REPO_LABEL = re.compile(r"/repos/[^/]+/[^/]+/labels/[^/]+")
_COMMENT = re.compile(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)(/reactions)?")


@dataclass
class Issue:
    labels: set[str] = field(default_factory=set)
    assignees: list[str] = field(default_factory=list)
    comments: dict[int, str] = field(default_factory=dict)
    reactions: int = 0


@dataclass
class Stub:
    issues: dict[int, Issue] = field(default_factory=lambda: defaultdict(Issue))
    writes: Counter[int] = field(default_factory=Counter)  # issue number -> write requests
    log: list[tuple[int, float, str]] = field(default_factory=list)  # installation, time, "METHOD path"
    thumbs: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))  # issue -> 👍 times
    comment_issue: dict[int, int] = field(default_factory=dict)
    next_id: int = 1_000_000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.get("/_stub/state")
        async def state() -> dict[str, Any]:
            with self.lock:
                return {
                    "writes": {str(n): c for n, c in self.writes.items()},
                    "reactions": {str(n): i.reactions for n, i in self.issues.items()},
                    "thumbs": {str(n): times for n, times in self.thumbs.items()},
                    "log": self.log,
                }

        @app.post("/_stub/comments")
        async def comments(request: Request) -> dict[str, int]:
            """Tell the stub which issue each user comment is on, so 👍s count on the right issue."""
            with self.lock:
                for comment_id, number in (await request.json()).items():
                    self.comment_issue[int(comment_id)] = int(number)
            return {"known": len(self.comment_issue)}

        @app.api_route("/{path:path}", methods=["GET", "POST", "PATCH", "PUT", "DELETE"])
        async def any_route(path: str, request: Request) -> JSONResponse:
            body = await request.json() if await request.body() else {}
            token = request.headers.get("authorization", "").rpartition("ghs_stub_")[2]
            with self.lock:
                if request.method != "GET" and token.isdigit() and not path.endswith("/access_tokens"):
                    self.log.append((int(token), time.time(), f"{request.method} /{path}"))
                status, payload = self.answer(request.method, "/" + path, body)
            return JSONResponse(payload, status_code=status)

        return app

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path.startswith("/app/installations/") and path.endswith("/access_tokens"):
            expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 201, {"token": f"ghs_stub_{path.split('/')[3]}", "expires_at": expires}
        if path.endswith("/permission"):
            return 200, {"permission": "read", "role_name": "read"}
        if "/contents/" in path:
            return 404, {"message": "Not Found"}
        if _REPO_LABEL.fullmatch(path):  # every label exists already
            return 200, {"name": path.rsplit("/", 1)[1]}
        if match := _COMMENT.fullmatch(path):
            comment_id = int(match.group(1))
            number = self.comment_issue.get(comment_id, 0)
            if method != "GET":
                self.writes[number] += 1
            if match.group(2):
                self.issues[number].reactions += 1
                self.thumbs[number].append(time.time())
                return 201, {"id": 1, "content": "+1"}
            if method == "PATCH":
                self.issues[number].comments[comment_id] = body["body"]
            return 200, {"id": comment_id, "body": self.issues[number].comments.get(comment_id, "")}
        match = _ISSUE.fullmatch(path)
        if match is None:
            return 404, {"message": f"the stub has no {method} {path}"}
        number, rest = int(match.group(1)), match.group(2) or ""
        issue = self.issues[number]
        if method != "GET":
            self.writes[number] += 1
        if rest == "" and method == "GET":
            return 200, {"number": number, "labels": [{"name": n} for n in sorted(issue.labels)],
                         "assignees": [{"login": a} for a in issue.assignees]}  # fmt: skip
        if rest == "/labels" and method == "POST":
            issue.labels.update(body["labels"])
            return 200, []
        if rest.startswith("/labels/") and method == "DELETE":
            issue.labels.discard(rest.removeprefix("/labels/").replace("%3A", ":"))
            return 200, []
        if rest == "/assignees":
            for login in body["assignees"]:
                if method == "POST" and login not in issue.assignees:
                    issue.assignees.append(login)
                elif method == "DELETE" and login in issue.assignees:
                    issue.assignees.remove(login)
            return 201, {"number": number}
        if rest == "/comments" and method == "GET":
            return 200, [{"id": i, "body": b} for i, b in issue.comments.items()]
        if rest == "/comments" and method == "POST":
            self.next_id += 1
            issue.comments[self.next_id] = body["body"]
            self.comment_issue[self.next_id] = number
            return 201, {"id": self.next_id, "body": body["body"]}
        if rest == "/reactions":
            issue.reactions += 1
            self.thumbs[number].append(time.time())
            return 201, {"id": 1, "content": "+1"}
        return 404, {"message": f"the stub has no {method} {path}"}


if __name__ == "__main__":
    import sys

    import uvicorn

    uvicorn.run(Stub().app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
