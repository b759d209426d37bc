"""Quiet claims: a claim whose runner has shown no activity for the repository's `stale_after` is flagged
stale (a label, a line in the status comment, one comment that mentions the runner and the task owner), and,
where the repository sets `auto_release_after`, released once it has been quiet that long. Pure decisions;
the sweep (`baton.service.quiet`) finds the claims and records what these return.

Flagging is not a work transition: `flagged_stale` and `activity_resumed` events keep the ticket's revision
and state, and `replay()` skips them. The release is one: a `released` event whose attempt ends
`auto_released`, applied by `evolve()` like every other, so replay rebuilds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .model import APP_ACTOR, AttemptEnd, Event, Policy, Role, Ticket, WorkState
from .transitions import Applied, evolve

FLAG = "flag"
RELEASE = "release"

_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration_text(seconds: int) -> str:
    """Seconds in the words of `.github/baton.yml`: `3d`, `12h`, `90m`, `30s` (the largest unit that fits)."""
    for unit, size in _UNITS:
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def moment(at: datetime) -> str:
    """A time as comments show it: `2026-12-01 18:05 UTC`."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True)
class Quiet:
    """A claim flagged stale, as GitHub shows it: quiet since `since` (the runner's last activity, or the start
    of the attempt)."""

    since: datetime


def quiet_line(ticket: Ticket, quiet: Quiet) -> str:
    """The status comment's line for a claim flagged stale."""
    return f"Stale — no comment, push or pull request update from @{ticket.runner} since {moment(quiet.since)}"


def due(since: datetime, flagged: bool, policy: Policy, now: datetime) -> str | None:
    """What a claimed ticket quiet since `since` needs now: `RELEASE` once quiet for `auto_release_after`
    (when set), `FLAG` once quiet for `stale_after` and not flagged yet, else None."""
    quiet = now - since
    if policy.auto_release_after is not None and quiet >= timedelta(seconds=policy.auto_release_after):
        return RELEASE
    if not flagged and quiet >= timedelta(seconds=policy.stale_after):
        return FLAG
    return None


def flagged_stale(ticket: Ticket, since: datetime, policy: Policy) -> Event:
    """The event that records a claim flagged stale; at the ticket's revision, which it does not change."""
    return Event(
        "flagged_stale",
        APP_ACTOR,
        Role.APP,
        ticket.revision,
        ticket.attempt,
        {
            "runner": ticket.runner,
            "owner": ticket.owner,
            "quiet_since": since.astimezone(UTC).isoformat(),
            "setting": "stale_after",
            "stale_after": policy.stale_after,
        },
    )


def stale_text(ticket: Ticket, since: datetime, policy: Policy) -> str:
    """The one comment of a quiet period: it mentions the runner and the task owner."""
    runner, owner = ticket.runner, ticket.owner
    owners = f" @{owner}" if owner and owner.lower() != (runner or "").lower() else ""
    text = (
        f"@{runner}{owners} {ticket.ref} has been quiet since {moment(since)}: no comment, push or pull request "
        f"update from @{runner} for {duration_text(policy.stale_after)} (`stale_after`), so it is marked "
        f"`baton:stale`. @{runner}: any comment, push or pull request update clears it; /release it if you have "
        f"stopped. A maintainer can /release @{runner} or /assign it to someone else."
    )
    if policy.auto_release_after is not None:
        at = since + timedelta(seconds=policy.auto_release_after)
        text += (
            f" Without activity it is released at {moment(at)} "
            f"(`auto_release_after: {duration_text(policy.auto_release_after)}`)."
        )
    return text


def auto_release(ticket: Ticket, since: datetime, policy: Policy) -> Applied:
    """The release of a claim quiet for the repository's `auto_release_after`: a `released` event by the app,
    ending the attempt `auto_released`, and naming the setting."""
    if ticket.state is not WorkState.CLAIMED or policy.auto_release_after is None:
        raise ValueError(f"{ticket.ref} is not a claim that can be released automatically")
    event = Event(
        "released",
        APP_ACTOR,
        Role.APP,
        ticket.revision + 1,
        ticket.attempt,
        {
            "ended": {"attempt": ticket.attempt, "reason": AttemptEnd.AUTO_RELEASED.value},
            "runner": ticket.runner,
            "quiet_since": since.astimezone(UTC).isoformat(),
            "setting": "auto_release_after",
            "auto_release_after": policy.auto_release_after,
        },
    )
    return Applied(evolve(ticket, event), event)


def release_text(before: Ticket, since: datetime, policy: Policy) -> str:
    """The comment of an automatic release: it names the setting and the duration, and mentions the runner."""
    assert policy.auto_release_after is not None
    after = duration_text(policy.auto_release_after)
    return (
        f"@{before.runner} {before.ref} was released: it had been quiet since {moment(since)}, longer than this "
        f"repository's `auto_release_after: {after}`. Attempt {before.attempt} ended `auto_released`; the task is "
        "open again, and anyone eligible can /claim it."
    )


__all__ = [
    "APP_ACTOR",
    "FLAG",
    "RELEASE",
    "Quiet",
    "auto_release",
    "due",
    "duration_text",
    "flagged_stale",
    "moment",
    "quiet_line",
    "release_text",
    "stale_text",
]
