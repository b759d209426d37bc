"""An issue that was edited: the brief its body carries may have changed (`WorkService.brief_edited`), and a new
title is kept (`WorkService.retitled`). Edits run no commands."""

from __future__ import annotations

from baton.github.webhooks import dig, issue_number, login, text
from baton.service.work import Issue, Outcome

from .context import Intake
from .envelope import Envelope


def issue_edited(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """`issues` `edited` with a changed body or title, on a tracked issue of an active installation."""
    changes = dig(envelope.payload, "changes")
    if not isinstance(changes, dict) or intake.from_baton(envelope, "issue"):
        return ()
    key = envelope.ticket(issue_number(envelope.payload, "issue", "number"))
    if key is None or not envelope.repository or not intake.active(envelope):
        return ()
    title = text(envelope.payload, "issue", "title")
    if "title" in changes and title:
        intake.work.retitled(key, title)
    if "body" not in changes:
        return ()
    author = login(envelope.payload, "issue", "user", "login")
    issue = Issue(key, envelope.repository, author, text(envelope.payload, "issue", "body"))
    # a redelivery of this edit carries the same hook id, and changes nothing twice
    intake.work.brief_edited(issue, envelope.sender, f"{key.installation_id}:edit:{envelope.hook.id}")
    return ()
