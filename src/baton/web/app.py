"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy import text

from baton.github.client import GitHubApp, GitHubDirectory, app_credentials
from baton.github.configs import DefaultConfigs, GitHubConfigs
from baton.github.projection import GitHubProjector, Pace
from baton.intake import Configs, Directory, Intake, NoDirectory
from baton.service import WorkService
from baton.settings import Settings
from baton.store import Store, make_engine, upgrade
from baton.store.inbox import Inbox
from baton.store.outbox import Outbox
from baton.worker import Background, Worker

from .api import api_router
from .webhooks import webhook_router


def create_app(
    settings: Settings,
    *,
    migrate: bool = True,
    directory: Directory | None = None,
    configs: Configs | None = None,
    background_worker: bool = True,
) -> FastAPI:
    """The application. `directory` and `configs` stand in for GitHub's API where a test needs it;
    without `background_worker` nothing drains the outbox by itself (tests call `app.state.worker`)."""
    engine = make_engine(settings.database_url)
    if migrate:
        upgrade(engine)
    store = Store(engine)
    work = WorkService(store, settings.answer_delay)
    credentials = app_credentials(settings)  # raises ConfigurationError with a clear message
    github = GitHubApp(credentials, settings.github_api_url) if credentials else None
    # Without GitHub the outbox keeps what it would say; a later start with credentials says it.
    worker = Worker(Outbox(store), GitHubProjector(github, Pace(settings.write_interval))) if github else None
    in_process = worker is not None and settings.worker == "inprocess" and background_worker
    background = Background(worker) if in_process and worker is not None else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if background is not None:
            background.start()
        try:
            yield
        finally:
            if background is not None:
                background.stop()
            engine.dispose()

    app = FastAPI(title="Baton", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.state.work = work
    app.state.worker = worker
    app.include_router(api_router(store, settings))
    intake = Intake(
        work,
        directory or (GitHubDirectory(github) if github else NoDirectory()),
        configs or (GitHubConfigs(github) if github else DefaultConfigs()),
        settings.app_id,
    )
    app.include_router(webhook_router(Inbox(engine), intake, settings, background.wake if background else None))

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except Exception as error:  # any database failure means "not ready", said plainly
            return JSONResponse({"status": "unavailable", "database": type(error).__name__}, 503)
        return JSONResponse({"status": "ok", "database": engine.dialect.name})

    return app
