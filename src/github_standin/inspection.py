"""Test support, not GitHub: endpoints under `/_standin/` that show what Baton wrote and let a caller put
people's comments on GitHub without a webhook (it delivers its own). Off unless asked for
(`python -m github_standin --inspect`); GitHub's REST surface is the rest of the path space.

- `GET /_standin/writes`: Baton's successful writes, in order of arrival, each with the time it arrived,
  the installation whose token it carried, and the repository and issue it is about (a comment's
  issue for writes on a comment).
- `GET /_standin/issues?repository=owner/name`: what GitHub shows on each issue of the repository: its
  labels, assignees, comments (id, author, body) and reactions (the comment they are on, or none for the
  issue itself, the reacting login and the content).
- `POST /_standin/comments` with `{"repository": "owner/name", "comments": [{"issue": 1, "login":
  "agent-a", "body": "/claim"}, ...]}`: the comments, as those people wrote them; answers their ids in
  order, and with `"payloads": true` beside them the `issue_comment` webhook payload GitHub makes of each (as
  the issue was then), for a caller that delivers them itself.
- `POST /_standin/tokens` with `{"logins": ["agent-a", ...]}`: a new token of each person's own (as a personal
  access token is), for Baton's agent API; answers `{"tokens": {"agent-a": "ghp_…"}}`.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from . import shapes
from .rendering import render_issue
from .server import Call, StandIn
from .world import World

PREFIX = "/_standin/"

_ON_ISSUE = re.compile(r"/repos/([^/]+)/([^/]+)/issues/(?:comments/([0-9]+)|([0-9]+))(?:/.*)?")


def _about(world: World, call: Call) -> tuple[str | None, int | None]:
    """The repository and issue a call is about (None where it is about neither, or a comment since gone)."""
    found = _ON_ISSUE.fullmatch(call.path)
    if found is None:
        return None, None
    owner, name, comment_id, number = found.groups()
    repository = world.repository(f"{owner}/{name}")
    if repository is None:
        return None, None
    if number is not None:
        return repository.full_name, int(number)
    comment = repository.comments.get(int(comment_id))
    return repository.full_name, comment.issue if comment is not None else None


def inspection_app(stand_in: StandIn) -> Starlette:
    world = stand_in.world

    async def writes(request: Request) -> JSONResponse:
        with world.lock:
            listed = []
            for call in stand_in.writes():
                repository, issue = _about(world, call)
                listed.append({"at": call.at, "installation": call.installation, "method": call.method,
                               "path": call.path, "repository": repository, "issue": issue})  # fmt: skip
        return JSONResponse({"writes": listed})

    async def issues(request: Request) -> JSONResponse:
        with world.lock:
            repository = world.repository(request.query_params.get("repository", ""))
            if repository is None:
                return JSONResponse({"message": "no such repository"}, status_code=404)
            shown = []
            for number, issue in sorted(repository.issues.items()):
                comments = [
                    {"id": c.id, "login": c.user.login, "body": c.body}
                    for c in sorted(repository.comments.values(), key=lambda c: c.id)
                    if c.issue == number
                ]
                reactions = [
                    {"comment": r.comment, "login": r.user.login, "content": r.content}
                    for r in repository.reactions.get(number, [])
                ]
                shown.append({"number": number, "labels": list(issue.labels), "assignees": list(issue.assignees),
                              "comments": comments, "reactions": reactions})  # fmt: skip
        return JSONResponse({"issues": shown})

    async def comments(request: Request) -> JSONResponse:
        data: Any = await request.json()
        with world.lock:
            repository = world.repository(str(data["repository"]))
            if repository is None:
                return JSONResponse({"message": f"no repository {data['repository']}"}, status_code=404)
            ids, payloads = [], []
            repo = repository.shape(str(request.base_url).rstrip("/"))
            for comment in data["comments"]:
                number = int(comment["issue"])
                if number not in repository.issues:
                    return JSONResponse({"message": f"no issue {comment['issue']}"}, status_code=404)
                author = world.account(str(comment["login"]))
                made = world.add_comment(repository, number, author, str(comment["body"]))
                ids.append(made.id)
                if data.get("payloads"):
                    issue = repository.issues[number]
                    said = shapes.issue_comment(repo, number, made.id, made.body, author,
                                                created_at=shapes.timestamp(made.created_at),
                                                on_pull_request=issue.pull_request)  # fmt: skip
                    shown = render_issue(world, repository, repo, issue)
                    payloads.append(shapes.issue_comment_event(repo, shown, said, author,
                                                               installation_id=repository.installation_id))  # fmt: skip
        return JSONResponse({"ids": ids, **({"payloads": payloads} if data.get("payloads") else {})}, status_code=201)

    async def tokens(request: Request) -> JSONResponse:
        data: Any = await request.json()
        with world.lock:
            made = {str(login): world.user_token(str(login)) for login in data["logins"]}
        return JSONResponse({"tokens": made}, status_code=201)

    return Starlette(routes=[
        Route(f"{PREFIX}tokens", tokens, methods=["POST"]),
        Route(f"{PREFIX}writes", writes, methods=["GET"]),
        Route(f"{PREFIX}issues", issues, methods=["GET"]),
        Route(f"{PREFIX}comments", comments, methods=["POST"]),
    ])  # fmt: skip


def with_inspection(stand_in: StandIn) -> Any:
    """The stand-in's REST API with the inspection endpoints beside it, under `/_standin/`."""
    inspection = inspection_app(stand_in)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            await inspection(scope, receive, send)
        else:
            await stand_in.app(scope, receive, send)

    return app
