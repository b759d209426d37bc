"""An issue whose body was edited: the brief it carries may have changed (`WorkService.brief_edited`).
Edits run no commands; only the brief is read again."""

from __future__ import annotations

from baton.github.webhooks import dig, issue_number, login, text
from baton.service.work import Issue, Outcome

from .context import Intake
from .envelope import Envelope


def issue_edited(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """`issues` `edited` with a changed body, on a tracked issue of an active installation."""
    changes = dig(envelope.payload, "changes")
    if not isinstance(changes, dict) or "body" not in changes or intake.from_baton(envelope, "issue"):
        return ()
    key = envelope.ticket(issue_number(envelope.payload, "issue", "number"))
    if key is None or not envelope.repository or not intake.active(envelope):
        return ()
    author = login(envelope.payload, "issue", "user", "login")
    issue = Issue(key, envelope.repository, author, text(envelope.payload, "issue", "body"))
    # a redelivery of this edit carries the same delivery id, and changes nothing twice
    intake.work.brief_edited(issue, envelope.sender, f"{key.installation_id}:edit:{envelope.delivery.id}")
    return ()
