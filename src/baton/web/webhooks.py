"""`POST /webhooks/github`: verify, store in the inbox, answer 202, process after the answer.

Nothing is stored for a request that fails a check: 401 for a missing, SHA-1 or wrong signature, 400
for a body that is not a JSON object or a request without GitHub's headers, 413 over 25 MB, 503 while
no webhook secret is configured.

GitHub sends UTF-8 JSON, and the body must be that: one in UTF-16 or UTF-32, JSON nested deeper than
Python's parser goes (about 1,000 levels), or a number of more than 4,300 digits is 400. A UTF-8 byte order
mark is ignored (RFC 8259 allows it) and not stored. An `installation.id` outside 1 to 2^63-1, or an
`action` GitHub would never send (over 60 characters, or with a control character), is 400 too: the
hook could not be stored. Any other value GitHub never sends (an issue number of 0 or 2^31, a login of
101 characters) is accepted and then ignored, with the reason, by intake (`baton.github.webhooks`).

While the database cannot be reached, a hook is kept in the spool (`baton.store.spool`) and answered
202 all the same.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

from baton.environment.settings import Settings
from baton.github.webhooks import Unreadable, dig, number, verify
from baton.intake import Intake, process
from baton.store.engine import unreachable
from baton.store.inbox import Inbox, Incoming, Received
from baton.store.spool import Spool

from .batches import Batches

if TYPE_CHECKING:
    from baton.process.metrics import Metrics

MAX_BODY = 25 * 1024 * 1024  # GitHub's own cap on a hook
UNVERIFIED = "unverified"  # the event of a hook refused before its signature was checked: not GitHub's word
# What a stored hook counts as, in `baton_webhook_deliveries_total`.
_COUNTED = {Received.NEW: "stored", Received.RETRY: "retried", Received.DUPLICATE: "duplicate",
            Received.SPOOLED: "spooled"}  # fmt: skip


class Refused(BaseModel):
    detail: str


class Acknowledged(BaseModel):
    delivery: str = Field(description="The delivery's X-GitHub-Delivery.")
    received: str = Field(description="new (stored: it is decided next), retry (seen before, its processing had "
                          "failed: it is decided again), duplicate (seen before: nothing to do) or spooled (kept "
                          "until the database answers, then stored)")  # fmt: skip


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


def _json(decoded: str) -> dict[str, Any] | JSONResponse:
    """The body's JSON object, or the answer refusing it."""
    try:
        payload = json.loads(decoded)
    except json.JSONDecodeError as error:
        return _refuse(400, f"The body is not JSON: {error}")
    except RecursionError:
        return _refuse(400, "The body is JSON nested deeper than Baton reads; GitHub's payloads are shallow.")
    except ValueError:  # the only other: a number of more digits than Python converts (4,300)
        return _refuse(400, "The body holds a number of thousands of digits; GitHub's have at most 19.")
    if not isinstance(payload, dict):
        return _refuse(400, "The body is JSON but not an object.")
    return payload


class AcksFirst:
    """Acknowledgements go before in-process work. The work waits (up to `patience` seconds) until no
    hook is being acknowledged, so a burst of hooks is answered first and worked through
    after, instead of each ack queueing for the database and the interpreter behind earlier work."""

    def __init__(self, patience: float = 0.05) -> None:
        self.patience = patience
        self._acking = 0
        self._quiet = threading.Condition()

    def acking(self, delta: int) -> None:
        with self._quiet:
            self._acking += delta
            if self._acking == 0:
                self._quiet.notify_all()

    def wait(self) -> None:
        deadline = time.monotonic() + self.patience
        with self._quiet:
            while self._acking and (left := deadline - time.monotonic()) > 0:
                self._quiet.wait(left)


class GroupCommit:
    """Hooks arriving together are stored together: while one transaction runs, the hooks
    that arrive wait for the next, which takes all of them. Each request is answered as soon as the
    transaction holding its hook commits. The database runs off the event loop.

    A hook whose row fails fails alone (the others of its transaction are stored one by one). While
    the database is unreachable, or hooks kept in the spool wait to be stored, hooks go to the
    `spool`."""

    def __init__(self, inbox: Inbox, spool: Spool | None = None) -> None:
        self.inbox = inbox
        self.spool = spool
        self._batches: Batches[Incoming, Received] = Batches(self._store)

    async def receive(self, incoming: Incoming) -> Received:
        return await self._batches.run(incoming)

    def _store(self, batch: list[Incoming]) -> list[Received | Exception]:
        """In a pool thread: each hook's answer, or the error its request answers 500 with."""
        spool = self.spool
        if spool is not None and spool.holding():  # behind the hooks waiting there, in order
            for incoming in batch:
                spool.put(incoming)
            return [Received.SPOOLED] * len(batch)
        results = self.inbox.receive_each(batch)
        for n, (incoming, result) in enumerate(zip(batch, results, strict=True)):
            if spool is not None and isinstance(result, Exception) and unreachable(result):
                spool.put(incoming)  # an error here (a full disk) answers 500
                results[n] = Received.SPOOLED
        return results


class WebhookEndpoint:
    """`POST /webhooks/github`, as a plain ASGI app: `web/plain.py` serves it without FastAPI's per-request
    machinery, and `router()` declares it for /openapi.json.

    `hand_off` wakes the in-process decide lane for a stored hook; without it (tests drive the writer
    themselves) the hook is processed right after the answer, in the request's task. Without a `spool`, a
    hook the database cannot take answers 500. `metrics` counts each hook by its event and what became of
    it, and times each acknowledgement."""

    def __init__(
        self, inbox: Inbox, intake: Intake, settings: Settings, hand_off: Callable[[], None] | None = None,
        pacing: AcksFirst | None = None, spool: Spool | None = None, metrics: Metrics | None = None,
    ) -> None:  # fmt: skip
        self.inbox = inbox
        self.intake = intake
        self.settings = settings
        self.secret = settings.webhook_secret.get_secret_value().encode() if settings.webhook_secret else None
        self.hand_off = hand_off
        self.pacing = pacing or AcksFirst()
        self.metrics = metrics
        self.storing = GroupCommit(inbox, spool)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        background = BackgroundTasks()
        answer = await self.answer(Request(scope, receive), background)
        answer.background = background  # run after the answer is sent, as FastAPI runs a route's
        await answer(scope, receive, send)

    def router(self) -> APIRouter:
        """The route's declaration: FastAPI serves it only where `web/plain.py` is not in front of it."""
        router = APIRouter(tags=["webhooks"])
        refused = {"model": Refused}
        answers: dict[int | str, dict[str, Any]] = {
            400: {**refused, "description": "Not a delivery GitHub sends: a header missing, a body not a JSON object"},
            401: {**refused, "description": "X-Hub-Signature-256 missing, not sha256=, or not the body's"},
            413: {**refused, "description": f"A body larger than {MAX_BODY} bytes"},
            503: {**refused, "description": "No webhook secret is configured"},
        }

        @router.post("/webhooks/github", status_code=202, response_model=Acknowledged, responses=answers)
        async def receive(request: Request, background: BackgroundTasks) -> JSONResponse:
            return await self.answer(request, background)

        return router

    async def answer(self, request: Request, background: BackgroundTasks) -> JSONResponse:
        began = time.perf_counter()
        self.pacing.acking(+1)
        event, outcome = UNVERIFIED, "error"
        try:
            answer, event, outcome = await self._receive(request, background)
            return answer
        finally:
            self.pacing.acking(-1)
            if self.metrics is not None:
                stored = outcome in _COUNTED.values()
                self.metrics.hook(event, outcome, time.perf_counter() - began if stored else None)

    async def _receive(self, request: Request, background: BackgroundTasks) -> tuple[JSONResponse, str, str]:
        """The answer, the hook's event (`UNVERIFIED` before the signature is checked) and what became of it."""
        if self.secret is None:
            disabled = "Webhooks are disabled: set BATON_WEBHOOK_SECRET to the App's webhook secret."
            return _refuse(503, disabled), UNVERIFIED, "disabled"
        body = await _body(request)
        if body is None:
            return _refuse(413, f"The body is larger than {MAX_BODY} bytes."), UNVERIFIED, "too_large"
        if not verify(self.secret, body, request.headers.get("x-hub-signature-256")):
            unsigned = "X-Hub-Signature-256 is missing, not sha256=, or does not match the body."
            return _refuse(401, unsigned), UNVERIFIED, "bad_signature"
        event = request.headers.get("x-github-event")
        hook_id = request.headers.get("x-github-delivery")
        if not event or not hook_id:
            return _refuse(400, "X-GitHub-Event and X-GitHub-Delivery are required."), event or "", "bad_body"
        event = event[:60]
        try:
            decoded = body.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as error:
            return _refuse(400, f"The body is not UTF-8, as GitHub sends it: {error}"), event, "bad_body"
        payload = _json(decoded)
        if isinstance(payload, JSONResponse):
            return payload, event, "bad_body"
        action = dig(payload, "action")
        if isinstance(action, str) and (len(action) > 60 or not action.isprintable()):
            return _refuse(400, "The body's `action` is not one GitHub sends."), event, "bad_body"
        try:
            installation_id = number(payload, "installation", "id")
        except Unreadable as error:
            refused = _refuse(400, f"The body's installation id is not one GitHub sends: {error}.")
            return refused, event, "bad_body"
        received = await self.storing.receive(
            Incoming(
                hook_id[:100],
                event,
                action if isinstance(action, str) else None,
                installation_id,
                decoded,
            )
        )
        if received in (Received.NEW, Received.RETRY) and self.settings.worker == "inprocess":
            if self.hand_off is not None:
                self.hand_off()
            else:
                background.add_task(process, self.inbox, self.intake, hook_id[:100])
        answer = JSONResponse({"delivery": hook_id, "received": received.value}, status_code=202)
        return answer, event, _COUNTED[received]
