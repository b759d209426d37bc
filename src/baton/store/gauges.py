"""What the database holds right now, for `/metrics`: read at each scrape, so the figures are those of every
process sharing the database. Three small aggregate queries, each over an index or a small table: the outbox
(a row per issue still to be shown), the hooks waiting to be decided, and the claims flagged stale."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Engine, and_, case, func, select, text

from . import tables as t
from .engine import reader
from .outbox.marking import OFFERING
from .outbox.writing import MAX_ATTEMPTS, utc

_o = t.outbox.c
_d = t.webhook_deliveries.c


@dataclass(frozen=True)
class Backlog:
    """One installation's outbox: issues still to be shown, how long the most overdue has been due (0: none
    is due yet), and issues waiting for their next change after GitHub refused them (`baton refused`)."""

    issues: int = 0
    oldest_due_seconds: float = 0.0
    parked: int = 0
    to_offer: int = 0  # of `issues`, those only being offered (the outbox's lowest tier)


@dataclass(frozen=True)
class Readings:
    outbox: dict[int, Backlog] = field(default_factory=dict)  # by installation, every one Baton knows
    waiting: int = 0  # hooks pending or being decided
    oldest_waiting_seconds: float = 0.0
    stale: dict[int, int] = field(default_factory=dict)  # claims flagged stale, by installation
    rows: dict[str, int] = field(default_factory=dict)  # rows stored, by table (PostgreSQL: its planner's estimate)
    # how long the oldest answer (👍 or reply) not yet on GitHub has waited, by installation
    answers_waiting: dict[int, float] = field(default_factory=dict)


# The tables that grow with use, whose rows the metrics show (`baton.store.retention` prunes some of them).
COUNTED = (
    t.webhook_deliveries, t.webhook_payloads, t.redeliveries, t.api_requests, t.board_sessions, t.events,
    t.evidence_events, t.operations, t.outbox_items, t.tickets,
)  # fmt: skip


def read(engine: Engine, now: datetime) -> Readings:
    parked = _o.attempts >= MAX_ATTEMPTS
    # Reading only: on SQLite a scrape takes no writer lock, so it neither waits for the work nor holds it up.
    with reader(engine).connect() as connection:
        known = connection.execute(select(t.installations.c.id)).scalars().all()
        outbox = {
            row.installation_id: row
            for row in connection.execute(
                select(
                    _o.installation_id,
                    func.count().label("issues"),
                    func.sum(case((parked, 1), else_=0)).label("parked"),
                    func.sum(case((and_(~parked, _o.urgency >= OFFERING), 1), else_=0)).label("to_offer"),
                    func.min(case((and_(~parked, _o.due_at <= now), _o.due_at), else_=None)).label("due"),
                ).group_by(_o.installation_id)
            )
        }
        waiting = connection.execute(
            select(func.count(), func.min(_d.received_at)).where(_d.status.in_(("pending", "processing")))
        ).one()
        a, k = t.ticket_activity.c, t.tickets.c
        stale = {
            row.installation_id: int(row.claims)
            for row in connection.execute(
                select(k.installation_id, func.count().label("claims"))
                .select_from(t.ticket_activity.join(t.tickets, k.id == a.ticket_id))
                .where(a.stale_at.is_not(None), k.state == "claimed")
                .group_by(k.installation_id)
            )
        }
        rows = _rows(connection)
        i = t.outbox_items.c
        waiting_answers = {
            row.installation_id: (now - utc(row.oldest)).total_seconds()
            for row in connection.execute(
                select(i.installation_id, func.min(i.created_at).label("oldest"))
                .where(i.sent_at.is_(None), i.dropped.is_(None))
                .group_by(i.installation_id)
            )
        }
    backlogs: dict[int, Backlog] = {}
    for installation_id in {*known, *outbox}:
        row = outbox.get(installation_id)
        if row is None:
            backlogs[installation_id] = Backlog()
            continue
        due = (now - utc(row.due)).total_seconds() if row.due is not None else 0.0
        backlogs[installation_id] = Backlog(
            int(row.issues) - int(row.parked), max(0.0, due), int(row.parked), int(row.to_offer)
        )
    oldest = (now - utc(waiting[1])).total_seconds() if waiting[1] is not None else 0.0
    return Readings(
        backlogs,
        int(waiting[0]),
        max(0.0, oldest),
        stale,
        rows,
        {installation_id: max(0.0, seconds) for installation_id, seconds in waiting_answers.items()},
    )


def _rows(connection: Connection) -> dict[str, int]:
    """Rows in each table of COUNTED. PostgreSQL's planner keeps an estimate that costs nothing to read, where
    a count walks the whole table; a table it has not estimated yet (-1) is counted."""
    names = [table.name for table in COUNTED]
    estimated: dict[str, int] = {}
    if connection.dialect.name == "postgresql":
        found = connection.execute(
            text("SELECT relname, reltuples FROM pg_class WHERE relname = ANY(:names) AND relkind = 'r' "
                 "AND pg_table_is_visible(oid)"), {"names": names},
        )  # fmt: skip
        estimated = {name: int(tuples) for name, tuples in found if tuples >= 0}
    return {
        table.name: estimated[table.name]
        if table.name in estimated
        else int(connection.execute(select(func.count()).select_from(table)).scalar_one())
        for table in COUNTED
    }
