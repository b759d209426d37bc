"""A runner's activity on a ticket, and the stale flag of a quiet claim: the activity facet of a unit of work.

One row per ticket in `ticket_activity`, beside the ticket's row and never in it: recording activity changes
no work state and no revision. `touch` is the one write of "activity at time T on ticket K"; `flag` is the
sweep's compare-and-swap that marks a quiet claim stale once per quiet period.

It imports nothing of the work rail, so the evidence service records pushes and pull request updates with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict

from sqlalchemy import Connection

from baton.domain.model import APP_ACTOR, Event, Role, TicketKey
from baton.environment.clock import Clock

from .statements import RawTx, Statements, key_params


class Touching(TypedDict, total=False):
    """How `touch` takes an activity, for those who pass it on (`baton.service.activity.record_activity`)."""

    by: str | None
    runner_only: bool
    quietly: bool
    known: tuple[int, str] | None


_STATEMENTS = Statements({
    "ticket": """
        SELECT id, repository, state, runner, revision, attempt, updated_at FROM tickets
        WHERE installation_id = :installation_id AND repository_id = :repository_id AND number = :number""",
    # A ticket's first activity row; its quiet period starts at `at`.
    "ensure": """
        INSERT INTO ticket_activity (ticket_id, last_activity_at, source)
        VALUES (:ticket_id, :at, :source)
        ON CONFLICT (ticket_id) DO NOTHING""",
    "lock_sqlite": "SELECT last_activity_at, stale_at FROM ticket_activity WHERE ticket_id = :ticket_id",
    "lock_postgres": "SELECT last_activity_at, stale_at FROM ticket_activity WHERE ticket_id = :ticket_id FOR UPDATE",
    # Later activity moves the time on; an earlier one told late (a webhook delivered again) does not move it back.
    "touch": """
        UPDATE ticket_activity SET stale_at = NULL,
            source = CASE WHEN last_activity_at <= :at THEN :source ELSE source END,
            last_activity_at = CASE WHEN last_activity_at <= :at THEN :at ELSE last_activity_at END
        WHERE ticket_id = :ticket_id""",
    # A new quiet period without looking at the old one (a transition: its event says what ended).
    "restart": """
        INSERT INTO ticket_activity (ticket_id, last_activity_at, source, stale_at)
        VALUES (:ticket_id, :at, :source, NULL)
        ON CONFLICT (ticket_id) DO UPDATE SET stale_at = NULL,
            source = CASE WHEN ticket_activity.last_activity_at <= excluded.last_activity_at
                THEN excluded.source ELSE ticket_activity.source END,
            last_activity_at = CASE WHEN ticket_activity.last_activity_at <= excluded.last_activity_at
                THEN excluded.last_activity_at ELSE ticket_activity.last_activity_at END""",
    # The compare-and-swap of a quiet period: only while it is not flagged, and no activity came since `cutoff`.
    "flag": """
        UPDATE ticket_activity SET stale_at = :at
        WHERE ticket_id = :ticket_id AND stale_at IS NULL AND last_activity_at <= :cutoff""",
    "insert_event": """
        INSERT INTO events (ticket_id, type, actor, role, attempt, revision, operation_id, data, created_at)
        VALUES (:ticket_id, :type, :actor, :role, :attempt, :revision, NULL, :data, :now)""",
    "quiet_claims": """
        SELECT t.id, t.installation_id, t.repository_id, t.number, t.repository, t.revision,
            COALESCE(a.last_activity_at, t.updated_at), a.stale_at
        FROM tickets AS t LEFT JOIN ticket_activity AS a ON a.ticket_id = t.id
        WHERE t.state = 'claimed' ORDER BY t.id""",
    "quiet": """
        SELECT a.last_activity_at, a.stale_at FROM tickets AS t
        JOIN ticket_activity AS a ON a.ticket_id = t.id
        WHERE t.installation_id = :installation_id AND t.repository_id = :repository_id AND t.number = :number""",
}, many=("restart",))  # fmt: skip


def when(value: Any) -> datetime:
    """A timestamp as the driver hands it back (SQLite: text in UTC), aware, in UTC."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True)
class Touched:
    """Activity recorded on a tracked ticket. `resumed`: it ended a stale flag, quiet since `quiet_since`."""

    ticket_id: int
    repository: str
    resumed: bool = False
    quiet_since: datetime | None = None


@dataclass(frozen=True)
class QuietClaim:
    """A claimed ticket as the sweep reads it: quiet since `since` (its last activity, else its last change),
    flagged stale at `stale_at` or not."""

    ticket_id: int
    key: TicketKey
    repository: str
    revision: int
    since: datetime
    stale_at: datetime | None


class ActivityTx(RawTx):
    """Activity and stale flags inside one open transaction, at `clock`'s time. Methods never commit."""

    def __init__(self, connection: Connection, clock: Clock) -> None:
        super().__init__(connection, _STATEMENTS, clock)

    def _stamp(self, at: datetime) -> Any:
        # SQLite keeps timestamps as text, in the form SQLAlchemy's DateTime reads back.
        return at if self._postgres else at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    def _lock(self, ticket_id: int, since: datetime, source: str) -> tuple[datetime, datetime | None]:
        """The ticket's activity row (made first where there is none), locked until the transaction ends."""
        self._run("ensure", ticket_id=ticket_id, at=self._stamp(since), source=source)
        row = self._run("lock_postgres" if self._postgres else "lock_sqlite", ticket_id=ticket_id).fetchone()
        return when(row[0]), None if row[1] is None else when(row[1])

    def touch(
        self,
        key: TicketKey,
        source: str,
        *,
        by: str | None = None,
        runner_only: bool = False,
        quietly: bool = False,
        known: tuple[int, str] | None = None,
    ) -> Touched | None:
        """Record activity on the ticket now: its quiet period starts again, and a stale flag ends. Unless
        `quietly`, a flag that ends is an `activity_resumed` event. With `runner_only`, only activity `by` the
        ticket's runner counts. None when the ticket is not tracked (or `by` is not its runner). `known`: the
        ticket's id and repository, when the caller has them (a quiet touch is then one statement)."""
        source = source[:40]
        if quietly and known is not None and not runner_only:
            self._run("restart", ticket_id=known[0], at=self._stamp(self.clock.now()), source=source)
            return Touched(known[0], known[1])
        row = self._run("ticket", **key_params(key)).fetchone()
        if row is None:
            return None
        ticket_id, repository, state, runner, revision, attempt, _ = row
        if runner_only and (by is None or runner is None or by.lower() != str(runner).lower()):
            return None
        now = self.clock.now()
        last, stale_at = self._lock(int(ticket_id), now, source)
        self._run("touch", ticket_id=ticket_id, at=self._stamp(now), source=source)
        if stale_at is None:
            return Touched(int(ticket_id), repository)
        if not quietly and state == "claimed":
            data = {"source": source, "by": by, "quiet_since": last.isoformat(), "flagged_at": stale_at.isoformat()}
            event = Event("activity_resumed", APP_ACTOR, Role.APP, revision, attempt, data)
            self.append_event(int(ticket_id), event)
        return Touched(int(ticket_id), repository, resumed=True, quiet_since=last)

    def restart_all(self, sources: Mapping[int, str]) -> None:
        """A quiet `touch` of many tickets (by id, with what it was) in one statement, in the order of their ids."""
        if sources:
            at = self._stamp(self.clock.now())
            self._many("restart", [{"ticket_id": ticket_id, "at": at, "source": sources[ticket_id][:40]}
                                   for ticket_id in sorted(sources)])  # fmt: skip

    def flag(self, ticket_id: int, since: datetime, cutoff: datetime) -> bool:
        """Mark the claim stale, once for its quiet period: True for the one transaction that does, while the
        ticket is not flagged and had no activity after `cutoff`. `since` starts a row the ticket lacks."""
        self._lock(ticket_id, since, "claim")
        cursor = self._run("flag", ticket_id=ticket_id, at=self._stamp(self.clock.now()), cutoff=self._stamp(cutoff))
        return bool(cursor.rowcount == 1)

    def append_event(self, ticket_id: int, event: Event) -> None:
        """An event of the ticket's history that is not a work transition (its revision stays)."""
        self._run(
            "insert_event",
            ticket_id=ticket_id,
            type=event.type,
            actor=event.actor,
            role=event.role.value,
            attempt=event.attempt,
            revision=event.revision,
            data=json.dumps(event.data),
        )

    def quiet_claims(self) -> list[QuietClaim]:
        """Every claimed ticket, with when it went quiet and whether it is flagged."""
        found = []
        for row in self._run("quiet_claims").fetchall():
            ticket_id, installation_id, repository_id, number, repository, revision, since, stale_at = row
            key = TicketKey(installation_id, repository_id, number)
            found.append(QuietClaim(int(ticket_id), key, repository, revision, when(since),
                                    None if stale_at is None else when(stale_at)))  # fmt: skip
        return found

    def quiet(self, key: TicketKey) -> tuple[datetime, datetime | None] | None:
        """The ticket's last activity and stale flag; None before its first activity."""
        row = self._run("quiet", **key_params(key)).fetchone()
        return None if row is None else (when(row[0]), None if row[1] is None else when(row[1]))


__all__ = ["ActivityTx", "QuietClaim", "Touched", "Touching", "when"]
