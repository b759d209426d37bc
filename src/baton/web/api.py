"""The read API: tickets and their history, behind a bearer token (SPEC §9).

Every route needs `Authorization: Bearer <BATON_API_TOKEN>`. Without a configured token the API is
off (403), so a fresh install never serves its board to the whole network by accident.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query, status
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from baton.domain import DeploymentState, RepositoryState, WorkState
from baton.settings import Settings
from baton.store import Store
from baton.store.reads import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    DeliveryRecord,
    EventRecord,
    Reads,
    TicketDetail,
    TicketSummary,
)

# The evidence rail has no storage yet. Until it records something, every ticket is at the rails'
# initial states; the API says so rather than leaving the fields out, so clients can rely on the shape.
INITIAL_REPOSITORY_STATE = RepositoryState.UNREPORTED
INITIAL_DEPLOYMENT_STATE = DeploymentState.NOT_DEPLOYED

_STATES = ", ".join(state.value for state in WorkState)

# ---------------------------------------------------------------------------------------------- shapes


class Problem(BaseModel):
    detail: str


class SummaryOut(BaseModel):
    repository: str = Field(description='"owner/name", as the ticket was recorded.')
    issue: int = Field(description="The issue number.")
    state: WorkState
    revision: int
    runner: str | None = Field(description="The runner's login while the ticket has one.")
    owner: str = Field(description="The task owner's login.")
    attempt: int = Field(description="The current attempt's number; 0 before the first claim.")
    updated_at: datetime


class TicketList(BaseModel):
    tickets: list[SummaryOut]


class AttemptOut(BaseModel):
    number: int
    runner: str
    started_revision: int
    started_at: datetime
    ended_at: datetime | None
    end_reason: str | None = Field(
        description="released, released_by_maintainer, reassigned, delivered, reopened or withdrawn; "
        "null while the attempt runs."
    )


class ReportedEvidence(BaseModel):
    """What the runner's `/deliver` reported: a claim until the evidence rail verifies it."""

    branch: str | None = None
    commit: str | None = None
    pr: int | None = None
    tests: list[str] = []
    screenshots: list[str] = []


class DeliveryOut(BaseModel):
    number: int
    attempt: int
    runner: str
    text: str
    evidence: ReportedEvidence
    revision: int
    created_at: datetime


class ReviewOut(BaseModel):
    attempt: int
    delivery: int
    reviewer: str
    role: str = Field(description="The role the reviewer exercised: reviewer or repository_maintainer.")
    verdict: str = Field(description="accepted or sent_back.")
    independent: bool = Field(description="False for a self-verified acceptance (the runner's own).")
    note: str
    revision: int
    created_at: datetime


class RepositoryRail(BaseModel):
    state: RepositoryState


class DeploymentRail(BaseModel):
    state: DeploymentState


class EvidenceRails(BaseModel):
    repository: RepositoryRail
    deployment: DeploymentRail


class TicketOut(SummaryOut):
    created_at: datetime
    attempts: list[AttemptOut]
    deliveries: list[DeliveryOut]
    reviews: list[ReviewOut]
    evidence: EvidenceRails = Field(
        description="The repository and deployment rails. Until the evidence rail records anything, "
        "these are their initial states: unreported and not_deployed."
    )


class EventOut(BaseModel):
    type: str
    actor: str
    role: str
    attempt: int
    revision: int
    operation_id: str | None = Field(description="The comment id or Idempotency-Key that caused it.")
    data: dict[str, Any]
    created_at: datetime


class EventList(BaseModel):
    events: list[EventOut]


def _summary(ticket: TicketSummary) -> SummaryOut:
    return SummaryOut(
        repository=ticket.repository,
        issue=ticket.number,
        state=ticket.state,
        revision=ticket.revision,
        runner=ticket.runner,
        owner=ticket.owner,
        attempt=ticket.attempt,
        updated_at=ticket.updated_at,
    )


def _delivery(delivery: DeliveryRecord) -> DeliveryOut:
    return DeliveryOut(
        number=delivery.number,
        attempt=delivery.attempt,
        runner=delivery.runner,
        text=delivery.text,
        evidence=ReportedEvidence.model_validate(delivery.evidence),
        revision=delivery.revision,
        created_at=delivery.created_at,
    )


def _ticket(detail: TicketDetail) -> TicketOut:
    ticket = detail.ticket
    return TicketOut(
        **_summary(ticket).model_dump(),
        created_at=ticket.created_at,
        attempts=[AttemptOut.model_validate(a, from_attributes=True) for a in detail.attempts],
        deliveries=[_delivery(d) for d in detail.deliveries],
        reviews=[ReviewOut.model_validate(r, from_attributes=True) for r in detail.reviews],
        evidence=EvidenceRails(
            repository=RepositoryRail(state=INITIAL_REPOSITORY_STATE),
            deployment=DeploymentRail(state=INITIAL_DEPLOYMENT_STATE),
        ),
    )


def _event(event: EventRecord) -> EventOut:
    return EventOut.model_validate(event, from_attributes=True)


# ---------------------------------------------------------------------------------------------- auth

_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}

# Module level because FastAPI resolves the (postponed) annotations below in the module's namespace.
# It holds no secret: only how to read the header, and how OpenAPI describes it.
_bearer = HTTPBearer(auto_error=False, description="The value of BATON_API_TOKEN.")


def _authorizer(settings: Settings) -> Callable[[HTTPAuthorizationCredentials | None], None]:
    def authorize(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
        # Never logged and never put into a response.
        expected = settings.api_token.get_secret_value() if settings.api_token else ""
        if not expected:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                "The read API is disabled: no API token is configured. Set BATON_API_TOKEN to enable it, "
                "then send the token as `Authorization: Bearer <token>`.",
            )
        if credentials is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                "Missing API token: send it as `Authorization: Bearer <token>`.",
                headers=_UNAUTHORIZED,
            )
        # Starlette decodes header bytes as latin-1: encoding back gives the bytes the client sent.
        presented = credentials.credentials.encode("latin-1")
        if not hmac.compare_digest(presented, expected.encode("utf-8")):
            raise HTTPException(status.HTTP_401_UNAUTHORIZED, "Invalid API token.", headers=_UNAUTHORIZED)

    return authorize


# ---------------------------------------------------------------------------------------------- routes

Owner = Annotated[str, Path(description="The repository's owner (any case).")]
Repo = Annotated[str, Path(description="The repository's name (any case).")]
Number = Annotated[int, Path(ge=1, description="The issue number.")]


def _unknown(owner: str, repo: str, number: int) -> HTTPException:
    return HTTPException(
        status.HTTP_404_NOT_FOUND,
        f"Unknown ticket {owner}/{repo}#{number}: Baton does not track that issue.",
    )


def _state(value: str | None) -> WorkState | None:
    """An empty `state=` means no filter, as a form leaves it; anything else must be a state."""
    if not value:
        return None
    try:
        return WorkState(value)
    except ValueError:
        raise RequestValidationError(
            [
                {
                    "type": "enum",
                    "loc": ("query", "state"),
                    "msg": f"Unknown state {value!r}: valid states are {_STATES}.",
                    "input": value,
                    "ctx": {"expected": _STATES},
                }
            ]
        ) from None


def api_router(store: Store, settings: Settings) -> APIRouter:
    reads = Reads(store.engine)
    router = APIRouter(
        prefix="/api/v1",
        tags=["read"],
        dependencies=[Depends(_authorizer(settings))],
        responses={
            401: {"model": Problem, "description": "Missing or invalid bearer token."},
            403: {"model": Problem, "description": "The read API is disabled (BATON_API_TOKEN is unset)."},
        },
    )

    @router.get(
        "/repos/{owner}/{repo}/issues/{number}",
        responses={404: {"model": Problem, "description": "Baton does not track this issue."}},
        summary="One ticket: work state, attempts, deliveries, reviews and both evidence rails",
    )
    def get_ticket(owner: Owner, repo: Repo, number: Number) -> TicketOut:
        detail = reads.ticket(f"{owner}/{repo}", number)
        if detail is None:
            raise _unknown(owner, repo, number)
        return _ticket(detail)

    @router.get(
        "/tickets",
        summary="Tickets, filtered, by repository then issue number",
    )
    def list_tickets(
        repo: Annotated[str | None, Query(description='"owner/name" (any case).')] = None,
        state: Annotated[
            str | None,
            Query(description=f"One of {_STATES}.", json_schema_extra={"enum": [s.value for s in WorkState]}),
        ] = None,
        runner: Annotated[str | None, Query(description="The runner's login (any case).")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    ) -> TicketList:
        found = reads.tickets(
            repository=repo or None,
            state=_state(state),
            runner=runner.lstrip("@") if runner else None,
            limit=limit,
        )
        return TicketList(tickets=[_summary(ticket) for ticket in found])

    @router.get(
        "/repos/{owner}/{repo}/issues/{number}/events",
        responses={404: {"model": Problem, "description": "Baton does not track this issue."}},
        summary="A ticket's append-only history, oldest first",
    )
    def get_events(owner: Owner, repo: Repo, number: Number) -> EventList:
        history = reads.events(f"{owner}/{repo}", number)
        if history is None:
            raise _unknown(owner, repo, number)
        return EventList(events=[_event(event) for event in history])

    return router
