"""While the database cannot be reached, every route that needs it answers 503 with `Retry-After` and Baton's
error body, on a connection kept open, and the process says so once when the outage begins and once when it
ends (docs/operations.md), instead of a 500 and a traceback per request.

One place for every route: a request whose handling meets the database unreachable (`store.engine.unreachable`)
marks the outage; from then on requests are answered 503 at once, without waiting on the database, and at most
once a second one of them asks the database first (`SELECT 1`): when it answers, the outage is over and requests
go through again. MCP asks the database before each request: its tools call the agent API over another request,
whose 503 could not become the MCP request's own answer once that one has begun.

Webhooks are not gated: their endpoint keeps hooks in the spool while the database is away. `/healthz`,
`/readyz` and `/metrics` answer for themselves.
"""

from __future__ import annotations

import logging
import time

from fastapi.responses import JSONResponse
from sqlalchemy import Engine, text
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from baton.store.engine import describe, unreachable

log = logging.getLogger("baton.web")

RETRY_AFTER = 5  # seconds a caller is told to wait before trying again
PROBE_EVERY = 1.0  # seconds between two asks of the database while it is away
_UNGATED = ("/healthz", "/readyz", "/metrics")


def _unreachable_in(error: BaseException) -> BaseException | None:
    """The database error behind `error` (itself, or what it was raised from), when it says the database
    cannot be reached."""
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return None
        if unreachable(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class DatabaseOutage:
    """Whether the database is thought unreachable: shared by the gate and the requests `baton serve`'s protocol
    answers itself (`plain.PlainLane`), which go through the gate while it is."""

    def __init__(self) -> None:
        self.since: float | None = None  # when the outage began (monotonic); None while the database answers

    @property
    def down(self) -> bool:
        return self.since is not None


class DatabaseGate:
    """The ASGI middleware that answers 503 while the database is unreachable."""

    def __init__(self, app: ASGIApp, engine: Engine, outage: DatabaseOutage | None = None) -> None:
        self.app = app
        self.engine = engine
        self.outage = outage or DatabaseOutage()
        self._probed = 0.0

    @property
    def down(self) -> bool:
        return self.outage.down

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path or path in _UNGATED or path.startswith("/webhooks/"):
            await self.app(scope, receive, send)
            return
        if (self.down or path == "/mcp") and not await self._reachable():
            await _unavailable(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as error:
            cause = _unreachable_in(error)
            if cause is None:
                raise
            self._failed(cause)
            if not started:  # else the answer was begun already: nothing more can be said on it
                await _unavailable(scope, receive, send)

    async def _reachable(self) -> bool:
        """Whether the database answers: asked at once while it is thought up (MCP), at most once a second
        while it is away (False in between)."""
        if self.down and time.monotonic() - self._probed < PROBE_EVERY:
            return False
        self._probed = time.monotonic()
        try:
            await run_in_threadpool(self._ping)
        except Exception as error:
            cause = _unreachable_in(error)
            if cause is None:
                raise
            self._failed(cause)
            return False
        self._succeeded()
        return True

    def _ping(self) -> None:
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def _failed(self, error: BaseException) -> None:
        if self.outage.since is None:
            self.outage.since = self._probed = time.monotonic()
            log.warning(
                "the database cannot be reached (%s): the API, MCP and board answer 503 until it answers again",
                describe(error),
            )

    def _succeeded(self) -> None:
        if self.outage.since is not None:
            log.warning(
                "the database answers again after %.1f s: so do the API, MCP and board",
                time.monotonic() - self.outage.since,
            )
            self.outage.since = None


async def _unavailable(scope: Scope, receive: Receive, send: Send) -> None:
    body = {"error": "unavailable", "message": f"The database is unreachable; retry in {RETRY_AFTER} s."}
    await JSONResponse(body, 503, {"Retry-After": str(RETRY_AFTER)})(scope, receive, send)


__all__ = ["RETRY_AFTER", "DatabaseGate", "DatabaseOutage"]
