"""The board's sessions, until people sign in with GitHub: whoever types the read token (BATON_API_TOKEN) once
gets a signed cookie, and the token itself never leaves the sign-in form's body.

A session cookie is `<expiry>.<nonce>.<signature>`: an HMAC-SHA256, under a key derived from the read token,
of the expiry and a random nonce. Deriving the key from the token, rather than making one per process, means
every process of one deployment (several `baton serve` behind a balancer, or one restarted) accepts the same
sessions without another secret to configure, and changing BATON_API_TOKEN signs everyone out. The cookie
holds nothing the token could be worked back from.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time

from baton.environment.clock import Clock

COOKIE = "baton_session"
LIFETIME = 12 * 3600  # seconds a session lasts: a working day, then the token is asked for again
LINK_LIFETIME = 600  # seconds a one-time sign-in link (`baton demo` prints one) may wait to be opened


class Sessions:
    """Signs and checks session cookies for one read token; an empty token means the board is off."""

    def __init__(self, token: str, clock: Clock) -> None:
        self.token = token
        self.clock = clock  # the time a session's expiry is set from and checked against
        self._key = hashlib.sha256(b"baton board session\0" + token.encode("utf-8")).digest()
        self._links: dict[str, float] = {}
        self._lock = threading.Lock()

    @property
    def on(self) -> bool:
        return bool(self.token)

    def is_token(self, presented: str) -> bool:
        """Whether `presented` is the read token, compared in constant time."""
        return self.on and hmac.compare_digest(presented.encode("utf-8"), self.token.encode("utf-8"))

    def _sign(self, body: str) -> str:
        return hmac.new(self._key, body.encode("ascii"), hashlib.sha256).hexdigest()

    def issue(self) -> str:
        """A new session cookie's value."""
        body = f"{int(self.clock.now().timestamp() + LIFETIME)}.{secrets.token_hex(8)}"
        return f"{body}.{self._sign(body)}"

    def valid(self, cookie: str | None) -> bool:
        """Whether `cookie` is a session this token signed and it has not expired."""
        if not self.on or not cookie or not cookie.isascii():
            return False
        body, _, signature = cookie.rpartition(".")
        expiry = body.partition(".")[0]
        if not expiry.isdigit() or not hmac.compare_digest(signature, self._sign(body)):
            return False
        return int(expiry) > self.clock.now().timestamp()

    def link(self) -> str:
        """A code that opens one session, once, within LINK_LIFETIME: for a URL printed to whoever started
        this process (it lives in this process only)."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._links[code] = time.monotonic() + LINK_LIFETIME
        return code

    def redeem(self, code: str) -> bool:
        """Whether `code` is a link this process made, unused and in time; it is used up either way."""
        with self._lock:
            until = self._links.pop(code, None)
        return until is not None and time.monotonic() < until
