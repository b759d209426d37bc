"""`POST /webhooks/github`: verify, store in the inbox, answer 202, process after the answer.

Nothing is stored for a request that fails a check: 401 for a missing, SHA-1 or wrong signature, 400
for a body that is not a JSON object or a request without GitHub's headers, 413 over 25 MB, 503 while
no webhook secret is configured.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from baton.github.webhooks import dig, number, verify
from baton.intake import Intake, process
from baton.settings import Settings
from baton.store.inbox import Inbox, Received

MAX_BODY = 25 * 1024 * 1024  # GitHub's own cap on a delivery


def _refuse(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)


async def _body(request: Request) -> bytes | None:
    """The raw body, or None once it passes MAX_BODY (whatever Content-Length claimed)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def webhook_router(
    inbox: Inbox, intake: Intake, settings: Settings, wake: Callable[[], None] | None = None
) -> APIRouter:
    router = APIRouter(tags=["webhooks"])
    secret = settings.webhook_secret.get_secret_value().encode() if settings.webhook_secret else None

    @router.post("/webhooks/github", status_code=202)
    async def receive(request: Request, background: BackgroundTasks) -> JSONResponse:
        if secret is None:
            return _refuse(503, "Webhooks are disabled: set BATON_WEBHOOK_SECRET to the App's webhook secret.")
        body = await _body(request)
        if body is None:
            return _refuse(413, f"The body is larger than {MAX_BODY} bytes.")
        if not verify(secret, body, request.headers.get("x-hub-signature-256")):
            return _refuse(401, "X-Hub-Signature-256 is missing, not sha256=, or does not match the body.")
        event = request.headers.get("x-github-event")
        delivery_id = request.headers.get("x-github-delivery")
        if not event or not delivery_id:
            return _refuse(400, "X-GitHub-Event and X-GitHub-Delivery are required.")
        try:
            payload: Any = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            return _refuse(400, f"The body is not JSON: {error}")
        if not isinstance(payload, dict):
            return _refuse(400, "The body is JSON but not an object.")
        action = dig(payload, "action")
        # The database call runs off the event loop, so one slow write never holds up other acks.
        received = await run_in_threadpool(
            inbox.receive,
            delivery_id[:100],
            event[:60],
            action[:60] if isinstance(action, str) else None,
            number(payload, "installation", "id"),
            body.decode("utf-8"),
        )
        if received is not Received.DUPLICATE and settings.worker == "inprocess":
            background.add_task(process, inbox, intake, delivery_id[:100], wake)
        return JSONResponse({"delivery": delivery_id, "received": received.value}, status_code=202)

    return router
