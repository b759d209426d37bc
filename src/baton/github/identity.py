"""Who an agent is, from its own GitHub token: GitHub answers `GET /user` with that token.

The answer is kept for `ttl` seconds under the token's SHA-256, never under the token itself: the token is
neither stored nor logged. While GitHub cannot be reached, a known token keeps its identity until its entry
expires; an unknown one cannot be checked (`IdentityUnavailable`).
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

import httpx

from baton.environment import tls

TTL = 300.0  # seconds an identity is taken as known


@dataclass(frozen=True)
class Identity:
    login: str
    is_bot: bool = False


class BadToken(Exception):
    """GitHub does not accept the token (or it is no person's token)."""


class IdentityUnavailable(Exception):
    """GitHub could not be asked whose token this is, and the token is not known already."""


class Identities:
    def __init__(self, api_url: str, *, ttl: float = TTL, timeout: float = 10.0) -> None:
        self._url = api_url.rstrip("/") + "/user"
        self.ttl = ttl
        self._http = httpx.Client(timeout=timeout, verify=tls.context())
        self._known: dict[str, tuple[float, Identity]] = {}
        self._lock = threading.Lock()

    def known(self, token: str) -> Identity | None:
        """The identity kept for `token`, without asking GitHub (None: it must be asked)."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            known = self._known.get(digest)
        return known[1] if known is not None and time.monotonic() - known[0] < self.ttl else None

    def who(self, token: str) -> Identity:
        kept = self.known(token)
        if kept is not None:
            return kept
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        try:
            answer = self._http.get(self._url, headers={
                "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json", "User-Agent": "baton",
            })  # fmt: skip
        except httpx.HTTPError as error:
            raise IdentityUnavailable(f"GitHub cannot be reached to check the token ({type(error).__name__})") from None
        if answer.status_code in (401, 403):
            with self._lock:
                self._known.pop(digest, None)
            raise BadToken("GitHub does not accept this token as a user's token")
        if answer.status_code != 200:
            raise IdentityUnavailable(f"GitHub answered {answer.status_code} when asked whose token this is")
        data = answer.json()
        login = data.get("login") if isinstance(data, dict) else None
        if not isinstance(login, str) or not login:
            raise IdentityUnavailable("GitHub's answer names no login")
        identity = Identity(login, data.get("type") == "Bot")
        with self._lock:
            self._known[digest] = (now, identity)
        return identity

    def close(self) -> None:
        self._http.close()
