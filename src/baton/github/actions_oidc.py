"""Who calls with a GitHub Actions OIDC token: a workflow with `permissions: id-token: write` asks its runner for a
JWT whose audience is Baton's URL, and calls Baton with it instead of a person's token (docs/agents.md).

The token is checked here, without asking GitHub anything but its issuer's published keys: an RS256 signature by
one of them, the issuer, the audience, `exp`, `nbf` and `iat` (with a little leeway for clocks, and the time
read from the Clock, not the wall clock), and that its `repository` is one an installation of Baton serves. The
caller is then the token's `actor`, acting through the run (`Run`): its workflow, its run id and its installation,
whose repositories alone it may act on.

The keys are fetched once and kept; a token signed with a key not among them has them fetched again, but at most
once per `refetch_after` seconds, so tokens made up with random key ids cannot make Baton hammer the issuer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt

from baton.domain import Run
from baton.environment import tls
from baton.environment.clock import SYSTEM, Clock

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
LEEWAY = 30  # seconds a token's `exp`, `nbf` and `iat` may be off, for clocks that disagree
REFETCH_AFTER = 60.0  # seconds between two fetches of the issuer's keys for tokens signed with an unknown key
_CLAIMS = ("actor", "repository", "workflow_ref", "run_id")


class NotTaken(Exception):
    """The token is not one Baton takes: the message says why, in one line, and never holds the token."""


class Unreachable(Exception):
    """The issuer's keys (or the repository's installation) could not be read: nothing can be decided yet."""


def looks_like_jwt(token: str) -> bool:
    """A JWT is three base64url parts joined by dots; GitHub's own tokens hold no dot."""
    return token.count(".") == 2


def _in_time(claims: dict[str, Any], now: float) -> None:
    """Refuse a token not valid at `now` (seconds since the epoch, by the Clock), with `LEEWAY`: its `iat` and `nbf`
    after it, or its `exp` not after it. PyJWT would read the wall clock instead, so it is told not to check these;
    what is raised is what PyJWT raises for the same claims, in the same order, so a refusal reads the same."""
    for name, wrong in (("iat", jwt.InvalidIssuedAtError), ("nbf", jwt.DecodeError), ("exp", jwt.DecodeError)):
        if name not in claims:
            continue
        try:
            instant = int(claims[name])
        except (ValueError, TypeError, OverflowError):
            raise wrong(f"the `{name}` claim must be an integer") from None
        if name == "exp" and instant <= now - LEEWAY:
            raise jwt.ExpiredSignatureError("Signature has expired")
        if name != "exp" and instant > now + LEEWAY:
            raise jwt.ImmatureSignatureError(f"The token is not yet valid ({name})")


def _said(value: Any) -> str:
    """A claim's value for a refusal: short, whatever the token holds."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


class ActionsTokens:
    """The checker of one issuer's tokens for one audience. `installation_of(repository)` says which installation
    of Baton serves a repository (None: none does), raising `Unreachable` when that cannot be told now. `clock`
    says what time it is for a token's `exp`, `nbf` and `iat`."""

    def __init__(
        self, issuer: str, audience: str, installation_of: Callable[[str], int | None], *, timeout: float = 10.0,
        refetch_after: float = REFETCH_AFTER, clock: Clock = SYSTEM,
    ) -> None:  # fmt: skip
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self.installation_of = installation_of
        self.refetch_after = refetch_after
        self.clock = clock
        self._http = httpx.Client(timeout=timeout, verify=tls.context())
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched: float | None = None  # when the keys were last asked for (monotonic)
        self._failure: str | None = None  # why that last asking failed (None: it did not)
        self._lock = threading.Lock()

    def check(self, token: str) -> tuple[str, Run, float]:
        """The token's actor, its run and when it expires (seconds since the epoch); raises `NotTaken` or
        `Unreachable`."""
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise NotTaken("that token is neither a GitHub token nor a JWT Baton can read") from None
        if header.get("alg") != "RS256":
            raise NotTaken(f"the token is signed with {_said(header.get('alg'))}; Baton takes RS256 only")
        if unverified.get("iss") != self.issuer:
            said = _said(unverified.get("iss"))
            raise NotTaken(f"unknown issuer: the token's issuer {said} is not {self.issuer} (BATON_OIDC_ISSUER)")
        key = self._key(header.get("kid"))
        try:
            claims = jwt.decode(token, key.key, algorithms=["RS256"], audience=self.audience, issuer=self.issuer,
                                options={"require": ["exp", "iss", "aud"], "verify_exp": False, "verify_nbf": False,
                                         "verify_iat": False})  # fmt: skip
            _in_time(claims, self.clock.now().timestamp())
        except jwt.ExpiredSignatureError:
            raise NotTaken("the token has expired: ask the runner for a new one") from None
        except jwt.ImmatureSignatureError:
            raise NotTaken("the token is not valid yet (`nbf`)") from None
        except jwt.InvalidAudienceError:
            raise NotTaken(f"wrong audience: the token is for {_said(unverified.get('aud'))}, and Baton is "
                          f"{self.audience!r} (BATON_OIDC_AUDIENCE)") from None  # fmt: skip
        except jwt.InvalidSignatureError:
            raise NotTaken("the token's signature does not verify with the issuer's key it names") from None
        except jwt.MissingRequiredClaimError as error:
            raise NotTaken(f"the token has no `{error.claim}` claim") from None
        except jwt.PyJWTError as error:
            raise NotTaken(f"the token is not valid: {type(error).__name__}") from None
        for name in _CLAIMS:
            if not isinstance(claims.get(name), str | int) or not str(claims[name]):
                raise NotTaken(f"the token has no `{name}` claim")
        repository = str(claims["repository"])
        installation = self.installation_of(repository)
        if installation is None:
            raise NotTaken(f"repository not served: Baton is not installed on {repository}, the token's repository")
        run = Run(str(claims["workflow_ref"]), str(claims["run_id"]), installation)
        return str(claims["actor"]), run, float(claims["exp"])

    def _key(self, kid: Any) -> jwt.PyJWK:
        """The issuer's key `kid`, fetching the keys when it is not known and they were not asked for lately."""
        if not isinstance(kid, str) or not kid:
            raise NotTaken("the token names no key (`kid`) of the issuer's")
        with self._lock:
            known = self._keys.get(kid)
            now = time.monotonic()
            if known is None and (self._fetched is None or now - self._fetched >= self.refetch_after):
                self._fetched = now
                self._failure = self._fetch()
                known = self._keys.get(kid)
            failure = self._failure
        if known is not None:
            return known
        if failure is not None:
            raise Unreachable(failure)
        raise NotTaken(f"unknown issuer key: {self.issuer} publishes no key {_said(kid)}")

    def _fetch(self) -> str | None:
        """Read the issuer's published keys into `_keys` (with `_lock` held); why it failed, or None."""
        url = f"{self.issuer}/.well-known/jwks"
        try:
            answer = self._http.get(url, headers={"Accept": "application/json", "User-Agent": "baton"})
        except httpx.HTTPError as error:
            return f"the keys at {url} cannot be fetched ({type(error).__name__})"
        if answer.status_code != 200:
            return f"{url} answered {answer.status_code} when asked for the issuer's keys"
        try:
            listed = answer.json().get("keys")
        except (ValueError, AttributeError):
            listed = None
        if not isinstance(listed, list):
            return f"{url} does not answer with a key set"
        keys: dict[str, jwt.PyJWK] = {}
        for one in listed:
            if isinstance(one, dict) and one.get("kty") == "RSA" and isinstance(one.get("kid"), str):
                try:
                    keys[one["kid"]] = jwt.PyJWK(one, algorithm="RS256")
                except (jwt.PyJWKError, ValueError, TypeError):
                    continue  # a key Baton cannot use: tokens it signed are refused as signed by an unknown key
        self._keys = keys
        return None

    def close(self) -> None:
        self._http.close()


__all__ = ["GITHUB_ISSUER", "ActionsTokens", "NotTaken", "Unreachable", "looks_like_jwt"]
