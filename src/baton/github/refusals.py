"""How to read GitHub's failed answers: a rate limit (wait as long as GitHub says), a refusal for good (a
4xx worth no other try), or a passing failure (5xx, a timeout, a lost connection: try again later)."""

from __future__ import annotations

from githubkit.exception import RateLimitExceeded, RequestError, RequestFailed

# A 4xx that may pass: an installation token that just expired (401), GitHub's own request timeout (408).
_PASSING_4XX = frozenset({401, 408})
RATE_LIMIT_WAIT = 60.0  # seconds; GitHub's advice when a rate limit names no time to wait


def rate_limit(error: BaseException) -> float | None:
    """How many seconds GitHub asks to wait, when `error` is a rate limit: the primary limit (403 or 429
    with `x-ratelimit-remaining: 0`, until `x-ratelimit-reset`), a secondary limit (`Retry-After`), or a
    403 or 429 that names neither (a minute, as GitHub advises). None for any other error."""
    if isinstance(error, RateLimitExceeded):
        return max(0.0, error.retry_after.total_seconds())
    if not isinstance(error, RequestFailed):
        return None
    status = error.response.status_code
    limited = status == 429 or (status == 403 and "rate limit" in refusal_message(error).lower())
    return RATE_LIMIT_WAIT if limited else None


def refused(error: BaseException) -> bool:
    """GitHub refused the request for good: it would answer the same again (a 4xx that is neither a rate
    limit, an expired token nor a timeout), so it is not worth another try."""
    if not isinstance(error, RequestFailed) or rate_limit(error) is not None:
        return False
    status = error.response.status_code
    return 400 <= status < 500 and status not in _PASSING_4XX


def refusal_message(error: RequestFailed) -> str:
    """GitHub's `message` in a failed answer, if it has one."""
    try:
        body = error.response.raw_response.json()
    except ValueError:
        return ""
    return str(body.get("message") or "")[:200] if isinstance(body, dict) else ""


def describe(error: RequestFailed) -> str:
    """The operation and GitHub's answer, for logs and the outbox: `POST /repos/o/r/issues/1/comments
    answered 422 (Validation Failed)`. The request's headers, which carry the token, are never part of it."""
    message = refusal_message(error)
    answered = f"{error.request.method} {error.request.url.path} answered {error.response.status_code}"
    return f"{answered} ({message})" if message else answered


def failure(error: RequestError[Exception]) -> str:
    """What went wrong with a call to GitHub, for logs and the outbox: `describe` for an answer, else that no
    answer came."""
    if isinstance(error, RequestFailed):
        return describe(error)
    return f"{type(error).__name__}: GitHub did not answer"
