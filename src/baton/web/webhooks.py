"""`POST /webhooks/github`: verify, store in the inbox, answer 202, process after the answer."""

from __future__ import annotations

from fastapi import APIRouter

from baton.service import WorkService
from baton.settings import Settings
from baton.store import Store


def webhook_router(store: Store, work: WorkService, settings: Settings) -> APIRouter:
    return APIRouter(tags=["webhooks"])
