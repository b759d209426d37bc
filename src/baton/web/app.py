"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

from baton.environment.clock import SYSTEM, Clock
from baton.environment.settings import Settings
from baton.github.actions_oidc import ActionsTokens, Unreachable
from baton.github.identity import Identities
from baton.process.runtime import Lane, Outage, Runtime
from baton.process.wiring import assemble
from baton.service.resolver import Configs, Directory, DirectoryUnavailable, Resolver
from baton.store.api_requests import ApiRequests
from baton.store.engine import warm
from baton.store.reads import Reads
from baton.store.spool import Spool

from .agent_api import NEXTS_AT_ONCE, AgentApi, Refusal, agents_router, invalid_request, no_route, readers
from .board import Board, board_router
from .gate import DatabaseGate, DatabaseOutage
from .mcp_http import McpEndpoint
from .plain import PlainLane, PlainRoutes
from .read_api import ReadApi, api_router
from .webhooks import AcksFirst, WebhookEndpoint


def create_app(
    settings: Settings,
    *,
    migrate: bool = True,
    directory: Directory | None = None,
    configs: Configs | None = None,
    lanes: bool = True,
    clock: Clock = SYSTEM,
) -> FastAPI:
    """The application. `directory` and `configs` stand in for GitHub's API where a test needs it;
    without `lanes` no lane runs by itself: a hook is processed right after its answer and
    nothing writes to GitHub (tests call `app.state.writer.drain()`), and hooks kept in the spool
    wait for `app.state.spool.drain(app.state.inbox)`, quiet claims for `app.state.parts.sweep.sweep()`, and
    missed hooks for `app.state.parts.redelivery.sweep()`.
    `clock` is the time activity is recorded at and the sweep compares it with (a test moves it by hand)."""
    parts = assemble(settings, migrate=migrate, directory=directory, configs=configs, clock=clock)
    engine = parts.engine
    pacing = AcksFirst()
    in_process = settings.worker == "inprocess" and lanes
    # Each stored hook wakes the decide lane; it looks by itself only for hooks due to be tried again.
    runtime = Runtime(parts, writers=settings.writers, poll=0.5, before_batch=pacing.wait) if in_process else None
    # Hooks received while the database was unreachable are stored as soon as it is back, by the
    # process that received them (whichever process decides them).
    spool = Spool(settings.spool_dir, clock)

    def drain() -> float:
        if spool.drain(parts.inbox) and runtime is not None:
            runtime.wake()
        return 0.2 if spool.holding() else 1.0

    # An outage of its own: with nothing spooled, a round does not reach the database, so it must not tell
    # the other lanes' outage that the database is back.
    spooling = Lane("baton-spool", drain, Outage()) if lanes else None
    # Missed webhooks are asked for again by the processes that receive them, whatever decides them: a
    # redelivery is sent to this endpoint, and asked for while none is up it would only fail again.
    redelivering = None
    if lanes and parts.redelivery is not None:
        redelivering = Lane("baton-redeliver", parts.redelivery.step, runtime.outage if runtime else Outage())

    # The App's installations are listed as the process starts and every hour (one process at a time).
    sweeping = None
    if lanes and parts.installation_sweep is not None:
        sweeping = Lane("baton-installations", parts.installation_sweep.step, runtime.outage if runtime else Outage())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if engine.dialect.name == "postgresql":  # the connections a burst of claim-next batches holds, made now
            threading.Thread(target=warm, args=(engine, NEXTS_AT_ONCE), name="baton-warm", daemon=True).start()
        if runtime is not None:
            runtime.start()
        for lane in (spooling, redelivering, sweeping):
            if lane is not None:
                lane.start()
        mcp_running = asyncio.create_task(mcp.run())
        try:
            yield
        finally:
            mcp.stop()
            await mcp_running
            for lane in (spooling, redelivering, sweeping):
                if lane is not None:
                    lane.stop()
                    lane.join(10)
            if runtime is not None:
                runtime.stop()
            identities.close()
            app.state.board.close()
            engine.dispose()

    # No /docs or /redoc: FastAPI's pages load their scripts from a CDN, and no page Baton serves loads anything
    # from elsewhere. /openapi.json stays.
    app = FastAPI(title="Baton", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.work = parts.work
    app.state.inbox = parts.inbox
    app.state.writer = parts.writer
    app.state.parts = parts
    app.state.runtime = runtime  # the lanes in this process (None: a `baton worker` runs them)
    app.state.spool = spool
    identities = Identities(settings.github_api_url, timeout=settings.github_timeout,
                            actions=_actions_tokens(settings, parts.resolver, clock), clock=clock)  # fmt: skip
    # Only with an App: who a token belongs to, and what it may read, is asked of GitHub.
    app.state.read_api = ReadApi(engine, settings, clock, readers(parts.resolver, identities) if parts.writer else None)
    app.state.board = Board(settings, app.state.read_api, clock)
    app.state.agent_api = AgentApi(parts.resolver, parts.work, parts.intake.issues, Reads(engine), identities,
                                   ApiRequests(engine, clock), settings, parts.metrics)  # fmt: skip
    webhooks = WebhookEndpoint(
        parts.inbox, parts.intake, settings, runtime.stored if runtime else None, pacing, spool, parts.metrics
    )
    routers = [board_router(), api_router(), agents_router(), webhooks.router()]
    for router in routers:
        _adopt(app, router)
    mcp = McpEndpoint(app.state.agent_api)
    app.router.routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))
    app.add_exception_handler(Refusal, _refused)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, no_route)
    # The hot routes, served without FastAPI's per-request machinery (plain.py).
    app.add_middleware(PlainRoutes, agents=app.state.agent_api, webhooks=webhooks)
    # Outermost of Baton's own: a database outage met anywhere below answers 503 (docs/operations.md).
    outage = DatabaseOutage()
    app.add_middleware(DatabaseGate, engine=engine, outage=outage)
    # The command routes, served by `baton serve`'s protocol before any of the above (wire.py, plain.py).
    app.state.lane = PlainLane(app.state.agent_api, webhooks, app.state.read_api, outage)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        """This process's counts and the database's figures, in Prometheus's text format (docs/operations.md)."""
        return Response(parts.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception as error:  # any database failure means "not ready", said plainly
            return JSONResponse({"status": "unavailable", "database": type(error).__name__}, 503)
        return JSONResponse({"status": "ok", "database": engine.dialect.name})

    return app


def _actions_tokens(settings: Settings, resolver: Resolver, clock: Clock) -> ActionsTokens | None:
    """The checker of GitHub Actions OIDC tokens, where Baton takes them (`BATON_OIDC_AUDIENCE`)."""
    if not settings.oidc_audience:
        return None

    def installation_of(repository: str) -> int | None:
        try:
            found = resolver.locate(repository)
        except DirectoryUnavailable as error:
            raise Unreachable(f"{error}") from None
        return None if found is None else found[0]

    return ActionsTokens(settings.oidc_issuer, settings.oidc_audience, installation_of, timeout=settings.github_timeout,
                         clock=clock)  # fmt: skip


def _adopt(app: FastAPI, router: APIRouter) -> None:
    """The router's routes become the app's own, as if declared on it. Each route is complete already (its
    path, dependencies and answers); `include_router` would work out every route's parameters and answers a
    second time for each app, on its first request (about 25 ms of CPU, which every test's app pays)."""
    app.router.routes.extend(router.routes)


async def _refused(request: Request, error: Exception) -> Response:
    """A call the agent API refused before deciding it (no token, an unknown one, too many calls)."""
    assert isinstance(error, Refusal)
    return error.response
