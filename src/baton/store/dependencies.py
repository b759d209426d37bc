"""What keeps an issue from being ready (`tables.dependencies`): written as GitHub's webhooks tell of a "blocked
by" dependency or a sub-issue added or removed, as the brief's `depends_on` names issues, and as a blocker is
closed or reopened; read inside the caller's transaction by the claim's guard, and by the task list."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, exists, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from baton.domain.issue import LinkCounts
from baton.domain.model import TicketKey

from . import tables as t
from .statements import Conflict, key_params

_C = t.dependencies.c
BLOCKED_BY = "blocked_by"
SUB_ISSUE = "sub_issue"
DEPENDS_ON = "depends_on"  # the brief's: a webhook about GitHub's links never removes it


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
    except IntegrityError as error:  # the same link's other hook wrote it first: the unit is made again
        raise Conflict(str(error)) from error


def unlink(connection: Connection, key: TicketKey, source: str, blocker: str) -> None:
    connection.execute(delete(t.dependencies).where(_of(key), _C.source == source, _C.blocker == blocker))


def linked(connection: Connection, key: TicketKey, source: str) -> dict[str, bool]:
    """The issue's links of one kind (`BLOCKED_BY`, `SUB_ISSUE`), each blocker with whether it is open."""
    rows = connection.execute(select(_C.blocker, _C.open).where(_of(key), _C.source == source))
    return {row.blocker: bool(row.open) for row in rows}


def counts(connection: Connection, key: TicketKey) -> LinkCounts:
    """The issue's links as GitHub counts them in its summaries (a brief's `depends_on` is no link of GitHub's)."""
    blockers, subs = linked(connection, key, BLOCKED_BY), linked(connection, key, SUB_ISSUE)
    return LinkCounts(len(blockers), sum(blockers.values()), len(subs), sum(not one for one in subs.values()))


def declared(connection: Connection, key: TicketKey) -> list[str]:
    """The blockers the brief of the issue at `key` names, as recorded."""
    rows = connection.execute(_DECLARED, key_params(key))
    return [row.blocker for row in rows]


_DECLARED = (  # built once: a ticket's first sight runs it (building it cost more than running it)
    select(_C.blocker)
    .where(_C.installation_id == bindparam("installation_id"), _C.repository_id == bindparam("repository_id"),
           _C.number == bindparam("number"), _C.source == DEPENDS_ON)
    .order_by(_C.blocker)
)  # fmt: skip


def known(connection: Connection, blockers: Iterable[str]) -> dict[str, bool]:
    """Whether each of `blockers` Baton knows about is open: as last seen by any link to it, else from the issue's
    ticket (open unless its issue was recorded closed). Those Baton knows nothing of are left out."""
    wanted = sorted(set(blockers))
    if not wanted:
        return {}
    found: dict[str, bool] = {}
    rows = connection.execute(
        select(_C.blocker, _C.open).where(_C.blocker.in_(wanted)).order_by(_C.blocker, _C.seen_at.desc())
    )
    for row in rows:
        found.setdefault(row.blocker, bool(row.open))
    tk, st = t.tickets.c, t.issue_states.c
    for blocker in wanted:
        if blocker in found:
            continue
        repository, _, number = blocker.rpartition("#")
        ticket = connection.execute(
            select(st.state)
            .select_from(t.tickets.outerjoin(t.issue_states, st.ticket_id == tk.id))
            .where(func.lower(tk.repository) == repository, tk.number == int(number))
        ).first()
        if ticket is not None:
            found[blocker] = ticket.state != "closed"
    return found


def blocked_by(connection: Connection, blocker: str, is_open: bool) -> list[TicketKey]:
    """The issues whose link to `blocker` has it in another state than `is_open`."""
    rows = connection.execute(
        select(_C.installation_id, _C.repository_id, _C.number)
        .where(_C.blocker == blocker, _C.open.is_not(is_open))
        .distinct()
    )
    return [TicketKey(row.installation_id, row.repository_id, row.number) for row in rows]


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
    queries = open_blockers_sql(keys, connection.dialect.name == "postgresql")
    return open_blockers_rows(queries, [list(connection.exec_driver_sql(sql, params)) for _, sql, params in queries])


def open_blockers_sql(keys: Iterable[TicketKey], postgres: bool) -> list[tuple[tuple[int, int], str, tuple[Any, ...]]]:
    """`open_blockers`' statements, one per repository (installation id and repository id), in the driver's form."""
    numbers: dict[tuple[int, int], list[int]] = {}
    for key in keys:
        numbers.setdefault((key.installation_id, key.repository_id), []).append(key.number)
    mark = "%s" if postgres else "?"
    return [
        (
            where,  # DISTINCT: a blocker GitHub links and the brief names too, once
            f"SELECT DISTINCT number, blocker FROM dependencies WHERE installation_id = {mark} "
            f"AND repository_id = {mark} AND number IN ({', '.join([mark] * len(wanted))}) AND open = {mark} "
            "ORDER BY number, blocker",
            (*where, *wanted, True),
        )
        for where, wanted in numbers.items()
    ]


def open_blockers_rows(
    queries: list[tuple[tuple[int, int], str, tuple[Any, ...]]], rows: Sequence[Iterable[Sequence[Any]]]
) -> dict[TicketKey, list[str]]:
    """`open_blockers`' answer from the rows of its statements (`open_blockers_sql`), in their order."""
    found: dict[TicketKey, list[str]] = {}
    for ((installation_id, repository_id), _, _), answered in zip(queries, rows, strict=True):
        for number, blocker in answered:
            found.setdefault(TicketKey(installation_id, repository_id, number), []).append(blocker)
    return found


def parents(connection: Connection, issues: Mapping[TicketKey, str]) -> dict[TicketKey, str]:
    """The parent (`owner/repo#N`) of each of `issues` (key → its repository's name) that is a sub-issue, where
    Baton knows the parent's repository by name (it tracks an issue there)."""
    named = {ref(repository, key.number): key for key, repository in issues.items()}
    if not named:
        return {}
    rows = connection.execute(_PARENTS, {"refs": sorted(named)})
    return {named[row.blocker]: ref(row.repository, row.number) for row in rows if row.repository is not None}


# Built once: building it for each read cost more than running it (a ticket's read asks it every time).
_PARENTS = (
    select(
        _C.blocker,
        _C.number,
        select(t.tickets.c.repository)
        .where(t.tickets.c.installation_id == _C.installation_id, t.tickets.c.repository_id == _C.repository_id)
        .order_by(t.tickets.c.id.desc())
        .limit(1)
        .scalar_subquery()
        .label("repository"),
    )
    .where(_C.source == SUB_ISSUE, _C.blocker.in_(bindparam("refs", expanding=True)))
    .order_by(_C.seen_at)
)


def unblocked() -> ColumnElement[bool]:
    """A condition on `tickets`: nothing open blocks the ticket's issue."""
    tk = t.tickets.c
    return ~exists().where(_C.installation_id == tk.installation_id, _C.repository_id == tk.repository_id,
                           _C.number == tk.number, _C.open.is_(True))  # fmt: skip
