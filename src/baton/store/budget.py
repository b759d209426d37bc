"""One GitHub write budget per installation, shared by every process through the database.

GitHub's secondary rate limits count content-creating requests per installation: about 80 a minute and
500 an hour, and it asks for them to be spaced (about a second apart). Every process writing for an
installation reads and spends the same row here, so four writers write no faster than one.

One writer at a time holds an installation (`hold`, kept by a heartbeat while it works, released after),
so its writes leave most urgent first. Its slots come from `slot()`: not before the budget's `next_at`, nor a
pause a rate limit set (`pause`, by any process), nor a time that would put more than the per-minute or
per-hour number of writes inside one minute or hour of the log. A hold that its writer's process stops renewing
(the process died) runs out after `HOLD`, a few seconds (`baton.store.leases`).

Offering issues (a new issue's label, a backfill's hundreds) may take only a share of the budget: the log
marks each offering write, and an offering write's slot also waits until fewer than half the per-minute
(and per-hour) number of offering writes lie inside the last minute (hour). Answers and the work of claimed
tickets are never held to it, so they always find room, whatever is left to offer.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from baton.environment.clock import Clock

from . import tables as t
from .engine import reader
from .leases import LEASE, Heartbeat

HOLD = LEASE

_b = t.write_budgets.c
_l = t.write_log.c

# The statements every GitHub write runs (hold, slot, spend, renew, release), built once: building one
# costs about as much CPU as running it on SQLite.
_ONE = _b.installation_id == bindparam("installation")
_UPSERT = {
    name: dialect.insert(t.write_budgets).values(installation_id=bindparam("installation")).on_conflict_do_nothing()
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))
}
_HOLD = (
    update(t.write_budgets)
    .where(
        _ONE,
        or_(_b.holder.is_(None), _b.held_until < bindparam("now"), _b.holder == bindparam("by")),
        or_(_b.paused_until.is_(None), _b.paused_until <= bindparam("now")),
        or_(_b.next_at.is_(None), _b.next_at <= bindparam("soon")),
    )
    .values(holder=bindparam("by"), held_until=bindparam("until"))
)
_RENEW = update(t.write_budgets).where(_ONE, _b.holder == bindparam("by")).values(held_until=bindparam("until"))
_RELEASE = update(t.write_budgets).where(_ONE, _b.holder == bindparam("by")).values(holder=None, held_until=None)
_SLOT = select(_b.next_at, _b.paused_until).where(_ONE)
# the write `skip` writes back in the log
_EDGE = (
    select(_l.at)
    .where(_l.installation_id == bindparam("installation"))
    .order_by(_l.at.desc())
    .offset(bindparam("skip"))
    .limit(1)
)
# the offering write `skip` writes back in the log
_OFFERING_EDGE = (
    select(_l.at)
    .where(_l.installation_id == bindparam("installation"), _l.offering.is_(True))
    .order_by(_l.at.desc())
    .offset(bindparam("skip"))
    .limit(1)
)
_LOG = insert(t.write_log).values(
    installation_id=bindparam("installation"), at=bindparam("moment"), offering=bindparam("offering")
)
_NEXT = update(t.write_budgets).where(_ONE).values(next_at=bindparam("next"))
_FORGET = delete(t.write_log).where(_l.installation_id == bindparam("installation"), _l.at < bindparam("before"))


@dataclass(frozen=True)
class Limits:
    """The write budget of one installation (settings `BATON_WRITE_INTERVAL`, `BATON_WRITES_PER_MINUTE`,
    `BATON_WRITES_PER_HOUR`)."""

    interval: float = 1.0  # seconds between two writes
    per_minute: int = 80
    per_hour: int = 500

    @property
    def offering_per_minute(self) -> int:
        """Offering's share of a minute's writes: half, and at least one."""
        return max(1, self.per_minute // 2)

    @property
    def offering_per_hour(self) -> int:
        """Offering's share of an hour's writes: half, and at least one."""
        return max(1, self.per_hour // 2)

    def offering_seconds(self, writes: int) -> float:
        """How long `writes` offering writes take at offering's share, from a log with none of them (and
        nothing else written meanwhile): whole hours of the hourly share, then minutes of the minute's, each
        paced by the interval."""
        if writes <= 0:
            return 0.0
        hours, rest = divmod(writes - 1, self.offering_per_hour)
        minutes, last = divmod(rest, self.offering_per_minute)
        return hours * 3600.0 + max(minutes * 60.0 + last * self.interval, rest * self.interval)


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def earliest(
    now: datetime,
    limits: Limits,
    next_at: datetime | None,
    paused_until: datetime | None,
    minute_edge: datetime | None,
    hour_edge: datetime | None,
) -> datetime:
    """The first moment a write may leave. `minute_edge` is the write `per_minute` writes back in the log
    (a new one must wait until it is a minute old), `hour_edge` the one `per_hour` back."""
    moments = [now]
    moments += [moment for moment in (next_at, paused_until) if moment is not None]
    if minute_edge is not None:
        moments.append(minute_edge + timedelta(minutes=1))
    if hour_edge is not None:
        moments.append(hour_edge + timedelta(hours=1))
    return max(moments)


class Budgets:
    """The budgets, as seen by one writer (`holder`: a name unique to its process and thread)."""

    def __init__(self, engine: Engine, limits: Limits, clock: Clock) -> None:
        self.engine = engine
        self._reads = reader(engine)  # what only reads takes no lock (`reader`)
        self.clock = clock
        self.limits = limits
        self._holds: Heartbeat[tuple[int, str]] = Heartbeat(self._renew_all, "baton-write-holds")

    def _upsert(self, connection: object, installation_id: int) -> None:
        statement = _UPSERT["postgresql" if self.engine.dialect.name == "postgresql" else "sqlite"]
        connection.execute(statement, {"installation": installation_id})  # type: ignore[attr-defined]

    def hold(self, installation_id: int, holder: str, now: datetime | None = None) -> bool:
        """Take the installation for `holder`, unless another writer holds it or its budget is spent for now."""
        now = now or self.clock.now()
        soon = now + timedelta(seconds=max(1.0, self.limits.interval))
        with self.engine.begin() as connection:
            self._upsert(connection, installation_id)
            taken = connection.execute(
                _HOLD, {"installation": installation_id, "now": now, "by": holder, "soon": soon, "until": now + HOLD}
            ).rowcount
        return bool(taken)

    def kept(self, installation_id: int, holder: str) -> AbstractContextManager[None]:
        """Keep `holder`'s hold on the installation alive while the block runs (a GitHub call may take
        longer than HOLD)."""
        return self._holds.holding([(installation_id, holder)])

    def _renew_all(self, holds: list[tuple[int, str]]) -> None:
        for installation_id, holder in holds:
            self.renew(installation_id, holder)

    def renew(self, installation_id: int, holder: str) -> bool:
        """Keep holding; False when the hold was lost (it ran out and another writer took it)."""
        now = self.clock.now()
        with self.engine.begin() as connection:
            kept = connection.execute(
                _RENEW, {"installation": installation_id, "by": holder, "until": now + HOLD}
            ).rowcount
        return bool(kept)

    def release(self, installation_id: int, holder: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(_RELEASE, {"installation": installation_id, "by": holder})

    def slot(self, installation_id: int, now: datetime | None = None, *, offering: bool = False) -> datetime:
        """The first moment the installation's next write may leave (`offering`: a write that offers an
        issue, which also waits for offering's share of the budget)."""
        now = now or self.clock.now()
        limits = self.limits
        with self._reads.connect() as connection:
            row = connection.execute(_SLOT, {"installation": installation_id}).first()
            edges = [
                connection.execute(_EDGE, {"installation": installation_id, "skip": max(0, count - 1)}).scalar()
                for count in (limits.per_minute, limits.per_hour)
            ]
            if offering:
                shares = [
                    connection.execute(
                        _OFFERING_EDGE, {"installation": installation_id, "skip": max(0, count - 1)}
                    ).scalar()
                    for count in (limits.offering_per_minute, limits.offering_per_hour)
                ]
        next_at, paused_until = (_utc(row.next_at), _utc(row.paused_until)) if row else (None, None)
        moment = earliest(now, limits, next_at, paused_until, _utc(edges[0]), _utc(edges[1]))
        if offering:
            moment = max(moment, earliest(now, limits, None, None, _utc(shares[0]), _utc(shares[1])))
        return moment

    def spend(self, installation_id: int, at: datetime | None = None, *, offering: bool = False) -> None:
        """One write leaves now: log it (`offering`: as offering's), and move the next slot an interval on."""
        at = at or self.clock.now()
        with self.engine.begin() as connection:
            self._upsert(connection, installation_id)
            connection.execute(_LOG, {"installation": installation_id, "moment": at, "offering": offering})
            connection.execute(
                _NEXT, {"installation": installation_id, "next": at + timedelta(seconds=self.limits.interval)}
            )
            connection.execute(_FORGET, {"installation": installation_id, "before": at - timedelta(hours=1)})

    def defer(self, installation_id: int, until: datetime) -> None:
        """No write before `until` (the per-minute or per-hour limit is reached): writers pass this one by."""
        with self.engine.begin() as connection:
            self._upsert(connection, installation_id)
            connection.execute(
                update(t.write_budgets)
                .where(_b.installation_id == installation_id, or_(_b.next_at.is_(None), _b.next_at < until))
                .values(next_at=until)
            )

    def pause(self, installation_id: int, until: datetime, reason: str) -> None:
        """GitHub said to wait (`Retry-After`, a rate limit's reset): every process stops writing for the
        installation until then."""
        with self.engine.begin() as connection:
            self._upsert(connection, installation_id)
            connection.execute(
                update(t.write_budgets)
                .where(
                    _b.installation_id == installation_id,
                    or_(_b.paused_until.is_(None), _b.paused_until < until),
                )
                .values(paused_until=until, pause_reason=reason[:500])
            )
