"""The board people look at (docs/board.md): `/`, the tickets in columns by work state, and `/t/{owner}/{repo}/{n}`,
one ticket's three rails and its timeline. Server-rendered from templates/, readable without JavaScript; a
small inline script fetches `/board` (the columns alone) every few seconds so the page follows the work, sending
the tag of the columns it shows: `304` and no body while they are the same.

It reads through the read API's own reads (`app.state.read_api`) and says the rails in the status comment's
words. People sign in with GitHub (`github_sign_in.py`) and see only the repositories GitHub lets them read;
whoever types the read token (`session.py`) sees every one.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from baton.domain import Brief, Ticket, TicketKey, WorkState
from baton.domain.brief import counted, evidence_line
from baton.domain.evidence import EvidenceRail, deployment_text, mismatch_text, repository_text
from baton.domain.issue import flagged
from baton.domain.status import Review, blocker_name, work_line
from baton.domain.weekly import Week, first_monday, weekly
from baton.environment.clock import Clock
from baton.environment.settings import Settings
from baton.github.webhooks import MAX_NUMBER
from baton.store.board_sessions import BoardSessions
from baton.store.evidence_codec import from_dict
from baton.store.reads import BoardRow, DeliveryRecord, RepositoryCounts, ReviewRecord, TicketSummary

from .agent_api import web_url
from .charts import Series, bar_chart
from .github_sign_in import (
    CALLBACK,
    OPERATOR,
    STATE_COOKIE,
    STATE_LIFETIME,
    GitHub,
    GitHubSessions,
    SignInRefused,
    Unavailable,
    Viewer,
)
from .read_api import ReadApi
from .session import COOKIE, LIFETIME, Sessions

if TYPE_CHECKING:
    from jinja2 import Environment

BOARD_STATES = (WorkState.OPEN, WorkState.CLAIMED, WorkState.DELIVERED, WorkState.ACCEPTED)
REFRESH_SECONDS = 5
TIMELINE_EVENTS = 100  # a ticket page's timeline; beyond it, a line says the read API has the rest
COLUMN_CARDS = 100  # a column shows the tickets longest in its state; the filters narrow it to the others
_IMAGE_ENDINGS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif")


@functools.cache
def _templates() -> Environment:
    """The templates, loaded at the first page asked for: a `baton serve` that serves no page (a webhook
    receiver, a test's) never imports Jinja2, a tenth of its start."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    environment = Environment(
        loader=PackageLoader("baton.web", "templates"), autoescape=select_autoescape(default=True), trim_blocks=True,
        lstrip_blocks=True,
    )  # fmt: skip
    return environment


# ---------------------------------------------------------------------------------------------- what a page shows


@dataclass(frozen=True)
class Rails:
    work: str
    repository: str
    deployment: str
    mismatch: str | None


@dataclass(frozen=True)
class Card:
    ref: str  # "octo/shop#42"
    path: str  # the ticket's page here
    url: str  # the issue on GitHub
    title: str
    state: WorkState
    runner: str | None
    attempt: int
    rails: Rails
    stale: bool
    since: datetime
    for_words: str  # how long it has been in its state, in words
    closed: str | None = None  # "Issue closed as not planned by @maria" while a person's close flags it
    blocked: str | None = None  # "Blocked by #12, octo/lib#3" while open issues keep an open task from being ready


@dataclass(frozen=True)
class Column:
    state: WorkState
    cards: list[Card]  # the longest in the state first, at most COLUMN_CARDS
    total: int  # how many match the filters in this state, shown or not


@dataclass(frozen=True)
class Filters:
    repo: str
    runner: str
    state: str  # "": the four board states; "all": every state; else one state
    stale: bool

    def states(self) -> tuple[WorkState, ...]:
        if self.state == "all":
            return tuple(WorkState)
        if self.state:
            return (WorkState(self.state),)
        return BOARD_STATES

    def query(self) -> str:
        """The filters as a query string, without the empty ones."""
        pairs = {"repo": self.repo, "runner": self.runner, "state": self.state, "stale": "1" if self.stale else ""}
        return urlencode({name: value for name, value in pairs.items() if value})


def for_words(delta: timedelta) -> str:
    """A duration as a person says it on a board: "under a minute", "5 minutes", "3 hours", "2 days"."""
    seconds = max(0, int(delta.total_seconds()))
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return "under a minute"


def _model(ticket: TicketSummary) -> Ticket:
    """The work state as the domain words it (the ids are not the board's business)."""
    return Ticket(TicketKey(0, 0, ticket.number), ticket.repository, ticket.state, ticket.revision, ticket.owner,
                  ticket.runner, ticket.attempt)  # fmt: skip


def _asked(brief: Brief | None) -> list[tuple[str, str]]:
    """The brief's evidence sentences, each with what Baton reads it to require."""
    if brief is None:
        return []
    return [(line, counted(evidence_line(line).elements()) or "for the reviewer") for line in brief.evidence_lines]


def rails(ticket: TicketSummary, evidence: dict[str, Any] | None, review: Review | None = None) -> Rails:
    rail = from_dict(evidence) if evidence else EvidenceRail(ticket.number)
    return Rails(work_line(_model(ticket), review), repository_text(rail), deployment_text(rail), mismatch_text(rail))


def _review(record: ReviewRecord | None) -> Review | None:
    return None if record is None else Review(record.reviewer, record.independent, record.role)


def _card(row: BoardRow, site: str, now: datetime) -> Card:
    ticket = row.ticket
    since = ticket.state_since or ticket.updated_at
    return Card(
        ref=f"{ticket.repository}#{ticket.number}", path=f"/t/{ticket.repository}/{ticket.number}",
        url=f"{site}/{ticket.repository}/issues/{ticket.number}", title=ticket.title or "(no title seen yet)",
        state=ticket.state, runner=ticket.runner, attempt=ticket.attempt,
        rails=rails(ticket, row.evidence, _review(row.review)),
        stale=row.stale_at is not None, since=since, for_words=for_words(now - since),
        closed=f"Issue {row.issue.words()}" if flagged(_model(ticket), row.issue) and row.issue else None,
        blocked=blocked_words(ticket, row.blocked_by),
    )  # fmt: skip


def blocked_words(ticket: TicketSummary, blockers: Sequence[str]) -> str | None:
    """An open task's open blockers in words (its own repository's as `#N`); None when it is ready or not open."""
    if ticket.state is not WorkState.OPEN or not blockers:
        return None
    model = _model(ticket)
    return "Blocked by " + ", ".join(blocker_name(model, blocker) for blocker in blockers)


@dataclass(frozen=True)
class Evidence:
    """A delivery's reported evidence as links: GitHub's pages for the branch, commit and pull request."""

    delivery: DeliveryRecord
    links: list[tuple[str, str]]  # (words, url)
    tests: list[str]
    images: list[str]  # screenshots that are image URLs, shown as thumbnails
    other: list[str]  # screenshots that are not, shown as links


def _evidence(delivery: DeliveryRecord, site: str, repository: str) -> Evidence:
    reported = delivery.evidence
    links = []
    if reported.get("branch"):
        links.append((f"branch {reported['branch']}", f"{site}/{repository}/tree/{reported['branch']}"))
    if reported.get("commit"):
        links.append((f"commit {str(reported['commit'])[:7]}", f"{site}/{repository}/commit/{reported['commit']}"))
    if reported.get("pr"):
        links.append((f"pull request #{reported['pr']}", f"{site}/{repository}/pull/{reported['pr']}"))
    shots = [str(s) for s in reported.get("screenshots", []) if str(s).startswith(("https://", "http://"))]
    images = [s for s in shots if s.lower().split("?")[0].endswith(_IMAGE_ENDINGS)]
    return Evidence(delivery, links, [str(t) for t in reported.get("tests", [])], images,
                    [s for s in shots if s not in images])  # fmt: skip


def _charts(weeks: list[Week]) -> list[tuple[Series, list[tuple[str, str, int]]]]:
    """The three charts, each with its table's rows: (week, figure in words, how many it is made of)."""
    labels = tuple(week.label for week in weeks)

    def hours(value: float | None) -> str:
        return "—" if value is None else f"{value:.1f}"

    delivery = Series("to-delivery", "Median hours from claim to first delivery, per week", "hours", labels,
                      tuple(w.median_to_delivery for w in weeks))  # fmt: skip
    acceptance = Series("to-acceptance", "Median hours from delivery to acceptance, per week", "hours", labels,
                        tuple(w.median_to_acceptance for w in weeks))  # fmt: skip
    accepted = Series("accepted", "Tasks accepted per week", "tasks", labels,
                      tuple(float(w.accepted) for w in weeks), whole=True)  # fmt: skip
    return [
        (delivery, [(w.label, hours(w.median_to_delivery), len(w.to_delivery)) for w in weeks]),
        (acceptance, [(w.label, hours(w.median_to_acceptance), len(w.to_acceptance)) for w in weeks]),
        (accepted, [(w.label, str(w.accepted), w.accepted) for w in weeks]),
    ]


# ---------------------------------------------------------------------------------------------- routes


class Board:
    """One app's board: its sessions, where GitHub's pages are, and the reads it shares with the read API."""

    def __init__(self, settings: Settings, read_api: ReadApi, clock: Clock) -> None:
        self.clock = clock  # Baton's time, the one its records carry: how long a ticket has been in its state
        self.sessions = Sessions(read_api.token, clock)
        self.github: GitHubSessions | None = None
        if settings.client_id and settings.client_secret:
            secret = settings.client_secret.get_secret_value()
            client = GitHub(settings.client_id, secret, settings.github_api_url, settings.github_timeout)
            self.github = GitHubSessions(client, secret, BoardSessions(read_api.reads.engine), clock)
        self.site = web_url(settings.github_api_url)
        self.read_api = read_api
        self.app_words = (
            f"GitHub App {settings.app_id}" if settings.app_id is not None else "no GitHub App (webhooks are off)"
        )

    @property
    def on(self) -> bool:
        """Whether anyone can sign in: with the read token, or with GitHub."""
        return self.sessions.on or self.github is not None

    def viewer(self, request: Request) -> Viewer | None:
        """Who the request's session is; None: no session."""
        cookie = request.cookies.get(COOKIE)
        if self.sessions.valid(cookie):
            return OPERATOR
        return self.github.viewer(cookie) if self.github is not None else None

    def close(self) -> None:
        if self.github is not None:
            self.github.github.close()


def _board(request: Request) -> Board:
    board: Board = request.app.state.board
    return board


def _page(name: str, status: int = 200, **values: Any) -> HTMLResponse:
    nonce = secrets.token_urlsafe(12)
    html = _templates().get_template(name).render(nonce=nonce, refresh=REFRESH_SECONDS, **values)
    return HTMLResponse(html, status, headers=_headers(nonce))


def _headers(nonce: str) -> dict[str, str]:
    """Nothing but this origin, and the one inline script this response carries; screenshots are the runners'
    images from wherever they put them."""
    policy = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src 'self' https: http:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )
    return {"Content-Security-Policy": policy, "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


def _sign_in_page(board: Board, target: str, error: str | None = None, status: int = 200) -> HTMLResponse:
    return _page("sign_in.html", status, app=board.app_words, next=target, error=error, token=board.sessions.on,
                 github=board.github is not None, start=f"/auth/github?{urlencode({'next': target})}")  # fmt: skip


def _gate(board: Board, request: Request, path: str) -> Viewer | HTMLResponse:
    """Who looks, or the page they see instead when the board is off or they have not signed in."""
    if not board.on:
        return _page("off.html", 403, app=board.app_words)
    viewer = board.viewer(request)
    return viewer if viewer is not None else _sign_in_page(board, path)


def _safe_next(value: str) -> str:
    """Only a path of this site (never `//elsewhere`), so signing in cannot send anyone away."""
    return value if value.startswith("/") and not value.startswith("//") and "\\" not in value else "/"


def _filters(repo: str, runner: str, state: str, stale: str) -> Filters:
    known = {s.value for s in WorkState} | {"all", ""}
    return Filters(repo.strip(), runner.strip().lstrip("@"), state if state in known else "", stale == "1")


def _columns(board: Board, filters: Filters, viewer: Viewer) -> tuple[list[Column], list[RepositoryCounts]]:
    """The columns, and per repository how many tickets each state has and how many open tasks are ready."""
    found = board.read_api.reads.board(
        repository=filters.repo or None,
        states=filters.states(),
        runner=filters.runner or None,
        stale=filters.stale,
        readable=viewer.readable,
        per_state=COLUMN_CARDS,
    )
    now = board.clock.now()
    cards = [_card(row, board.site, now) for row in found.rows]
    columns = [
        Column(state, [c for c in cards if c.state is state], found.totals.get(state, 0)) for state in filters.states()
    ]
    return columns, found.repositories


def _shown_columns(board: Board, filters: Filters, viewer: Viewer) -> tuple[str, str]:
    """The columns' HTML as the viewer sees them with these filters, and its entity tag: a digest of that HTML,
    of the filters and of the repositories the viewer may read. Anything the columns show (a state, a card, the
    minutes a ticket has been in its state) changes the HTML, so the tag; a tag never validates a view for a
    viewer who may read other repositories than the one it was made for."""
    columns, repositories = _columns(board, filters, viewer)
    html = _templates().get_template("columns.html").render(columns=columns, repositories=repositories,
                                                            states=filters.states())  # fmt: skip
    scope = "every" if viewer.readable is None else ",".join(str(id_) for id_ in sorted(viewer.readable))
    digest = hashlib.sha256(f"{scope}\n{filters.query()}\n{html}".encode()).hexdigest()[:32]
    return html, f'"{digest}"'


def _unchanged(request: Request, tag: str) -> bool:
    """Whether the request's `If-None-Match` names `tag` (weakly, as RFC 9110 compares for it) or is `*`."""
    asked = request.headers.get("if-none-match")
    return asked is not None and any(t.strip().removeprefix("W/") in (tag, "*") for t in asked.split(","))


Text = Annotated[str, Query(max_length=200)]


@functools.cache
def board_router() -> APIRouter:
    """The board's routes, made once per process; each finds its app's `Board` on the app."""
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    def home(request: Request, repo: Text = "", runner: Text = "", state: Text = "", stale: Text = "") -> Response:
        board = _board(request)
        filters = _filters(repo, runner, state, stale)
        viewer = _gate(board, request, f"/?{filters.query()}" if filters.query() else "/")
        if isinstance(viewer, Response):
            return viewer
        from markupsafe import Markup

        html, tag = _shown_columns(board, filters, viewer)
        return _page("board.html", filters=filters, columns=Markup(html), tag=tag, states=list(WorkState),
                     fragment=f"/board?{filters.query()}", viewer=viewer)  # fmt: skip

    @router.get("/board", response_class=HTMLResponse)
    def fragment(request: Request, repo: Text = "", runner: Text = "", state: Text = "", stale: Text = "") -> Response:
        """The columns alone, for the page's script: 401 once the session is gone, so the script stops; 304 and
        no body when the script's `If-None-Match` names the columns it has."""
        board = _board(request)
        viewer = board.viewer(request) if board.on else None
        if viewer is None:
            return Response(status_code=401 if board.on else 403)
        filters = _filters(repo, runner, state, stale)
        html, tag = _shown_columns(board, filters, viewer)
        if _unchanged(request, tag):
            return Response(status_code=304, headers={"ETag": tag, "Cache-Control": "no-store"})
        return HTMLResponse(html, headers={**_headers(""), "ETag": tag})

    @router.get("/t/{owner}/{repo}/{number}", response_class=HTMLResponse)
    def ticket(
        request: Request,
        owner: Annotated[str, Path(max_length=100)],
        repo: Annotated[str, Path(max_length=100)],
        number: Annotated[int, Path(ge=1, le=MAX_NUMBER)],
    ) -> Response:
        board = _board(request)
        viewer = _gate(board, request, f"/t/{owner}/{repo}/{number}")
        if isinstance(viewer, Response):
            return viewer
        reads = board.read_api.reads
        detail = reads.ticket(f"{owner}/{repo}", number)
        # a ticket of a repository the viewer may not read is missing to them, as one Baton does not track
        if detail is not None and viewer.readable is not None and detail.ticket.repository_id not in viewer.readable:
            detail = None
        timeline = (
            reads.timeline(f"{owner}/{repo}", number, after=None, limit=TIMELINE_EVENTS) if detail is not None else None
        )
        if detail is None or timeline is None:
            return _page("missing.html", 404, ref=f"{owner}/{repo}#{number}", viewer=viewer)
        summary = detail.ticket
        review = _review(detail.reviews[-1] if detail.reviews else None)
        return _page(
            "ticket.html", ticket=summary, ref=f"{summary.repository}#{summary.number}",
            url=f"{board.site}/{summary.repository}/issues/{summary.number}",
            rails=rails(summary, detail.evidence, review), detail=detail, events=timeline.entries,
            more=timeline.next is not None,
            evidence={d.number: _evidence(d, board.site, summary.repository) for d in detail.deliveries},
            brief=detail.brief, asked=_asked(detail.brief), viewer=viewer,
            blocked=blocked_words(summary, detail.blocked_by),
        )  # fmt: skip

    @router.get("/charts", response_class=HTMLResponse)
    def charts(request: Request, repo: Text = "") -> Response:
        board = _board(request)
        filters = _filters(repo, "", "", "")
        viewer = _gate(board, request, f"/charts?{filters.query()}" if filters.query() else "/charts")
        if isinstance(viewer, Response):
            return viewer
        now = board.clock.now()
        times = board.read_api.reads.work_times(since=first_monday(now), repository=filters.repo or None,
                                                readable=viewer.readable)  # fmt: skip
        shown = [(series, bar_chart(series), rows) for series, rows in _charts(weekly(times, now))]
        return _page("charts.html", filters=filters, charts=shown, viewer=viewer)

    @router.post("/sign-in", response_class=HTMLResponse)
    async def sign_in(request: Request) -> Response:
        board = _board(request)
        if not board.on:
            return _page("off.html", 403, app=board.app_words)
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
        token, target = form.get("token", [""])[0], _safe_next(form.get("next", ["/"])[0])
        if not board.sessions.on:
            return _sign_in_page(board, target, "This Baton takes no read token here: sign in with GitHub.", 403)
        if not board.sessions.is_token(token):
            return _sign_in_page(board, target, "That is not the read token.", 401)
        return _signed_in(request, board, target)

    @router.get("/sign-in/{code}")
    def sign_in_once(request: Request, code: Annotated[str, Path(max_length=100)]) -> Response:
        """A one-time link (`baton demo` prints one): a session, then the board, without the code in its URL."""
        board = _board(request)
        if not board.sessions.on:
            return _page("off.html", 403, app=board.app_words) if not board.on else _sign_in_page(board, "/", None, 404)
        if not board.sessions.redeem(code):
            error = "That sign-in link was used already or has expired; sign in instead."
            return _sign_in_page(board, "/", error, 401)
        return _signed_in(request, board, "/")

    @router.get("/auth/github")
    def github_start(request: Request, target: Annotated[str, Query(alias="next", max_length=2000)] = "/") -> Response:
        """Off to GitHub, to authorise the App's OAuth client; the `state` it brings back is bound to this browser."""
        board = _board(request)
        if board.github is None:
            return _page("off.html", 403, app=board.app_words) if not board.on else _sign_in_page(board, "/", None, 404)
        state, cookie = board.github.state(_safe_next(target))
        response = RedirectResponse(board.github.github.authorize_url(_callback(request), state), 303)
        response.set_cookie(
            STATE_COOKIE, cookie, max_age=STATE_LIFETIME, path="/auth/github", httponly=True, samesite="lax",
            secure=request.url.scheme == "https",
        )  # fmt: skip
        return response

    @router.get(CALLBACK)
    def github_back(
        request: Request,
        code: Annotated[str, Query(max_length=200)] = "",
        state: Annotated[str, Query(max_length=200)] = "",
        error: Annotated[str, Query(max_length=100)] = "",
    ) -> Response:
        """GitHub's answer: a code to exchange for the person's token, if the `state` is this browser's."""
        board = _board(request)
        if board.github is None:
            return _page("off.html", 403, app=board.app_words) if not board.on else _sign_in_page(board, "/", None, 404)
        sessions = board.github
        target = sessions.target(request.cookies.get(STATE_COOKIE), state)
        if target is None:
            return _refused(board, 400, "This sign-in did not start in this browser, or took over ten minutes "
                                        "(its state does not match). Nobody was signed in.")  # fmt: skip
        if error or not code:
            return _refused(
                board, 403, "GitHub did not sign you in (the App was not authorised). Nobody was signed in."
            )
        try:
            grant = sessions.github.exchange(code, _callback(request))
            login = sessions.github.login(grant.token)
            readable = sessions.github.readable(grant.token)
        except SignInRefused:
            return _refused(board, 403, "GitHub refused this sign-in (its code was used already or has expired). "
                                        "Nobody was signed in.")  # fmt: skip
        except Unavailable as unavailable:
            return _refused(board, 502, f"GitHub could not be asked who you are: {unavailable}. Try again.")
        value, lasts = sessions.start(login, grant, readable)
        response = RedirectResponse(target, 303)
        response.delete_cookie(STATE_COOKIE, path="/auth/github")
        _session_cookie(request, response, value, lasts)
        return response

    @router.post("/sign-out")
    def sign_out(request: Request) -> Response:
        board = _board(request)
        if board.github is not None:
            board.github.end(request.cookies.get(COOKIE))
        response = RedirectResponse("/", 303)
        response.delete_cookie(COOKIE, path="/")
        return response

    return router


def _callback(request: Request) -> str:
    """Where GitHub sends the browser back: this Baton's callback, at the address the browser reached it by."""
    return f"{str(request.base_url).rstrip('/')}{CALLBACK}"


def _refused(board: Board, status: int, words: str) -> HTMLResponse:
    response = _sign_in_page(board, "/", words, status)
    response.delete_cookie(STATE_COOKIE, path="/auth/github")
    return response


def _session_cookie(request: Request, response: Response, value: str, lasts: int) -> None:
    response.set_cookie(
        COOKIE, value, max_age=lasts, path="/", httponly=True, samesite="lax", secure=request.url.scheme == "https"
    )


def _signed_in(request: Request, board: Board, target: str) -> Response:
    response = RedirectResponse(target, 303)
    _session_cookie(request, response, board.sessions.issue(), LIFETIME)
    return response
