"""The FastAPI application factory."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy import text

from baton.github.client import GitHubApp, GitHubDirectory, app_credentials
from baton.github.configs import DefaultConfigs, GitHubConfigs
from baton.intake import Configs, Directory, Intake, NoDirectory
from baton.service import WorkService
from baton.settings import Settings
from baton.store import Store, make_engine, upgrade
from baton.store.inbox import Inbox

from .api import api_router
from .webhooks import webhook_router


def create_app(
    settings: Settings,
    *,
    migrate: bool = True,
    directory: Directory | None = None,
    configs: Configs | None = None,
) -> FastAPI:
    """The application. `directory` and `configs` stand in for GitHub's API where a test needs it."""
    engine = make_engine(settings.database_url)
    if migrate:
        upgrade(engine)
    store = Store(engine)
    app = FastAPI(title="Baton", version="0.1.0")
    app.state.settings = settings
    work = WorkService(store)
    app.state.work = work
    app.include_router(api_router(store, settings))
    github = None
    if directory is None or configs is None:
        credentials = app_credentials(settings)  # raises ConfigurationError with a clear message
        github = GitHubApp(credentials, settings.github_api_url) if credentials else None
    intake = Intake(
        work,
        directory or (GitHubDirectory(github) if github else NoDirectory()),
        configs or (GitHubConfigs(github) if github else DefaultConfigs()),
        settings.app_id,
    )
    app.include_router(webhook_router(Inbox(engine), intake, settings))

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
