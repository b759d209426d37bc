"""Who an agent is, from its own GitHub token: GitHub answers `GET /user` with that token. Or, where Baton takes
GitHub Actions OIDC tokens (`BATON_OIDC_AUDIENCE`), from such a token: its `actor`, acting through its run
(`actions_oidc.py`).

The answer is kept for `ttl` seconds (an OIDC token's, no longer than the token lasts) under the token's SHA-256,
never under the token itself: the token is neither stored nor logged. While GitHub cannot be reached, a known
token keeps its identity until its entry expires; an unknown one cannot be checked (`IdentityUnavailable`).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass

import httpx

from baton.domain import Run
from baton.environment import tls
from baton.environment.clock import SYSTEM, Clock

from . import actions_oidc
from .actions_oidc import ActionsTokens

TTL = 300.0  # seconds an identity is taken as known


@dataclass(frozen=True)
class Identity:
    login: str
    is_bot: bool = False
    run: Run | None = None  # the GitHub Actions run calling for `login`, with its OIDC token (None: their own token)


class BadToken(Exception):
    """GitHub does not accept the token (or it is no person's token)."""


class IdentityUnavailable(Exception):
    """GitHub could not be asked whose token this is, and the token is not known already."""


class Identities:
    def __init__(
        self, api_url: str, *, ttl: float = TTL, timeout: float = 10.0, actions: ActionsTokens | None = None,
        clock: Clock = SYSTEM,
    ) -> None:  # fmt: skip
        """`actions`: the checker of GitHub Actions OIDC tokens (None: a JWT is taken as any other token, and
        GitHub asked whose it is); `clock` says when such a token has expired."""
        self._url = api_url.rstrip("/") + "/user"
        self.ttl = ttl
        self.actions = actions
        self.clock = clock
        self._http = httpx.Client(timeout=timeout, verify=tls.context())
        # by the token's SHA-256: when it was learned (monotonic), who, and until when it may be (epoch seconds)
        self._known: dict[str, tuple[float, Identity, float]] = {}
        self._lock = threading.Lock()

    def known(self, token: str) -> Identity | None:
        """The identity kept for `token`, without asking GitHub (None: it must be asked)."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            known = self._known.get(digest)
        if known is None or time.monotonic() - known[0] >= self.ttl:
            return None
        if known[2] != math.inf and self.clock.now().timestamp() >= known[2]:  # an OIDC token that expired
            return None
        return known[1]

    def who(self, token: str) -> Identity:
        kept = self.known(token)
        if kept is not None:
            return kept
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        if self.actions is not None and actions_oidc.looks_like_jwt(token):
            try:
                actor, run, expires = self.actions.check(token)
            except actions_oidc.NotTaken as error:
                raise BadToken(f"Baton does not take this GitHub Actions token: {error}") from None
            except actions_oidc.Unreachable as error:
                raise IdentityUnavailable(str(error)) from None
            identity = Identity(actor, actor.lower().endswith("[bot]"), run)
            with self._lock:
                self._known[digest] = (now, identity, expires)
            return identity
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
            self._known[digest] = (now, identity, math.inf)
        return identity

    def close(self) -> None:
        self._http.close()
        if self.actions is not None:
            self.actions.close()
