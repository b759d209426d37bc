"""The agent API: an agent claims, releases and delivers, and a reviewer accepts, sends back or reopens, over
HTTP with its own GitHub token, and gets the decision in the response (docs/agents.md).

`Authorization: Bearer <token>`: a personal (classic or fine-grained), OAuth or user-to-server token. Baton
asks GitHub whose it is (`github/identity.py`) and decides the call as a comment by that login would be
decided; GitHub then shows it as it shows a comment's decision (labels, assignee, status comment), and the
event records `source: api`. Where Baton takes GitHub Actions OIDC tokens (`BATON_OIDC_AUDIENCE`), a workflow's
token is taken too: the caller is its `actor`, on its own installation's repositories only, and the event records
the run (`via: actions`, `workflow_ref`, `run_id`). `If-Match: "<revision>"` makes the call a compare-and-swap
on that revision; `Idempotency-Key` makes a retry get the first answer.
"""

import asyncio
import functools
import hashlib
import hmac
import inspect
import itertools
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, cast

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from githubkit.exception import RequestError, RequestFailed
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
)
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from baton.client.verbs import BY_NAME, SAID, SUMMARY, USER, VERBS, WORD, Verb
from baton.domain import Command, Evidence, Permission, Refused, RepositoryKey, Ticket, TicketKey, WorkState
from baton.domain.brief import UNSAID_PRIORITY
from baton.domain.refusals import status_of
from baton.domain.roles import may_run
from baton.environment.settings import Settings
from baton.github.client import WouldWait, not_waiting
from baton.github.identity import BadToken, Identities, Identity, IdentityUnavailable
from baton.github.issues import NotOpened
from baton.github.refusals import rate_limit
from baton.github.webhooks import MAX_NUMBER
from baton.intake.agent_requests import as_run, create_and_claim, decide_all, prepare, within
from baton.intake.context import IssueSource
from baton.service import work
from baton.service.resolver import DirectoryUnavailable, Missing, Resolver, not_served
from baton.service.work import Handed, NextAsk, Outcome, Place, WorkService
from baton.store import dependencies, ready
from baton.store.api_requests import ApiRequests, Remembered
from baton.store.engine import writing_at_hand
from baton.store.reads import Reads

from .batches import LATER, Batches, Later

if TYPE_CHECKING:
    from baton.process.metrics import Metrics

log = logging.getLogger("baton.api")

# Seconds an unanswered create-and-claim request is taken as still under way (opening its issue on GitHub,
# which waits at most BATON_GITHUB_TIMEOUT): after that, a retry with its key opens the issue afresh.
UNDER_WAY = 30.0

Owner = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}$")]
Repo = Annotated[str, Path(pattern=r"^[A-Za-z0-9._-]{1,100}$")]
Number = Annotated[int, Path(ge=1, le=MAX_NUMBER)]
Text = Annotated[str, StringConstraints(max_length=10_000)]


class Answer(BaseModel):
    repository: str
    issue: int
    state: WorkState | None
    runner: str | None
    revision: int | None
    attempt: int | None = None
    url: str
    message: str | None = None


class FieldProblem(BaseModel):
    field: str = Field(description='Where in the request: a body field (`summary`, `tests[0]`), or the header, path '
                       'or query parameter; `body` for the body as a whole.')  # fmt: skip
    message: str


class Problem(BaseModel):
    error: str = Field(description="conflict, precondition_failed, forbidden, not_found, invalid, unauthorized, "
                       "rate_limited or unavailable")  # fmt: skip
    code: str | None = Field(None, description="The refusal's code, as a comment's refusal would have it.")
    state: WorkState | None = None
    runner: str | None = None
    revision: int | None = None
    message: str
    problems: list[FieldProblem] | None = Field(
        None, description="With `invalid` for a request that is not valid: each problem, naming its field."
    )


class Task(BaseModel):
    repository: str
    issue: int
    title: str | None = Field(description="The issue's title (else the brief's task line, where it has one).")
    url: str
    state: WorkState
    revision: int
    created_at: str
    priority: int = Field(
        description="0 (p0, handed out first) to 4: the brief's `priority`, else the one the issue's labels give "
        "(`priority_labels`), else 2."
    )
    brief: dict[str, Any] | None
    blocked_by: list[str] = Field(
        description='The open issues (`owner/repo#N`) that keep the task from being ready: its "blocked by" '
        "issues, open sub-issues and the brief's `depends_on`. Empty: ready."
    )
    ready: bool = Field(description="An open task nothing open blocks: it may be claimed.")
    parent: str | None = Field(description="The issue it is a sub-issue of (`owner/repo#N`); null when none.")


class ClaimedTask(Answer):
    """Claim-next's answer: the claim's, with the task it took."""

    title: str | None = Field(description="The issue's title (else the brief's task line, where it has one).")
    priority: int = Field(
        description="0 (p0) to 4, from the brief's `priority`, else its labels' (`priority_labels`); else 2."
    )
    brief: dict[str, Any] | None


class Counts(BaseModel):
    ready: int = Field(description="Ready tasks (open, nothing open blocks them) matching the request.")
    blocked: int = Field(description="Open tasks that something open blocks.")
    claimed: int = Field(description="Tasks somebody holds.")


class NoneReady(Problem):
    counts: Counts | None = Field(None, description="With `none_ready`: what the repositories asked about hold.")


class Service(BaseModel):
    service: str = Field(description="Always `baton`.")
    version: str
    openapi: str = Field(description="Where the API's description is.")


class Tasks(BaseModel):
    tasks: list[Task]


# What no issue, comment or column can hold: NUL, and a UTF-16 surrogate without its pair (JSON's `\ud800` escape
# alone decodes to one; it has no UTF-8 form). A body carrying one is refused before anything is decided or
# written to GitHub.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _storable(value: Any) -> Any:
    texts = value if isinstance(value, list) else [value]
    for one in texts:
        if isinstance(one, str) and (found := _UNSTORABLE.search(one)) is not None:
            if found.group() == "\x00":
                raise ValueError("holds a NUL character (\\u0000), which GitHub and Baton cannot store")
            raise ValueError(f"holds a lone surrogate (\\u{ord(found.group()):04x}), which is not text: send UTF-8")
    return value


class Body(BaseModel):
    """An agent API body: a field it does not know is refused, naming it (rather than dropped unread), and no
    text field may hold what cannot be stored."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        return _storable(value)


class NewIssue(Body):
    title: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    body: Text = ""


def _body(verb: Verb) -> type[Body]:
    """The body a verb's route takes: a field for each of its arguments."""
    fields: dict[str, Any] = {
        one.name: (one.annotation(), ... if one.required else one.unset()) for one in verb.arguments
    }
    made: type[Body] = create_model(verb.body, __base__=Body, __module__=__name__, **fields)
    return made


# What each command route takes as its body, by the verb's name: a route whose verb has a required argument
# needs one; the others take none (or JSON `null`) as an empty one.
MODELS: dict[str, type[Body]] = {verb.name: _body(verb) for verb in VERBS}
BODIES: dict[str, Any] = {name: model if BY_NAME[name].takes_body else model | None for name, model in MODELS.items()}


Label = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=r"^[^\r\n]+$")]
RepoName = Annotated[str, StringConstraints(pattern=r"^(?:[A-Za-z0-9][A-Za-z0-9-]{0,38}/)?[A-Za-z0-9._-]{1,100}$")]


class Next(Body):
    labels: Annotated[list[Label], Field(max_length=20)] = Field(
        [], description="Only tasks whose issue carries every one of these labels (any case)."
    )
    repo: RepoName | None = Field(
        None, description="Only tasks of this repository (`name`, or `owner/name` of the same owner)."
    )


def command_of(action: str, body: BaseModel | None) -> tuple[Command, dict[str, Any]]:
    """The command a command route's body makes, and the body as a retry with the same Idempotency-Key sends it."""
    if body is None:  # most calls (a claim, a release): the same command every time
        command, sent = _bodiless(action)
        return command, dict(sent)
    return _command_of(action, body)


@functools.cache
def _bodiless(action: str) -> tuple[Command, dict[str, Any]]:
    return _command_of(action, None)


def _command_of(action: str, body: BaseModel | None) -> tuple[Command, dict[str, Any]]:
    verb = BY_NAME[action]
    values: dict[str, Any] = {argument.name: argument.unset() if body is None else getattr(body, argument.name)
                              for argument in verb.arguments}  # fmt: skip
    text, user, summary, evidence = "", None, None, dict[str, Any]()
    for argument in verb.arguments:
        value = values[argument.name]
        if argument.carries == USER:
            user = values[argument.name] = value.removeprefix("@") if value is not None else None
        elif argument.carries == WORD:
            text = argument.name if value else text
        elif argument.carries in (SAID, SUMMARY):
            text = value
            summary = value if argument.carries == SUMMARY else summary
        else:
            evidence[argument.carries] = tuple(value) if isinstance(value, list) else value
    return Command(action, user=user, text=text, evidence=Evidence(**evidence), summary=summary), verb.sent(values)


class _Limiter:
    """Each login's requests per minute, as a token bucket (a burst of a tenth of a minute's worth)."""

    def __init__(self, per_minute: int) -> None:
        self.rate = per_minute / 60.0
        self.burst = max(1.0, per_minute / 10.0)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def wait(self, login: str) -> float:
        """0 when `login` may go on now, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, then = self._buckets.get(login.lower(), (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            if tokens >= 1.0:
                self._buckets[login.lower()] = (tokens - 1.0, now)
                return 0.0
            self._buckets[login.lower()] = (tokens, now)
            return (1.0 - tokens) / self.rate


def _problem(
    status: int, error: str, message: str, *, code: str | None = None, state: WorkState | None = None,
    runner: str | None = None, revision: int | None = None, problems: list[FieldProblem] | None = None,
    counts: dict[str, int] | None = None,
) -> JSONResponse:  # fmt: skip
    """A `Problem` answer, its body made directly (as `Problem.model_dump(mode="json")` would make it)."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body: dict[str, Any] = {"error": error, "code": code, "state": state, "runner": runner, "revision": revision,
                            "message": message}  # fmt: skip
    if problems:  # `problems` belongs to the answer to an invalid request alone
        body["problems"] = [{"field": one.field, "message": one.message} for one in problems]
    if counts is not None:  # claim-next's `none_ready`
        body["counts"] = counts
    return JSONResponse(body, status, headers)


class _Json(JSONResponse):
    """A JSON answer whose body is encoded already: an answer kept for an Idempotency-Key, or one that a race's
    losers share."""

    def render(self, content: Any) -> bytes:
        return content if isinstance(content, bytes) else super().render(content)


def _field(location: tuple[Any, ...]) -> str:
    """Pydantic's location of a problem as the request names it: `tests[0]`, `If-Match`, `body`."""
    where, *rest = location or ("body",)
    if not rest:
        return str(where)
    named = str(rest[0])
    for part in rest[1:]:
        named += f"[{part}]" if isinstance(part, int) else f".{part}"
    return named


def _said(problem: dict[str, Any]) -> str:
    kind = problem.get("type", "")
    if kind == "extra_forbidden":
        return "unknown field: this request takes no such field"
    if kind == "string_unicode":  # pydantic's word for a lone surrogate
        return "holds a lone surrogate (\\ud800 to \\udfff without its pair), which is not text: send UTF-8"
    if kind == "json_invalid":
        return f"not valid JSON: {(problem.get('ctx') or {}).get('error', 'it cannot be read')}"
    message = str(problem.get("msg", "not valid"))
    return message.removeprefix("Value error, ")


async def invalid_request(request: Request, error: Exception) -> Response:
    """A request the agent API cannot take as sent answers 422 with Baton's error body, naming each problem's
    field; the read API keeps FastAPI's (docs/api.md)."""
    assert isinstance(error, RequestValidationError)
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or "agents" not in route.tags:
        return await request_validation_exception_handler(request, error)
    problems = [
        FieldProblem(field="body" if one.get("type") == "json_invalid" else _field(tuple(one.get("loc", ()))),
                     message=_said(one))
        for one in error.errors()
    ]  # fmt: skip
    said = "; ".join(f"{one.field}: {one.message}" for one in problems[:5]) or "the request is not valid"
    return _problem(422, "invalid", f"The request is not valid: {said}.", problems=problems)


PREFIX = "/api/v1"


async def no_route(request: Request, error: Exception) -> Response:
    """A path under the API's prefix that no route serves (404), or a method its route does not take (405),
    answers with Baton's error body, saying what was asked and where the routes are listed: a client newer than
    this Baton learns that the route is missing rather than that something else answers here. Elsewhere, and
    for a route's own 404 (the read API's unknown ticket), FastAPI's answer stands."""
    assert isinstance(error, StarletteHTTPException)
    path, status = request.url.path, error.status_code
    under = path == PREFIX or path.startswith(PREFIX + "/")
    if not under or status not in (404, 405) or (status == 404 and "route" in request.scope):
        return await http_exception_handler(request, error)
    if status == 405:
        allowed = (error.headers or {}).get("Allow", "")
        answer = _problem(405, "method_not_allowed", f"{path} does not take {request.method}; it takes {allowed}.")
        answer.headers["Allow"] = allowed
        return answer
    return _problem(
        404, "no_route", f"Baton has no route {request.method} {path}: the routes this Baton serves are listed "
        "at /openapi.json (a client newer than this Baton may ask for one it lacks).",
    )  # fmt: skip


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class _StrictJson(Request):
    """A request body read as RFC 8259 JSON: Python also reads `NaN`, `Infinity` and `-Infinity`, which no JSON
    encoder (Baton's answers, its columns) can write back."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = json.loads(body, parse_constant=_constant)
            except (ValueError, RecursionError) as error:  # not UTF-8, a constant, too deep, too many digits
                if isinstance(error, json.JSONDecodeError):
                    raise
                raise json.JSONDecodeError(str(error), body.decode("utf-8", "replace"), 0) from None
        return self._json


class _StrictRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            answered: Response = await handler(_StrictJson(request.scope, request.receive))
            return answered

        return strict


# How long a caller is asked to wait when GitHub failed for a moment (a 5xx, a timeout) while Baton asked it.
GITHUB_RETRY = 5


def _github_failed(error: Exception) -> JSONResponse | None:
    """GitHub failing for a moment while Baton asked who the caller is (a 5xx, a timeout, a rate limit): 503
    with Retry-After, since nothing was decided and a refusal would be wrong. None for any other error."""
    if not isinstance(error, RequestError):
        return None
    asked = rate_limit(error)
    if isinstance(error, RequestFailed) and error.response.status_code < 500 and asked is None:
        return None
    seconds = max(1, int((asked or GITHUB_RETRY) + 0.999))
    response = _problem(503, "unavailable", f"GitHub could not be asked: try again in {seconds} s.")
    response.headers["Retry-After"] = str(seconds)
    return response


def _unavailable(error: Missing | DirectoryUnavailable | NotOpened) -> JSONResponse:
    """The answer to a call that could not be decided: no such issue (404), or GitHub could not be asked (503)."""
    if isinstance(error, Missing):
        return _problem(404, "not_found", error.message)
    if isinstance(error, NotOpened):
        return _problem(503, "unavailable", f"The issue was not opened: {error}; try again shortly.")
    return _problem(503, "unavailable", f"{error}; try again shortly.")


def _call_failed(error: Exception) -> tuple[JSONResponse | Exception, bool]:
    """What one call of a batch answers when making its request failed, and whether that answer is kept for its
    Idempotency-Key: no such issue (404) or GitHub unavailable (503), kept; any other error answers 500 and is not."""
    if isinstance(error, Missing | DirectoryUnavailable):
        return _unavailable(error), True
    failed = _github_failed(error)
    return (error, False) if failed is None else (failed, True)


@dataclass(frozen=True)
class Opened:
    operation: str  # the call's operation id
    first: Remembered | None  # with an Idempotency-Key, what its first request left (None: this is the first)


@dataclass(frozen=True)
class _Call:
    """A command on an issue, as an agent sent it."""

    command: Command
    repository: str  # "owner/name"
    number: int
    identity: Identity
    key: str | None  # its Idempotency-Key
    body: dict[str, Any]

    @property
    def fingerprint(self) -> list[Any]:
        """What a retry with the same Idempotency-Key must send again."""
        return [self.command.name, self.repository.lower(), self.number, self.command.rev, self.body]


@dataclass(frozen=True)
class _NextCall:
    """A claim-next, as an agent sent it."""

    owner: str
    repo: str | None  # None: every repository of the organisation `owner` (`/orgs/{org}/tasks/claim`)
    body: Next
    identity: Identity
    key: str | None  # its Idempotency-Key

    @property
    def fingerprint(self) -> list[Any]:
        return ["next", self.owner.lower(), (self.repo or "").lower(), self.body.model_dump()]

    @property
    def where(self) -> str:
        """The repositories asked about, in words."""
        if self.repo is not None:
            return f"{self.owner}/{self.repo}"
        named = self.body.repo
        return f"{self.owner}/{named.rpartition('/')[2]}" if named else f"the repositories of {self.owner}"


# A burst of claim-next calls reaches a process as a few clumps a millisecond or two apart (each read in one turn
# of the event loop). On PostgreSQL, where a batch costs a few round trips, the first batch of a burst waits while
# calls keep coming within `NEXTS_GATHER` seconds (a lone call never waits), and calls that arrive while batches
# are decided start another at once, up to `NEXTS_AT_ONCE` under way per process, each holding a connection of
# the pool. On SQLite a batch costs no round trip and takes a millisecond or two: the next starts when it ends.
NEXTS_AT_ONCE = 4
NEXTS_GATHER = 0.001
# Commands on issues, on either database: while calls keep coming (a batch ended less than `CALLS_BUSY` seconds
# ago), the first batch of a burst waits while more arrive within `CALLS_GATHER` seconds, until it is as large as
# the last batch was (`web/batches.py`). Twenty agents racing for an issue are then decided in one transaction
# instead of two or three (the first batch used to start with the first one to three calls), which halves the
# database work of a race; an agent calling now and then never waits.
CALLS_GATHER = 0.001
CALLS_BUSY = 0.05

# A call without an Idempotency-Key has an operation id of its own: this process's random prefix and its count of
# such calls (unique as a random id is, without reading the system's randomness for each call).
_CALLS = uuid.uuid4().hex[:16]
_CALLED = itertools.count()

# The `action` of a `PlainRequest` for claim-next: on one repository, and on an organisation's (`repo` empty).
NEXT, ORG_NEXT = "tasks/claim", "orgs/tasks/claim"

_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}")
_REPO = re.compile(r"[A-Za-z0-9._-]{1,100}")
_NUMBER = re.compile(r"[1-9][0-9]{0,18}")
_INVALID = object()  # a body that is not valid as sent


def plain_number(number: str) -> int | None:
    """An issue number in a path, as the routes read it; None for one they read otherwise or refuse."""
    if _NUMBER.fullmatch(number) and (parsed := int(number)) <= MAX_NUMBER:
        return parsed
    return None


def plain_repository(owner: str, repo: str) -> bool:
    """Whether a path's owner and repository are as the routes read them (a name GitHub gives)."""
    return bool(_OWNER.fullmatch(owner) and _REPO.fullmatch(repo))


@functools.cache
def _adapter(model: Any) -> TypeAdapter[Any]:
    return TypeAdapter(model)


@dataclass(frozen=True)
class PlainRequest:
    """A request to a command route (`action` None: to create-and-claim), as `web/plain.py` read it: its path's
    parts, the headers the route reads (each header's first value, as FastAPI reads a header) and its body."""

    owner: str
    repo: str
    number: int  # 0 for create-and-claim
    action: str | None
    authorization: str | None
    if_match: str | None
    key: str | None  # the Idempotency-Key
    content_type: str | None
    body: bytes

    @classmethod
    def of(cls, owner: str, repo: str, number: str | None, action: str | None, headers: dict[bytes, str],
           body: bytes) -> "PlainRequest | None":  # fmt: skip
        """None for a path FastAPI's declaration reads otherwise or refuses (it answers those)."""
        if not (plain_repository(owner, repo) or (action == ORG_NEXT and _OWNER.fullmatch(owner))):
            return None
        parsed = 0 if number is None else plain_number(number)
        if parsed is None:
            return None
        return cls(owner, repo, parsed, action, headers.get(b"authorization"), headers.get(b"if-match"),
                   headers.get(b"idempotency-key"), headers.get(b"content-type"), body)  # fmt: skip

    def body_of(self, model: Any) -> Any:
        """The body validated as `model` (None for none, where the model takes none), or `_INVALID`: read as
        `_StrictRoute` reads it, a JSON body taken only with a JSON content type."""
        if not self.body:
            value = None
        elif (self.content_type or "").partition(";")[0].strip().lower() != "application/json":
            return _INVALID
        else:
            try:
                value = json.loads(self.body, parse_constant=_constant)
            except (ValueError, RecursionError):
                return _INVALID
        try:
            return _adapter(model).validate_python(value)
        except ValidationError:
            return _INVALID


class Refusal(Exception):
    def __init__(self, response: JSONResponse) -> None:
        self.response = response


def web_url(api_url: str) -> str:
    """github.com for api.github.com; a GitHub Enterprise Server's host for its `/api/v3`; else the same."""
    base = api_url.rstrip("/")
    if base == "https://api.github.com":
        return "https://github.com"
    return base.removesuffix("/api/v3")


def readers(resolver: Resolver, identities: Identities) -> Callable[[str, str], bool]:
    """Whether a person's GitHub token may read a repository's tickets: where Baton serves the repository and
    GitHub lets them read it (`Resolver.readable`). Raises `BadToken` for a token that is not a person's."""

    def may_read(token: str, repository: str) -> bool:
        identity = identities.who(token)
        within = identity.run.installation_id if identity.run is not None else None
        try:
            resolver.readable(repository, identity.login, within)
        except Missing:
            return False
        return True

    return may_read


class AgentApi:
    """One app's agent API: its services, its callers' rate and the answers it gives. The routes
    (`agents_router`) are made once per process and find it on the app (`app.state.agent_api`)."""

    def __init__(
        self, resolver: Resolver, work: WorkService, issues: IssueSource | None, listing: Reads,
        identities: Identities, requests: ApiRequests, settings: Settings, metrics: "Metrics | None" = None,
    ) -> None:  # fmt: skip
        """`resolver` says who a caller is, `work` decides their commands, `issues` reads and opens issues on
        GitHub (None: without a GitHub App), `listing` reads the tasks a repository offers, `metrics` counts where
        commands were decided."""
        self.metrics = metrics
        self.resolver = resolver
        self.work = work
        self.issues = issues
        self.identities = identities
        self.requests = requests
        self.limiter = _Limiter(settings.api_requests_per_minute)
        self.site = web_url(settings.github_api_url)
        self.may_read = readers(resolver, identities)
        self.listing = listing
        self.read_token = settings.api_token.get_secret_value() if settings.api_token else ""
        # On SQLite, with no worker process writing beside this one, a batch is decided on the event loop when it
        # needs nothing from GitHub (`calls_at_hand`).
        self.decides_at_hand = work.units.engine.dialect.name == "sqlite" and settings.worker == "inprocess"
        self._calls: Batches[_Call, JSONResponse] = Batches(self.decide_calls, most=100, gather=CALLS_GATHER,
                                                            busy=CALLS_BUSY, at_hand=self.calls_at_hand)  # fmt: skip
        # Claim-next batches overlap, and a burst is gathered, on PostgreSQL (`WorkService.claims_overlap`).
        self._nexts: Batches[_NextCall, JSONResponse] = Batches(
            self.decide_nexts,
            most=100,
            at_once=NEXTS_AT_ONCE if work.claims_overlap else 1,
            gather=NEXTS_GATHER if work.claims_overlap else 0.0,
            at_hand=self.nexts_at_hand,
        )

    def caller(self, authorization: str | None) -> Identity:
        """Who sends `authorization`, asking GitHub when the token is not known; raises `Refusal`."""
        token = _token(authorization)
        try:
            identity = self.identities.who(token)
        except BadToken as error:
            raise Refusal(_problem(401, "unauthorized", f"{error}.")) from None
        except IdentityUnavailable as error:
            raise Refusal(_problem(503, "unavailable", f"{error}; try again shortly.")) from None
        return self._within_rate(identity)

    async def identify(self, authorization: str | None) -> Identity:
        """`caller`, without leaving the event loop for a token Baton knows: only asking GitHub waits, in a thread
        (handing every call to a thread and back cost more than the rest of what this does)."""
        known = self.known_caller(authorization)
        return known if known is not None else await run_in_threadpool(self.caller, authorization)

    def known_caller(self, authorization: str | None) -> Identity | None:
        """`caller` for a token Baton knows already, without waiting on anything; None when GitHub must be asked."""
        identity = self.identities.known(_token(authorization))
        return None if identity is None else self._within_rate(identity)

    def limit_reader(self, token: str) -> None:
        """A person reading tickets with their own token counts against their rate, as their agent API calls do;
        raises `Refusal` (429) beyond it."""
        identity = self.identities.known(token)
        if identity is not None:
            self._within_rate(identity)

    def _within_rate(self, identity: Identity) -> Identity:
        wait = self.limiter.wait(identity.login)
        if wait:
            seconds = max(1, int(wait + 0.999))
            said = f"@{identity.login} sends too many requests: retry in {seconds} s."
            response = _problem(429, "rate_limited", said)
            response.headers["Retry-After"] = str(seconds)
            raise Refusal(response)
        return identity

    def opening(self, identity: Identity, key: str | None, request: list[Any]) -> JSONResponse | Opened:
        """Before a call is decided: its operation id and, with an Idempotency-Key, what the key's first request
        left; or the answer the call gets at once (the key's first answer, or why the key cannot be used)."""
        return self.openings([(identity, key, request)])[0]

    def openings(self, calls: Sequence[tuple[Identity, str | None, list[Any]]]) -> list[JSONResponse | Opened]:
        """`opening` for calls that arrived together (caller, key, request): their keys recorded in one
        transaction."""
        opened: list[JSONResponse | Opened] = []
        keyed: list[tuple[int, str, str, str]] = []  # the call's place, its login, key and fingerprint
        for n, (identity, key, request) in enumerate(calls):
            if key is None:
                opened.append(Opened(f"api:{identity.login.lower()}:{_CALLS}{next(_CALLED):x}", None))
            elif not 1 <= len(key) <= 200:
                opened.append(_problem(422, "invalid", "Idempotency-Key takes 1 to 200 characters."))
            else:
                fingerprint = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
                keyed.append((n, identity.login, key, fingerprint))
                opened.append(Opened("", None))  # made below, once the key is recorded
        firsts = self.requests.claim_keys([(login, key, fingerprint) for _, login, key, fingerprint in keyed])
        for (n, login, key, fingerprint), first in zip(keyed, firsts, strict=True):
            if first is not None and first.fingerprint != fingerprint:
                opened[n] = _problem(422, "invalid", f"Idempotency-Key {key!r} was used for another request.")
            elif first is not None and first.status is not None and first.body is not None:
                opened[n] = _Json(first.body.encode(), first.status)
            else:  # the operation id is the key's: a retry racing the first request is decided once
                opened[n] = Opened(f"api:{login.lower()}:key:{hashlib.sha256(key.encode()).hexdigest()[:32]}", first)
        return opened

    def closing(self, identity: Identity, key: str | None, response: JSONResponse) -> JSONResponse:
        """After a call is answered: with an Idempotency-Key, its answer is kept for the retries; an answer of
        5xx decided nothing (GitHub could not be asked), so a retry tries again."""
        self.closings([(identity, key, response)])
        return response

    def closings(self, answered: Sequence[tuple[Identity, str | None, JSONResponse]]) -> None:
        """`closing` for calls answered together (caller, key, answer): their answers kept in one transaction."""
        self.requests.settle([
            (identity.login, key, None, None) if response.status_code >= 500
            else (identity.login, key, response.status_code, bytes(response.body).decode())
            for identity, key, response in answered if key is not None
        ])  # fmt: skip

    def once(
        self,
        identity: Identity,
        key: str | None,
        request: list[Any],
        answer: Callable[[str], JSONResponse],
        resume: Callable[[Remembered], Callable[[str], JSONResponse] | JSONResponse] | None = None,
    ) -> JSONResponse:
        """`answer(operation_id)`, or with an Idempotency-Key the first answer that key got for this same request;
        `answer` is called where the issue can be found and the caller's role read now, else 404 or 503. With
        `resume`, a retry of a first request that was never answered is answered as `resume(first)` says."""
        opened = self.opening(identity, key, request)
        if isinstance(opened, JSONResponse):
            return opened
        if opened.first is not None and resume is not None:
            resumed = resume(opened.first)
            if isinstance(resumed, JSONResponse):
                return resumed
            answer = resumed
        try:
            response = answer(opened.operation)
        except (Missing, DirectoryUnavailable, NotOpened) as error:
            response = _unavailable(error)
        except RequestError as error:
            failed = _github_failed(error)
            if failed is None:
                raise
            response = failed
        return self.closing(identity, key, response)

    async def act(
        self, command: Command, body: dict[str, Any], owner: str, repo: str, number: int, identity: Identity,
        if_match: str | None, key: str | None,
    ) -> JSONResponse:  # fmt: skip
        """Decide a command on an issue, together with the calls that arrive meanwhile (`decide_calls`)."""
        answer = self._act(command, body, owner, repo, number, identity, if_match, key)
        return await answer if isinstance(answer, asyncio.Future) else answer

    def _act(
        self, command: Command, body: dict[str, Any], owner: str, repo: str, number: int, identity: Identity,
        if_match: str | None, key: str | None,
    ) -> JSONResponse | asyncio.Future[JSONResponse]:  # fmt: skip
        """`act`'s answer now (a refused If-Match) or its batch's future."""
        if if_match is not None:
            found = re.fullmatch(r'\s*(?:W/)?"?(\d{1,18})"?\s*', if_match)
            if found is None:
                return _problem(422, "invalid", 'If-Match takes a ticket revision in quotes, as in `If-Match: "19"`.')
            command = replace(command, rev=int(found.group(1)))
        return self._calls.submit(_Call(command, f"{owner}/{repo}", number, identity, key, body))

    def at_once(self, request: PlainRequest) -> Response | asyncio.Future[JSONResponse] | None:
        """The answer to a command route's request, or the future of its batch, given without leaving the event
        loop; None where that cannot be: a request not valid as sent, a token Baton must ask GitHub about, a
        create-and-claim (each waits in a thread), which `plainly` answers."""
        action = request.action
        if action is None:
            return None
        body = request.body_of(Next | None if action in (NEXT, ORG_NEXT) else BODIES[action])
        if body is _INVALID:
            return None
        try:
            identity = self.known_caller(request.authorization)
        except Refusal as refused:
            return refused.response
        if identity is None:
            return None
        if action in (NEXT, ORG_NEXT):
            return self._nexts.submit(_NextCall(request.owner, request.repo if action == NEXT else None,
                                                body or Next(), identity, request.key))  # fmt: skip
        command, sent = command_of(action, body)
        return self._act(command, sent, request.owner, request.repo, request.number, identity, request.if_match,
                         request.key)  # fmt: skip

    async def plainly(self, request: PlainRequest) -> Response | None:
        """The answer to a command route's request (or create-and-claim's, `action` None) served without FastAPI
        (`web/plain.py`), as its FastAPI declaration below answers it; None for a request that is not valid as sent,
        which that declaration answers (422) instead."""
        now = self.at_once(request)
        if now is not None:
            return await now if isinstance(now, asyncio.Future) else now
        action = request.action
        body = request.body_of(NewIssue if action is None else Next | None if action in (NEXT, ORG_NEXT) else
                               BODIES[action])  # fmt: skip
        if body is _INVALID:
            return None
        try:
            identity = await self.identify(request.authorization)
        except Refusal as refused:
            return refused.response
        if action in (NEXT, ORG_NEXT):
            return await self.claim_next(request.owner, request.repo if action == NEXT else None, body, identity,
                                         request.key)  # fmt: skip
        repository = f"{request.owner}/{request.repo}"
        if request.action is None:
            return await run_in_threadpool(self.create_and_claim, repository, body, identity, request.key)
        command, sent = command_of(request.action, body)
        return await self.act(command, sent, request.owner, request.repo, request.number, identity, request.if_match,
                              request.key)  # fmt: skip

    def decide_calls(self, calls: list[_Call]) -> list[JSONResponse | Exception]:
        """In a pool thread: the answers to calls that arrived together, their commands decided in one
        transaction, each as if alone (`decide_all`)."""
        if self.metrics is not None:
            self.metrics.api_batch("thread", len(calls))
        return cast(list[JSONResponse | Exception], self._decide_calls(calls, wait=True))

    def calls_at_hand(self, calls: list[_Call]) -> list[JSONResponse | Exception | Later] | None:
        """On the event loop (`Batches.at_hand`), on SQLite with no other process deciding (`BATON_WORKER`
        inprocess): `decide_calls`'s answers to the calls it can decide without waiting, `LATER` for the others;
        None (all go to a thread) while another thread of the process writes. A call is left `LATER`, with every
        call after it (they are decided in the order they came), where GitHub would be asked who its caller is or
        what its repository's settings are (not known yet, or known too long: `not_waiting`); one on an issue Baton
        has no ticket for yet is left `LATER` too, to be read from GitHub."""
        return self._at_hand(calls, self._decide_calls)

    def _at_hand(
        self, calls: list[Any], decide: Callable[..., list[JSONResponse | Exception | Later]]
    ) -> list[JSONResponse | Exception | Later] | None:
        """`decide(calls, wait=False)` on the event loop, where this process decides at hand and no other thread
        of it writes now; None otherwise."""
        if not self.decides_at_hand:
            return None
        with writing_at_hand(self.work.units.engine) as free:
            if not free:
                return None
            with not_waiting():
                try:
                    answers = decide(calls, wait=False)
                except WouldWait as error:  # never: each place that may ask GitHub leaves its calls `LATER`
                    log.error("agent calls decided at hand would have asked GitHub (%s)", error)
                    return [RuntimeError(f"asked GitHub at hand: {error}")] * len(calls)
        if self.metrics is not None and (done := sum(1 for answer in answers if answer is not LATER)):
            self.metrics.api_batch("event_loop", done)
        return answers

    def _decide_calls(self, calls: list[_Call], *, wait: bool) -> list[JSONResponse | Exception | Later]:
        """`decide_calls`, or without `wait` `calls_at_hand`'s part: no GitHub, its calls left `LATER` instead."""
        answers: dict[int, JSONResponse | Exception | Later] = {}  # by the call's place in `calls`
        ready: list[tuple[int, work.Request]] = []
        if wait:  # at hand, who the callers are is known, or asked in a thread
            found: dict[str, tuple[int, int] | None] = {}
            for name in {call.repository for call in calls}:
                with suppress(Exception):  # `prepare` finds it again, and answers for it
                    found[name] = self.resolver.locate(name)
            self.resolver.warm({(where[0], call.repository, call.identity.login) for call in calls
                              if (where := found.get(call.repository)) is not None})  # fmt: skip
        closed: list[int] = []  # the calls whose answers are kept for their keys (all those decided or failed)
        try:
            openings = self.openings([(call.identity, call.key, call.fingerprint) for call in calls])
        except Exception as error:  # the database failed: every call of the batch answers 500
            return [error] * len(calls)
        for n, (call, opened) in enumerate(zip(calls, openings, strict=True)):
            if isinstance(opened, JSONResponse):
                answers[n] = opened
                continue
            try:
                ready.append((n, prepare(self.resolver, self.work, call.repository, call.number, call.command,
                                         call.identity.login, call.identity.is_bot, opened.operation,
                                         call.identity.run, kept=call.key is not None)))  # fmt: skip
            except WouldWait:  # this call and those after it, in a thread (a key recorded is met again as a retry)
                for later in range(n, len(calls)):
                    answers[later] = LATER
                break
            except Exception as error:  # this call answers 404, 503 or 500; the others go on
                answers[n], kept = _call_failed(error)
                if kept:
                    closed.append(n)
        try:
            requests = [request for _, request in ready]
            outcomes = decide_all(self.work, self.issues, requests, unknown=wait) if ready else []
        except WouldWait:  # nothing was decided (the transaction had not begun, or rolled back): in a thread
            answers.update((n, LATER) for n, _ in ready)
            ready, outcomes = [], []
        refusals: dict[tuple[str, int, Outcome], JSONResponse] = {}  # a race's losers share one answer's bytes
        for (n, request), outcome in zip(ready, outcomes, strict=True):
            call = calls[n]
            if isinstance(outcome, Outcome) and outcome.kind == work.UNREAD:  # not read from GitHub at hand
                answers[n] = LATER
                continue
            closed.append(n)
            if isinstance(outcome, Missing):
                answers[n] = _unavailable(outcome)
            elif isinstance(outcome, Exception):  # GitHub could not say what the issue is: nothing was decided
                log.warning("reading %s#%d from GitHub failed: %s", call.repository, call.number, outcome)
                said = f"GitHub could not be asked about {call.repository}#{call.number}; try again shortly."
                answers[n] = _problem(503, "unavailable", said)
            elif outcome.kind == "refused":
                same = refusals.get((call.repository, call.number, outcome))
                if same is None:
                    same = refusals[call.repository, call.number, outcome] = _answer(
                        outcome, call.repository, call.number, self.site, self.work, request.issue.key
                    )
                answers[n] = same  # answers are never changed once made: one object serves them all
            else:
                answers[n] = _answer(outcome, call.repository, call.number, self.site, self.work, request.issue.key)
        self.closings([(calls[n].identity, calls[n].key, answer) for n in closed
                       if isinstance(answer := answers[n], JSONResponse)])  # fmt: skip
        return [answers[n] for n in range(len(calls))]

    async def claim_next(
        self, owner: str, repo: str | None, body: Next | None, identity: Identity, key: str | None
    ) -> JSONResponse:
        """Claim the first ready task of `owner/repo` (`repo` None: of the organisation `owner`'s repositories) the
        caller may claim, together with the claim-next calls that arrive meanwhile (`decide_nexts`)."""
        return await self._nexts.run(_NextCall(owner, repo, body or Next(), identity, key))

    def decide_nexts(self, calls: list[_NextCall]) -> list[JSONResponse | Exception]:
        """In a pool thread: the answers to claim-next calls that arrived together, decided in one transaction in
        the order they came, each taking the next task (`WorkService.claim_next`); their Idempotency-Keys recorded
        together and their answers kept together, as `decide_calls` does."""
        if self.metrics is not None:
            self.metrics.api_batch("thread", len(calls))
        return cast(list[JSONResponse | Exception], self._decide_nexts(calls, wait=True))

    def nexts_at_hand(self, calls: list[_NextCall]) -> list[JSONResponse | Exception | Later] | None:
        """`decide_nexts` on the event loop, as `calls_at_hand` decides commands on issues: a call whose caller or
        repositories GitHub would be asked about is left `LATER`, with every call after it."""
        return self._at_hand(calls, self._decide_nexts)

    def _decide_nexts(self, calls: list[_NextCall], *, wait: bool) -> list[JSONResponse | Exception | Later]:
        """`decide_nexts`, or without `wait` `nexts_at_hand`'s part."""
        answers: dict[int, JSONResponse | Exception | Later] = {}
        asks: list[tuple[int, NextAsk]] = []
        try:
            openings = self.openings([(call.identity, call.key, call.fingerprint) for call in calls])
        except Exception as error:  # the database failed: every call of the batch answers 500
            return [error] * len(calls)
        closed: list[int] = []  # the calls whose answers are kept for their keys
        for n, (call, opened) in enumerate(zip(calls, openings, strict=True)):
            if isinstance(opened, JSONResponse):
                answers[n] = opened
                continue
            try:
                places = self._places(call, wait=wait)
                if isinstance(places, JSONResponse):
                    answers[n] = places
                    closed.append(n)
                    continue
                labels = tuple(sorted({name for one in call.body.labels if (name := ready.label_name(one))}))
                asks.append((n, NextAsk(places, labels, opened.operation, call.identity.run)))
            except WouldWait:  # this call and those after it, in a thread (a key recorded is met again as a retry)
                answers.update((later, LATER) for later in range(n, len(calls)))
                break
            except Exception as error:  # this call answers 404, 503 or 500; the others go on
                answers[n], kept = _call_failed(error)
                if kept:
                    closed.append(n)
        try:
            handed = self.work.claim_next([ask for _, ask in asks]) if asks else []
        except WouldWait:  # nothing was handed out (the transaction had not begun, or rolled back): in a thread
            answers.update((n, LATER) for n, _ in asks)
            asks, handed = [], []
        for (n, _), one in zip(asks, handed, strict=True):
            answers[n] = self._handed(calls[n], one)
            closed.append(n)
        self.closings([(calls[n].identity, calls[n].key, answer) for n in closed
                       if isinstance(answer := answers[n], JSONResponse)])  # fmt: skip
        return [answers[n] for n in range(len(calls))]

    def _places(self, call: _NextCall, *, wait: bool = True) -> tuple[Place, ...] | JSONResponse:
        """The repositories a claim-next may take a task from, with the caller as the guards see them there; or
        the answer when there are none. Raises `Missing` where the caller cannot read what was asked about;
        without `wait`, asks nothing of GitHub side by side (`WouldWait` where it would ask)."""
        login, bot, named, run = call.identity.login, call.identity.is_bot, call.body.repo, call.identity.run
        owner_named, _, name = (named or "").rpartition("/")
        if (owner_named and owner_named.lower() != call.owner.lower()) or (
            named and call.repo is not None and name.lower() != call.repo.lower()):  # fmt: skip
            said = f"`repo` names {named}, which is not {call.where}'s."
            return _problem(422, "invalid", f"The request is not valid: repo: {said}",
                            problems=[FieldProblem(field="repo", message=said)])  # fmt: skip
        if call.repo is not None or named:
            repository = f"{call.owner}/{call.repo or name}"
            installation_id, repository_id = self.resolver.readable(repository, login, within(run))
            resolved = as_run(self.resolver.resolve(installation_id, repository, login, bot, None), run)
            return (Place(RepositoryKey(installation_id, repository_id), repository, resolved.actor, resolved.policy),)
        owned = self.resolver.installations.owned_by(call.owner) if self.resolver.installations is not None else []
        if wait:  # its threads would ask GitHub while this one waits for them
            self.resolver.warm({(installation_id, repository, login) for installation_id, _, repository in owned})
        places, readable = [], False
        for installation_id, repository_id, repository in owned:
            if run is not None and installation_id != run.installation_id:
                continue  # a run acts in its own installation only
            if self.resolver.directory.access(installation_id, repository, login).permission is Permission.NONE:
                continue
            readable = True
            resolved = as_run(self.resolver.resolve(installation_id, repository, login, bot, None), run)
            if may_run(resolved.actor, resolved.policy):
                places.append(Place(RepositoryKey(installation_id, repository_id), repository, resolved.actor,
                                    resolved.policy))  # fmt: skip
        if not readable:
            return _problem(404, "not_found", f"Baton is not installed on any repository of {call.owner} you can "
                            "read.")  # fmt: skip
        if not places:
            return _problem(403, "forbidden", f"@{login} may run tasks in none of the repositories of {call.owner} "
                            "Baton serves: each lists its runners, or takes collaborators only. Ask a maintainer "
                            "to /assign you a task.", code="not_permitted")  # fmt: skip
        return tuple(places)

    def _handed(self, call: _NextCall, handed: Handed) -> JSONResponse:
        """Claim-next's answer: the claim's (200, with the task), the claim's refusal, or 404 `none_ready`."""
        outcome, ticket = handed.outcome, handed.ticket
        if outcome is None:
            counts = handed.counts or {"ready": 0, "blocked": 0, "claimed": 0}
            labels = f" carrying {', '.join(call.body.labels)}" if call.body.labels else ""
            status, error = status_of("none_ready")
            return _problem(status, error, f"No task{labels} in {call.where} is ready for you to claim "
                            f"({counts['ready']} ready, {counts['blocked']} blocked, {counts['claimed']} claimed). "
                            "Try again later.", code="none_ready", counts=counts)  # fmt: skip
        if outcome.kind == "refused":
            status, error = status_of(outcome.code)
            return _problem(status, error, outcome.message or "refused", code=outcome.code, state=outcome.state,
                            runner=outcome.runner, revision=outcome.revision if outcome.state else None)  # fmt: skip
        if ticket is None:  # a first answer given again, its task no longer tracked
            return _problem(409, "conflict", "The task this request claimed first is no longer tracked.")
        number, brief = ticket.key.number, ticket.brief.to_dict() if ticket.brief is not None else None
        answer = {"repository": ticket.repository, "issue": number, "state": outcome.state,
                  "runner": outcome.runner, "revision": outcome.revision,
                  "attempt": ticket.attempt if outcome.attempt is None else outcome.attempt,
                  "url": f"{self.site}/{ticket.repository}/issues/{number}", "message": outcome.message,
                  "title": handed.title or (brief["task"] or None if brief else None),
                  "priority": _priority(handed, ticket), "brief": brief}  # fmt: skip
        return JSONResponse(answer)

    def create_and_claim(self, repository: str, issue: NewIssue, identity: Identity, key: str | None) -> JSONResponse:
        def opening(number: int) -> None:  # kept with the key at once: a retry claims this issue, opens no other
            if key is not None:
                self.requests.opened(identity.login, key, number)

        def answer(operation: str, opened: int | None = None) -> JSONResponse:
            made, outcome = create_and_claim(self.resolver, self.work, self.issues, repository, issue.title,
                                             issue.body, identity.login, identity.is_bot, operation, opened=opened,
                                             on_open=opening, run=identity.run)  # fmt: skip
            if made is None or isinstance(outcome, Refused):
                assert isinstance(outcome, Refused)
                status, word = status_of(outcome.code)
                return _problem(status, word, outcome.message.replace("#0 ", "a new issue "), code=outcome.code)
            response = _answer(outcome, repository, made.number, self.site, self.work, made)
            if response.status_code == 200:
                response.status_code = 201
            return response

        def resume(first: Remembered) -> Callable[[str], JSONResponse] | JSONResponse:
            """A retry of a first request that was never answered: claim the issue it opened; while it may still
            be opening one, say so rather than open a second."""
            if first.issue is not None:
                return lambda operation: answer(operation, first.issue)
            now = self.requests.clock.now()
            if first.created_at is not None and (now - first.created_at).total_seconds() < UNDER_WAY:
                return _problem(409, "conflict", f"A request with Idempotency-Key {key!r} is still under way: "
                                f"retry in a few seconds for its answer.")  # fmt: skip
            return answer

        return self.once(identity, key, ["open", repository.lower(), issue.model_dump()], answer, resume)

    def tasks(
        self, repo: str, authorization: str | None, state: WorkState, limit: int, blocked: bool = False
    ) -> JSONResponse:
        token = (authorization or "").partition(" ")[2].strip()
        # header bytes arrive decoded as latin-1: encoding back compares the bytes sent (as the read API does)
        if not (self.read_token and hmac.compare_digest(token.encode("latin-1"), self.read_token.encode())):
            self.caller(authorization)  # an agent: known to GitHub, and within its rate
            try:
                may = self.may_read(token, repo)
            except DirectoryUnavailable as error:
                return _problem(503, "unavailable", f"{error}; try again shortly.")
            except RequestError as error:
                failed = _github_failed(error)
                if failed is None:
                    raise
                return failed
            if not may:
                return _problem(404, "not_found", not_served(repo))
        try:
            found = self.resolver.locate(repo)
        except DirectoryUnavailable as error:
            return _problem(503, "unavailable", f"{error}; try again shortly.")
        listed: list[Task] = []
        if found is not None:
            summaries = self.listing.tickets(repository=repo, state=state, limit=limit, by_priority=True,
                                             ready_only=not blocked)  # fmt: skip
            keys = [TicketKey(found[0], found[1], one.number) for one in summaries]
            with self.work.units.read() as uow:  # their briefs, in one statement
                stored = uow.work.tickets(keys)
                blockers = dependencies.open_blockers(uow.connection, keys)
                parents = dependencies.parents(uow.connection, {keys[n]: s.repository for n, s in enumerate(summaries)})
            for n, summary in enumerate(summaries):
                held = stored.get(keys[n])
                ticket = held.ticket if held is not None else None
                brief = ticket.brief.to_dict() if ticket is not None and ticket.brief is not None else None
                listed.append(Task(repository=summary.repository, issue=summary.number,
                                   title=summary.title or (brief["task"] or None if brief else None),
                                   url=f"{self.site}/{summary.repository}/issues/{summary.number}",
                                   state=summary.state, revision=summary.revision,
                                   created_at=summary.created_at.isoformat(), brief=brief,
                                   priority=summary.priority, blocked_by=blockers.get(keys[n], []),
                                   ready=summary.state is WorkState.OPEN and not blockers.get(keys[n]),
                                   parent=parents.get(keys[n])))  # fmt: skip
        listed.sort(key=lambda task: (task.priority, task.created_at, task.issue))
        return JSONResponse(Tasks(tasks=listed).model_dump(mode="json"))


def _priority(handed: Handed, ticket: Ticket) -> int:
    """The priority claim-next answers with: the task's as it was picked, else (a first answer given again) its
    brief's, or p2 when it says none."""
    if handed.priority is not None:
        return handed.priority
    said = ticket.brief.priority if ticket.brief is not None else None
    return UNSAID_PRIORITY if said is None else said


# RFC 6750's token68: what a bearer token may hold. Starlette reads header bytes as Latin-1, so a token sent with
# bytes outside ASCII arrives as other characters, and is no token GitHub ever made.
TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def is_token68(token: str) -> bool:
    return TOKEN68.fullmatch(token) is not None


def _token(authorization: str | None) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refusal(_problem(401, "unauthorized", "Send your GitHub token: `Authorization: Bearer <token>`."))
    if not is_token68(token.strip()):
        raise Refusal(_problem(401, "unauthorized", "That is not a token GitHub gives: a bearer token holds only "
                               "ASCII letters, digits and -._~+/ (RFC 6750)."))  # fmt: skip
    return token.strip()


# The two dependencies are coroutines: FastAPI runs a plain function in a pool thread (`AgentApi.identify`).
async def _agent_api(request: Request) -> AgentApi:
    api: AgentApi = request.app.state.agent_api
    return api


async def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Identity:
    return await (await _agent_api(request)).identify(authorization)


Api = Annotated[AgentApi, Depends(_agent_api)]
Caller = Annotated[Identity, Depends(_caller)]
IfMatch = Annotated[str | None, Header(alias="If-Match")]
Key = Annotated[str | None, Header(alias="Idempotency-Key")]


def _command_route(verb: Verb) -> Callable[..., Any]:
    """A command route's declaration for FastAPI: the issue's path, the caller, the two headers and the verb's
    body (`BODIES`)."""

    async def command(api: Api, owner: Owner, repo: Repo, number: Number, identity: Caller, body: Any,
                      if_match: IfMatch = None, key: Key = None) -> JSONResponse:  # fmt: skip
        return await api.act(*command_of(verb.name, body), owner, repo, number, identity, if_match, key)

    signature = inspect.signature(command)
    body = inspect.Parameter("body", inspect.Parameter.KEYWORD_ONLY, annotation=BODIES[verb.name],
                             default=inspect.Parameter.empty if verb.takes_body else None)  # fmt: skip
    parameters = [one.replace(kind=inspect.Parameter.KEYWORD_ONLY) for one in signature.parameters.values()]
    command.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[body if one.name == "body" else one for one in parameters]
    )
    return command


@functools.cache
def agents_router() -> APIRouter:
    """The agent API's routes, made once per process: working out a route's parameters and answers costs
    about a millisecond, and every app (every test's) would pay it again. Each call finds its app's
    `AgentApi` on the app."""
    router = APIRouter(prefix=PREFIX, tags=["agents"], route_class=_StrictRoute)
    issue_path = "/repos/{owner}/{repo}/issues/{number}"
    answers: dict[int | str, dict[str, Any]] = {
        code: {"model": Problem} for code in (401, 403, 404, 409, 412, 422, 429, 503)
    }

    @router.get("", response_model=Service, summary="Which service answers here")
    def service(request: Request) -> Service:
        """Baton's name and version, to anyone: a client checks that its `BATON_URL` is Baton before it says
        what Baton answered."""
        return Service(service="baton", version=request.app.version, openapi="/openapi.json")

    # Served by `PlainRoutes` (web/plain.py) as long as a request is valid as sent; these declare the routes in
    # /openapi.json and answer the requests that are not (with the 422 `invalid_request` words).
    for verb in VERBS:
        router.post(f"{issue_path}/{verb.name}", response_model=Answer, responses=answers, summary=verb.summary,
                    name=verb.name.replace("-", "_"))(_command_route(verb))  # fmt: skip

    next_answers = {**answers, 404: {"model": NoneReady}}

    @router.post("/repos/{owner}/{repo}/tasks/claim", response_model=ClaimedTask, responses=next_answers,
                 summary="Claim the first ready task you may claim, highest priority first, then oldest")  # fmt: skip
    async def claim_next(api: Api, owner: Owner, repo: Repo, identity: Caller, key: Key = None,
                         body: Next | None = None) -> JSONResponse:  # fmt: skip
        return await api.claim_next(owner, repo, body, identity, key)

    @router.post("/orgs/{org}/tasks/claim", response_model=ClaimedTask, responses=next_answers,
                 summary="Claim the first ready task you may claim in the organisation's repositories")  # fmt: skip
    async def claim_next_in_org(api: Api, org: Owner, identity: Caller, key: Key = None,
                                body: Next | None = None) -> JSONResponse:  # fmt: skip
        return await api.claim_next(org, None, body, identity, key)

    @router.post("/repos/{owner}/{repo}/issues", status_code=201, response_model=Answer, responses=answers,
                 summary="Open an issue and claim it: it is never open for anyone else")  # fmt: skip
    def create_and_claim_issue(
        api: Api, owner: Owner, repo: Repo, body: NewIssue, identity: Caller, key: Key = None
    ) -> JSONResponse:
        return api.create_and_claim(f"{owner}/{repo}", body, identity, key)

    @router.get("/tasks", response_model=Tasks, responses={code: {"model": Problem} for code in (401, 404, 422, 429)},
                summary="The tasks a repository offers for claiming, highest priority first, then oldest")  # fmt: skip
    def tasks(
        api: Api,
        repo: Annotated[
            str, Query(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$", description='"owner/name".')
        ],
        authorization: Annotated[str | None, Header()] = None,
        state: WorkState = WorkState.OPEN,
        limit: Annotated[int, Query(ge=1, le=100)] = 50,
        blocked: Annotated[
            bool, Query(description="List the tasks that are not ready too (blocked by open issues).")
        ] = False,
    ) -> JSONResponse:
        return api.tasks(repo, authorization, state, limit, blocked)

    return router


def _answer(outcome: Outcome, repository: str, number: int, site: str, service: WorkService, key: Any) -> JSONResponse:
    url = f"{site}/{repository}/issues/{number}"
    if outcome.kind == "refused":
        status, error = status_of(outcome.code)
        return _problem(status, error, outcome.message or "refused", code=outcome.code, state=outcome.state,
                        runner=outcome.runner, revision=outcome.revision if outcome.state else None)  # fmt: skip
    attempt = outcome.attempt
    if attempt is None:  # a replayed outcome: the ticket as it is now
        ticket = service.ticket(key)
        attempt = ticket.attempt if ticket is not None else None
    # an `Answer`, made directly (as `Answer.model_dump(mode="json")` would make it)
    answer = {"repository": repository, "issue": number, "state": outcome.state, "runner": outcome.runner,
              "revision": outcome.revision, "attempt": attempt, "url": url, "message": outcome.message}  # fmt: skip
    return JSONResponse(answer)


__all__ = ["AgentApi", "Refusal", "agents_router", "invalid_request", "is_token68", "web_url"]
