"""What keeps an issue from being ready (`tables.dependencies`): written as GitHub's webhooks tell of a "blocked
by" dependency or a sub-issue added or removed, and of a blocker closed or reopened; read inside the caller's
transaction by the claim's guard, and by the task list."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Connection, and_, delete, exists, insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from baton.domain.model import TicketKey

from . import tables as t
from .statements import Conflict

_C = t.dependencies.c
BLOCKED_BY = "blocked_by"
SUB_ISSUE = "sub_issue"


def ref(repository: str, number: int) -> str:
    """How a blocker is named: `owner/repo#N`, lower-case (GitHub's names are not case-sensitive)."""
    return f"{repository.lower()}#{number}"


def _of(key: TicketKey) -> ColumnElement[bool]:
    return and_(_C.installation_id == key.installation_id, _C.repository_id == key.repository_id,
                _C.number == key.number)  # fmt: skip


def link(connection: Connection, key: TicketKey, source: str, blocker: str, is_open: bool, now: datetime) -> None:
    """`blocker` keeps the issue at `key` from being ready while open (replacing what was recorded of it)."""
    connection.execute(delete(t.dependencies).where(_of(key), _C.source == source, _C.blocker == blocker))
    try:
        connection.execute(insert(t.dependencies).values(
            installation_id=key.installation_id, repository_id=key.repository_id, number=key.number, source=source,
            blocker=blocker, open=is_open, seen_at=now,
        ))  # fmt: skip
    except IntegrityError as error:  # the same link's other delivery wrote it first: the unit is made again
        raise Conflict(str(error)) from error


def unlink(connection: Connection, key: TicketKey, source: str, blocker: str) -> None:
    connection.execute(delete(t.dependencies).where(_of(key), _C.source == source, _C.blocker == blocker))


def seen(connection: Connection, blocker: str, is_open: bool, now: datetime) -> int:
    """A blocker closed or reopened: every issue it blocks learns it. The number of rows changed."""
    done = connection.execute(
        update(t.dependencies).where(_C.blocker == blocker, _C.open.is_not(is_open)).values(open=is_open, seen_at=now)
    )
    return int(done.rowcount or 0)


def open_blockers(connection: Connection, keys: Iterable[TicketKey]) -> dict[TicketKey, list[str]]:
    """Each of `keys` that something open blocks, with those blockers (sorted): one statement per repository,
    written as the driver takes it (every claim's decision runs it, and SQLAlchemy's building and compiling of a
    statement cost more than the database's running it)."""
    numbers: dict[tuple[int, int], list[int]] = {}
    for key in keys:
        numbers.setdefault((key.installation_id, key.repository_id), []).append(key.number)
    mark = "%s" if connection.dialect.name == "postgresql" else "?"
    found: dict[TicketKey, list[str]] = {}
    for (installation_id, repository_id), wanted in numbers.items():
        rows = connection.exec_driver_sql(
            f"SELECT number, blocker FROM dependencies WHERE installation_id = {mark} AND repository_id = {mark} "
            f"AND number IN ({', '.join([mark] * len(wanted))}) AND open = {mark} ORDER BY number, blocker",
            (installation_id, repository_id, *wanted, True),
        )
        for number, blocker in rows:
            found.setdefault(TicketKey(installation_id, repository_id, number), []).append(blocker)
    return found


def unblocked() -> ColumnElement[bool]:
    """A condition on `tickets`: nothing open blocks the ticket's issue."""
    tk = t.tickets.c
    return ~exists().where(_C.installation_id == tk.installation_id, _C.repository_id == tk.repository_id,
                           _C.number == tk.number, _C.open.is_(True))  # fmt: skip
