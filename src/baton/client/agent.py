"""The client side of Baton's agent API: send a verb on a task (claim, release, assign, deliver, accept, send back,
reopen: `client/verbs.py`), claim the next ready task, open-and-claim one, list the open tasks, read a ticket.

Synchronous, one `httpx.Client` per process. The agent authenticates with its own GitHub token, which this
module sends in the `Authorization` header and nowhere else: it is never logged, printed or put in an error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from baton.environment import tls

TIMEOUT = 10.0
# BATON_TOKEN first: in a GitHub Actions job it holds the run's OIDC token, beside a GITHUB_TOKEN for other tools.
TOKEN_VARIABLES = ("BATON_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")

# GitHub's own rules: an owner is letters, digits and single hyphens; a repository name adds '.' and '_'.
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
LOGIN = rf"{_OWNER}(?:\[bot\])?"  # a person's or an App's login, as an assignee or a released claim names one
_REPOSITORY = re.compile(rf"({_OWNER})/({_NAME})")
_ISSUE = re.compile(rf"({_OWNER})/({_NAME})#([0-9]{{1,10}})")
_LARGEST_ISSUE = 2_147_483_647


class UsageError(Exception):
    """Something the person running the command must fix: an argument, a variable, a missing token."""


class Unreachable(Exception):
    """Baton gave no HTTP answer: it could not be reached, or did not answer in time."""


def parse_repository(text: str) -> str:
    """`OWNER/REPO`, checked, as `owner/repo` text."""
    found = _REPOSITORY.fullmatch(text.strip())
    if found is None or found.group(2) in (".", ".."):
        raise UsageError(f"{text!r} is not OWNER/REPO (for example octo/shop)")
    return f"{found.group(1)}/{found.group(2)}"


def parse_owner(text: str) -> str:
    """An organisation's (or user's) login, checked."""
    if re.fullmatch(_OWNER, text.strip()) is None:
        raise UsageError(f"{text!r} is not an organisation (for example octo)")
    return text.strip()


def parse_issue(text: str) -> tuple[str, int]:
    """`OWNER/REPO#N` as (`owner/repo`, N)."""
    found = _ISSUE.fullmatch(text.strip())
    if found is None or found.group(2) in (".", ".."):
        raise UsageError(f"{text!r} is not OWNER/REPO#N (for example octo/shop#42)")
    number = int(found.group(3))
    if not 1 <= number <= _LARGEST_ISSUE:
        raise UsageError(f"{text!r}: an issue number goes from 1 to {_LARGEST_ISSUE}")
    return f"{found.group(1)}/{found.group(2)}", number


def base_url(environ: Mapping[str, str] | None = None) -> str:
    """Baton's address from BATON_URL."""
    value = (os.environ if environ is None else environ).get("BATON_URL", "").strip()
    if not value:
        raise UsageError("BATON_URL is not set: set it to Baton's address, for example http://127.0.0.1:8000")
    if not value.startswith(("http://", "https://")):
        raise UsageError(f"BATON_URL must start with http:// or https:// (it is {value!r})")
    return value.rstrip("/")


@dataclass(frozen=True)
class Token:
    """The agent's GitHub token and where it came from (said in errors; the value never is)."""

    value: str = field(repr=False)
    source: str

    def __str__(self) -> str:
        return f"the token from {self.source}"


def find_token(environ: Mapping[str, str] | None = None) -> Token:
    """BATON_TOKEN (a GitHub token, or a GitHub Actions OIDC token where Baton takes those), else GITHUB_TOKEN, else
    GH_TOKEN, else what `gh auth token` prints, if the GitHub CLI is installed."""
    environ = os.environ if environ is None else environ
    for name in TOKEN_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return Token(value, name)
    gh = shutil.which("gh", path=environ.get("PATH"))
    if gh is not None:
        try:
            done = subprocess.run([gh, "auth", "token"], capture_output=True, text=True, timeout=TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            return Token(done.stdout.strip(), "`gh auth token`")
    raise UsageError(
        "no GitHub token: set GITHUB_TOKEN or GH_TOKEN to your GitHub token (or BATON_TOKEN, to it or to a GitHub "
        "Actions OIDC token), or log in with `gh auth login`"
    )


def new_key() -> str:
    """A fresh `Idempotency-Key`: the same key again gets the first request's answer."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Response:
    """Baton's HTTP answer: the status code, the JSON body (an object; empty when there was none), for 429 the
    `Retry-After` header, and whether the body was a JSON object at all (with its content type when not)."""

    status: int
    body: dict[str, Any]
    retry_after: str | None = None
    json_object: bool = True
    content_type: str = "application/json"

    @property
    def ok(self) -> bool:
        """Done: 200, or 201 for an issue opened and claimed."""
        return self.status in (200, 201)

    @property
    def from_baton(self) -> bool:
        """Whether the answer has the shape of one of Baton's: a JSON object, which on a refusal says why
        (Baton's `error` and `message`, or FastAPI's `detail`; GitHub's API, say, gives a `message` alone). A
        gateway failing in front of Baton (5xx) is taken as Baton failing."""
        if self.status >= 500:
            return True
        if not self.json_object or not self.body:
            return False
        if self.ok:
            return True
        said = isinstance(self.body.get("error"), str) and isinstance(self.body.get("message"), str)
        return said or "detail" in self.body

    @property
    def message(self) -> str | None:
        """The server's sentence for a person, when it gave one."""
        message = self.body.get("message")
        return message if isinstance(message, str) and message else None


class AgentClient:
    """Baton's agent API, one call per method. Every method returns a `Response` whatever the status code,
    and raises `Unreachable` when there is no answer."""

    def __init__(self, base_url: str, token: str, *, timeout: float = TIMEOUT) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout,
            verify=tls.context(),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": "baton-cli"},
        )

    def __repr__(self) -> str:
        return f"AgentClient({self.base_url!r})"

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def command(
        self, repo: str, number: int, verb: str, body: dict[str, Any], rev: int | None = None,
        idempotency_key: str | None = None,
    ) -> Response:  # fmt: skip
        """POST a verb on an issue (`client/verbs.py`) with its body: `If-Match` names the revision it must still
        be at, `Idempotency-Key` makes a retry get the first answer."""
        path = f"{_issue_path(repo, number)}/{verb}"
        return self._call("POST", path, json=body, headers=_headers(rev, idempotency_key))

    def create_and_claim(self, repo: str, title: str, body: str = "", idempotency_key: str | None = None) -> Response:
        """Open an issue in `repo` and claim it (201): it is never open for anyone else."""
        owner, _, name = repo.partition("/")
        path = f"/api/v1/repos/{quote(owner, safe='')}/{quote(name, safe='')}/issues"
        return self._call("POST", path, json={"title": title, "body": body}, headers=_headers(None, idempotency_key))

    def claim_next(
        self, repo: str | None = None, *, org: str | None = None, labels: Sequence[str] = (),
        idempotency_key: str | None = None,
    ) -> Response:  # fmt: skip
        """Claim the first ready task this agent may claim, highest priority first, then oldest: in `repo`
        (`owner/name`), or in any repository of the organisation `org` (with `repo`: only that one of them).
        `labels`: only tasks carrying every one. 404 `none_ready` when there is none."""
        body: dict[str, Any]
        if org is not None:
            path, body = f"/api/v1/orgs/{quote(org, safe='')}/tasks/claim", {"repo": repo} if repo else {}
        elif repo is not None:
            owner, _, name = repo.partition("/")
            path, body = f"/api/v1/repos/{quote(owner, safe='')}/{quote(name, safe='')}/tasks/claim", {}
        else:
            raise UsageError("claim_next needs a repository (owner/name) or an organisation")
        if labels:
            body["labels"] = list(labels)
        return self._call("POST", path, json=body, headers=_headers(None, idempotency_key))

    def tasks(self, repo: str, state: str = "open") -> Response:
        return self._call("GET", "/api/v1/tasks", params={"repo": repo, "state": state})

    def status(self, repo: str, number: int) -> Response:
        return self._call("GET", _issue_path(repo, number))

    def _call(self, method: str, path: str, **kwargs: Any) -> Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise Unreachable(f"Baton at {self.base_url} did not answer within {self._http.timeout.read} s") from None
        except httpx.HTTPError as error:
            said = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise Unreachable(f"cannot reach Baton at {self.base_url}: {said}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        kind = response.headers.get("Content-Type", "").partition(";")[0].strip() or "no content type"
        if not isinstance(body, dict):
            return Response(response.status_code, {}, response.headers.get("Retry-After"), False, kind)
        return Response(response.status_code, body, response.headers.get("Retry-After"), True, kind)


def _headers(rev: int | None, key: str | None) -> dict[str, str]:
    headers = {}
    if rev is not None:
        headers["If-Match"] = f'"{rev}"'
    if key is not None:
        headers["Idempotency-Key"] = key
    return headers


def _issue_path(repo: str, number: int) -> str:
    owner, _, name = repo.partition("/")
    return f"/api/v1/repos/{quote(owner, safe='')}/{quote(name, safe='')}/issues/{int(number)}"
