"""GitHub Actions' OIDC tokens, as the stand-in issues them: a workflow run's JWT (RS256) signed with the stand-in's
own key, and that key published where an issuer publishes it, so a test checks such tokens with no network.

The issuer is the stand-in's base URL followed by `/_services/token` (where a GitHub Enterprise Server's is):
- `GET /_services/token/.well-known/openid-configuration`: the issuer's discovery document (`jwks_uri`).
- `GET /_services/token/.well-known/jwks`: its public keys, as a JWK set.
- `GET /_services/token/idtoken?api-version=2.0&audience=…`, with a job's request token as its bearer: the token
  of that job's run for `audience`, as `{"count": 1, "value": …}`. A job finds this address and its request token
  in `ACTIONS_ID_TOKEN_REQUEST_URL` and `ACTIONS_ID_TOKEN_REQUEST_TOKEN` (`Person.actions_job`).
These are GitHub's token service, not its REST API: they are served beside the REST API and its description does
not check them, as the OAuth pages are (oauth.py). Their requests are counted in `StandIn.calls` all the same.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.requests import Request
from starlette.responses import JSONResponse

ISSUER_PATH = "/_services/token"
LIFETIME = 300  # seconds a token lasts, as GitHub's do about


def _number(value: int) -> str:
    """An RSA number as a JWK writes it: big-endian bytes, base64url without padding."""
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Issuer:
    """The stand-in's token service: one RSA key, made when first needed (making one takes a moment), and the jobs
    that may ask for their run's token (`jobs`: a job's request token -> `token`'s arguments but the audience)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: rsa.RSAPrivateKey | None = None
        self.kid = f"standin-{secrets.token_hex(4)}"
        self.jobs: dict[str, dict[str, Any]] = {}

    @property
    def key(self) -> rsa.RSAPrivateKey:
        with self._lock:
            if self._key is None:
                self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            return self._key

    def jwks(self) -> dict[str, Any]:
        numbers = self.key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid, "n": _number(numbers.n),
                          "e": _number(numbers.e)}]}  # fmt: skip

    def token(
        self, issuer: str, repository: str, actor: str, *, audience: str, workflow: str = "agent.yml",
        ref: str = "refs/heads/main", run_id: int | None = None, expires_in: int = LIFETIME,
        signed_with: rsa.RSAPrivateKey | None = None, kid: str | None = None, actor_id: int = 0,
        not_before: int = -5,
    ) -> str:  # fmt: skip
        """A run's token, as GitHub's runner hands one to a job with `id-token: write` that asks for `audience`.
        `workflow` is the workflow file under `.github/workflows/`; `expires_in` may be negative (expired), and
        `not_before` (seconds from now to its `nbf` and `iat`) positive (not valid yet).
        `signed_with` and `kid` make a token GitHub did not sign (another key) or names a key it never published."""
        now = int(time.time())
        owner = repository.split("/")[0]
        run = run_id if run_id is not None else secrets.randbelow(10**10)
        workflow_ref = f"{repository}/.github/workflows/{workflow}@{ref}"
        claims = {
            "jti": secrets.token_hex(16), "sub": f"repo:{repository}:ref:{ref}", "aud": audience, "ref": ref,
            "sha": secrets.token_hex(20), "repository": repository, "repository_owner": owner,
            "run_id": str(run), "run_number": "1", "run_attempt": "1", "actor": actor, "actor_id": str(actor_id),
            "workflow": workflow.rsplit(".", 1)[0], "event_name": "workflow_dispatch", "ref_type": "branch",
            "workflow_ref": workflow_ref, "job_workflow_ref": workflow_ref, "runner_environment": "github-hosted",
            "iss": issuer, "nbf": now + not_before, "iat": now + not_before, "exp": now + expires_in,
        }  # fmt: skip
        return jwt.encode(claims, signed_with or self.key, algorithm="RS256", headers={"kid": kid or self.kid})


def job_token(request: Request, issuer: Issuer, issuer_url: str) -> JSONResponse:
    """`GET {issuer}/idtoken`: the run's token for the job whose request token is the bearer."""
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    job = issuer.jobs.get(presented.strip()) if scheme.lower() == "bearer" else None
    if job is None:
        return JSONResponse({"message": "Unauthorized: not a job's request token"}, 401)
    audience = request.query_params.get("audience") or f"https://github.com/{job['repository'].split('/')[0]}"
    return JSONResponse({"count": 1, "value": issuer.token(issuer_url, audience=audience, **job)})


def configuration(request: Request, issuer_url: str) -> JSONResponse:
    """`GET {issuer}/.well-known/openid-configuration`."""
    return JSONResponse({
        "issuer": issuer_url, "jwks_uri": f"{issuer_url}/.well-known/jwks",
        "subject_types_supported": ["public", "pairwise"], "response_types_supported": ["id_token"],
        "claims_supported": ["sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "actor",
                             "workflow", "workflow_ref", "run_id", "run_attempt", "event_name"],
        "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": ["openid"],
    })  # fmt: skip


__all__ = ["ISSUER_PATH", "Issuer", "configuration", "job_token"]
