"""Who an agent is, from its own GitHub token: GitHub answers `GET /user` with that token. Or, where Baton takes
GitHub Actions OIDC tokens (`BATON_OIDC_AUDIENCE`), from such a token: its `actor`, acting through its run
(`actions_oidc.py`).

The answer is kept for `ttl` seconds of the Clock (an OIDC token's, no longer than the token's `exp`) under the
token's SHA-256, never under the token itself: the token is neither stored nor logged. While GitHub cannot be
reached, a known token keeps its identity until its entry expires; an unknown one cannot be checked
(`IdentityUnavailable`). A token that is refused is not kept. At most `most` tokens are kept: one more puts out
the one used least recently, and entries found expired are dropped as they are met, so the cache holds about the
tokens seen in the last `ttl` seconds, never more than `most`. Looking a token up costs a hash and a dict lookup.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import httpx

from baton.domain import Run
from baton.environment import tls
from baton.environment.clock import SYSTEM, Clock

from . import actions_oidc
from .actions_oidc import ActionsTokens

TTL = 300.0  # seconds an identity is taken as known before the token is checked again
MOST = 10_000  # tokens whose identity is kept at once; one more puts out the one used least recently


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
        self, api_url: str, *, ttl: float = TTL, most: int = MOST, timeout: float = 10.0,
        actions: ActionsTokens | None = None, clock: Clock = SYSTEM,
    ) -> None:  # fmt: skip
        """`actions`: the checker of GitHub Actions OIDC tokens (None: a JWT is taken as any other token, and
        GitHub asked whose it is); `clock` says when a kept identity, or such a token, has expired."""
        self._url = api_url.rstrip("/") + "/user"
        self.ttl = ttl
        self.most = most
        self.actions = actions
        self.clock = clock
        self._http = httpx.Client(timeout=timeout, verify=tls.context())
        # by the token's SHA-256, least recently used first: who, when it was learned and until when it is kept
        # (seconds since the epoch, by `clock`)
        self._known: OrderedDict[bytes, tuple[Identity, float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many tokens' identities are kept."""
        with self._lock:
            return len(self._known)

    def known(self, token: str) -> Identity | None:
        """The identity kept for `token`, without asking GitHub (None: it must be asked)."""
        digest = hashlib.sha256(token.encode()).digest()
        now = self.clock.now().timestamp()
        with self._lock:
            kept = self._known.get(digest)
            if kept is None:
                return None
            identity, learned, until = kept
            if not learned <= now < until:  # expired (or learned at a time the clock has gone back from)
                del self._known[digest]
                return None
            self._known.move_to_end(digest)
        return identity

    def _keep(self, digest: bytes, identity: Identity, learned: float, expires: float = math.inf) -> None:
        """Keep `identity`, learned at `learned`, for `ttl` seconds and no later than `expires` (seconds since the
        epoch)."""
        now = self.clock.now().timestamp()
        until = min(learned + self.ttl, expires)
        with self._lock:
            # The least recently used first: those that expired go (each once: no scan of the whole cache), then
            # as many as it takes to make room.
            while self._known:
                oldest = next(iter(self._known.values()))
                if oldest[1] <= now < oldest[2]:
                    break
                self._known.popitem(last=False)
            if not learned <= now < until:
                self._known.pop(digest, None)
                return
            self._known[digest] = (identity, learned, until)
            self._known.move_to_end(digest)
            while len(self._known) > self.most:
                self._known.popitem(last=False)

    def who(self, token: str) -> Identity:
        kept = self.known(token)
        if kept is not None:
            return kept
        digest = hashlib.sha256(token.encode()).digest()
        learned = self.clock.now().timestamp()
        if self.actions is not None and actions_oidc.looks_like_jwt(token):
            try:
                actor, run, expires = self.actions.check(token)
            except actions_oidc.NotTaken as error:
                raise BadToken(f"Baton does not take this GitHub Actions token: {error}") from None
            except actions_oidc.Unreachable as error:
                raise IdentityUnavailable(str(error)) from None
            identity = Identity(actor, actor.lower().endswith("[bot]"), run)
            self._keep(digest, identity, learned, expires)
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
        self._keep(digest, identity, learned)
        return identity

    def close(self) -> None:
        self._http.close()
        if self.actions is not None:
            self.actions.close()
