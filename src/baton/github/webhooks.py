"""Webhook signatures and lenient reading of payloads.

Only `X-Hub-Signature-256` counts, and only with its `sha256=` prefix: a SHA-1 signature
(`X-Hub-Signature`, or a bare hex digest) is refused. The digest is computed over the raw body bytes
and compared in constant time.

Payloads are read field by field with defaults, never through a strict model: GitHub's own example
payloads miss fields that typed models insist on, and a shape we did not expect must never make us
answer GitHub with an error.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

SIGNATURE_PREFIX = "sha256="


def signature(secret: bytes, body: bytes) -> str:
    return SIGNATURE_PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    if header is None or not header.startswith(SIGNATURE_PREFIX):
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode())


def dig(payload: Any, *path: str, default: Any = None) -> Any:
    """`payload[a][b]…`, or `default` wherever the path breaks (missing key, null, not an object)."""
    value = payload
    for key in path:
        if not isinstance(value, dict):
            return default
        value = value.get(key)
    return default if value is None else value


def text(payload: Any, *path: str) -> str:
    value = dig(payload, *path, default="")
    return value if isinstance(value, str) else ""


def number(payload: Any, *path: str) -> int | None:
    value = dig(payload, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
