"""The webhook inbox: hooks kept by `X-GitHub-Delivery`, each processed once unless it failed.

A hook is `pending` (waiting, or waiting until `next_attempt_at` after a passing failure),
`processing`, then `done`, `ignored` or `failed`. Deciding takes many pending hooks at once
(`take_pending`), oldest first; on PostgreSQL other processes skip the rows being taken.

A hook being processed is leased: while its process works on it (`Inbox.leased`), a thread of that
process renews the lease every `HEARTBEAT` seconds (`processed_at` is the last renewal). A lease that ran out
means the process is gone (killed, or cut off from the database): any process takes the hook again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, and_, bindparam, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from baton.environment.clock import Clock

from . import tables as t
from .engine import one_statement, reader, unreachable
from .leases import LEASE, Heartbeat

_inbox = t.webhook_deliveries
_c = _inbox.c
_payloads = t.webhook_payloads


# On PostgreSQL, storing hooks notifies this channel, so the decide lanes of other processes need
# not wait for their next look.
CHANNEL = "baton_inbox"


# A moment, or a bind parameter standing for one in a statement built once.
Moment = datetime | ColumnElement[Any]


def _lapsed(cutoff: Moment) -> ColumnElement[bool]:
    """Taken by a process before `cutoff` (now less the lease): that process is gone."""
    return and_(_c.status == "processing", _c.processed_at < cutoff)


def _abandoned(now: datetime) -> ColumnElement[bool]:
    return or_(_c.status == "failed", _lapsed(now - LEASE))


_RETURNED = (_c.id, _c.event, _c.action, _c.installation_id, _c.attempts, _c.received_at)  # `_hooks` unpacks them so
# The payloads of the hooks taken, read after taking them (a row of its own each: `tables.webhook_payloads`).
_PAYLOADS = select(_payloads.c.id, _payloads.c.payload).where(_payloads.c.id.in_(bindparam("ids", expanding=True)))

# Built once: each hook is taken and finished, and building the statements cost more than running them.
_TAKE = (
    update(_inbox)
    .where(_c.id == bindparam("hook"), _c.status == "pending")
    .values(status="processing", attempts=_c.attempts + 1, processed_at=bindparam("now"), next_attempt_at=None)
    .returning(*_RETURNED)
)
_FINISH = (
    update(_inbox)
    .where(_c.id == bindparam("hook"))
    .values(status=bindparam("status"), error=bindparam("error"), processed_at=bindparam("now"), next_attempt_at=None)
)


def _ready(now: Moment, cutoff: Moment) -> ColumnElement[bool]:
    """Pending and due, or taken by a process whose lease ran out (taken before `cutoff`, now less the lease)."""
    due = and_(_c.status == "pending", or_(_c.next_attempt_at.is_(None), _c.next_attempt_at <= now))
    return or_(due, _lapsed(cutoff))


# Built once, as every hook runs them: which of a batch are stored already, and a batch decided.
_KNOWN = select(_c.id).where(_c.id.in_(bindparam("ids", expanding=True)))
_FINISH_ALL = (
    update(_inbox)
    .where(_c.id.in_(bindparam("ids", expanding=True)))
    .values(status=bindparam("finished"), error=None, processed_at=bindparam("now"), next_attempt_at=None)
)
# Whether any hook is ready (`_ready`), built once: an idle decide lane asks it every `poll`.
_LOOK = select(_c.id).where(_ready(bindparam("now"), bindparam("cutoff"))).limit(1)
# The hooks `take_pending` would take, read without taking them (`Inbox.ready`), built once.
_READY = (
    select(*_RETURNED)
    .where(_ready(bindparam("now"), bindparam("cutoff")))
    .order_by(_c.received_at, _c.id)
    .limit(bindparam("limit"))
)


def _take_pending(postgresql: bool) -> Any:
    """Take up to `limit` ready hooks, oldest first: built once per dialect, as the decide lane runs it each round."""
    ready = _ready(bindparam("now"), bindparam("cutoff"))
    chosen = select(_c.id).where(ready).order_by(_c.received_at).limit(bindparam("limit"))
    if postgresql:
        chosen = chosen.with_for_update(skip_locked=True)
    return (
        update(_inbox)
        .where(_c.id.in_(chosen.scalar_subquery()), ready)
        .values(status="processing", attempts=_c.attempts + 1, processed_at=bindparam("now"), next_attempt_at=None)
        .returning(*_RETURNED)
    )


_TAKE_PENDING = {False: _take_pending(False), True: _take_pending(True)}


def _hooks(connection: Connection, rows: Sequence[Any], known: Callable[[str], str | None] | None = None) -> list[Hook]:
    """The hooks of `rows` (as `_RETURNED` reads them) with their payloads, in the order of the rows. `known`: the
    payload of a hook this process stored, where it still has it (a payload is written once): not read again."""
    payloads: dict[str, str] = {}
    if known is not None:
        payloads = {row[0]: text for row in rows if (text := known(row[0])) is not None}
    unread = [row[0] for row in rows if row[0] not in payloads]
    if unread:
        payloads.update((row.id, row.payload) for row in connection.execute(_PAYLOADS, {"ids": unread}))
    # The rows unpacked as tuples: reading a Row's columns by name cost more than the rest of making a hook.
    return [
        Hook(id_, event, action, installation_id, payloads.get(id_, ""), attempts,
             received_at if received_at.tzinfo else received_at.replace(tzinfo=UTC))
        for id_, event, action, installation_id, attempts, received_at in rows
    ]  # fmt: skip


@dataclass(frozen=True)
class Stored:
    """A hook as `baton deliveries` lists it."""

    id: str
    event: str
    action: str | None
    status: str
    attempts: int
    error: str | None
    received_at: datetime
    next_attempt_at: datetime | None


def _utc(value: datetime) -> datetime:
    """SQLite hands timestamps back without a zone (they are UTC); PostgreSQL in the session's zone."""
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


class Received(StrEnum):
    NEW = "new"  # stored now: process it
    RETRY = "retry"  # seen before and its processing failed: process it again
    DUPLICATE = "duplicate"  # seen before and processed (or being processed): nothing to do
    SPOOLED = "spooled"  # the database was unreachable: kept in the spool, stored when it returns


@dataclass(frozen=True)
class Incoming:
    """A hook as it arrives: `payload` is the JSON text exactly as GitHub sent it."""

    id: str
    event: str
    action: str | None
    installation_id: int | None
    payload: str
    received_at: datetime | None = None  # when it arrived, for one kept in the spool first; else now


@dataclass(frozen=True)
class Hook:
    id: str
    event: str
    action: str | None
    installation_id: int | None
    payload: str  # the JSON text exactly as GitHub sent it ("" once pruned: `baton.store.retention`)
    attempts: int
    received_at: datetime  # when it first arrived (a redelivery keeps it)


class InboxTx:
    """Hooks inside one open transaction, at `clock`'s time: those a decision's transaction finishes with it (a crash
    can then never leave a decided hook to be decided again). Methods never commit."""

    def __init__(self, connection: Connection, clock: Clock) -> None:
        self.connection = connection
        self.clock = clock

    def finish(self, ids: Sequence[str], status: str = "done") -> None:
        if ids:
            self.connection.execute(_FINISH_ALL, {"ids": list(ids), "finished": status, "now": self.clock.now()})


class Inbox:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self._reads = reader(engine)  # what only reads takes no lock (`reader`)
        self.clock = clock
        self._leases: Heartbeat[str] = Heartbeat(self._renew, "baton-leases")

    def _renew(self, ids: list[str]) -> None:
        with one_statement(self.engine) as connection:
            connection.execute(
                update(_inbox).where(_c.id.in_(ids), _c.status == "processing").values(processed_at=self.clock.now())
            )

    def leased(self, hooks: Iterable[Hook]) -> contextlib.AbstractContextManager[None]:
        """Keep the leases of taken hooks for as long as the block runs (it processes them). After it,
        a hook left unfinished is taken again once its lease runs out."""
        return self._leases.holding([hook.id for hook in hooks])

    def receive(self, incoming: Incoming) -> Received:
        """Store a hook, or recognise a redelivery. One transaction."""
        return self.receive_all([incoming])[0]

    def receive_each(self, batch: list[Incoming]) -> list[Received | Exception]:
        """`receive_all`, where a hook whose row fails fails alone: when the batch's transaction fails
        for any other reason than the database being unreachable, each hook is stored again in a
        transaction of its own. Each hook's result, or the error that kept it out."""
        if not batch:
            return []
        try:
            return list(self.receive_all(batch))
        except Exception as error:
            if len(batch) == 1 or unreachable(error):
                return [error] * len(batch)
        results: list[Received | Exception] = []
        for incoming in batch:
            try:
                results.append(self.receive_all([incoming])[0])
            except Exception as error:
                results.append(error)
        return results

    def receive_all(self, batch: list[Incoming]) -> list[Received]:
        """Store hooks, or recognise redeliveries, in one transaction (a group commit of the
        acknowledgements waiting at one moment). A hook id twice in one batch is a duplicate."""
        for _ in range(3):
            try:
                return self._receive_all(batch)
            except IntegrityError:
                # Another process stored one of these ids just now: it is found by the next try.
                continue
        raise RuntimeError("the inbox kept losing insert races")  # not reached with a working database

    def _receive_all(self, batch: list[Incoming]) -> list[Received]:
        now = self.clock.now()
        ids = {incoming.id for incoming in batch}
        results: list[Received] = []
        with self.engine.begin() as connection:
            known = set(connection.execute(_KNOWN, {"ids": list(ids)}).scalars())
            new: list[dict[str, object]] = []
            payloads: list[dict[str, object]] = []
            for incoming in batch:
                if incoming.id not in known:
                    known.add(incoming.id)
                    # its fields as they are (`asdict` copied each value deeply: most of storing a hook's time)
                    new.append({"id": incoming.id, "event": incoming.event, "action": incoming.action,
                                "installation_id": incoming.installation_id, "status": "pending", "attempts": 0,
                                "received_at": incoming.received_at or now})  # fmt: skip
                    payloads.append({"id": incoming.id, "payload": incoming.payload})
                    results.append(Received.NEW)
                    continue
                # Only a failed hook (or one whose lease ran out with its process, or one waiting
                # to be tried again) goes back to pending now, and only once however many copies arrive.
                waiting = and_(_c.status == "pending", _c.next_attempt_at.is_not(None))
                retried = connection.execute(
                    update(_inbox)
                    .where(_c.id == incoming.id, or_(_abandoned(now), waiting))
                    .values(status="pending", next_attempt_at=None)
                ).rowcount
                results.append(Received.RETRY if retried == 1 else Received.DUPLICATE)
            if new:
                connection.execute(insert(_inbox), new)
                connection.execute(insert(_payloads), payloads)
            if connection.dialect.name == "postgresql" and any(r is not Received.DUPLICATE for r in results):
                connection.exec_driver_sql(f"NOTIFY {CHANNEL}")  # wakes the decide lanes, sent at commit
        return results

    def listen(self, heard: Callable[[], None], stop: threading.Event) -> None:
        """Call `heard` whenever another process stores hooks, until `stop` is set (PostgreSQL only;
        a lost connection is made again a second later)."""
        if self.engine.dialect.name != "postgresql":
            return
        import psycopg

        conninfo = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        while not stop.is_set():
            try:
                with psycopg.connect(conninfo, autocommit=True) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    while not stop.is_set():
                        for _ in connection.notifies(timeout=1.0, stop_after=1):
                            heard()
            except psycopg.Error:
                stop.wait(1.0)

    def take(self, hook_id: str) -> Hook | None:
        """Mark a pending hook as being processed and return it; None if someone else took it."""
        with one_statement(self.engine) as connection:  # the payload, written once, is read after the taking
            row = connection.execute(_TAKE, {"hook": hook_id, "now": self.clock.now()}).first()
            return None if row is None else _hooks(connection, [row])[0]

    def take_pending(
        self, limit: int = 200, *, look: bool = True, known: Callable[[str], str | None] | None = None
    ) -> list[Hook]:
        """Take up to `limit` hooks that are ready (or whose lease ran out), oldest first, in one statement.
        Unless told not to `look` (a hook was just stored), it first looks whether any is ready, which takes
        no lock, and takes only then. `known`: the payloads this process stored and still has, by hook id
        (`intake.envelope.Parsed.text`), which are not read back."""
        now = self.clock.now()
        values = {"now": now, "cutoff": now - LEASE}
        if look:
            with one_statement(self.engine, reads=True) as connection:  # looking takes no lock; taking does
                if connection.execute(_LOOK, values).first() is None:
                    return []
        with one_statement(self.engine) as connection:  # the payloads, written once, are read after the taking
            statement = _TAKE_PENDING[self.engine.dialect.name == "postgresql"]
            taken = _hooks(connection, connection.execute(statement, {**values, "limit": limit}).all(), known)
        return sorted(taken, key=lambda d: (d.received_at, d.id))

    def ready(self, limit: int = 200, *, known: Callable[[str], str | None] | None = None) -> list[Hook]:
        """The hooks `take_pending` would take now, oldest first, read from a snapshot without taking them: for a
        caller that decides them in one transaction that finishes them (`InboxTx.finish`), where this process alone
        takes hooks (SQLite, `BATON_WORKER=inprocess`). A hook never taken has `attempts` 0. `known`: as for
        `take_pending`."""
        now = self.clock.now()
        with one_statement(self.engine, reads=True) as connection:
            rows = connection.execute(_READY, {"now": now, "cutoff": now - LEASE, "limit": limit}).all()
            return _hooks(connection, rows, known)

    def pending(self, limit: int = 100) -> list[str]:
        """Hooks waiting to be processed (or whose lease ran out), oldest first."""
        now = self.clock.now()
        with self._reads.connect() as connection:
            return list(
                connection.execute(
                    select(_c.id).where(_ready(now, now - LEASE)).order_by(_c.received_at).limit(limit)
                ).scalars()
            )

    def finish_all(self, finished: list[tuple[str, str]]) -> None:
        """`done` or `ignored`, many at once: one statement per status."""
        if not finished:
            return
        by_status: dict[str, list[str]] = {}
        for id_, status in finished:
            by_status.setdefault(status, []).append(id_)
        with self.engine.begin() as connection:
            finishing = InboxTx(connection, self.clock)
            for status, ids in by_status.items():
                finishing.finish(ids, status)

    def retry(self, hook_id: str, after: float, error: str) -> None:
        """Processing failed for a passing reason: try again in `after` seconds."""
        now = self.clock.now()
        with one_statement(self.engine) as connection:
            connection.execute(
                update(_inbox)
                .where(_c.id == hook_id)
                .values(status="pending", error=error, processed_at=now, next_attempt_at=now + timedelta(seconds=after))
            )

    def replay(self, hook_id: str) -> bool:
        """Make a hook pending again, now, with its attempts counted afresh (`baton replay`). False when
        there is no such hook, a living process is processing it right now, or its payload was pruned
        (`baton.store.retention`)."""
        with one_statement(self.engine) as connection:
            changed = connection.execute(
                update(_inbox)
                .where(_c.id == hook_id, or_(_c.status != "processing", _lapsed(self.clock.now() - LEASE)))
                .where(_c.id.in_(select(_payloads.c.id).where(_payloads.c.id == hook_id)))
                .values(status="pending", attempts=0, error=None, next_attempt_at=None)
            ).rowcount
        return bool(changed)

    def listed(self, status: str | None = None, limit: int = 100) -> list[Stored]:
        """Hooks, newest first; `status` keeps one status (`failed`, `pending` …)."""
        query = select(_c.id, _c.event, _c.action, _c.status, _c.attempts, _c.error, _c.received_at,
                       _c.next_attempt_at)  # fmt: skip
        if status is not None:
            query = query.where(_c.status == status)
        with one_statement(self.engine, reads=True) as connection:
            rows = connection.execute(query.order_by(_c.received_at.desc(), _c.id).limit(limit)).all()
        return [
            Stored(r.id, r.event, r.action, r.status, r.attempts, r.error, _utc(r.received_at),
                   _utc(r.next_attempt_at) if r.next_attempt_at else None)
            for r in rows
        ]  # fmt: skip

    def finish(self, hook_id: str, status: str, error: str | None = None) -> None:
        """`done`, `ignored` or `failed` (with the error, which a redelivery clears by succeeding).
        `processed_at` is the lease's last renewal while `processing`, and when processing ended after."""
        with one_statement(self.engine) as connection:
            connection.execute(_FINISH, {"hook": hook_id, "status": status, "error": error, "now": self.clock.now()})

    def status(self, hook_id: str) -> tuple[str, int, str | None] | None:
        with self._reads.connect() as connection:
            row = connection.execute(select(_c.status, _c.attempts, _c.error).where(_c.id == hook_id)).first()
        return None if row is None else (row.status, row.attempts, row.error)
