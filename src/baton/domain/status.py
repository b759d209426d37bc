"""What GitHub should show for a ticket (SPEC §7): its one state label, its assignee, its status comment.

Pure: the worker compares this with what GitHub has and writes only the difference.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Ticket, WorkState
from .transitions import next_step

LABEL_PREFIX = "baton:"
STATUS_MARKER = "<!-- baton:status -->"

# name -> (colour, description), for creating a label where the repository lacks it
LABELS = {
    "baton:draft": ("d4c5f9", "Baton: the brief is being written"),
    "baton:open": ("0e8a16", "Baton: offered; an agent can /claim it"),
    "baton:claimed": ("fbca04", "Baton: an agent works on it"),
    "baton:delivered": ("1d76db", "Baton: delivered, awaiting review"),
    "baton:accepted": ("5319e7", "Baton: a reviewer accepted it"),
    "baton:withdrawn": ("cccccc", "Baton: taken off the board"),
    "baton:stale": ("e99695", "Baton: the claim has been quiet for a while"),
}


def state_label(state: WorkState) -> str:
    return f"{LABEL_PREFIX}{state.value}"


@dataclass(frozen=True)
class Review:
    """The last review, when the status comment needs to name it."""

    reviewer: str
    independent: bool


@dataclass(frozen=True)
class View:
    label: str
    assignee: str | None
    comment: str


def work_line(ticket: Ticket, review: Review | None = None) -> str:
    match ticket.state:
        case WorkState.DRAFT:
            return "Draft — the brief is being finished"
        case WorkState.OPEN:
            return "Open — not claimed"
        case WorkState.CLAIMED:
            return f"Claimed — attempt {ticket.attempt} by @{ticket.runner}"
        case WorkState.DELIVERED:
            return f"Delivered — attempt {ticket.attempt} by @{ticket.runner}, awaiting review"
        case WorkState.ACCEPTED:
            by = ""
            if review is not None:
                by = f" by @{review.reviewer}" + ("" if review.independent else " (self-verified)")
            return f"Accepted{by} — attempt {ticket.attempt} by @{ticket.runner}"
        case _:
            return "Withdrawn"


def view(ticket: Ticket, review: Review | None = None, repository: str = "Unreported",
         deployment: str = "Not deployed") -> View:  # fmt: skip
    """The labels, assignee and status comment for a ticket. The evidence rails' words come from the
    evidence rail; until it has recorded anything they are its first states."""
    comment = "\n".join(
        [
            STATUS_MARKER,
            f"**Work:** {work_line(ticket, review)}",
            f"**Repository:** {repository}",
            f"**Deployment:** {deployment}",
            "",
            f"Revision {ticket.revision}. {next_step(ticket)}",
        ]
    )
    holds = ticket.state in (WorkState.CLAIMED, WorkState.DELIVERED)
    return View(state_label(ticket.state), ticket.runner if holds else None, comment)
