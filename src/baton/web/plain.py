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

In `baton serve`, the agent API's command routes and the webhook route are answered even before that: `PlainLane` is
the lane its HTTP protocol serves without any ASGI machinery (`wire.py`), calling `AgentApi.at_once` or
`WebhookEndpoint.at_once` on what `PlainRoutes` would read, and handing to the application what they decline (a token
to ask GitHub about, a body not valid as sent, a create-and-claim, a hook with no decide lane to wake) or what failed
(raised again here, `FAILED`, where the database gate and the error handlers meet it as they meet any failure). The
lane also answers the read API's one-ticket route when it is asked with the read token (`ReadApi.ticket_at_once`,
what a dashboard or a bench polling a ticket sends; on SQLite read at once on the event loop, a snapshot that waits for
no writer and costs some 0.3 ms, less than the hop to a thread and back; on PostgreSQL, a round trip away, in a
thread); a person's token, which GitHub may be asked about, and every other
read go to the application. While the database is thought unreachable (`gate.DatabaseOutage`), the lane takes
nothing.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.client.verbs import VERBS

from .agent_api import NEXT, ORG_NEXT, AgentApi, PlainRequest, plain_number, plain_repository
from .gate import DatabaseOutage
from .read_api import ReadApi
from .webhooks import WebhookEndpoint
from .wire import FAILED, Answer, route_path

_COMMAND = re.compile(
    rf"/api/v1/repos/([^/]+)/([^/]+)/issues(?:/([^/]+)/({'|'.join(re.escape(verb.name) for verb in VERBS)}))?"
)
_TICKET = re.compile(r"/api/v1/repos/([^/]+)/([^/]+)/issues/([^/]+)")
_NEXT = re.compile(r"/api/v1/(?:repos/([^/]+)/([^/]+)|orgs/([^/]+))/tasks/claim")
_WEBHOOKS = "/webhooks/github"
_HEADERS = (b"authorization", b"if-match", b"idempotency-key", b"content-type")


def _route(path: str) -> tuple[str, str, str | None, str | None] | None:
    """Owner, repository, issue number and action of the command route `path` names (POST; action None:
    create-and-claim), None for a path that is none of theirs."""
    found = _COMMAND.fullmatch(path) if path.startswith("/api/v1/repos/") else None
    if found is not None:
        owner, repo, number, action = found.groups()
        return owner, repo, number, action
    nexts = _NEXT.fullmatch(path) if path.endswith("/tasks/claim") else None
    if nexts is None:
        return None
    owner, repo, org = nexts.groups()
    return (owner, repo, None, NEXT) if org is None else (org, "", None, ORG_NEXT)


def _request(
    route: tuple[str, str, str | None, str | None], headers: Iterable[tuple[bytes, bytes]], body: bytes
) -> PlainRequest | None:
    """The request to the command route `route`; None where its FastAPI declaration reads the path otherwise or
    refuses it."""
    return PlainRequest.of(*route, _headers(headers), body)


def _headers(headers: Iterable[tuple[bytes, bytes]]) -> dict[bytes, str]:
    """The headers the routes read, each its first value, as FastAPI reads one."""
    read: dict[bytes, str] = {}
    for name, value in headers:
        if name in _HEADERS and name not in read:
            read[name] = value.decode("latin-1")
    return read


class PlainLane:
    """The command routes on issues, claim-next, the webhook route and one ticket read with the read token,
    answered by `baton serve`'s protocol (the module's description)."""

    def __init__(self, agents: AgentApi, webhooks: WebhookEndpoint, reads: ReadApi, outage: DatabaseOutage) -> None:
        self.agents = agents
        self.webhooks = webhooks
        self.reads = reads
        self.outage = outage

    def takes(self, method: str, path: str) -> bool:
        if self.outage.down:
            return False
        if method == "GET":
            return path.startswith("/api/v1/repos/")
        return method == "POST" and (path.startswith("/api/v1/") or path == _WEBHOOKS)

    def answer(
        self, method: str, path: str, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> Answer | asyncio.Future[Any] | None:
        if method == "GET":
            return self._ticket(path, headers)
        if path == _WEBHOOKS:
            return self.webhooks.at_once(headers, body)
        route = _route(path)
        request = None if route is None else _request(route, headers, body)
        return None if request is None else self.agents.at_once(request)

    def _ticket(self, path: str, headers: Iterable[tuple[bytes, bytes]]) -> Answer | asyncio.Future[Any] | None:
        found = _TICKET.fullmatch(path)
        if found is None:
            return None
        owner, repo, number = found.groups()
        parsed = plain_number(number)
        if parsed is None or not plain_repository(owner, repo):
            return None
        return self.reads.ticket_at_once(owner, repo, parsed, _headers(headers).get(b"authorization"))


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
        failed = scope.get(FAILED)
        if failed is not None:  # the lane's answer failed: as if it had failed here
            raise failed
        path = route_path(scope)
        if path == _WEBHOOKS:
            await self.webhooks(scope, receive, send)
            return
        route = _route(path)
        if route is None:
            await self.app(scope, receive, send)
            return
        read: list[Message] = []  # given again to FastAPI, when it answers
        body = await _body(receive, read)
        request = None if body is None else _request(route, scope["headers"], body)
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


__all__ = ["PlainLane", "PlainRoutes"]
