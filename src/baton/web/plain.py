"""The hot routes served as plain ASGI: the agent API's command routes (each verb of `client/verbs.py`: claim,
release, assign, deliver, accept, send-back, reopen; create-and-claim; and claim-next on a repository or an
organisation) and `POST /webhooks/github`.

Routing a request through FastAPI (its router, its middleware, solving a route's dependencies, validating each
parameter) costs several times what Baton does with a claim. `PlainRoutes` sits in front of FastAPI's router, inside
the database gate (`gate.py`): it reads the path once, the few headers a route reads, and the body once, and calls
the same code as the route's FastAPI declaration (`AgentApi.plainly`, `WebhookEndpoint`), which gives the same
answers. A command request that is not valid as sent (a path, a body or a content type the route's declaration
refuses) goes on to that declaration, body and all, which answers it as it answers any: the 422 and its words come
from one place. Every other request goes on to FastAPI untouched, and the declarations keep describing the routes
in /openapi.json.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.client.verbs import VERBS

from .agent_api import NEXT, ORG_NEXT, AgentApi, PlainRequest
from .webhooks import WebhookEndpoint

_COMMAND = re.compile(
    rf"/api/v1/repos/([^/]+)/([^/]+)/issues(?:/([^/]+)/({'|'.join(re.escape(verb.name) for verb in VERBS)}))?"
)
_NEXT = re.compile(r"/api/v1/(?:repos/([^/]+)/([^/]+)|orgs/([^/]+))/tasks/claim")
_HEADERS = (b"authorization", b"if-match", b"idempotency-key", b"content-type")


def _route_path(scope: Scope) -> str:
    """The path as Starlette's router matches it: without the app's `root_path`."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


class PlainRoutes:
    """The ASGI middleware that serves the hot routes itself (see the module's description)."""

    def __init__(self, app: ASGIApp, agents: AgentApi, webhooks: WebhookEndpoint) -> None:
        self.app = app
        self.agents = agents
        self.webhooks = webhooks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        if path == "/webhooks/github":
            await self.webhooks(scope, receive, send)
            return
        found = _COMMAND.fullmatch(path) if path.startswith("/api/v1/repos/") else None
        nexts = _NEXT.fullmatch(path) if found is None and path.endswith("/tasks/claim") else None
        if found is not None:
            owner, repo, number, action = found.groups()
        elif nexts is not None:
            owner, repo, org = nexts.groups()
            owner, repo, number, action = (owner, repo, None, NEXT) if org is None else (org, "", None, ORG_NEXT)
        else:
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, str] = {}
        for name, value in scope["headers"]:
            if name in _HEADERS and name not in headers:  # a header's first value, as FastAPI reads one
                headers[name] = value.decode("latin-1")
        read: list[Message] = []  # given again to FastAPI, when it answers
        body = await _body(receive, read)
        request = None if body is None else PlainRequest.of(owner, repo, number, action, headers, body)
        answer = None if request is None else await self.agents.plainly(request)
        if answer is None:
            await self.app(scope, _again(read, receive), send)
            return
        await answer(scope, receive, send)


async def _body(receive: Receive, read: list[Message]) -> bytes | None:
    """The request's body, every message read kept in `read`; None when the client went away before sending it."""
    chunks = []
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _again(read: list[Message], receive: Receive) -> Receive:
    """`receive` as if nothing had been read from it: the messages read first, then what comes after."""
    waiting = list(read)

    async def again() -> Message:
        if waiting:
            return waiting.pop(0)
        return await receive()

    return again


__all__ = ["PlainRoutes"]
