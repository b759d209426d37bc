"""Which issues a repository offers, and the changes offering makes to a ticket. Standard library only.

A repository offers every open issue (`offer: all`) or only those carrying its `offer_label`
(`offer: labeled`). An offered issue becomes an `open` ticket. An open ticket whose issue stops being
offered (its label removed) is withdrawn, and comes back as `open` when it is offered again; a ticket
somebody works on is left alone. An issue that is deleted or moved to another repository
is gone from where its ticket lives: its ticket is withdrawn in any unfinished state, and the attempt
running on it ends. An issue closed on GitHub is not work: its `draft` or `open` ticket is withdrawn, and
comes back in the state it left when the issue is reopened (`baton.domain.issue`).

Each change is an ordinary work event (`withdrawn`, `reopened`), so replaying the history rebuilds the
ticket; its data says what offering saw (`offering`), which tells such a withdrawal from a `/withdraw`.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import AttemptEnd, Event, Policy, Role, Ticket, WorkState
from .transitions import Applied, evolve

# What made offering change a ticket, as its event's `offering` datum records it.
UNLABELED = "unlabeled"
DELETED = "deleted"
TRANSFERRED = "transferred"
OFFERED = "offered"
CLOSED = "closed"

REASONS = {
    UNLABELED: "the label `{label}` was removed, so the issue is no longer offered",
    DELETED: "the issue was deleted",
    TRANSFERRED: "the issue was moved to {where}",
    OFFERED: "the issue is offered again",
    CLOSED: "the issue was {how}",
}

# The states an issue that is gone (deleted, transferred) takes its ticket out of.
UNFINISHED = (WorkState.DRAFT, WorkState.OPEN, WorkState.CLAIMED, WorkState.DELIVERED)


def offered(policy: Policy, labels: Iterable[str]) -> bool:
    """Whether the repository offers an open issue with these labels (GitHub's label names ignore case)."""
    if policy.offer != "labeled":
        return True
    wanted = policy.offer_label.lower()
    return any(label.lower() == wanted for label in labels)


def withdrawal(ticket: Ticket, actor: str, cause: str, **words: str) -> Applied:
    """Take a ticket off the board because its issue is no longer offered (or no longer there)."""
    ended = None
    if ticket.state is WorkState.CLAIMED:
        ended = {"attempt": ticket.attempt, "reason": AttemptEnd.WITHDRAWN.value}
    data: dict[str, object] = {"reason": REASONS[cause].format(**words), "ended": ended, "offering": cause}
    if cause == CLOSED:
        data["was"] = ticket.state.value  # what reopening the issue puts back
        data["state_reason"] = words.get("state_reason") or None  # GitHub's: completed, not_planned, duplicate
    event = Event("withdrawn", actor, Role.ANYONE, ticket.revision + 1, ticket.attempt, data)
    return Applied(evolve(ticket, event), event)


def reoffer(ticket: Ticket, actor: str, state: WorkState = WorkState.OPEN) -> Applied | None:
    """Put back on the board a ticket that offering withdrew, when its issue is offered again, in `state` (a
    draft withdrawn because its issue was closed comes back a draft); None for any other ticket (a `/withdraw`
    stays, and a ticket on the board needs nothing)."""
    if ticket.state is not WorkState.WITHDRAWN:
        return None
    data: dict[str, object] = {"reason": REASONS[OFFERED], "ended": None, "offering": OFFERED}
    if state is not WorkState.OPEN:
        data["state"] = state.value
    event = Event("reopened", actor, Role.ANYONE, ticket.revision + 1, ticket.attempt, data)
    return Applied(evolve(ticket, event), event)


def withdrawn_state(history: Iterable[Event]) -> WorkState:
    """The state the last withdrawal took the ticket out of, where it says (a close does), else `open`."""
    last = None
    for event in history:
        if event.type == "withdrawn":
            last = event
    was = last.data.get("was") if last is not None else None
    return WorkState(was) if was in (WorkState.DRAFT.value, WorkState.OPEN.value) else WorkState.OPEN


def withdrawn_by_offering(history: Iterable[Event]) -> bool:
    """Whether the last withdrawal in a ticket's history was offering's (not a `/withdraw`)."""
    last = None
    for event in history:
        if event.type == "withdrawn":
            last = event
    return last is not None and "offering" in last.data
