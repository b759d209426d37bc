"""The read API: tickets and their history, and the webhook inbox, behind a bearer token (docs/api.md).

Every route needs `Authorization: Bearer <BATON_API_TOKEN>`. Without a configured token the API is
off (403), so a fresh install never serves its board to the whole network by accident. One ticket and its
history are also read with a person's own GitHub token, where that person may read the repository on GitHub
(the agent API's callers, docs/agents.md).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator, BaseModel, Field, TypeAdapter, field_validator
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from baton.domain import EVIDENCE_KINDS, Brief, DeploymentState, RepositoryState, WorkState
from baton.domain.brief import evidence_line
from baton.domain.evidence import (
    EvidenceRail,
    blocker,
    deployment_text,
    environments,
    pull_request_head,
    repository_text,
    verification,
)
from baton.domain.issue import IN_HAND
from baton.environment.clock import Clock
from baton.environment.settings import Settings
from baton.github.webhooks import MAX_NUMBER
from baton.service.resolver import not_served
from baton.store.engine import reader
from baton.store.evidence_codec import from_dict
from baton.store.inbox import Inbox, Stored
from baton.store.reads import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    TicketDetail,
    TicketSummary,
)
from baton.store.timeline import DEFAULT_LIMIT as TIMELINE_LIMIT
from baton.store.timeline import RAILS, Cursor, Rail, TimelineEntry, TimelineReads

from .agent_api import is_token68

_STATES = ", ".join(state.value for state in WorkState)

InboxStatus = Literal["pending", "processing", "done", "ignored", "failed"]
_INBOX_STATUSES: tuple[str, ...] = get_args(InboxStatus)
_STATUSES = ", ".join(_INBOX_STATUSES)
INBOX_DEFAULT_LIMIT = 50

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


class Reported(BaseModel):
    """The newest report of each kind across the ticket's deliveries: claims, until GitHub agrees."""

    branch: str | None
    commit: str | None
    pull_request: int | None


class PullRequestOut(BaseModel):
    number: int
    state: str = Field(description="open, merged, or closed (without merging).")
    draft: bool
    head_ref: str
    head_sha: str = Field(description="The head GitHub shows: at the merge once merged.")
    base_ref: str
    merge_commit_sha: str | None
    problem: str | None = Field(description="Why an open pull request cannot be merged as it stands.")
    updated_at: str = Field(description="GitHub's time of the newest fact about it.")


class BranchOut(BaseModel):
    name: str
    head_sha: str | None = Field(description="The newest pushed commit; null before the first push or once deleted.")
    exists: bool


class VerifiedItem(BaseModel):
    kind: Literal["branch", "commit", "pull_request"]
    reported: str = Field(description="The branch's name, the commit as reported, or the pull request's number.")
    state: Literal["verified", "unverified", "not_found"] = Field(
        description="verified: GitHub showed it; unverified: not yet; not_found: GitHub answered that it does not "
        "know it (404 or 422, asked again 1, 3 and 7 s later) since it was reported."
    )


class RepositoryRail(BaseModel):
    state: RepositoryState
    text: str = Field(description="The rail in plain words, as the status comment shows it.")
    reason: str | None = Field(description="Why the rail is blocked.")
    reported: Reported
    verified_head_sha: str | None = Field(description="The head GitHub shows for what the rail speaks of.")
    checked_at: str | None = Field(description="The time of the fact that showed `verified_head_sha`.")
    mismatch: str | None = Field(description="Where the report and GitHub disagree, in plain words.")
    pull_requests: list[PullRequestOut] = Field(description="Every pull request that links the ticket.")
    branches: list[BranchOut] = Field(description="Every branch that links the ticket.")
    verification: list[VerifiedItem] = Field(
        description="Each reported branch, pull request and commit (the newest report of each), and whether GitHub "
        "agrees it exists."
    )


class EnvironmentOut(BaseModel):
    environment: str
    state: DeploymentState
    sha: str
    deployment_id: int


class DeploymentOut(BaseModel):
    id: int
    environment: str | None
    sha: str | None
    status: str | None = Field(description="The newest status; null before the first.")


class DeploymentRail(BaseModel):
    state: DeploymentState
    text: str = Field(description="The rail in plain words, as the status comment shows it.")
    environments: list[EnvironmentOut] = Field(description="Where the merged change stands, per environment.")
    deployments: list[DeploymentOut] = Field(description="Every deployment the rail knows of.")


class EvidenceRails(BaseModel):
    repository: RepositoryRail
    deployment: DeploymentRail
    updated_at: datetime | None = Field(description="When the rails last changed; null before their first fact.")


class EvidenceLineOut(BaseModel):
    text: str = Field(description="The brief's evidence item, as written.")
    kinds: list[str] = Field(
        description="The kinds of evidence Baton reads it to require, each once per item (two screenshots: "
        "`screenshot` twice); empty when it names none or offers a choice, so it is for the reviewer alone."
    )


class BriefOut(BaseModel):
    """The task brief in force, as read from the issue body."""

    task: str
    scope: list[str] = Field(description="The files the task may touch (`scope.files`).")
    excluded: list[str] = Field(description="What is out of scope (`scope.excluded`).")
    access: str | None = Field(description="How the runner gets access to what the task needs, as written.")
    acceptance: list[str]
    required_evidence: list[str] = Field(
        description="The kinds a delivery must show, from the brief alone (the repository's `required_evidence` "
        "adds to it), each once per item: branch, commit, pr, tests, screenshot."
    )
    evidence_lines: list[EvidenceLineOut] = Field(description="The evidence items written as sentences.")
    reviewer: str | None = Field(description="The reviewer as a login or `org/team`, when the brief names one.")
    reviewer_as_written: str | None = Field(
        description="A reviewer the brief names in words, not as a login or team: shown, never enforced."
    )
    owner: str | None = Field(description="The task owner the brief names, instead of the issue's author.")
    code: bool = Field(description="False for a non-code task, which has no evidence rails.")

    @field_validator("evidence_lines", mode="before")
    @classmethod
    def _read(cls, lines: Sequence[object]) -> list[object]:
        """Read from a `Brief`: each evidence line as written, with the kinds it requires."""
        return [
            {"text": line, "kinds": sorted(evidence_line(line).elements(), key=EVIDENCE_KINDS.index)}
            if isinstance(line, str)
            else line
            for line in lines
        ]


class IssueStateOut(BaseModel):
    state: str = Field(description="open or closed, as GitHub last told Baton.")
    reason: str | None = Field(
        description="GitHub's `state_reason` of a closed issue: completed, not_planned or duplicate; null when open."
    )
    by: str | None = Field(description="Who closed or reopened it.")
    at: str | None = Field(
        description="GitHub's time of the change (`closed_at`, or `updated_at` for a reopening); null while the "
        "issue has stayed open since Baton first heard of it."
    )
    merged: bool = Field(description="True when a merged pull request closed it (evidence only: nothing is flagged).")
    flagged: bool = Field(
        description="True while a person's close flags a claimed or delivered ticket: the work state stays, and "
        "a reviewer or maintainer decides."
    )


class TicketOut(SummaryOut):
    created_at: datetime
    priority: int = Field(
        description="0 (p0, handed out first) to 4: the brief's `priority`, else the one the issue's labels give "
        "(`priority_labels`), else 2."
    )
    ready: bool = Field(description="An open task that nothing open blocks: an agent may claim it.")
    blocked_by: list[str] = Field(
        description='The open issues (`owner/repo#N`) it waits for: its "blocked by" issues, open sub-issues and '
        "the brief's `depends_on`."
    )
    parent: str | None = Field(description="The issue it is a sub-issue of (`owner/repo#N`); null when none.")
    brief: BriefOut | None = Field(description="The brief in force; null when the issue has none.")
    issue_state: IssueStateOut = Field(
        description="The issue's own state on GitHub. A closed issue withdraws a draft or open ticket; a claimed "
        "or delivered one keeps its state and is flagged."
    )
    attempts: list[AttemptOut]
    deliveries: list[DeliveryOut]
    reviews: list[ReviewOut]
    evidence: EvidenceRails = Field(
        description="The repository and deployment rails: what GitHub shows of the ticket's code. They never "
        "move the work state; before their first fact they are unreported and not_deployed."
    )


class EventOut(BaseModel):
    id: str = Field(description="`work-N` or `evidence-N`: the entry, unique within the ticket's timeline.")
    rail: Rail = Field(description="work (a transition or a restored label), repository or deployment (evidence).")
    type: str = Field(
        description="A work event (created, claimed, delivered, …, label_restored) or what the evidence rail "
        "recorded (pull_request, branch, check, report, deployment, deployment_status, comparison, acceptance, "
        "issue_closed, issue_reopened)."
    )
    actor: str | None = Field(description="Who acted; null on evidence events.")
    role: str | None = Field(description="The role they acted in; null on evidence events.")
    attempt: int | None = Field(description="The ticket's attempt after a work event; null on evidence events.")
    revision: int | None = Field(description="The ticket's revision after a work event; null on evidence events.")
    operation_id: str | None = Field(description="The id of the command that caused it: its comment, its place there.")
    source: str | None = Field(
        default=None, description="What told Baton of an evidence event (a webhook delivery, the REST API, a "
        "delivery's command); null on work events."
    )  # fmt: skip
    repository_state: RepositoryState | None = Field(
        default=None, description="The repository rail after an evidence event; null on work events."
    )
    deployment_state: DeploymentState | None = Field(
        default=None, description="The deployment rail after an evidence event; null on work events."
    )
    data: dict[str, Any]
    created_at: datetime = Field(description="When Baton recorded it: the timeline's order.")


class EventList(BaseModel):
    events: list[EventOut]
    next: str | None = Field(
        default=None, description="The cursor of the next page (pass it as `after`); null on the last page."
    )


class WebhookDeliveryOut(BaseModel):
    """A stored webhook delivery, without its payload."""

    id: str = Field(description="GitHub's `X-GitHub-Delivery` id, as `baton replay` takes it.")
    event: str = Field(description="The `X-GitHub-Event`: issue_comment, pull_request …")
    action: str | None = Field(description="The payload's `action`; null for events without one.")
    status: InboxStatus = Field(
        description="pending (waiting, maybe until next_attempt_at), processing, done, ignored (nothing for "
        "Baton to do) or failed (for good, until replayed or redelivered)."
    )
    attempts: int = Field(description="How many times its processing started.")
    error: str | None = Field(
        description="Why its processing failed: for good when failed, for a passing reason when pending; why it "
        "was ignored when it carries a value GitHub never sends."
    )
    received_at: datetime = Field(description="When it first arrived (a redelivery keeps it).")
    next_attempt_at: datetime | None = Field(
        description="When a delivery that failed for a passing reason is tried again; null otherwise."
    )


class WebhookDeliveryList(BaseModel):
    deliveries: list[WebhookDeliveryOut]


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


def _ticket(detail: TicketDetail) -> TicketOut:
    ticket = detail.ticket
    return TicketOut(
        **_summary(ticket).model_dump(),
        created_at=ticket.created_at,
        priority=ticket.priority,
        ready=detail.ready,
        blocked_by=list(detail.blocked_by),
        parent=detail.parent,
        brief=_brief(detail.brief),
        attempts=[AttemptOut.model_validate(a, from_attributes=True) for a in detail.attempts],
        deliveries=[DeliveryOut.model_validate(d, from_attributes=True) for d in detail.deliveries],
        reviews=[ReviewOut.model_validate(r, from_attributes=True) for r in detail.reviews],
        evidence=_evidence(
            from_dict(detail.evidence) if detail.evidence else EvidenceRail(ticket.number), detail.evidence_updated_at
        ),
        issue_state=_issue_state(detail),
    )


def _brief(brief: Brief | None) -> BriefOut | None:
    return None if brief is None else BriefOut.model_validate(brief, from_attributes=True)


def _issue_state(detail: TicketDetail) -> IssueStateOut:
    issue = detail.issue
    if issue is None:  # never told otherwise: issues are open when Baton first hears of them
        return IssueStateOut(state="open", reason=None, by=None, at=None, merged=False, flagged=False)
    flag = issue.closed and not issue.merged and detail.ticket.state in IN_HAND
    return IssueStateOut(state=issue.state, reason=issue.reason, by=issue.by, at=issue.at, merged=issue.merged,
                         flagged=flag)  # fmt: skip


def _pull_request_state(merged: bool, open_: bool) -> str:
    return "merged" if merged else "open" if open_ else "closed"


def _evidence(rail: EvidenceRail, updated_at: datetime | None) -> EvidenceRails:
    pulls = [
        PullRequestOut(
            number=pr.number,
            state=_pull_request_state(pr.merged, pr.open),
            draft=pr.latest.draft,
            head_ref=pr.head_ref,
            head_sha=pull_request_head(rail, pr)[0],
            base_ref=pr.base_ref,
            merge_commit_sha=pr.merge_commit_sha,
            problem=blocker(rail, pr) if pr.open else None,
            updated_at=pr.latest.stamp,
        )
        for pr in rail.linked_pull_requests()
    ]
    branches = [BranchOut(name=b.name, head_sha=b.sha, exists=b.exists) for b in rail.linked_branches()]
    repository = RepositoryRail(
        state=rail.repository,
        text=repository_text(rail),
        reason=rail.reason,
        reported=Reported(
            branch=rail.reported_branch, commit=rail.reported_commit, pull_request=rail.reported_pull_request
        ),
        verified_head_sha=rail.verified_head_sha,
        checked_at=rail.checked_at,
        mismatch=rail.mismatch,
        pull_requests=pulls,
        branches=branches,
        verification=[
            VerifiedItem.model_validate({"kind": i.kind, "reported": i.ref, "state": i.state})
            for i in verification(rail)
        ],
    )
    deployment = DeploymentRail(
        state=rail.deployment,
        text=deployment_text(rail),
        environments=[EnvironmentOut.model_validate(e, from_attributes=True) for e in environments(rail)],
        deployments=[
            DeploymentOut(id=d.id, environment=d.environment, sha=d.sha, status=d.status) for d in rail.deployments
        ],
    )
    return EvidenceRails(repository=repository, deployment=deployment, updated_at=updated_at)


def _event(entry: TimelineEntry) -> EventOut:
    return EventOut(
        id=entry.key, rail=entry.rail, type=entry.type, actor=entry.actor, role=entry.role, attempt=entry.attempt,
        revision=entry.revision, operation_id=entry.operation_id, source=entry.source,
        repository_state=RepositoryState(entry.repository_state) if entry.repository_state else None,
        deployment_state=DeploymentState(entry.deployment_state) if entry.deployment_state else None,
        data=entry.data, created_at=entry.created_at,
    )  # fmt: skip


def _webhook_delivery(stored: Stored) -> WebhookDeliveryOut:
    return WebhookDeliveryOut.model_validate(stored, from_attributes=True)  # the inbox's times are UTC


# ---------------------------------------------------------------------------------------------- auth

_UNAUTHORIZED = {"WWW-Authenticate": "Bearer"}

# Module level because FastAPI resolves the (postponed) annotations below in the module's namespace.
# It holds no secret: only how to read the header, and how OpenAPI describes it.
_bearer = HTTPBearer(auto_error=False, description="The value of BATON_API_TOKEN.")


Readers = Callable[[str, str], bool]  # (a person's GitHub token, "owner/name") -> whether they may read it


class ReadApi:
    """One app's read API: what it reads from, its token and who else may read a ticket. The routes
    (`api_router`) are made once per process and find it on the app (`app.state.read_api`)."""

    def __init__(self, engine: Engine, settings: Settings, clock: Clock, readers: Readers | None = None) -> None:
        self.reads = TimelineReads(engine)
        # Listing only reads: on SQLite its connections take no writer lock, so it never waits behind the work.
        self.inbox = Inbox(reader(engine), clock)
        self.token = settings.api_token.get_secret_value() if settings.api_token else ""
        self.readers = readers
        self.at_hand = engine.dialect.name == "sqlite"

    async def ticket(self, owner: str, repo: str, number: int) -> TicketOut:
        """One ticket, read in a thread (the route is a coroutine: FastAPI would run a plain function in one, then
        check its answer in another); raises the route's 404 for an issue Baton does not track."""
        detail = await run_in_threadpool(self.reads.ticket, f"{owner}/{repo}", number)
        if detail is None:
            raise _unknown(owner, repo, number)
        return _ticket(detail)

    def ticket_at_once(
        self, owner: str, repo: str, number: int, authorization: str | None
    ) -> asyncio.Future[Response] | Response | None:
        """The answer `GET /api/v1/repos/{owner}/{repo}/issues/{number}` gets with the read token, as its route
        gives it, for `baton serve`'s lane (`web/plain.py`); None for any other caller (a person's token, a wrong
        token or none), whom the route answers. On SQLite the answer itself: the read is a snapshot that waits for no
        writer, cheaper on the event loop than a hop to a thread and back."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not read_token(self.token, token):
            return None
        if self.at_hand:
            return self._ticket_now(owner, repo, number)
        return asyncio.ensure_future(self._ticket_answer(owner, repo, number))

    def _ticket_now(self, owner: str, repo: str, number: int) -> Response:
        """The route's answer, as FastAPI writes it (its handler's, for the 404)."""
        detail = self.reads.ticket(f"{owner}/{repo}", number)
        if detail is None:
            error = _unknown(owner, repo, number)
            return JSONResponse({"detail": error.detail}, status_code=error.status_code, headers=error.headers)
        return Response(_TICKET_JSON.dump_json(_ticket(detail), by_alias=True), media_type="application/json")

    async def _ticket_answer(self, owner: str, repo: str, number: int) -> Response:
        return await run_in_threadpool(self._ticket_now, owner, repo, number)


_TICKET_JSON = TypeAdapter(TicketOut)  # as FastAPI writes the route's answer


def read_token(expected: str, presented: str) -> bool:
    """Whether `presented` (a header's value as Starlette decodes it, latin-1) is the read token `expected`. Never
    logged and never put into a response."""
    # Starlette decodes header bytes as latin-1: encoding back gives the bytes the client sent.
    return bool(expected) and hmac.compare_digest(presented.encode("latin-1"), expected.encode("utf-8"))


# The two dependencies are coroutines: FastAPI runs a plain function's in a thread, and the hop there and back cost
# more than what they do. Only a person's token, which GitHub may be asked about, goes to a thread.
async def _read_api(request: Request) -> ReadApi:
    api: ReadApi = request.app.state.read_api
    return api


async def _authorize(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    api = await _read_api(request)
    # Never logged and never put into a response.
    expected, readers = api.token, api.readers
    owner, repo = request.path_params.get("owner"), request.path_params.get("repo")
    presented_token = credentials.credentials if credentials is not None else ""
    configured = read_token(expected, presented_token)
    if credentials is not None and not configured and not is_token68(presented_token):
        # Bytes outside ASCII, or characters no bearer token holds (RFC 6750): no token of anyone's, and never
        # sent on to GitHub.
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "Invalid API token.", headers=_UNAUTHORIZED)
    if readers is not None and owner and repo and presented_token and not configured:
        # A ticket of one repository: an agent's own GitHub token reads it where its person may read the
        # repository on GitHub, within that person's rate (as their agent API calls). A person who may not is
        # answered as for a repository Baton does not serve.
        may: bool | None = None
        with suppress(Exception):  # not a person's token, or GitHub cannot say: the read token's rules
            may = await run_in_threadpool(readers, presented_token, f"{owner}/{repo}")
        if may:
            request.app.state.agent_api.limit_reader(presented_token)
            return
        if may is False:
            raise HTTPException(status.HTTP_404_NOT_FOUND, not_served(f"{owner}/{repo}"))
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
    if not configured:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "Invalid API token.", headers=_UNAUTHORIZED)


# ---------------------------------------------------------------------------------------------- routes


def _printable(value: str | None) -> str | None:
    """A name or login as GitHub makes them: a control character (NUL above all, which PostgreSQL refuses in
    text) is in none, so a request with one is refused rather than looked up."""
    if value is not None and not value.isprintable():
        raise ValueError("no repository or login on GitHub holds a control character")
    return value


Printable = AfterValidator(_printable)
Owner = Annotated[str, Path(description="The repository's owner (any case)."), Printable]
Repo = Annotated[str, Path(description="The repository's name (any case)."), Printable]
# GitHub's issue numbers fit a signed 32-bit integer, as the ticket tables keep them
Number = Annotated[int, Path(ge=1, le=MAX_NUMBER, description="The issue number.")]


def _unknown(owner: str, repo: str, number: int) -> HTTPException:
    return HTTPException(
        status.HTTP_404_NOT_FOUND,
        f"Unknown ticket {owner}/{repo}#{number}: Baton does not track that issue.",
    )


def _refused(
    parameter: str, kind: str, message: str, value: str, expected: str | None = None
) -> RequestValidationError:
    """FastAPI's own 422 for the query parameter `parameter`, refused by a check its schema cannot make."""
    error: dict[str, Any] = {"type": kind, "loc": ("query", parameter), "msg": message, "input": value}
    if expected is not None:
        error["ctx"] = {"expected": expected}
    return RequestValidationError([error])


def _state(value: str | None) -> WorkState | None:
    """An empty `state=` means no filter, as a form leaves it; anything else must be a state."""
    if not value:
        return None
    try:
        return WorkState(value)
    except ValueError:
        message = f"Unknown state {value!r}: valid states are {_STATES}."
        raise _refused("state", "enum", message, value, _STATES) from None


def _cursor(value: str | None) -> Cursor | None:
    """An empty `after=` means the first page; anything else must be a `next` this API gave."""
    if not value:
        return None
    try:
        return Cursor.parse(value)
    except ValueError:
        message = f"Unknown cursor {value!r}: pass the `next` of the page before, or nothing for the first."
        raise _refused("after", "value_error", message, value) from None


def _inbox_status(value: str | None) -> str | None:
    """As `_state`: an empty `status=` means no filter; anything else must be a delivery status."""
    if not value:
        return None
    if value in _INBOX_STATUSES:
        return value
    message = f"Unknown status {value!r}: valid statuses are {_STATUSES}."
    raise _refused("status", "enum", message, value, _STATUSES)


Api = Annotated[ReadApi, Depends(_read_api)]


@functools.cache
def api_router() -> APIRouter:
    """The read API's routes, made once per process (every app would otherwise work out each route's
    parameters and answers again); each call finds its app's `ReadApi` on the app."""
    router = APIRouter(
        prefix="/api/v1",
        tags=["read"],
        dependencies=[Depends(_authorize)],
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
    async def get_ticket(api: Api, owner: Owner, repo: Repo, number: Number) -> TicketOut:
        return await api.ticket(owner, repo, number)

    @router.get(
        "/tickets",
        summary="Tickets, filtered, by repository then issue number",
    )
    def list_tickets(
        api: Api,
        repo: Annotated[str | None, Query(description='"owner/name" (any case).'), Printable] = None,
        state: Annotated[
            str | None,
            Query(description=f"One of {_STATES}.", json_schema_extra={"enum": [s.value for s in WorkState]}),
        ] = None,
        runner: Annotated[str | None, Query(description="The runner's login (any case)."), Printable] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    ) -> TicketList:
        found = api.reads.tickets(
            repository=repo or None,
            state=_state(state),
            runner=runner.lstrip("@") if runner else None,
            limit=limit,
        )
        return TicketList(tickets=[_summary(ticket) for ticket in found])

    @router.get(
        "/repos/{owner}/{repo}/issues/{number}/events",
        responses={404: {"model": Problem, "description": "Baton does not track this issue."}},
        summary="A ticket's append-only timeline of every rail, oldest first, a page at a time",
    )
    def get_events(
        api: Api,
        owner: Owner,
        repo: Repo,
        number: Number,
        rail: Annotated[
            list[Rail] | None, Query(description="Only these rails (repeat it for several); every rail by default.")
        ] = None,
        after: Annotated[str | None, Query(description="The `next` cursor of the page before.")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = TIMELINE_LIMIT,
    ) -> EventList:
        rails = frozenset(rail or RAILS)
        timeline = api.reads.timeline(f"{owner}/{repo}", number, after=_cursor(after), limit=limit, rails=rails)
        if timeline is None:
            raise _unknown(owner, repo, number)
        following = str(timeline.next) if timeline.next is not None else None
        return EventList(events=[_event(entry) for entry in timeline.entries], next=following)

    @router.get(
        "/deliveries",
        summary="Stored webhook deliveries, newest first: what failed and why, what waits to be tried again",
    )
    def list_deliveries(
        api: Api,
        status: Annotated[
            str | None,
            Query(description=f"One of {_STATUSES}.", json_schema_extra={"enum": list(_INBOX_STATUSES)}),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = INBOX_DEFAULT_LIMIT,
    ) -> WebhookDeliveryList:
        found = api.inbox.listed(_inbox_status(status), limit)
        return WebhookDeliveryList(deliveries=[_webhook_delivery(stored) for stored in found])

    return router
