"""Reading and writing the work rail inside one transaction: the work facet of a unit of work.

The service layer decides and the `WorkTx` writes. The compare-and-swap is an
`UPDATE … WHERE id = :id AND revision = :expected` whose row count decides. The statements run on the
driver's cursor (`statements.py` says why).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from baton.domain import Brief, Event, RepositoryKey, Role, Ticket, TicketKey, WorkState
from baton.domain.brief import UNSAID_PRIORITY
from baton.environment.clock import Clock

from . import dependencies
from .statements import Conflict, RawTx, Statements, key_params


@dataclass(frozen=True)
class StoredTicket:
    id: int
    ticket: Ticket


@dataclass(frozen=True)
class Snapshot:
    """What one round trip reads before a decision."""

    first: dict[str, Any] | None  # the operation's first result, when it was seen before
    stored: StoredTicket | None
    held: int  # tickets the actor holds as `claimed` in this repository


Found = tuple[StoredTicket, str | None, int]  # a ready task, its issue's title and its priority (`ready_tasks`)


@dataclass(frozen=True)
class Opening:
    """What a claim-next batch reads first (`WorkTx.opening`)."""

    firsts: dict[str, tuple[dict[str, Any], StoredTicket | None]]  # by operation id: its first result, its ticket
    held: dict[tuple[RepositoryKey, str], int]  # the claims each (lower-case) login holds, by repository
    # By places and labels asked for: the first ready tasks there, in the order they are handed out.
    tasks: dict[tuple[tuple[RepositoryKey, ...], tuple[str, ...]], list[Found]]


@dataclass(frozen=True)
class Deciding:
    """What a batch of commands reads first (`WorkTx.deciding`)."""

    tickets: dict[TicketKey, StoredTicket | None]  # locked, in the order of their keys
    firsts: dict[str, dict[str, Any]]  # by operation id: its first result
    held: dict[tuple[RepositoryKey, str], int]  # the claims each (lower-case) login holds, by repository
    blockers: dict[TicketKey, list[str]]  # what open blocks each issue claimed


_TICKET_COLUMNS = (
    "t.id, t.installation_id, t.repository_id, t.number, t.repository, t.state, t.revision, t.owner, "
    "t.runner, t.attempt, t.deliveries, t.brief"
)

# Written with `:name` parameters; PostgreSQL's driver gets them as `%(name)s`.
TITLE_LENGTH = 1024  # characters of an issue's title kept (GitHub allows 256)

_SQL = {
    "read": f"""
        SELECT {_TICKET_COLUMNS}, o.result, rc.active
        FROM (SELECT 1 AS one) AS one
        LEFT JOIN operations AS o ON o.id = :operation_id
        LEFT JOIN tickets AS t ON t.installation_id = :installation_id
            AND t.repository_id = :repository_id AND t.number = :number
        LEFT JOIN runner_claims AS rc ON rc.installation_id = :installation_id
            AND rc.repository_id = :repository_id AND rc.login = :login""",
    "ticket": f"""
        SELECT {_TICKET_COLUMNS} FROM tickets AS t
        WHERE t.installation_id = :installation_id AND t.repository_id = :repository_id
            AND t.number = :number""",
    "insert_ticket": """
        INSERT INTO tickets (installation_id, repository_id, number, repository, state, revision, owner,
            runner, attempt, deliveries, brief, priority, title, labels, created_at, updated_at, state_since)
        VALUES (:installation_id, :repository_id, :number, :repository, :state, :revision, :owner,
            :runner, :attempt, :deliveries, :brief, :priority, :title, :labels, :now, :now, :now)
        RETURNING id""",
    # The priority the labels give (`priority_labels`): no revision, it is not part of the work rail.
    "label_priority": """
        UPDATE tickets SET label_priority = :label_priority
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number""",
    "clear_label_priorities": """
        UPDATE tickets SET label_priority = NULL
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND label_priority IS NOT NULL""",
    # The title as GitHub last told it: no revision, it is not part of the work rail.
    "retitle": """
        UPDATE tickets SET title = :title
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number
            AND (title IS NULL OR title <> :title)""",
    # The labels as GitHub last told them (`ready.labels_text`): not part of the work rail either.
    "relabel": """
        UPDATE tickets SET labels = :labels
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number
            AND (labels IS NULL OR labels <> :labels)""",
    "relabel_unknown": """
        UPDATE tickets SET labels = :labels
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number
            AND labels IS NULL""",
    # One label added or removed, whatever the others: hooks about two labels may be decided in either order.
    "label_added": """
        UPDATE tickets SET labels = REPLACE(COALESCE(NULLIF(labels, ''), :nl), :token, :nl) || :label || :nl
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number
        RETURNING labels""",
    "label_removed": """
        UPDATE tickets SET labels = REPLACE(labels, :token, :nl)
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number
        RETURNING labels""",
    # The moment a label's change arrived, kept unless a later one's is: no row back means a change of the label
    # that arrived later was applied already (or there is no ticket), and this one is not.
    "label_changed": """
        INSERT INTO label_changes (installation_id, repository_id, number, label, changed_at)
        SELECT installation_id, repository_id, number, :label, :at FROM tickets
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number
        ON CONFLICT (installation_id, repository_id, number, label) DO UPDATE SET changed_at = excluded.changed_at
            WHERE label_changes.changed_at <= excluded.changed_at
        RETURNING changed_at""",
    "labels_kept": """
        SELECT labels FROM tickets
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number""",
    # `state_since` moves with the state or the runner; on the right of SET, columns are the row's old values.
    # (`new_state` and `new_runner` repeat `state` and `runner`: PostgreSQL gives one parameter one type.)
    "swap": """
        UPDATE tickets SET state = :state, revision = :revision, runner = :runner, attempt = :attempt,
            deliveries = :deliveries, owner = :owner, brief = :brief, priority = :priority, updated_at = :now,
            state_since = CASE WHEN state <> :new_state OR COALESCE(runner, '') <> COALESCE(:new_runner, '')
                OR state_since IS NULL THEN :now ELSE state_since END
        WHERE id = :ticket_id AND revision = :expected""",
    # Insert the runner's count at 1 or add one to it, only while it is below the limit.
    "gain_claim": """
        INSERT INTO runner_claims (installation_id, repository_id, login, active)
        VALUES (:installation_id, :repository_id, :login, 1)
        ON CONFLICT (installation_id, repository_id, login)
        DO UPDATE SET active = runner_claims.active + 1 WHERE runner_claims.active < :limit
        RETURNING active""",
    # Many runners' counts at once, each by `active` (`count_all`), only while each stays within the limit.
    "gain_claims": """
        INSERT INTO runner_claims (installation_id, repository_id, login, active)
        VALUES (:installation_id, :repository_id, :login, :active)
        ON CONFLICT (installation_id, repository_id, login)
        DO UPDATE SET active = runner_claims.active + excluded.active
        WHERE runner_claims.active + excluded.active <= :limit
        RETURNING active""",
    "lose_claim": """
        UPDATE runner_claims SET active = CASE WHEN active > 0 THEN active - 1 ELSE 0 END
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND login = :login""",
    "insert_operation": """
        INSERT INTO operations (id, ticket_id, result, created_at)
        VALUES (:operation_id, :ticket_id, :result, :now)""",
    "insert_event": """
        INSERT INTO events (ticket_id, type, actor, role, attempt, revision, operation_id, data, created_at)
        VALUES (:ticket_id, :type, :actor, :role, :attempt, :revision, :operation_id, :data, :now)""",
    "end_attempt": """
        UPDATE attempts SET ended_at = :now, end_reason = :reason
        WHERE ticket_id = :ticket_id AND number = :attempt AND ended_at IS NULL""",
    "insert_attempt": """
        INSERT INTO attempts (ticket_id, number, runner, started_revision, started_at)
        VALUES (:ticket_id, :attempt, :runner, :revision, :now)""",
    "insert_delivery": """
        INSERT INTO deliveries (ticket_id, number, attempt, runner, text, evidence, revision, created_at)
        VALUES (:ticket_id, :number, :attempt, :runner, :text, :evidence, :revision, :now)""",
    "insert_review": """
        INSERT INTO reviews (ticket_id, attempt, delivery, reviewer, role, verdict, independent, note,
            revision, created_at)
        VALUES (:ticket_id, :attempt, :delivery, :reviewer, :role, :verdict, :independent, :note,
            :revision, :now)""",
    "events": """
        SELECT type, actor, role, revision, attempt, data FROM events
        WHERE ticket_id = :ticket_id ORDER BY id""",
}
_STATEMENTS = Statements(_SQL, many=("insert_operation", "insert_event", "insert_attempt", "gain_claims"))

# A claim count with no limit to respect (a maintainer's /assign, a send-back) still goes through
# the same upsert, under a limit no count reaches.
_NO_LIMIT = 2**31 - 1


def loaded(value: Any) -> Any:
    """SQLite hands JSON back as text; psycopg has already parsed it."""
    return json.loads(value) if isinstance(value, str) else value


_json = loaded


def stored(row: Sequence[Any]) -> StoredTicket:
    """A ticket from a row of `_TICKET_COLUMNS` (in that order)."""
    id_, installation, repository_id, number, repository, state, revision, owner = row[:8]
    runner, attempt, deliveries, brief = row[8:12]
    return StoredTicket(
        int(id_),
        Ticket(
            key=TicketKey(installation, repository_id, number),
            repository=repository,
            state=WorkState(state),
            revision=revision,
            owner=owner,
            runner=runner,
            attempt=attempt,
            deliveries=deliveries,
            brief=Brief.from_dict(_json(brief)),
        ),
    )


def _ready_rows(rows: Sequence[Sequence[Any]]) -> list[Found]:
    return [(stored(row[:-2]), row[-2], int(row[-1])) for row in rows]


def _firsts_rows(rows: Sequence[Sequence[Any]]) -> dict[str, tuple[dict[str, Any], StoredTicket | None]]:
    return {row[0]: (_json(row[1]), None if row[2] is None else stored(row[2:])) for row in rows}


def _held_rows(rows: Sequence[Sequence[Any]]) -> dict[str, int]:
    return {login: int(active) for login, active in rows}


def _tickets_rows(keys: list[TicketKey], rows: Sequence[Sequence[Any]]) -> dict[TicketKey, StoredTicket | None]:
    found: dict[TicketKey, StoredTicket | None] = dict.fromkeys(keys)
    for row in rows:
        one = stored(row)
        found[one.ticket.key] = one
    return found


def _results_rows(rows: Sequence[Sequence[Any]]) -> dict[str, dict[str, Any]]:
    return {id_: _json(result) for id_, result in rows}


def _changes(ticket: Ticket) -> dict[str, Any]:
    return {
        "state": ticket.state.value,
        "revision": ticket.revision,
        "runner": ticket.runner,
        "attempt": ticket.attempt,
        "deliveries": ticket.deliveries,
        "priority": ticket.brief.priority if ticket.brief is not None else None,
    }


class WorkTx(RawTx):
    """The work rail's reads and writes inside one open transaction. Methods never commit."""

    def __init__(self, connection: Connection, clock: Clock) -> None:
        super().__init__(connection, _STATEMENTS, clock)
        self._swaps: Any = None
        self._gains: list[Any] = []  # `count_all`'s cursors

    def close(self) -> None:
        if self._swaps is not None:
            self._swaps.close()
        for cursor in self._gains:
            cursor.close()
        super().close()

    def read(self, key: TicketKey, operation_id: str, login: str) -> Snapshot:
        """The operation's first result, the ticket and the actor's claim count, in one round trip."""
        row = self._run("read", **key_params(key), operation_id=operation_id, login=login.lower()).fetchone()
        return Snapshot(
            first=_json(row[12]),
            stored=None if row[0] is None else stored(row),
            held=int(row[13] or 0),
        )

    def record_operation(self, operation_id: str, ticket_id: int | None, result: dict[str, Any]) -> None:
        """Raises `Conflict` when another transaction recorded the same operation first."""
        self._run("insert_operation", operation_id=operation_id, ticket_id=ticket_id, result=json.dumps(result))

    def ticket(self, key: TicketKey) -> StoredTicket | None:
        row = self._run("ticket", **key_params(key)).fetchone()
        return None if row is None else stored(row)

    def tickets(self, keys: list[TicketKey], *, lock: bool = False) -> dict[TicketKey, StoredTicket | None]:
        """Several tickets in one statement (None where there is none). With `lock`, their rows are locked in
        the order of their keys until the transaction ends (on PostgreSQL: SQLite's writer lock already keeps
        every other writer out), so the commands decided on them are decided on what is there, and the
        compare-and-swap that records each cannot lose."""
        if not keys:
            return {}
        self._cursor.execute(*self._tickets_sql(keys, lock))
        return _tickets_rows(keys, self._cursor.fetchall())

    def _tickets_sql(self, keys: list[TicketKey], lock: bool) -> tuple[str, list[Any]]:
        mark = "%s" if self._postgres else "?"
        where = " OR ".join(
            [f"(t.installation_id = {mark} AND t.repository_id = {mark} AND t.number = {mark})"] * len(keys)
        )
        sql = (f"SELECT {_TICKET_COLUMNS} FROM tickets AS t WHERE {where} "
               "ORDER BY t.installation_id, t.repository_id, t.number")  # fmt: skip
        if lock and self._postgres:
            sql += " FOR NO KEY UPDATE"
        return sql, [part for key in keys for part in (key.installation_id, key.repository_id, key.number)]

    def results(self, operation_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The first results of those operations that were seen before."""
        if not operation_ids:
            return {}
        self._cursor.execute(*self._results_sql(operation_ids))
        return _results_rows(self._cursor.fetchall())

    def _results_sql(self, operation_ids: list[str]) -> tuple[str, list[Any]]:
        marks = ", ".join(["%s" if self._postgres else "?"] * len(operation_ids))
        return f"SELECT id, result FROM operations WHERE id IN ({marks})", operation_ids

    def deciding(
        self, keys: list[TicketKey], operation_ids: list[str], logins: Mapping[RepositoryKey, set[str]],
        claimed: Collection[TicketKey],
    ) -> Deciding:  # fmt: skip
        """What a batch of commands reads first, in one round trip on PostgreSQL (the statements pipelined, after
        the transaction's BEGIN): the `tickets` at `keys`, locked in the order of their keys (`tickets`), the
        first results of `operation_ids` (`results`), what each login `held` in each repository, and the open
        blockers of the issues `claimed` (`dependencies.open_blockers`)."""
        queries: list[tuple[str, Sequence[Any]]] = [self._tickets_sql(keys, True)] if keys else []
        if operation_ids:
            queries.append(self._results_sql(operation_ids))
        held_at = [(repository, names) for repository, names in logins.items() if names]
        queries += [self._held_sql(repository, names) for repository, names in held_at]
        blocking = dependencies.open_blockers_sql(claimed, self._postgres)
        queries += [(sql, params) for _, sql, params in blocking]
        rows = self._all(queries)
        tickets = _tickets_rows(keys, rows.pop(0)) if keys else {}
        firsts = _results_rows(rows.pop(0)) if operation_ids else {}
        held = {(repository, name): count for (repository, _), found in zip(held_at, rows, strict=False)
                for name, count in _held_rows(found).items()}  # fmt: skip
        blockers = dependencies.open_blockers_rows(blocking, rows[len(held_at) :])
        return Deciding(tickets, firsts, held, blockers)

    def next_ready(
        self, places: Sequence[RepositoryKey], labels: Sequence[str], passed: Collection[int]
    ) -> tuple[StoredTicket, str | None, int] | None:
        """Claim-next's task (`store/ready.py`): the first ready task of `places` carrying every one of `labels`
        (`ready.label_name`'s), but those whose ids are in `passed`, with its issue's title and its priority (the
        brief's, else its labels'); highest priority first, then oldest. On PostgreSQL its row is locked as it is
        read, and rows other transactions hold are passed over (`FOR NO KEY UPDATE SKIP LOCKED`). None: none
        left."""
        found = self.ready_tasks(places, labels, passed, 1)
        return found[0] if found else None

    def ready_tasks(
        self, places: Sequence[RepositoryKey], labels: Sequence[str], passed: Collection[int], most: int
    ) -> list[Found]:
        """The first `most` tasks `next_ready` would give one after the other, in that order, in one statement
        (each locked as it is read, on PostgreSQL); fewer when no more are ready."""
        if not places or most < 1:
            return []
        self._cursor.execute(*self._ready_sql(places, labels, passed, most))
        return _ready_rows(self._cursor.fetchall())

    def _ready_sql(
        self, places: Sequence[RepositoryKey], labels: Sequence[str], passed: Collection[int], most: int
    ) -> tuple[str, list[Any]]:
        mark = "%s" if self._postgres else "?"
        where = " OR ".join([f"(t.installation_id = {mark} AND t.repository_id = {mark})"] * len(places))
        params: list[Any] = [part for place in places for part in (place.installation_id, place.repository_id)]
        priority = f"COALESCE(t.priority, t.label_priority, {UNSAID_PRIORITY})"
        sql = (f"SELECT {_TICKET_COLUMNS}, t.title, {priority} FROM tickets AS t WHERE t.state = 'open' AND ({where}) "
               "AND NOT EXISTS (SELECT 1 FROM dependencies AS d WHERE d.installation_id = t.installation_id "
               "AND d.repository_id = t.repository_id AND d.number = t.number AND d.open)")  # fmt: skip
        for label in labels:  # each between newlines, as kept (`ready.labels_text`)
            sql += f" AND t.labels LIKE {mark} ESCAPE '\\'"
            params.append("%\n" + label.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "\n%")
        if passed:
            sql += f" AND t.id NOT IN ({', '.join([mark] * len(passed))})"
            params += sorted(passed)
        sql += f" ORDER BY {priority}, t.created_at, t.number, t.id LIMIT {int(most)}"
        if self._postgres:
            sql += " FOR NO KEY UPDATE SKIP LOCKED"
        return sql, params

    def firsts(self, operation_ids: list[str]) -> dict[str, tuple[dict[str, Any], StoredTicket | None]]:
        """The first results of those operations that were seen before, each with the ticket it was about."""
        if not operation_ids:
            return {}
        self._cursor.execute(*self._firsts_sql(operation_ids))
        return _firsts_rows(self._cursor.fetchall())

    def _firsts_sql(self, operation_ids: list[str]) -> tuple[str, list[Any]]:
        marks = ", ".join(["%s" if self._postgres else "?"] * len(operation_ids))
        return (f"SELECT o.id, o.result, {_TICKET_COLUMNS} FROM operations AS o "
                f"LEFT JOIN tickets AS t ON t.id = o.ticket_id WHERE o.id IN ({marks})", operation_ids)  # fmt: skip

    def _held_sql(self, repository: RepositoryKey, logins: set[str]) -> tuple[str, list[Any]]:
        """How many tickets each (lower-case) login holds as `claimed` in the repository (`_held_rows`)."""
        mark = "%s" if self._postgres else "?"
        marks = ", ".join([mark] * len(logins))
        return (
            f"SELECT login, active FROM runner_claims WHERE installation_id = {mark} AND repository_id = {mark} "
            f"AND login IN ({marks})",
            [repository.installation_id, repository.repository_id, *sorted(logins)],
        )

    def opening(
        self, operation_ids: list[str], logins: Mapping[RepositoryKey, set[str]],
        wanted: Sequence[tuple[tuple[RepositoryKey, ...], tuple[str, ...], int]],
    ) -> Opening:  # fmt: skip
        """What a claim-next batch reads first, in one round trip on PostgreSQL (the statements pipelined, after
        the transaction's BEGIN): the `firsts` of `operation_ids`, what each login `held` in each repository, and
        for each of `wanted` (places, labels, most) its `ready_tasks`, none passed."""
        queries: list[tuple[str, list[Any]]] = []
        if operation_ids:
            queries.append(self._firsts_sql(operation_ids))
        held_at = [(repository, names) for repository, names in logins.items() if names]
        queries += [self._held_sql(repository, names) for repository, names in held_at]
        ready_at = [(places, labels, most) for places, labels, most in wanted if places and most >= 1]
        queries += [self._ready_sql(places, labels, (), most) for places, labels, most in ready_at]
        rows = self._all(queries)
        firsts = _firsts_rows(rows.pop(0)) if operation_ids else {}
        held = {(repository, name): count for (repository, _), found in zip(held_at, rows, strict=False)
                for name, count in _held_rows(found).items()}  # fmt: skip
        tasks = {(places, labels): _ready_rows(found)
                 for (places, labels, _), found in zip(ready_at, rows[len(held_at):], strict=True)}  # fmt: skip
        return Opening(firsts, held, tasks)

    def record_operations(self, records: list[tuple[str, int | None, dict[str, Any]]]) -> None:
        """Many first results at once (operation id, ticket id, result); `Conflict` as `record_operation`."""
        if not records:
            return
        now = self._now()
        self._many(
            "insert_operation",
            [{"operation_id": o, "ticket_id": t, "result": json.dumps(r), "now": now} for o, t, r in records],
        )

    def insert_ticket(
        self, ticket: Ticket, created: Event, operation_id: str | None, title: str | None = None,
        labels: str | None = None,
    ) -> int:  # fmt: skip
        """Raises `Conflict` when the ticket was created concurrently. `title` and `labels` (`ready.labels_text`):
        the issue's, where known."""
        brief = json.dumps(ticket.brief.to_dict()) if ticket.brief else None
        ticket_id = int(
            self._run(
                "insert_ticket",
                **key_params(ticket.key),
                **_changes(ticket),
                repository=ticket.repository,
                owner=ticket.owner,
                brief=brief,
                title=title[:TITLE_LENGTH] if title else None,
                labels=labels,
            ).fetchone()[0]
        )
        self.append(ticket_id, created, operation_id)
        return ticket_id

    def retitle(self, key: TicketKey, title: str) -> None:
        """The issue's title changed on GitHub (or was first told)."""
        self._run("retitle", **key_params(key), title=title[:TITLE_LENGTH])

    def relabel(self, key: TicketKey, labels: str, *, only_unknown: bool = False) -> None:
        """The issue's labels changed on GitHub (`ready.labels_text`); `only_unknown`: only where none are kept yet
        (a ticket made before its labels were kept)."""
        self._run("relabel_unknown" if only_unknown else "relabel", **key_params(key), labels=labels)

    def relabel_one(self, key: TicketKey, name: str, added: bool, at: datetime) -> list[str] | None:
        """The label `name` (`ready.label_name`'s) was added to the issue or removed from it, as a hook that arrived
        `at` said; the others stay as they are kept, and so does this one when a change of it that arrived later
        was applied already. The labels kept now (None: no ticket)."""
        if self._run("label_changed", **key_params(key), label=name, at=self._moment(at)).fetchone() is None:
            row = self._run("labels_kept", **key_params(key)).fetchone()
        else:
            changed = "label_added" if added else "label_removed"
            row = self._run(changed, **key_params(key), label=name, token=f"\n{name}\n", nl="\n").fetchone()
        return None if row is None else [one for one in (row[0] or "").split("\n") if one]

    def label_priority(self, key: TicketKey, priority: int | None) -> None:
        """The priority the issue's labels give it now (`Policy.label_priority`)."""
        self._run("label_priority", **key_params(key), label_priority=priority)

    def clear_label_priorities(self, place: RepositoryKey) -> None:
        """No ticket of the repository has a priority from its labels (its settings changed)."""
        self._run("clear_label_priorities", installation_id=place.installation_id, repository_id=place.repository_id)

    def swap(self, ticket_id: int, expected_revision: int, ticket: Ticket) -> bool:
        """The compare-and-swap: True when this transaction moved the ticket from `expected_revision`.

        Under PostgreSQL a concurrent writer's row lock makes this wait; once that writer commits, the
        condition is checked again against its row, the revision no longer matches, and 0 rows means lost.
        """
        brief = json.dumps(ticket.brief.to_dict()) if ticket.brief else None
        cursor = self._run(
            "swap", ticket_id=ticket_id, expected=expected_revision, owner=ticket.owner, brief=brief,
            new_state=ticket.state.value, new_runner=ticket.runner, **_changes(ticket),
        )  # fmt: skip
        return bool(cursor.rowcount == 1)

    def swap_all(self, swaps: Sequence[tuple[int, int, Ticket]]) -> Callable[[], bool]:
        """`swap` for many tickets (id, expected revision, ticket) at once, the statements sent together (psycopg's
        `executemany` pipelines them: one round trip). What it gives says whether this transaction moved every one
        of them, once their answers came (after `together`, when sent inside it)."""
        if not swaps:
            return lambda: True
        if self._swaps is None:  # a cursor of their own: inside `together`, the work cursor's next answers follow
            self._swaps = self._cursor.connection.cursor()
        cursor = self._swaps
        now = self._now()
        rows = [{"ticket_id": ticket_id, "expected": expected, "owner": ticket.owner, "now": now,
                 "brief": json.dumps(ticket.brief.to_dict()) if ticket.brief else None, "new_state": ticket.state.value,
                 "new_runner": ticket.runner, **_changes(ticket)} for ticket_id, expected, ticket in swaps]  # fmt: skip
        try:
            cursor.executemany(self._sql["swap"], rows)
        except self._integrity_error as error:
            raise Conflict(str(error)) from error
        return lambda: bool(cursor.rowcount == len(swaps))

    def count_claims(self, before: Ticket, after: Ticket, limit: int | None) -> bool:
        """Move the runners' claim counts from `before` to `after`.

        With `limit`, the gained claim is a conditional upsert (`… DO UPDATE … WHERE active < :limit`),
        so two concurrent claims by one runner cannot both pass the limit. False means the limit held.
        """
        lost = before.runner if before.state is WorkState.CLAIMED else None
        gained = after.runner if after.state is WorkState.CLAIMED else None
        if lost is not None and gained is not None and lost.lower() == gained.lower():
            return True
        repository = {"installation_id": before.key.installation_id, "repository_id": before.key.repository_id}
        if lost is not None:
            self._run("lose_claim", **repository, login=lost.lower())
        if gained is None:
            return True
        cursor = self._run(
            "gain_claim", **repository, login=gained.lower(), limit=_NO_LIMIT if limit is None else limit
        )
        # No row back means the conflict's WHERE failed: the runner is at the limit.
        return cursor.fetchone() is not None

    def count_all(self, moves: Sequence[tuple[Ticket, Ticket, int | None]]) -> Callable[[], bool]:
        """`count_claims` for many moves (before, after, limit) at once: one statement for claims gained by those
        who held none of the tickets before (claim-next's), each runner's count moved by as many as it gains;
        else one move after the other. What it gives says whether every count moved (False: a limit held), once
        their answers came: on PostgreSQL the statement may be sent inside `together`, with the writes that follow
        it, and its rows are read on a cursor of its own after."""
        gains: dict[tuple[int, int, str, int], int] = {}
        for before, after, limit in moves:
            if before.state is WorkState.CLAIMED or after.state is not WorkState.CLAIMED or after.runner is None:
                moved = all([self.count_claims(before, after, limit) for before, after, limit in moves])
                return lambda: moved
            where = (after.key.installation_id, after.key.repository_id, after.runner.lower(),
                     _NO_LIMIT if limit is None else limit)  # fmt: skip
            gains[where] = gains.get(where, 0) + 1
        sent: list[tuple[Any, int]] = []  # each statement's cursor, and the rows it must give back
        for limit in sorted({where[3] for where in gains}):  # in the order of their keys, as the rows are locked
            rows = [{"installation_id": i, "repository_id": r, "login": login, "active": n}
                    for (i, r, login, most), n in sorted(gains.items()) if most == limit]  # fmt: skip
            if not self._postgres:
                if len(self._many("gain_claims", rows, limit=limit).fetchall()) != len(rows):
                    return lambda: False
                continue
            cursor = self._cursor.connection.cursor()
            self._gains.append(cursor)
            self._many("gain_claims", rows, cursor=cursor, limit=limit)
            sent.append((cursor, len(rows)))
        return lambda: all(len(cursor.fetchall()) == n for cursor, n in sent)

    def append_all(self, events: Sequence[tuple[int, Event, str | None]]) -> None:
        """`append` for many events (ticket id, event, operation id), in that order: one statement for the events
        and one for the attempts they start, when none ends an attempt or records a delivery or a review."""
        if any(e.data.get("ended") or e.data.get("review") or e.type == "delivered" for _, e, _ in events):
            for ticket_id, event, operation_id in events:
                self.append(ticket_id, event, operation_id)
            return
        if not events:
            return
        now = self._now()
        self._many("insert_event", [
            {"ticket_id": ticket_id, "type": e.type, "actor": e.actor, "role": e.role.value, "attempt": e.attempt,
             "revision": e.revision, "operation_id": operation_id, "data": json.dumps(e.data), "now": now}
            for ticket_id, e, operation_id in events])  # fmt: skip
        started = [{"ticket_id": ticket_id, "attempt": e.attempt, "runner": e.data["runner"],
                    "revision": e.revision, "now": now}
                   for ticket_id, e, _ in events if e.type in ("claimed", "assigned", "sent_back")]  # fmt: skip
        if started:
            self._many("insert_attempt", started)

    def append(self, ticket_id: int, event: Event, operation_id: str | None) -> None:
        """Append the event and keep attempts, deliveries and reviews in step with it."""
        data = event.data
        common = {"ticket_id": ticket_id, "revision": event.revision}
        self._run(
            "insert_event",
            **common,
            type=event.type,
            actor=event.actor,
            role=event.role.value,
            attempt=event.attempt,
            operation_id=operation_id,
            data=json.dumps(data),
        )
        ended = data.get("ended")
        if ended:
            self._run("end_attempt", ticket_id=ticket_id, attempt=ended["attempt"], reason=ended["reason"])
        if event.type in ("claimed", "assigned", "sent_back"):
            self._run("insert_attempt", **common, attempt=event.attempt, runner=data["runner"])
        if event.type == "delivered":
            self._run(
                "insert_delivery",
                **common,
                number=data["delivery"],
                attempt=event.attempt,
                runner=event.actor,
                text=data["text"],
                evidence=json.dumps(data["evidence"]),
            )
        review = data.get("review")
        if review:
            self._run(
                "insert_review",
                **common,
                attempt=review["attempt"],
                delivery=review["delivery"],
                reviewer=event.actor,
                role=event.role.value,
                verdict=review["verdict"],
                independent=review["independent"],
                note=review["note"],
            )

    def events(self, ticket_id: int) -> list[Event]:
        rows = self._run("events", ticket_id=ticket_id).fetchall()
        return [
            Event(type_, actor, Role(role), revision, attempt, dict(_json(data)))
            for type_, actor, role, revision, attempt, data in rows
        ]


__all__ = ["Found", "Opening", "Snapshot", "StoredTicket", "WorkTx", "stored"]
