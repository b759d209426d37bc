"""The task brief's use cases inside a unit of work: a new ticket's brief, an edited issue body, and the
one reply that explains a brief Baton cannot use.

A brief is read from the issue body (`baton.reading.briefs.read_brief`). A valid one becomes the ticket's; an
invalid one is explained once (the same problems under the same last good brief are never explained
twice, however often the body is edited) and the ticket keeps its last good brief, or none. A non-code
task's evidence rails are not applicable, from the ticket's creation or from the edit that says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from baton.domain import Brief, Ticket, TicketKey
from baton.domain.edits import change_brief
from baton.reading.briefs import read_brief
from baton.service.evidence import EvidenceService
from baton.store import Conflict, dependencies

from . import readiness
from .unit import UnitOfWork


def explain(
    uow: UnitOfWork, key: TicketKey, repository: str, login: str, problems: Sequence[str], kept: Brief | None,
    delay: float,
) -> bool:  # fmt: skip
    """Reply once on the issue that its brief cannot be used, and why. True when the reply was queued."""
    if not problems:
        return False
    what = json.dumps([list(problems), kept.to_dict() if kept else None], sort_keys=True)
    digest = hashlib.sha256(f"{key}\n{what}".encode()).hexdigest()[:16]
    operation = f"{key.installation_id}:brief:{key.repository_id}:{key.number}:{digest}"
    if uow.work.results([operation]):
        return False
    stays = "the last good brief stays in force" if kept is not None else "the task has no brief"
    message = (
        f"Baton cannot use the brief in #{key.number}: {'; '.join(problems)}. Until the issue body is fixed, {stays}."
    )
    stored = uow.work.ticket(key)
    result = {"kind": "refused", "command": "", "state": None, "revision": 0, "runner": None,
              "code": "invalid_brief", "message": message, "event": None}  # fmt: skip
    uow.work.record_operation(operation, stored.id if stored else None, result)
    uow.outbox.queue_all({key: [("reply", None, login, message)]}, delay)
    uow.outbox.due(key, repository, delay)
    return True


def non_code(uow: UnitOfWork, evidence: EvidenceService, ticket: Ticket, source: str) -> None:
    """Keep the ticket's evidence rails applicable exactly when its brief is a code task's."""
    code = ticket.brief is None or ticket.brief.code
    evidence.applicability(uow, ticket.key, code, source)


def edited(
    uow: UnitOfWork, evidence: EvidenceService, key: TicketKey, repository: str, author: str, body: str,
    editor: str, operation_id: str, delay: float, known: dict[str, bool],
) -> bool:  # fmt: skip
    """An issue body was edited: its brief, if it changed, becomes the ticket's (a `brief_changed` event,
    one revision on), and the issues its `depends_on` names are linked (`readiness.declare`: open as `known`).
    True when the ticket changed."""
    stored = uow.work.tickets([key], lock=True)[key]
    if stored is None or uow.work.results([operation_id]):
        return False
    ticket = stored.ticket
    reading = read_brief(body)
    if reading.problems:
        explain(uow, key, repository, editor, reading.problems, ticket.brief, delay)
        return False
    applied = change_brief(ticket, reading.brief, author, editor)
    if applied is None:
        return False
    if not uow.work.swap(stored.id, ticket.revision, applied.ticket):
        raise Conflict("lost")
    uow.work.append(stored.id, applied.event, operation_id)
    before = dependencies.open_blockers(uow.connection, [key])
    gone = readiness.declare(uow, key, repository, applied.ticket.brief, known)
    waited = [blocker for blocker in gone if blocker in before.get(key, [])]  # the open ones it no longer names
    readiness.moved(uow, before, [key], ", ".join(waited) or "the brief", editor)
    result = {"kind": "applied", "command": "", "state": applied.ticket.state.value,
              "revision": applied.ticket.revision, "runner": applied.ticket.runner, "code": None, "message": None,
              "event": applied.event.type}  # fmt: skip
    uow.work.record_operation(operation_id, stored.id, result)
    if (ticket.brief is None or ticket.brief.code) != (applied.ticket.brief is None or applied.ticket.brief.code):
        non_code(uow, evidence, applied.ticket, operation_id)
    uow.outbox.due(key, repository)
    return True


__all__ = ["edited", "explain", "non_code"]
