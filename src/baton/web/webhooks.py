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

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

from baton.environment.settings import Settings
from baton.github.webhooks import Unreadable, dig, number, read_json, verify
from baton.intake import Intake, process
from baton.store.engine import unreachable, writing_at_hand
from baton.store.inbox import Inbox, Incoming, Received
from baton.store.spool import Spool

from .batches import Batches

if TYPE_CHECKING:
    from baton.process.metrics import Metrics

MAX_BODY = 25 * 1024 * 1024  # GitHub's own cap on a hook
_HEADERS = (b"x-hub-signature-256", b"x-github-event", b"x-github-delivery")  # what a delivery's checks read
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
        payload = read_json(decoded)
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
    transaction holding its hook commits. The database runs off the event loop, except where storing
    cannot wait (`at_hand`).

    A hook whose row fails fails alone (the others of its transaction are stored one by one). While
    the database is unreachable, or hooks kept in the spool wait to be stored, hooks go to the
    `spool`.

    `at_hand` (on SQLite, where no other process writes: `BATON_WORKER=inprocess`): a batch is stored on the event
    loop itself while no other thread of the process writes (`writing_at_hand`), as a burst of comments is then
    decided there too (`Runtime.stored`); the hop to a pool thread and back cost more than the insert. Otherwise,
    and while hooks wait in the spool, a batch goes to a thread."""

    def __init__(self, inbox: Inbox, spool: Spool | None = None, *, at_hand: bool = False) -> None:
        self.inbox = inbox
        self.spool = spool
        self._batches: Batches[Incoming, Received] = Batches(
            self._store, gather=0.001, busy=0.05, at_hand=self._store_at_hand if at_hand else None
        )

    async def receive(self, incoming: Incoming) -> Received:
        return await self._batches.run(incoming)

    def submit(self, incoming: Incoming) -> asyncio.Future[Received]:
        """`receive`'s future, from the event loop's thread."""
        return self._batches.submit(incoming)

    def _store_at_hand(self, batch: list[Incoming]) -> list[Received | Exception] | None:
        """`_store` on the event loop when the process's writer lock is free and no hook waits in the spool; None
        (a thread stores the batch) otherwise."""
        if self.spool is not None and self.spool.holding():
            return None
        with writing_at_hand(self.inbox.engine) as free:
            return self._store(batch) if free else None

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
        at_hand = inbox.engine.dialect.name == "sqlite" and settings.worker == "inprocess"
        self.storing = GroupCommit(inbox, spool, at_hand=at_hand)

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
            body = await _body(request)
            read = self._read(body, request.headers.get)
            if isinstance(read, _Refused):
                event, outcome = read.event, read.outcome
                return read.answer
            event = read.incoming.event
            received = await self.storing.receive(read.incoming)
            answer, outcome = self._stored(read, received, background)
            return answer
        finally:
            self.pacing.acking(-1)
            self._count(event, outcome, began)

    def at_once(self, headers: Iterable[tuple[bytes, bytes]], body: bytes) -> JSONResponse | asyncio.Future[Any] | None:
        """`POST /webhooks/github`'s answer to a request whose whole body was read, given without leaving the event
        loop (`PlainLane`): now (a refusal), or the future of the transaction that stores the hook. None where the
        application must answer: with no decide lane to wake, it processes the hook after the answer, in the
        request's task."""
        if self.hand_off is None and self.settings.worker == "inprocess":
            return None
        began = time.perf_counter()
        named: dict[str, str] = {}
        for name, value in headers:
            if name in _HEADERS and (key := name.decode()) not in named:  # a header's first value, as Starlette reads
                named[key] = value.decode("latin-1")
        read = self._read(body if len(body) <= MAX_BODY else None, named.get)
        if isinstance(read, _Refused):
            self._count(read.event, read.outcome, began)
            return read.answer
        self.pacing.acking(+1)
        stored = self.storing.submit(read.incoming)
        answered: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(stored: asyncio.Future[Received]) -> None:
            self.pacing.acking(-1)
            error = asyncio.CancelledError() if stored.cancelled() else stored.exception()
            if error is not None:  # the application answers it, as it answers any failure (`wire.FAILED`)
                self._count(read.incoming.event, "error", began)
                answered.set_exception(error)
                return
            answer, outcome = self._stored(read, stored.result(), None)
            self._count(read.incoming.event, outcome, began)
            answered.set_result(answer)

        stored.add_done_callback(done)
        return answered

    def _count(self, event: str, outcome: str, began: float) -> None:
        """The hook counted by its event and what became of it, and a stored one's time to its answer."""
        if self.metrics is not None:
            stored = outcome in _COUNTED.values()
            self.metrics.hook(event, outcome, time.perf_counter() - began if stored else None)

    def _read(self, body: bytes | None, header: Callable[[str], str | None]) -> _Hook | _Refused:
        """The hook to store, or the answer refusing it (`body` None: larger than `MAX_BODY`)."""
        if self.secret is None:
            disabled = "Webhooks are disabled: set BATON_WEBHOOK_SECRET to the App's webhook secret."
            return _Refused(_refuse(503, disabled), UNVERIFIED, "disabled")
        if body is None:
            return _Refused(_refuse(413, f"The body is larger than {MAX_BODY} bytes."), UNVERIFIED, "too_large")
        if not verify(self.secret, body, header("x-hub-signature-256")):
            unsigned = "X-Hub-Signature-256 is missing, not sha256=, or does not match the body."
            return _Refused(_refuse(401, unsigned), UNVERIFIED, "bad_signature")
        event = header("x-github-event")
        hook_id = header("x-github-delivery")
        if not event or not hook_id:
            return _Refused(_refuse(400, "X-GitHub-Event and X-GitHub-Delivery are required."), event or "", "bad_body")
        event = event[:60]
        try:
            decoded = body.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as error:
            return _Refused(_refuse(400, f"The body is not UTF-8, as GitHub sends it: {error}"), event, "bad_body")
        payload = _json(decoded)
        if isinstance(payload, JSONResponse):
            return _Refused(payload, event, "bad_body")
        action = dig(payload, "action")
        if isinstance(action, str) and (len(action) > 60 or not action.isprintable()):
            return _Refused(_refuse(400, "The body's `action` is not one GitHub sends."), event, "bad_body")
        try:
            installation_id = number(payload, "installation", "id")
        except Unreadable as error:
            return _Refused(_refuse(400, f"The body's installation id is not one GitHub sends: {error}."), event,
                            "bad_body")  # fmt: skip
        action = action if isinstance(action, str) else None
        return _Hook(Incoming(hook_id[:100], event, action, installation_id, decoded), hook_id, payload)

    def _stored(self, hook: _Hook, received: Received, background: BackgroundTasks | None) -> tuple[JSONResponse, str]:
        """The 202 for a hook the inbox took, and what became of it. A new hook, or one to try again, wakes the
        decide lane, or without one is processed after the answer (`background`)."""
        if received in (Received.NEW, Received.RETRY) and self.settings.worker == "inprocess":
            if self.hand_off is not None:  # its decide lane takes the payload parsed here (`Envelope.open`)
                if received is Received.NEW:  # a retried hook's stored payload may not be this very text
                    self.intake.parsed.keep(hook.incoming.id, hook.incoming.payload, hook.payload)
                self.hand_off()
            elif background is not None:
                background.add_task(process, self.inbox, self.intake, hook.incoming.id)
        answer = JSONResponse({"delivery": hook.delivery, "received": received.value}, status_code=202)
        return answer, _COUNTED[received]


class _Hook(NamedTuple):
    incoming: Incoming
    delivery: str  # its X-GitHub-Delivery, as sent (stored as its first 100 characters)
    payload: dict[str, Any]  # its body, parsed


class _Refused(NamedTuple):
    answer: JSONResponse
    event: str  # the hook's event (`UNVERIFIED` before its signature is checked)
    outcome: str  # what became of it, as `baton_webhook_deliveries_total` counts it
