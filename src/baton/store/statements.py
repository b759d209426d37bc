"""Plain SQL on the driver's cursor, inside a transaction SQLAlchemy opened: the hot path's statements.

SQLAlchemy owns the engines, the pool and the transaction; the work rail's and the outbox's hot statements
run on the driver's cursor, because SQLAlchemy's per-statement work (cache keys, parameter and result
processing) cost more than the database's. Statements are written once with `:name` parameters and SQLite's
two-argument MIN; `Statements` turns them into what each driver takes (`%(name)s`, LEAST on PostgreSQL) and
into multi-row INSERT templates. The schema they address is `tables.py`'s, which the migrations create and
a test compares.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Connection

from baton.domain.model import TicketKey
from baton.environment.clock import Clock

# The bound only stops a pathological livelock; a lost swap is made again at once, usually to a refusal.
MAX_ROUNDS = 50
# psycopg keeps how it parsed a statement's text for statements of at most this many parameters (and 4,096 bytes).
_KEPT_PARAMS = 50
_DEADLOCK = ("40P01", "40001")  # deadlock detected, serialization failure

T = TypeVar("T")


def key_params(key: TicketKey) -> dict[str, int]:
    """A ticket's key as the parameters `installation_id`, `repository_id` and `number` of a statement."""
    return {"installation_id": key.installation_id, "repository_id": key.repository_id, "number": key.number}


class Conflict(Exception):
    """Another transaction got there first: a unique constraint refused a row, or a compare-and-swap lost.
    Roll back and read again."""


def settle(what: str, attempt: Callable[[], T]) -> T:
    """The one retry loop for compare-and-swap: make `attempt` again while it raises `Conflict` or loses a
    PostgreSQL deadlock (each attempt a transaction of its own; or, for `Conflict` alone, a re-read inside
    one, as the evidence rail does)."""
    for _ in range(MAX_ROUNDS):
        try:
            return attempt()
        except Conflict:
            continue
        except Exception as error:
            # PostgreSQL chose this transaction to break a deadlock (two batches counting the claims of the
            # same runners in another order): nothing was written; go again.
            if getattr(error, "sqlstate", None) not in _DEADLOCK:
                raise
    raise RuntimeError(f"{what} did not settle in {MAX_ROUNDS} rounds")


def _many_form(sql: str, postgres: bool) -> tuple[str, str, str]:
    """An INSERT's head, its VALUES row with `{0}` where a row's number goes in each parameter's name, and
    what follows the row (an ON CONFLICT clause)."""
    head, _, values = sql.partition("VALUES")
    row, _, tail = values.strip().partition(")")
    row = re.sub(r":(\w+)", r"%(\1_{0})s" if postgres else r":\1_{0}", row + ")")
    if postgres:
        tail = re.sub(r":(\w+)", r"%(\1)s", tail).replace("MIN(", "LEAST(")
    return f"{head}VALUES ", row, tail


class Statements:
    """Named statements in both drivers' forms; `many` names the INSERTs also run for many rows at once."""

    def __init__(self, sql: Mapping[str, str], many: Iterable[str] = ()) -> None:
        self.sqlite = dict(sql)
        self.postgres = {name: re.sub(r":(\w+)", r"%(\1)s", s).replace("MIN(", "LEAST(") for name, s in sql.items()}
        self.many = {name: (_many_form(sql[name], False), _many_form(sql[name], True)) for name in many}


class RawTx:
    """Statements run inside one open transaction on its connection. Methods never commit."""

    def __init__(self, connection: Connection, statements: Statements, clock: Clock) -> None:
        self.connection = connection
        self.clock = clock  # the time `:now` and due times are written at
        dbapi_connection = connection.connection.dbapi_connection
        assert dbapi_connection is not None
        self._cursor = dbapi_connection.cursor()
        self._integrity_error: type[Exception] = connection.dialect.loaded_dbapi.IntegrityError
        self._postgres = connection.dialect.name == "postgresql"
        self._statements = statements
        self._sql = statements.postgres if self._postgres else statements.sqlite

    def close(self) -> None:
        self._cursor.close()

    @contextmanager
    def together(self) -> Iterator[None]:
        """The statements run inside are sent one after the other without waiting for each answer, on PostgreSQL
        (psycopg's pipeline mode: the answers come back together, and a statement whose rows are fetched waits
        for them); on SQLite they run as they come. A unique constraint that refuses a row is a `Conflict`, as
        at once."""
        if not self._postgres:
            yield
            return
        try:
            with self._cursor.connection.pipeline():
                yield
        except self._integrity_error as error:
            raise Conflict(str(error)) from error

    def _all(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[Sequence[Any]]:
        """The rows of each of `queries` (SQL in the driver's form, its parameters): on PostgreSQL sent together,
        each on a cursor of its own, and their answers read after one sync (one round trip, where the transaction
        has begun); on SQLite one after the other."""
        if not self._postgres or len(queries) < 2:
            found: list[Sequence[Any]] = []
            for sql, params in queries:
                self._cursor.execute(sql, params)
                found.append(self._cursor.fetchall())
            return found
        connection = self._cursor.connection
        cursors = [connection.cursor() for _ in queries]
        try:
            with connection.pipeline():
                for cursor, (sql, params) in zip(cursors, queries, strict=True):
                    cursor.execute(sql, params)
            return [cursor.fetchall() for cursor in cursors]
        finally:
            for cursor in cursors:
                cursor.close()

    def _now(self, after: float = 0.0) -> Any:
        return self._moment(self.clock.now() + timedelta(seconds=after))

    def _moment(self, moment: datetime) -> Any:
        """`moment` (aware, or naive in UTC) as the driver takes it: SQLite keeps timestamps as text, in UTC, in the
        form SQLAlchemy's DateTime reads back."""
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        return moment if self._postgres else moment.strftime("%Y-%m-%d %H:%M:%S.%f")

    def _run(self, name: str, **params: Any) -> Any:
        if ":now" in self._statements.sqlite[name]:
            params["now"] = self._now()
        try:
            self._cursor.execute(self._sql[name], params)
        except self._integrity_error as error:
            raise Conflict(str(error)) from error
        return self._cursor

    def _many(self, name: str, rows: list[dict[str, Any]], cursor: Any = None, **shared: Any) -> Any:
        """One multi-row INSERT for many rows of the statement `name` (one statement, one round trip), on `cursor`
        (else the transaction's); `shared`: the parameters of what follows the rows (an ON CONFLICT clause).

        On PostgreSQL, rows of more parameters than psycopg keeps a statement's parsing for (`_KEPT_PARAMS`) go as
        the one-row statement, once per row, sent together (psycopg's `executemany`, in pipeline mode): psycopg
        parses a statement's text for its parameters each time it is not kept, which for a batch of 200 answers
        (1,600 parameters) cost ten times the statement. Not for a statement whose rows are read back.

        On SQLite, no round trip away, the one-row statement runs once per row (`executemany`, the statement prepared
        once) unless the rows are read back: SQLite compiles a statement of many named parameters in a time that grows
        with their square (a 170-row INSERT of 9 columns took 4.9 ms, the rows one by one 0.6 ms)."""
        cursor = self._cursor if cursor is None else cursor
        single = self._sql[name]
        one_by_one = not self._postgres or (rows and len(rows) * len(rows[0]) > _KEPT_PARAMS)
        if rows and one_by_one and "RETURNING" not in single:
            try:
                cursor.executemany(single, [{**values, **shared} for values in rows])
            except self._integrity_error as error:
                raise Conflict(str(error)) from error
            return cursor
        head, row, tail = self._statements.many[name][self._postgres]
        sql = head + ", ".join(row.format(index) for index in range(len(rows))) + tail
        params = {f"{key}_{index}": value for index, values in enumerate(rows) for key, value in values.items()}
        try:
            cursor.execute(sql, {**params, **shared})
        except self._integrity_error as error:
            raise Conflict(str(error)) from error
        return cursor
