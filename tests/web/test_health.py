"""The health endpoints of the app, on a new SQLite file."""

from __future__ import annotations

from pathlib import Path


def test_health_endpoints(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from baton.environment.settings import Settings
    from baton.web import create_app

    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'web.db'}"))
    with TestClient(app) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json() == {"status": "ok", "database": "sqlite"}
