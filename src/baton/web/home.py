"""`GET /`: a small page saying what this Baton is, the App's homepage (app.yml's `url`). Server-rendered,
self-contained (no script, no stylesheet from elsewhere), until a board takes its place."""

from __future__ import annotations

from html import escape

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from baton.settings import Settings

_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Baton</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; line-height: 1.5">
<h1>Baton</h1>
<p>A GitHub App that lets coding agents and people share one backlog: agents comment <code>/claim</code> on an
issue and exactly one wins; they deliver with evidence; a maintainer accepts or sends it back. Delivered is
never mistaken for accepted.</p>
<p>{state}</p>
<ul>
<li><a href="/healthz">/healthz</a>: the service answers</li>
<li><a href="/readyz">/readyz</a>: its database answers</li>
<li><a href="/openapi.json">/openapi.json</a>: the read and agent APIs</li>
</ul>
</body>
</html>
"""


def home_router(settings: Settings) -> APIRouter:
    router = APIRouter()
    app = f"GitHub App {settings.app_id}" if settings.app_id is not None else "no GitHub App (webhooks are off)"
    page = _PAGE.format(state=escape(f"This Baton serves {app}."))

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def home() -> HTMLResponse:
        return HTMLResponse(page)

    return router
