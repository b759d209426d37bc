"""Every code a refused command carries, with what the agent API answers for it: the HTTP status and the `error`
word of its problem body. The guards of `transitions.py` return the codes; a code missing here is a test's
failure (`tests/unit/test_refusals.py`), never a 409 by default.
"""

from __future__ import annotations

REFUSALS: dict[str, tuple[int, str]] = {
    # the state is not what the command needs: the ticket moved on, or someone else holds it
    "wrong_state": (409, "conflict"),
    "not_runner": (409, "conflict"),
    "claim_limit": (409, "conflict"),
    "blocked": (409, "conflict"),
    "already_delivered": (409, "conflict"),
    "unverified_evidence": (409, "conflict"),
    "already_tracked": (409, "conflict"),  # an issue opened for tracking twice (`WorkService.open_ticket`)
    "not_linked": (409, "conflict"),  # a pull request's command that reaches no ticket (`WorkService.reply`)
    # `rev=N` named another revision than the ticket's
    "stale_revision": (412, "precondition_failed"),
    # the actor may not do it
    "not_permitted": (403, "forbidden"),
    "not_reviewer": (403, "forbidden"),
    "self_review": (403, "forbidden"),
    # the issue is not offered
    "not_offered": (404, "not_found"),
    "none_ready": (404, "not_found"),  # claim-next found no ready task the caller may claim
    # the command itself is incomplete or unreadable
    "missing_argument": (422, "invalid"),
    "missing_evidence": (422, "invalid"),
    "control_character": (422, "invalid"),
    "incomplete_brief": (422, "invalid"),
    "unknown_command": (422, "invalid"),
}

# An outcome stored before its code was declared here (a replayed first result) is answered as a conflict.
UNDECLARED = (409, "conflict")


def status_of(code: str | None) -> tuple[int, str]:
    """The HTTP status and `error` word of a refusal with this code."""
    return REFUSALS.get(code or "", UNDECLARED)
