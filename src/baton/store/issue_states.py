"""The issue's own state on GitHub beside each ticket (`issue_states`, `baton.domain.issue`): read and
written inside the caller's transaction, or read on their own by the writer and the read API."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select

from baton.domain.issue import IssueState
from baton.domain.model import TicketKey

from . import tables as t
from .engine import reader

_C = t.issue_states.c


def _state(row: Any) -> IssueState:
    return IssueState(row.state, row.at, row.actor, row.reason, bool(row.merged))


def issue_state(connection: Connection, ticket_id: int) -> IssueState | None:
    row = connection.execute(select(t.issue_states).where(_C.ticket_id == ticket_id)).first()
    return None if row is None else _state(row)


def save_issue_state(connection: Connection, ticket_id: int, state: IssueState) -> None:
    """Record the issue's state, replacing what was recorded (a row inserted twice at once loses with a
    unique violation, and its unit of work is made again)."""
    connection.execute(delete(t.issue_states).where(_C.ticket_id == ticket_id))
    connection.execute(insert(t.issue_states).values(
        ticket_id=ticket_id, state=state.state, reason=state.reason, actor=state.by, at=state.at, merged=state.merged
    ))  # fmt: skip


def issue_states(engine: Engine, ticket_ids: Iterable[int]) -> dict[int, IssueState]:
    """The recorded issue states of these tickets (those that have one)."""
    wanted = list(ticket_ids)
    if not wanted:
        return {}
    with reader(engine).connect() as connection:
        rows = connection.execute(select(t.issue_states).where(_C.ticket_id.in_(wanted))).all()
    return {row.ticket_id: _state(row) for row in rows}


def issue_state_of(engine: Engine, key: TicketKey) -> IssueState | None:
    """The recorded issue state of the ticket at `key`, if any."""
    tk = t.tickets.c
    with reader(engine).connect() as connection:
        row = connection.execute(
            select(t.issue_states)
            .join(t.tickets, tk.id == _C.ticket_id)
            .where(tk.installation_id == key.installation_id, tk.repository_id == key.repository_id,
                   tk.number == key.number)
        ).first()  # fmt: skip
    return None if row is None else _state(row)
