"""The stand-in GitHub's REST API: the calls Baton makes, answered from the World.

Every request passes through one handler that does what GitHub does before an operation runs: it
authenticates (the App's JWT for minting installation tokens, an installation token or a person's own token
for the rest: a person reads what they may read, and opens issues and comments in their own name), finds
the operation, and, when a Contract is given, refuses a request that GitHub's description would refuse
(422, or 404 for a path GitHub does not have). Every answer is checked against the description and
githubkit's models too; what fails is kept in `StandIn.problems`, for tests to assert there is none.
Faults (a status, a secondary rate limit, a slow answer) can be injected into chosen calls.

What Baton writes shows on GitHub as writes of the App's bot, and comes back to Baton as webhooks,
as it would from GitHub: a comment it posts arrives as `issue_comment` with `performed_via_github_app`,
a label it adds or removes as `issues` labeled/unlabeled.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import unquote

import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from . import shapes
from .actions import ISSUER_PATH, configuration, job_token
from .contract import Contract
from .hooks import HookLog
from .listing import list_issues
from .oauth import access_token, authorize, user_installations
from .registration import conversion, registration_page
from .rendering import link_events, render_check_run, render_issue, render_pull_request
from .teams import team_membership
from .world import CheckRun, Comment, Installation, Issue, Reaction, Refused, Repository, Token, World, sha_of

Json = Any
Notify = Callable[[str, dict[str, Any]], None]  # a webhook for Baton: (event, payload)

DOCS = "https://docs.github.com/rest"
API_PREFIX = "/api/v3"  # where a GitHub Enterprise Server serves its REST API


class GitHubError(Exception):
    """GitHub's kind of error answer."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "documentation_url": DOCS, "status": str(status), **extra}
        self.headers = headers or {}


def invalid(resource: str, field: str, code: str) -> GitHubError:
    """GitHub's 422 for a well-formed request it will not carry out."""
    return GitHubError(422, "Validation Failed", errors=[{"resource": resource, "field": field, "code": code}])


RATE_LIMIT = 5000  # an installation's requests an hour, as GitHub reports it


@dataclass
class Fault:
    """Answer the next `times` calls matching `method` and `path` (a regular expression over the path) and,
    when given, `body` (a regular expression over the request's body) with `status` (403 or 429 with
    `retry_after` is a secondary rate limit), after waiting `delay` seconds; with no status the call is only
    slowed down. `headers` go on the error answer (`x-ratelimit-remaining: 0` with `x-ratelimit-reset` on a
    403 is the primary rate limit)."""

    method: str
    path: str
    status: int | None = 500
    times: int = 1
    retry_after: int | None = None
    delay: float = 0.0
    message: str | None = None  # GitHub's words for the refusal, where a test cares which
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def matches(self, method: str, path: str, body: bytes = b"") -> bool:
        carries = self.body is None or re.search(self.body, body.decode("utf-8", "replace")) is not None
        found = method.upper() == self.method.upper() and re.search(self.path, path) is not None
        return self.times > 0 and found and carries


@dataclass
class Call:
    method: str
    path: str
    status: int
    operation: str | None
    at: float = 0.0  # when it arrived (seconds since the epoch)
    installation: int | None = None  # whose installation token it carried
    person: str | None = None  # whose own token it carried (a person calling GitHub, not Baton)


@dataclass
class StandIn:
    """The REST side: `app` is the ASGI application; `calls`, `problems` and `faults` are for tests."""

    world: World
    contract: Contract | None = None
    notify: Notify | None = None
    calls: list[Call] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    hooks: HookLog | None = None  # the App's webhook delivery log, kept by whoever sends the webhooks

    def __post_init__(self) -> None:
        self._reset = int(time.time()) + 3600  # when the first rate-limit window ends
        self._used: dict[int, tuple[int, int]] = {}  # each installation's calls in its window, and which window

        async def registering(request: Request) -> Response:
            return await registration_page(self.world, request)

        async def authorizing(request: Request) -> Response:
            return authorize(self.world, request)

        async def exchanging(request: Request) -> Response:
            return await access_token(self.world, request)

        async def keys(request: Request) -> Response:
            self._count(request)
            return JSONResponse(self.world.issuer.jwks())

        async def discovery(request: Request) -> Response:
            self._count(request)
            return configuration(request, str(request.base_url).rstrip("/") + ISSUER_PATH)

        async def job(request: Request) -> Response:
            self._count(request)
            return job_token(request, self.world.issuer, str(request.base_url).rstrip("/") + ISSUER_PATH)

        # GitHub's web pages first (the App-manifest and OAuth flows), then the REST API, also under /api/v3 as
        # a GitHub Enterprise Server serves it beside its pages.
        self.app = Starlette(routes=[
            Route("/settings/apps/new", registering, methods=["POST"]),
            Route("/login/oauth/authorize", authorizing, methods=["GET"]),
            Route("/login/oauth/access_token", exchanging, methods=["POST"]),
            Route("/organizations/{org}/settings/apps/new", registering, methods=["POST"]),
            Route(f"{ISSUER_PATH}/.well-known/jwks", keys, methods=["GET"]),
            Route(f"{ISSUER_PATH}/.well-known/openid-configuration", discovery, methods=["GET"]),
            Route(f"{ISSUER_PATH}/idtoken", job, methods=["GET"]),
            Route("/{path:path}", self._handle, methods=["GET", "POST", "PATCH", "PUT", "DELETE"]),
        ])  # fmt: skip

    def _count(self, request: Request) -> None:
        """A request to GitHub's pages or token service, kept in `calls` as the REST API's are."""
        with self.world.lock:
            self.calls.append(Call(request.method, request.url.path, 200, None, time.time()))

    def inject(self, fault: Fault) -> None:
        with self.world.lock:
            self.faults.append(fault)

    def writes(self) -> list[Call]:
        """Baton's successful changes on GitHub (token minting is not one, nor what people do with their own
        tokens)."""
        changes = (c for c in self.calls if c.method != "GET" and c.status < 400 and c.person is None)
        return [c for c in changes if not c.path.startswith("/app/")]

    def operations(self) -> set[str]:
        """The distinct operations Baton called."""
        return {c.operation for c in self.calls if c.operation is not None}

    # -- the one handler -----------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        arrived = time.time()
        # The raw, percent-encoded path: a label named "a/b" is one segment, as on GitHub.
        method, path = request.method, request.scope.get("raw_path", request.url.path.encode()).decode()
        web = str(request.base_url).rstrip("/")
        prefix = API_PREFIX if path.startswith(f"{API_PREFIX}/") else ""
        path = path.removeprefix(prefix)
        body = await request.body()
        query = dict(request.query_params)
        headers = dict(request.headers)
        operation = self.contract.operation(method, path) if self.contract is not None else None
        try:
            delay, fault = self._fault(method, path, body)
            if delay:
                await asyncio.sleep(delay)  # a slow GitHub: the caller's timeout decides
            if fault is not None:
                raise fault
            if self.contract is not None:
                problems = self.contract.request_problems(method, path, query, headers, body or None)
                if problems:
                    self.problems.extend(problems)
                    if operation is None:
                        raise GitHubError(404, "Not Found")
                    raise GitHubError(422, "Invalid request.\n\n" + "\n".join(problems), errors=problems)
            status, answer, extra = self._dispatch(web, prefix, method, path, query, headers, body)
        except GitHubError as error:
            status, answer, extra = error.status, error.body, error.headers
        content = b"" if answer is None else json.dumps(answer).encode()
        response_headers = {"content-type": "application/json; charset=utf-8", **extra} if content else extra
        with self.world.lock:
            credential = headers.get("authorization", "").partition(" ")[2]
            token = self.world.tokens.get(credential)
            installation = token.installation_id if token is not None else None
            person = self.world.user_tokens.get(credential)
            self.calls.append(Call(method, path, status, operation, arrived, installation, person))
            if installation is not None and "x-ratelimit-remaining" not in response_headers:
                response_headers = {**response_headers, **self._rate_limit(installation)}
        if self.contract is not None and operation is not None:
            self.problems.extend(self.contract.response_problems(method, path, status, response_headers, content))
        return Response(content, status_code=status, headers=response_headers)

    def _rate_limit(self, installation: int) -> dict[str, str]:
        """GitHub's rate-limit headers on an installation's call: 5,000 an hour, one fewer for each call its
        tokens made. The window never runs out here (faults make rate limits): its last call starts the next."""
        used, window = self._used.get(installation, (0, 0))
        used += 1
        if used >= RATE_LIMIT:
            used, window = 1, window + 1
        self._used[installation] = (used, window)
        return {"x-ratelimit-limit": str(RATE_LIMIT), "x-ratelimit-remaining": str(RATE_LIMIT - used),
                "x-ratelimit-used": str(used), "x-ratelimit-reset": str(self._reset + 3600 * window),
                "x-ratelimit-resource": "core"}  # fmt: skip

    def _fault(self, method: str, path: str, body: bytes) -> tuple[float, GitHubError | None]:
        """The delay and the error answer an injected fault asks for this call."""
        with self.world.lock:
            for fault in self.faults:
                if fault.matches(method, path, body):
                    fault.times -= 1
                    if fault.status is None:
                        return fault.delay, None
                    if fault.retry_after is not None:
                        message = "You have exceeded a secondary rate limit. Please wait before you try again."
                        headers = {"retry-after": str(fault.retry_after), **fault.headers}
                        return fault.delay, GitHubError(fault.status, message, headers)
                    words = "Server Error" if fault.status >= 500 else "Injected"
                    if "x-ratelimit-remaining" in fault.headers:
                        words = "API rate limit exceeded."
                    return fault.delay, GitHubError(fault.status, fault.message or words, dict(fault.headers))
        return 0.0, None

    def _dispatch(
        self, web: str, prefix: str, method: str, path: str, query: dict[str, str], headers: dict[str, str],
        body: bytes,
    ) -> tuple[int, Json, dict[str, str]]:  # fmt: skip
        base = f"{web}{prefix}"
        converting = re.fullmatch(r"/app-manifests/([^/]+)/conversions", path)
        if method == "POST" and converting is not None:
            with self.world.lock:
                status, answer = conversion(self.world, unquote(converting.group(1)), base, web)
            if status >= 400:
                raise GitHubError(status, "Not Found")
            return status, answer, {}
        minting = re.fullmatch(r"/app/installations/([0-9]+)/access_tokens", path)
        if method == "POST" and minting is not None:
            with self.world.lock:
                return *self._mint(int(minting.group(1)), headers), {}
        if method == "GET" and path == "/app":
            with self.world.lock:
                app = self.world.app_of(self._app_jwt(headers))
                return 200, shapes.app_object(app, api_url=base, web_url=web), {}
        if path.startswith("/app/hook/deliveries"):
            return self._hook_deliveries(base, method, path, query, headers)
        if method == "GET" and path == "/user":
            with self.world.lock:
                return 200, self._authenticated_user(base, headers), {}
        if method == "GET" and path.startswith("/user/installations"):
            with self.world.lock:
                status, answer = user_installations(self.world, base, web, headers, path, query)
            if status >= 400:
                raise GitHubError(status, answer)
            return status, answer, {}
        if method == "GET" and path == "/app/installations":
            with self.world.lock:
                return 200, self._app_installations(base, web, headers, query), {}
        if method == "GET" and path == "/installation/repositories":
            with self.world.lock:
                return 200, self._installation_repositories(base, headers, query), {}
        located = re.fullmatch(r"/repos/([^/]+)/([^/]+)/installation", path)
        if method == "GET" and located is not None:
            with self.world.lock:
                owner, name = map(unquote, located.groups())
                return 200, self._repository_installation(base, web, headers, owner, name), {}
        membership = re.fullmatch(r"/orgs/([^/]+)/teams/([^/]+)/memberships/([^/]+)", path)
        if method == "GET" and membership is not None:
            with self.world.lock:
                status, answer = team_membership(self.world, base, headers, *map(unquote, membership.groups()))
            if status >= 400:
                raise GitHubError(status, answer)
            return status, answer, {}
        for route_method, pattern, handler in _ROUTES:
            if route_method != method:
                continue
            found = pattern.fullmatch(path)
            if found is None:
                continue
            args = [unquote(part) for part in found.groups()]
            try:
                data = json.loads(body) if body else None
            except json.JSONDecodeError as error:
                raise GitHubError(400, f"Problems parsing JSON: {error}") from None
            with self.world.lock:
                repository, person = self._repository(args[0], args[1], headers)
                if person is not None and method != "GET" and handler not in _PERSONAL:
                    raise GitHubError(403, "Resource not accessible by personal access token")
                context = _Context(self, repository, base, query, data, person)
                return *handler(context, *args[2:]), {}
        raise GitHubError(404, "Not Found")

    def _hook_deliveries(
        self, base: str, method: str, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, Json, dict[str, str]]:
        """The App's webhook delivery log (`hooks.HookLog`): listed, or an entry sent again."""
        with self.world.lock:
            self._app_jwt(headers)
            status, answer, link = self.hooks.answer(base, method, path, query) if self.hooks else (404, None, {})
        if status >= 400:
            raise GitHubError(status, "Not Found")
        return status, answer, link

    # -- authentication ------------------------------------------------------------------------------

    def _mint(self, installation_id: int, headers: dict[str, str]) -> tuple[int, Json]:
        app_id = self._app_jwt(headers)
        installation = self.world.installations.get(installation_id)
        if installation is None or installation.app_id != app_id:
            raise GitHubError(404, "Not Found")
        if installation.suspended:
            raise GitHubError(403, "This installation has been suspended")
        token = Token(f"ghs_{secrets.token_hex(18)}", installation_id, self.world.now() + timedelta(hours=1))
        self.world.tokens[token.value] = token
        return 201, shapes.installation_token(token.value, token.expires_at)

    # -- the App's installations ------------------------------------------------------------------------

    def _installation(self, installation: Installation, base: str, web: str) -> Json:
        suspended = (installation.account, shapes.timestamp(self.world.now())) if installation.suspended else None
        return shapes.installation_object(installation.id, self.world.app_of(installation.app_id), installation.account,
                                          api_url=base, web_url=web, suspended=suspended)  # fmt: skip

    def _app_installations(self, base: str, web: str, headers: dict[str, str], query: dict[str, str]) -> Json:
        """`GET /app/installations` (the App's JWT): its installations, suspended ones too, a page at a time."""
        app_id = self._app_jwt(headers)
        mine = sorted((one for one in self.world.installations.values() if one.app_id == app_id), key=lambda i: i.id)
        return [self._installation(one, base, web) for one in _paged(mine, query)]

    def _installation_repositories(self, base: str, headers: dict[str, str], query: dict[str, str]) -> Json:
        """`GET /installation/repositories` (an installation token): the repositories it reaches, a page at a time."""
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        token = self.world.tokens.get(credential) if scheme.lower() in ("token", "bearer") else None
        if token is None or token.expires_at <= self.world.now():
            raise GitHubError(401, "Bad credentials")
        if self.world.installations[token.installation_id].suspended:
            raise GitHubError(403, "This installation has been suspended")
        reached = sorted((one for one in self.world.repositories.values()
                          if one.installation_id == token.installation_id), key=lambda r: r.id)  # fmt: skip
        return shapes.installation_repositories([one.shape(base) for one in _paged(reached, query)], len(reached))

    def _repository_installation(self, base: str, web: str, headers: dict[str, str], owner: str, name: str) -> Json:
        """`GET /repos/{owner}/{repo}/installation` (the App's JWT): the App's installation holding it, or 404."""
        app_id = self._app_jwt(headers)
        repository = self.world.repository(f"{owner}/{name}")
        installation = self.world.installations.get(repository.installation_id) if repository else None
        if installation is None or installation.app_id != app_id:
            raise GitHubError(404, "Not Found")
        return self._installation(installation, base, web)

    def _app_jwt(self, headers: dict[str, str]) -> int:
        """The call is the App's own: it carries a JWT signed with the App's key, as GitHub requires of the
        `/app` operations (an installation token is refused). The App's id."""
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not credential:
            raise GitHubError(401, "A JSON web token could not be decoded")
        try:
            # The issuer names the App, whose key then verifies the token (Baton's, or one made from a manifest).
            issuer = str(jwt.decode(credential, options={"verify_signature": False}).get("iss"))
            key = self.world.public_key(int(issuer)) if issuer.isdigit() else None
            if key is None:
                raise GitHubError(401, "'Issuer' claim ('iss') must be an Integer matching the App's id")
            claims = jwt.decode(credential, key, algorithms=["RS256"], options={"require": ["exp", "iat", "iss"]})
        except jwt.PyJWTError as error:
            raise GitHubError(401, f"A JSON web token could not be decoded: {error}") from None
        if int(claims["exp"]) - int(claims["iat"]) > 660:
            raise GitHubError(401, "'Expiration time' claim ('exp') is too far in the future")
        return int(issuer)

    def _authenticated_user(self, base: str, headers: dict[str, str]) -> Json:
        """Whose token this is: a person's own token names them; an installation token is refused, as GitHub
        refuses `GET /user` to an App."""
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        login = self.world.user_tokens.get(credential) if scheme.lower() in ("token", "bearer") else None
        if login is None:
            if credential in self.world.tokens:
                raise GitHubError(403, "Resource not accessible by integration")
            raise GitHubError(401, "Bad credentials")
        account = self.world.accounts[login]
        return shapes.authenticated_user(account.login, account.id, type=account.type, api_url=base)

    def _repository(self, owner: str, name: str, headers: dict[str, str]) -> tuple[Repository, shapes.Account | None]:
        """The repository an operation is on, and who calls: the App (an installation token reaching it: None) or
        a person with their own token, who reaches what they may read (a private repository they cannot read is a
        404, as on GitHub)."""
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        bearer = scheme.lower() in ("token", "bearer")
        login = self.world.user_tokens.get(credential) if bearer else None
        if login is not None:
            readable = self.world.repository(f"{owner}/{name}")
            if readable is None or readable.permission(login) == "none":
                raise GitHubError(404, "Not Found")
            return readable, self.world.accounts[login]
        token = self.world.tokens.get(credential) if bearer else None
        if token is None or token.expires_at <= self.world.now():
            raise GitHubError(401, "Bad credentials")
        repository = self.world.repository(f"{owner}/{name}")
        if repository is None or repository.installation_id != token.installation_id:
            raise GitHubError(404, "Not Found")
        installation = self.world.installations[token.installation_id]
        if installation.suspended:
            raise GitHubError(403, "This installation has been suspended")
        return repository, None


@dataclass
class _Context:
    """What an operation needs: the repository it is on, how to render it, and the request's data."""

    stand_in: StandIn
    repository: Repository
    base: str
    query: dict[str, str]
    data: Any
    person: shapes.Account | None = None  # a person calling with their own token; None: the App

    @property
    def world(self) -> World:
        return self.stand_in.world

    @property
    def repo(self) -> shapes.Repo:
        return self.repository.shape(self.base)

    def notify(self, event: str, payload: dict[str, Any]) -> None:
        if self.stand_in.notify is not None:
            self.stand_in.notify(event, payload)

    def page(self, items: list[Any]) -> list[Any]:
        """The slice `per_page` (at most 100, GitHub's default 30) and `page` (from 1) ask for."""
        per_page = max(1, min(100, int(self.query.get("per_page", "30"))))
        page = max(1, int(self.query.get("page", "1")))
        return items[(page - 1) * per_page : page * per_page]

    def labels_changed(self, action: str, issue: Issue, label: str) -> None:
        """The App's bot added or removed a label: GitHub tells the App as it tells everyone."""
        if self.stand_in.notify is None:  # nobody listens: spare building the payload
            return
        installation_id = self.repository.installation_id
        event = shapes.issues_event(
            action,
            self.repo,
            self.issue(issue),
            self.world.bot,
            label=self.label(label),
            installation_id=installation_id,
        )
        self.notify("issues", event)

    def field(self, name: str, kind: type) -> Any:
        value = self.data.get(name) if isinstance(self.data, dict) else None
        if not isinstance(value, kind):
            raise invalid("Issue", name, "missing_field")
        return value

    # rendering what the world holds as GitHub shows it

    def label(self, name: str) -> Json:
        found = self.repository.label(name)
        if found is None:
            raise GitHubError(404, "Not Found")
        return shapes.label(self.repo, found.name, found.color, found.description, found.id, default=found.default)

    def issue(self, issue: Issue) -> Json:
        return render_issue(self.world, self.repository, self.repo, issue)

    def any_issue(self, repository: Repository, issue: Issue) -> Json:
        """An issue of any repository of the world (a linked one), as its own repository shows it."""
        return render_issue(self.world, repository, repository.shape(self.base), issue)

    def comment(self, comment: Comment) -> Json:
        issue = self.repository.issues[comment.issue]
        return shapes.issue_comment(
            self.repo, comment.issue, comment.id, comment.body, comment.user,
            created_at=shapes.timestamp(comment.created_at), updated_at=shapes.timestamp(comment.updated_at),
            on_pull_request=issue.pull_request, app=self.world.app if comment.app_id == self.world.app_id else None,
        )  # fmt: skip

    def pull_request(self, number: int) -> Json:
        pull = self.repository.pulls.get(number)
        if pull is None:
            raise GitHubError(404, "Not Found")
        return render_pull_request(self.world, self.repository, self.repo, number)

    def find_issue(self, number: str) -> Issue:
        issue = self.repository.issues.get(int(number))
        if issue is None:
            raise GitHubError(404, "Not Found")
        return issue

    def find_comment(self, comment_id: str) -> Comment:
        comment = self.repository.comments.get(int(comment_id))
        if comment is None:
            raise GitHubError(404, "Not Found")
        return comment


# -- the operations ----------------------------------------------------------------------------------
# Each takes the context and the path's remaining parts, and returns (status, body). The world's lock is
# held. Argument names follow GitHub's path parameters.


def _paged(items: list[Any], query: dict[str, str]) -> list[Any]:
    """One page of `items`, as GitHub pages with `per_page` (at most 100; 30 by default) and `page`."""
    per_page = max(1, min(100, int(query.get("per_page") or 30)))
    page = max(1, int(query.get("page") or 1))
    return items[(page - 1) * per_page : page * per_page]


def _get_repository(c: _Context) -> tuple[int, Json]:
    return 200, shapes.repository(c.repo, open_issues=sum(1 for i in c.repository.issues.values() if i.state == "open"))


def _collaborator_permission(c: _Context, username: str) -> tuple[int, Json]:
    account = c.world.accounts.get(username.lower())
    if account is None:
        raise GitHubError(404, "Not Found")
    role = c.repository.permission(username)
    base = c.repository.custom_roles.get(role, role)
    if base == "none":
        raise GitHubError(404, f"{username} is not a user")
    coarse = {"maintain": "write", "triage": "read"}.get(base, base)
    return 200, shapes.collaborator_permission(c.repo, account, coarse, role, base=base)


def _list_collaborators(c: _Context) -> tuple[int, Json]:
    """GET .../collaborators: a page of everyone the collaborator check counts (`Repository.is_collaborator`) among
    the accounts GitHub knows, by login, with their roles. `affiliation=outside` lists none here (the stand-in has
    no organisation members apart from collaborators)."""
    affiliation = c.query.get("affiliation", "all")
    if affiliation not in ("all", "direct", "outside"):
        raise GitHubError(422, "Validation Failed")
    listed = [] if affiliation == "outside" else sorted(
        (account for account in c.world.accounts.values()
         if account.type != "Organization" and c.repository.is_collaborator(account.login)),
        key=lambda account: account.login.lower(),
    )  # fmt: skip
    answer = []
    for account in c.page(listed):
        role = c.repository.permission(account.login)
        answer.append(shapes.collaborator(c.repo, account, role, base=c.repository.custom_roles.get(role, role)))
    return 200, answer


def _check_collaborator(c: _Context, username: str) -> tuple[int, Json]:
    """GET .../collaborators/{username}: 204 for a collaborator (`Repository.is_collaborator`), else 404."""
    if username.lower() not in c.world.accounts or not c.repository.is_collaborator(username):
        raise GitHubError(404, "Not Found")
    return 204, None


def _contents(c: _Context, path: str) -> tuple[int, Json]:
    ref = c.query.get("ref", c.repository.default_branch)
    text = c.repository.files.get(path) if ref == c.repository.default_branch else None
    if text is None:
        raise GitHubError(404, "Not Found")
    return 200, shapes.content_file(c.repo, path, text, sha_of("blob", text))


def _get_issue(c: _Context, number: str) -> tuple[int, Json]:
    return 200, c.issue(c.find_issue(number))


def _touch(c: _Context, issue: Issue) -> None:
    issue.updated_at = c.world.now()


def _add_labels(c: _Context, number: str) -> tuple[int, Json]:
    issue = c.find_issue(number)
    names = c.data.get("labels") if isinstance(c.data, dict) else c.data
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise GitHubError(422, "Invalid request.\n\nlabels must be a list of names")
    for name in names:
        label = c.repository.label(name)
        if label is None:  # GitHub creates a label it does not know yet, in grey
            label = c.world.create_label(c.repository, name, "ededed", None)
        if label.name not in issue.labels:
            issue.labels.append(label.name)
            _touch(c, issue)
            c.labels_changed("labeled", issue, label.name)
    return 200, [c.label(name) for name in issue.labels]


def _remove_label(c: _Context, number: str, name: str) -> tuple[int, Json]:
    issue = c.find_issue(number)
    present = next((n for n in issue.labels if n.lower() == name.lower()), None)
    if present is None:
        raise GitHubError(404, "Label does not exist")
    issue.labels.remove(present)
    _touch(c, issue)
    c.labels_changed("unlabeled", issue, present)
    return 200, [c.label(n) for n in issue.labels]


def _add_assignees(c: _Context, number: str) -> tuple[int, Json]:
    issue = c.find_issue(number)
    for login in c.field("assignees", list):
        # GitHub silently leaves out whom it cannot assign: people without access to the repository.
        if c.repository.permission(str(login)) in ("none",) or str(login).lower() not in c.world.accounts:
            continue
        if str(login).lower() not in (a.lower() for a in issue.assignees) and len(issue.assignees) < 10:
            issue.assignees.append(c.world.accounts[str(login).lower()].login)
            _touch(c, issue)
    return 201, c.issue(issue)


def _remove_assignees(c: _Context, number: str) -> tuple[int, Json]:
    issue = c.find_issue(number)
    leaving = {str(login).lower() for login in c.field("assignees", list)}
    kept = [a for a in issue.assignees if a.lower() not in leaving]
    if kept != issue.assignees:
        issue.assignees = kept
        _touch(c, issue)
    return 200, c.issue(issue)


# -- dependencies ("blocked by") and sub-issues: linked by issue id, across the world's repositories ----------


def _refused(refusal: Refused) -> GitHubError:
    if refusal.status == 422:
        return GitHubError(422, "Validation Failed",
                           errors=[{"resource": "Issue", "code": "custom", "message": refusal.message}])  # fmt: skip
    return GitHubError(refusal.status, refusal.message)


def _linked(c: _Context, pairs: list[tuple[Repository, Issue]]) -> tuple[int, Json]:
    return 200, [c.any_issue(*pair) for pair in c.page(pairs)]


def _tell_linked(c: _Context, event: str, done: str, first: tuple[Repository, Issue],
                 second: tuple[Repository, Issue]) -> None:  # fmt: skip
    if c.stand_in.notify is None:  # nobody listens: spare building the payloads
        return
    for name, payload in link_events(c.world, c.base, event, done, first, second, c.world.bot):
        c.notify(name, payload)


def _list_blocked_by(c: _Context, number: str) -> tuple[int, Json]:
    return _linked(c, c.world.blockers(c.find_issue(number)))


def _list_blocking(c: _Context, number: str) -> tuple[int, Json]:
    return _linked(c, c.world.blocked(c.find_issue(number)))


def _relink(
    c: _Context, number: str, change: Callable[[Issue], tuple[Repository, Issue]], event: str, done: str
) -> tuple[Issue, tuple[Repository, Issue]]:
    """Issue `number` and the other end of the link `change` adds to it or removes from it (GitHub's refusal
    is the answer), with both repositories told (`event`, `done`)."""
    issue = c.find_issue(number)
    try:
        other = change(issue)
    except Refused as refusal:
        raise _refused(refusal) from None
    _touch(c, issue)
    _tell_linked(c, event, done, (c.repository, issue), other)
    return issue, other


def _add_blocked_by(c: _Context, number: str) -> tuple[int, Json]:
    """The issue is blocked by the one `issue_id` names (any repository): 201 and the blocking issue."""
    _, blocking = _relink(c, number, lambda issue: c.world.add_blocked_by(issue, c.field("issue_id", int)),
                          "issue_dependencies", "added")  # fmt: skip
    return 201, c.any_issue(*blocking)


def _remove_blocked_by(c: _Context, number: str, issue_id: str) -> tuple[int, Json]:
    _, blocking = _relink(c, number, lambda issue: c.world.remove_blocked_by(issue, int(issue_id)),
                          "issue_dependencies", "removed")  # fmt: skip
    return 200, c.any_issue(*blocking)


def _list_sub_issues(c: _Context, number: str) -> tuple[int, Json]:
    return _linked(c, c.world.children(c.find_issue(number)))


def _parent(c: _Context, number: str) -> tuple[int, Json]:
    parent = c.world.parent(c.find_issue(number))
    if parent is None:
        raise GitHubError(404, "Not Found")
    return 200, c.any_issue(*parent)


def _add_sub_issue(c: _Context, number: str) -> tuple[int, Json]:
    """The issue `sub_issue_id` names (same owner) becomes the last sub-issue: 201 and the parent. With
    `replace_parent` it leaves the parent it had (GitHub tells of that removal first)."""
    issue = c.find_issue(number)
    replace = c.data.get("replace_parent") is True if isinstance(c.data, dict) else False
    try:
        sub_repository, sub_issue, before = c.world.add_sub_issue(
            issue, c.repository.owner.login, c.field("sub_issue_id", int), replace_parent=replace
        )
    except Refused as refusal:
        raise _refused(refusal) from None
    _touch(c, issue)
    if before is not None:
        _tell_linked(c, "sub_issues", "removed", before, (sub_repository, sub_issue))
    _tell_linked(c, "sub_issues", "added", (c.repository, issue), (sub_repository, sub_issue))
    return 201, c.issue(issue)


def _remove_sub_issue(c: _Context, number: str) -> tuple[int, Json]:
    issue, _ = _relink(c, number, lambda issue: c.world.remove_sub_issue(issue, c.field("sub_issue_id", int)),
                       "sub_issues", "removed")  # fmt: skip
    return 200, c.issue(issue)


def _get_label(c: _Context, name: str) -> tuple[int, Json]:
    return 200, c.label(name)


def _post_label(c: _Context) -> tuple[int, Json]:
    name = c.field("name", str)
    if c.repository.label(name) is not None:
        raise invalid("Label", "name", "already_exists")
    color = c.data.get("color", "ededed")
    if not isinstance(color, str) or re.fullmatch(r"#?[0-9a-fA-F]{6}", color) is None:
        raise invalid("Label", "color", "invalid")
    description = c.data.get("description")
    c.world.create_label(c.repository, name, color, description if isinstance(description, str) else None)
    return 201, c.label(name)


def _list_comments(c: _Context, number: str) -> tuple[int, Json]:
    c.find_issue(number)
    comments = sorted((x for x in c.repository.comments.values() if x.issue == int(number)), key=lambda x: x.id)
    return 200, [c.comment(x) for x in c.page(comments)]


def _timeline(c: _Context, number: str) -> tuple[int, Json]:
    """The issue's timeline, as far as the stand-in keeps it, oldest first: its closes and reopenings (`state-
    change-issue-event`), a close by a merge naming its commit; and the pull requests of the repository whose
    body mentions it (`cross-referenced`, when the pull request was opened)."""
    issue = c.find_issue(number)
    entries = [
        (at, shapes.state_change_event(c.repo, issue.number, index + 1, event, actor, shapes.timestamp(at), commit,
                                       reason))
        for index, (event, actor, at, commit, reason) in enumerate(issue.changes)
    ]  # fmt: skip
    mention = re.compile(
        rf"(?<![\w/])(?:{re.escape(c.repository.full_name)})?#{issue.number}(?!\d)"
        rf"|/{re.escape(c.repository.full_name)}/issues/{issue.number}(?!\d)",
        re.IGNORECASE,
    )
    for other in sorted(c.repository.issues.values(), key=lambda x: x.number):
        if other.pull_request and other.number != issue.number and mention.search(other.body or ""):
            at = other.created_at
            event = shapes.cross_referenced_event(c.repo, other.user, shapes.timestamp(at), c.issue(other))
            entries.append((at, event))
    entries.sort(key=lambda entry: entry[0])
    return 200, c.page([event for _, event in entries])


def _get_comment(c: _Context, comment_id: str) -> tuple[int, Json]:
    return 200, c.comment(c.find_comment(comment_id))


def _list_issues(c: _Context) -> tuple[int, Json]:
    issues = list_issues(c.repository.issues.values(), c.query)
    if issues is None:
        raise GitHubError(422, "Validation Failed")
    return 200, [c.issue(issue) for issue in c.page(issues)]


def _create_issue(c: _Context) -> tuple[int, Json]:
    """The App opens an issue (its installation token): by `baton[bot]`, performed via the App; or a person
    with their own token, whose labels GitHub keeps only if they may triage."""
    title = c.field("title", str)
    body = c.data.get("body") if isinstance(c.data, dict) else None
    labels = c.data.get("labels") if isinstance(c.data, dict) else None
    author = c.person or c.world.bot
    issue = c.world.add_issue(c.repository, title, author, body if isinstance(body, str) else "")
    if c.person is None:
        issue.app_id = c.world.app_id
    elif c.repository.permission(c.person.login) not in ("triage", "write", "maintain", "admin"):
        labels = None
    for name in labels if isinstance(labels, list) else []:
        if isinstance(name, str) and c.repository.label(name) is not None and name not in issue.labels:
            issue.labels.append(name)
    answer = c.issue(issue)
    if c.stand_in.notify is not None:
        c.notify("issues", shapes.issues_event("opened", c.repo, answer, author,
                                               installation_id=c.repository.installation_id))  # fmt: skip
    return 201, answer


def _create_comment(c: _Context, number: str) -> tuple[int, Json]:
    """A comment by the App's bot, or by the person whose own token this is (`/claim` typed by hand); either
    way GitHub tells the App of it."""
    issue = c.find_issue(number)
    body = c.field("body", str)
    moment = c.world.now()
    author, app_id = (c.person, None) if c.person is not None else (c.world.bot, c.world.app_id)
    comment = Comment(c.world.next_id(), issue.number, author, body, moment, moment, app_id)
    c.repository.comments[comment.id] = comment
    _touch(c, issue)
    answer = c.comment(comment)
    if c.stand_in.notify is not None:
        c.notify("issue_comment", shapes.issue_comment_event(c.repo, c.issue(issue), answer, author,
                                                             installation_id=c.repository.installation_id))  # fmt: skip
    return 201, answer


def _update_comment(c: _Context, comment_id: str) -> tuple[int, Json]:
    comment = c.find_comment(comment_id)
    if comment.app_id != c.world.app_id:
        raise GitHubError(403, "Resource not accessible by integration")
    comment.body = c.field("body", str)
    comment.updated_at = c.world.now()
    return 200, c.comment(comment)


def _react(c: _Context, issue: Issue, comment: int | None) -> tuple[int, Json]:
    content = c.field("content", str)
    if content not in shapes.REACTIONS:
        raise invalid("Reaction", "content", "invalid")
    reactions = c.repository.reactions.setdefault(issue.number, [])
    for reaction in reactions:
        if reaction.comment == comment and reaction.user == c.world.bot and reaction.content == content:
            return 200, shapes.reaction(c.repo, reaction.id, content, reaction.user,
                                        created_at=shapes.timestamp(reaction.created_at))  # fmt: skip
    reaction = Reaction(c.world.next_id(), c.world.bot, content, c.world.now(), comment)
    reactions.append(reaction)
    return 201, shapes.reaction(c.repo, reaction.id, content, reaction.user,
                                created_at=shapes.timestamp(reaction.created_at))  # fmt: skip


def _react_to_issue(c: _Context, number: str) -> tuple[int, Json]:
    return _react(c, c.find_issue(number), None)


def _react_to_comment(c: _Context, comment_id: str) -> tuple[int, Json]:
    comment = c.find_comment(comment_id)
    return _react(c, c.repository.issues[comment.issue], comment.id)


def _check_run_json(c: _Context, run: CheckRun) -> Json:
    return render_check_run(c.world, c.repository, c.repo, run)


def _update_run(run: CheckRun, data: dict[str, Any], moment: datetime) -> None:
    if isinstance(data.get("status"), str):
        run.status = data["status"]
    if isinstance(data.get("conclusion"), str):
        run.conclusion, run.status = data["conclusion"], "completed"
    if run.status == "completed" and run.completed_at is None:
        run.completed_at = moment
    if isinstance(data.get("output"), dict):
        run.title = data["output"].get("title", run.title)
        run.summary = data["output"].get("summary", run.summary)
    for key in ("external_id", "details_url"):
        if isinstance(data.get(key), str):
            setattr(run, key, data[key])


def _create_check_run(c: _Context) -> tuple[int, Json]:
    run = CheckRun(c.world.next_id(), c.field("name", str), c.field("head_sha", str), "queued", None, None, None,
                   c.world.app_id, c.world.now())  # fmt: skip
    _update_run(run, c.data, c.world.now())
    c.repository.check_runs[run.id] = run
    return 201, _check_run_json(c, run)


def _update_check_run(c: _Context, check_run_id: str) -> tuple[int, Json]:
    run = c.repository.check_runs.get(int(check_run_id))
    if run is None:
        raise GitHubError(404, "Not Found")
    _update_run(run, c.data if isinstance(c.data, dict) else {}, c.world.now())
    return 200, _check_run_json(c, run)


def _list_check_runs(c: _Context, ref: str) -> tuple[int, Json]:
    """The check runs on a commit (or a branch's head), newest first; `check_name` filters by name."""
    sha = _resolve(c.repository, ref)
    name = c.query.get("check_name")
    runs = sorted(
        (run for run in c.repository.check_runs.values() if run.head_sha == sha and name in (None, run.name)),
        key=lambda run: run.id,
        reverse=True,
    )
    return 200, {"total_count": len(runs), "check_runs": [_check_run_json(c, run) for run in c.page(runs)]}


def _get_pull(c: _Context, number: str) -> tuple[int, Json]:
    return 200, c.pull_request(int(number))


def _commit_json(c: _Context, sha: str, parents: list[str]) -> Json:
    made = c.repository.committed.get(sha)
    at = shapes.timestamp(made) if made is not None else shapes.EPOCH
    return shapes.commit(c.repo, sha, f"Commit {sha[:7]}", c.repository.owner, parents=parents, at=at)


def _get_commit(c: _Context, ref: str) -> tuple[int, Json]:
    """A commit by its id (in full or abbreviated to 7 or more characters) or a branch's name; GitHub answers 422
    for a ref it knows no commit by."""
    repository = c.repository
    if ref in repository.branches:
        sha = repository.commits(ref)[-1]
    else:
        wanted = ref.lower()
        known = {commit for commits in repository.branches.values() for commit in commits} | set(repository.committed)
        matches = [commit for commit in known if len(wanted) >= 7 and commit.lower().startswith(wanted)]
        if len(matches) != 1:
            raise GitHubError(422, f"No commit found for SHA: {ref}")
        sha = matches[0]
    line = next((commits for commits in repository.branches.values() if sha in commits), [sha])
    return 200, _commit_json(c, sha, line[max(0, line.index(sha) - 1) : line.index(sha)])


def _get_branch(c: _Context, name: str) -> tuple[int, Json]:
    """A branch, its head commit and, if protected, the status checks its protection requires."""
    commits = c.repository.commits(name)
    if not commits:
        raise GitHubError(404, "Branch not found")
    head = _commit_json(c, commits[-1], commits[-2:-1])
    required = c.repository.protection.get(name)
    if required is None:
        return 200, shapes.branch(c.repo, name, head)
    return 200, shapes.branch(c.repo, name, head, protected=True, required=required)


def _compare(c: _Context, basehead: str) -> tuple[int, Json]:
    """Only what Baton asks: is one commit at or after another on the same line of history."""
    base, _, head = basehead.partition("...")
    base, head = _resolve(c.repository, base), _resolve(c.repository, head)
    line = next((commits for commits in c.repository.branches.values() if base in commits and head in commits), None)
    if line is None:
        raise GitHubError(404, "Not Found")
    start, end = line.index(base), line.index(head)
    ahead = line[start + 1 : end + 1] if end >= start else []
    base_commit = _commit_json(c, base, line[max(0, start - 1) : start])
    commits = [_commit_json(c, sha, [line[line.index(sha) - 1]]) for sha in ahead]
    return 200, shapes.compare(c.repo, basehead, base_commit, commits, behind_by=max(0, start - end))


def _resolve(repository: Repository, ref: str) -> str:
    """A branch name to its head commit; a commit id stays itself."""
    commits = repository.commits(ref)
    return commits[-1] if commits else ref


_OPERATIONS: list[tuple[str, str, Callable[..., tuple[int, Json]]]] = [
    ("GET", r"/repos/([^/]+)/([^/]+)", _get_repository),
    ("GET", r"/repos/([^/]+)/([^/]+)/collaborators", _list_collaborators),
    ("GET", r"/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission", _collaborator_permission),
    ("GET", r"/repos/([^/]+)/([^/]+)/collaborators/([^/]+)", _check_collaborator),
    ("GET", r"/repos/([^/]+)/([^/]+)/contents/(.+)", _contents),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues", _list_issues),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues", _create_issue),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)", _get_issue),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/labels", _add_labels),
    ("DELETE", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/labels/([^/]+)", _remove_label),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/assignees", _add_assignees),
    ("DELETE", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/assignees", _remove_assignees),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/dependencies/blocked_by", _list_blocked_by),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/dependencies/blocked_by", _add_blocked_by),
    ("DELETE", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/dependencies/blocked_by/([0-9]+)", _remove_blocked_by),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/dependencies/blocking", _list_blocking),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/sub_issues", _list_sub_issues),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/sub_issues", _add_sub_issue),
    ("DELETE", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/sub_issue", _remove_sub_issue),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/parent", _parent),
    ("GET", r"/repos/([^/]+)/([^/]+)/labels/([^/]+)", _get_label),
    ("POST", r"/repos/([^/]+)/([^/]+)/labels", _post_label),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/comments", _list_comments),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/timeline", _timeline),
    ("GET", r"/repos/([^/]+)/([^/]+)/issues/comments/([0-9]+)", _get_comment),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/comments", _create_comment),
    ("PATCH", r"/repos/([^/]+)/([^/]+)/issues/comments/([0-9]+)", _update_comment),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/([0-9]+)/reactions", _react_to_issue),
    ("POST", r"/repos/([^/]+)/([^/]+)/issues/comments/([0-9]+)/reactions", _react_to_comment),
    ("POST", r"/repos/([^/]+)/([^/]+)/check-runs", _create_check_run),
    ("PATCH", r"/repos/([^/]+)/([^/]+)/check-runs/([0-9]+)", _update_check_run),
    ("GET", r"/repos/([^/]+)/([^/]+)/commits/([^/]+)/check-runs", _list_check_runs),
    ("GET", r"/repos/([^/]+)/([^/]+)/commits/([^/]+)", _get_commit),
    ("GET", r"/repos/([^/]+)/([^/]+)/pulls/([0-9]+)", _get_pull),
    ("GET", r"/repos/([^/]+)/([^/]+)/branches/(.+)", _get_branch),
    ("GET", r"/repos/([^/]+)/([^/]+)/compare/(.+)", _compare),
]
_ROUTES = [(method, re.compile(pattern), handler) for method, pattern, handler in _OPERATIONS]
# What a person's own token may change here (reading, it may do wherever it may read); the rest is the App's.
_PERSONAL = {_create_issue, _create_comment}
