"""Signing in to the board with GitHub (docs/board.md#signing-in): the App's OAuth client (BATON_CLIENT_ID,
BATON_CLIENT_SECRET) in GitHub's web-application flow, and the sessions it opens.

`/auth/github` sends the browser to GitHub's `/login/oauth/authorize` with a random `state`, which a
short-lived signed cookie binds to that browser; GitHub sends it back to `/auth/github/callback` with a
one-time code, exchanged at `/login/oauth/access_token` for the person's user access token. `GET /user`
says who they are; `GET /user/installations` and, for each, `GET /user/installations/{id}/repositories` say
which of the App's repositories they may read. A person sees only those repositories' tickets.

A session is a row in the database (`baton.store.board_sessions`), so every `baton serve` process of a
deployment accepts it. The cookie carries only a random session id, its expiry and an HMAC over both under a
key derived from the client secret; the row is found by the id's SHA-256. The row keeps the person's token
encrypted (Fernet, under another key derived from the client secret), which lets whichever process sees the
session after REFRESH ask GitHub again which repositories it may read: GitHub refusing the token (401) ends
the session; GitHub unreachable keeps the list it gave last, and asks again on the next page. A session
lasts LIFETIME, or less if GitHub says the token expires sooner. Changing the client secret ends every
session. The token is never logged, put in a URL, or stored in clear.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import quote, unquote, urlencode

import httpx
from cryptography.fernet import Fernet, InvalidToken

from baton.environment import tls
from baton.environment.clock import Clock
from baton.store.board_sessions import BoardSession, BoardSessions

from .agent_api import web_url
from .session import LIFETIME

CALLBACK = "/auth/github/callback"  # where GitHub sends people back after "Sign in with GitHub"
STATE_COOKIE = "baton_sign_in"
STATE_LIFETIME = 600  # seconds a browser may take at GitHub between leaving and coming back
REFRESH = timedelta(minutes=5)  # how old a session's list of repositories may be before GitHub is asked again
_PAGES = 20  # pages of 100 asked for at most, of installations and of each one's repositories
_API_VERSION = "2026-03-10"


class SignInRefused(Exception):
    """GitHub did not accept the code or the token; the message is GitHub's error word, never a secret."""


class Unavailable(Exception):
    """GitHub could not be asked (unreachable, or an answer that is not one)."""


@dataclass(frozen=True)
class Grant:
    token: str
    expires_in: int | None  # seconds, when GitHub says the token expires


@dataclass(frozen=True)
class Viewer:
    """Who looks at the board: a person signed in with GitHub, or the operator (the read token)."""

    login: str | None  # None: the operator
    readable: frozenset[int] | None  # GitHub's ids of the repositories they may read; None: every one


OPERATOR = Viewer(None, None)


class GitHub:
    """The calls the sign-in makes to GitHub, with the App's OAuth client."""

    def __init__(self, client_id: str, client_secret: str, api_url: str, timeout: float = 10.0) -> None:
        self.client_id = client_id
        self._secret = client_secret
        self.api_url = api_url.rstrip("/")
        self.web_url = web_url(api_url)
        self._http = httpx.Client(timeout=timeout, verify=tls.context())

    def authorize_url(self, redirect_uri: str, state: str) -> str:
        query = urlencode({"client_id": self.client_id, "redirect_uri": redirect_uri, "state": state})
        return f"{self.web_url}/login/oauth/authorize?{query}"

    def exchange(self, code: str, redirect_uri: str) -> Grant:
        """The user access token for a code GitHub handed the browser."""
        form = {"client_id": self.client_id, "client_secret": self._secret, "code": code, "redirect_uri": redirect_uri}
        body = self._json(self._call("POST", f"{self.web_url}/login/oauth/access_token", data=form))
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            error = body.get("error")
            raise SignInRefused(error if isinstance(error, str) and error.isidentifier() else "no access token")
        expires = body.get("expires_in")
        return Grant(token, expires if isinstance(expires, int) and expires > 0 else None)

    def login(self, token: str) -> str:
        login = self._json(self._api(token, "/user")).get("login")
        if not isinstance(login, str) or not login:
            raise Unavailable("GitHub's answer names no login")
        return login

    def readable(self, token: str) -> frozenset[int]:
        """The ids of the repositories the token's person may read among the App's installations."""
        found: set[int] = set()
        for installation in self._listed(token, "/user/installations", "installations"):
            if isinstance(installation, dict) and isinstance(installation.get("id"), int):
                path = f"/user/installations/{installation['id']}/repositories"
                for repository in self._listed(token, path, "repositories"):
                    if isinstance(repository, dict) and isinstance(repository.get("id"), int):
                        found.add(repository["id"])
        return frozenset(found)

    def _listed(self, token: str, path: str, key: str) -> list[Any]:
        items: list[Any] = []
        for page in range(1, _PAGES + 1):
            listed = self._json(self._api(token, path, {"per_page": "100", "page": str(page)})).get(key)
            if not isinstance(listed, list):
                raise Unavailable(f"GitHub's answer to {path} holds no {key}")
            items.extend(listed)
            if len(listed) < 100:
                break
        return items

    def _api(self, token: str, path: str, params: dict[str, str] | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
                   "X-GitHub-Api-Version": _API_VERSION, "User-Agent": "baton"}  # fmt: skip
        answer = self._call("GET", f"{self.api_url}{path}", headers=headers, params=params)
        if answer.status_code == 401:
            raise SignInRefused("bad_credentials")
        return answer

    def _call(self, method: str, url: str, **options: Any) -> httpx.Response:
        options.setdefault("headers", {"Accept": "application/json", "User-Agent": "baton"})
        try:
            answer = self._http.request(method, url, **options)
        except httpx.HTTPError as error:
            raise Unavailable(f"GitHub cannot be reached ({type(error).__name__})") from None
        if answer.status_code not in (200, 401):
            raise Unavailable(f"GitHub answered {answer.status_code}")
        return answer

    @staticmethod
    def _json(answer: httpx.Response) -> dict[str, Any]:
        try:
            body = answer.json()
        except ValueError:
            raise Unavailable("GitHub's answer is not JSON") from None
        if not isinstance(body, dict):
            raise Unavailable("GitHub's answer is not a JSON object")
        return body

    def close(self) -> None:
        self._http.close()


def _key(secret: str, purpose: bytes) -> bytes:
    return hashlib.sha256(b"baton board " + purpose + b"\0" + secret.encode("utf-8")).digest()


class GitHubSessions:
    """The sessions of people signed in with GitHub, and the `state` cookies of sign-ins under way."""

    def __init__(self, github: GitHub, client_secret: str, store: BoardSessions, clock: Clock) -> None:
        self.github = github
        self.store = store
        self.clock = clock
        self._signing = _key(client_secret, b"github session")
        self._sealing = Fernet(base64.urlsafe_b64encode(_key(client_secret, b"github token")))

    def _sign(self, body: str) -> str:
        return hmac.new(self._signing, body.encode("utf-8"), hashlib.sha256).hexdigest()

    def _signed(self, cookie: str | None, now: float) -> list[str] | None:
        """The parts of a cookie this client signed and whose expiry (its first part) is to come."""
        if not cookie or not cookie.isascii():
            return None
        body, _, signature = cookie.rpartition(".")
        parts = body.split(".")
        if not parts[0].isdigit() or not hmac.compare_digest(signature, self._sign(body)):
            return None
        return parts if int(parts[0]) > now else None

    # -- the state of a sign-in under way

    def state(self, target: str) -> tuple[str, str]:
        """A new random `state` for GitHub, and the cookie that binds it (and where to go after) to the browser."""
        state = secrets.token_urlsafe(32)
        body = f"{int(self.clock.now().timestamp()) + STATE_LIFETIME}.{state}.{quote(target, safe='')}"
        return state, f"{body}.{self._sign(body)}"

    def target(self, cookie: str | None, state: str | None) -> str | None:
        """Where the sign-in that `cookie` started goes, if GitHub brought back its `state`; else None."""
        parts = self._signed(cookie, self.clock.now().timestamp())
        if parts is None or len(parts) != 3 or not state:
            return None
        return unquote(parts[2]) if hmac.compare_digest(parts[1].encode(), state.encode()) else None

    # -- sessions

    def start(self, login: str, grant: Grant, readable: frozenset[int]) -> tuple[str, int]:
        """A new session: the cookie's value and how many seconds it lasts."""
        lasts = min(LIFETIME, grant.expires_in or LIFETIME)
        now = self.clock.now()
        session_id = secrets.token_urlsafe(32)
        sealed = self._sealing.encrypt(grant.token.encode("utf-8")).decode("ascii")
        self.store.create(_hashed(session_id),
                          BoardSession(login, sealed, readable, now, now + timedelta(seconds=lasts)))  # fmt: skip
        body = f"{int(now.timestamp()) + lasts}.{session_id}"
        return f"{body}.{self._sign(body)}", lasts

    def viewer(self, cookie: str | None) -> Viewer | None:
        """Who the session `cookie` names, with the repositories GitHub says they may read; None: no session."""
        now = self.clock.now()
        parts = self._signed(cookie, now.timestamp())
        if parts is None or len(parts) != 2:
            return None
        key = _hashed(parts[1])
        session = self.store.find(key)
        if session is None or session.expires_at <= now:
            return None
        readable = session.repositories
        if now - session.checked_at >= REFRESH:
            try:
                readable = self.github.readable(self._sealing.decrypt(session.token.encode("ascii")).decode("utf-8"))
            except (SignInRefused, InvalidToken):
                self.store.end(key)
                return None
            except Unavailable:
                return Viewer(session.login, readable)  # what GitHub said last; asked again on the next page
            self.store.checked(key, readable, now)
        return Viewer(session.login, readable)

    def end(self, cookie: str | None) -> None:
        parts = self._signed(cookie, self.clock.now().timestamp())
        if parts is not None and len(parts) == 2:
            self.store.end(_hashed(parts[1]))


def _hashed(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()
