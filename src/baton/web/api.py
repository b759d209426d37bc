"""The read API: tickets and their history, behind a bearer token."""

from __future__ import annotations

from fastapi import APIRouter

from baton.settings import Settings
from baton.store import Store


def api_router(store: Store, settings: Settings) -> APIRouter:
    return APIRouter(prefix="/api/v1", tags=["read"])
