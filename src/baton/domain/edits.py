"""An issue body edited under a tracked ticket: the brief it now carries becomes the ticket's, as an event
(`brief_changed`) that replay applies like any transition. Standard library only."""

from __future__ import annotations

from .brief import changes
from .model import Brief, Event, Role, Ticket
from .transitions import Applied, evolve


def change_brief(ticket: Ticket, brief: Brief | None, author: str, editor: str) -> Applied | None:
    """The ticket with its new brief (and the task owner it names, else the issue's author), one revision
    on, recorded with the role `task_owner` when the ticket's task owner made the edit (else `anyone`); None
    when nothing the work rail keeps changed. The state never moves: a brief that now says
    `draft: true` does not take an offered task back, and `/publish` alone offers a draft."""
    owner = brief.owner if brief is not None and brief.owner else author
    said = changes(ticket.brief, brief)
    if not said and owner.lower() == ticket.owner.lower():
        return None
    if not said:
        said = [f"owner now @{owner}"]
    data = {"brief": brief.to_dict() if brief is not None else None, "owner": owner, "changes": said}
    # the task owner as the ticket named them before the edit: an edit that names a new owner is not theirs yet
    role = Role.TASK_OWNER if editor.lower() == ticket.owner.lower() else Role.ANYONE
    event = Event("brief_changed", editor, role, ticket.revision + 1, ticket.attempt, data)
    return Applied(evolve(ticket, event), event)


__all__ = ["change_brief"]
