"""The redeliveries Baton asked GitHub for, one row per entry of GitHub's delivery log (`redeliveries`), and
which of GitHub's delivery GUIDs the webhook inbox holds.

Asking is taken like a lease: a process inserts the entry's row (`asking`) before it calls GitHub, and of two
processes that try at once, the database lets one insert it. The row becomes `asked` when GitHub took the
request, `refused` when GitHub refused it for good, and is deleted when GitHub failed to answer (the next sweep
asks again). An `asking` row older than `STALE` belonged to a process that died while it asked: it is taken
over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, timedelta

from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from baton.environment.clock import Clock

from . import tables as t
from .engine import one_statement

_c = t.redeliveries.c
_inbox = t.webhook_deliveries.c

STALE = timedelta(minutes=2)  # far longer than a call to GitHub may take (`BATON_GITHUB_TIMEOUT`)
CHUNK = 500  # values per IN (…): well under SQLite's limit of bound parameters


def _chunks(values: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]


class Redeliveries:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def stored(self, guids: Iterable[str]) -> set[str]:
        """The GUIDs among `guids` that the webhook inbox holds (received, whatever became of them)."""
        found: set[str] = set()
        with one_statement(self.engine, reads=True) as connection:
            for chunk in _chunks(sorted(set(guids))):
                found.update(connection.execute(select(_inbox.id).where(_inbox.id.in_(chunk))).scalars())
        return found

    def asked(self, guids: Iterable[str]) -> tuple[set[int], Counter[str]]:
        """For `guids`: the log entries asked for (or being asked for by a living process), and how many
        entries were asked for per GUID."""
        ids: set[int] = set()
        per_guid: Counter[str] = Counter()
        stale = self.clock.now() - STALE
        with one_statement(self.engine, reads=True) as connection:
            for chunk in _chunks(sorted(set(guids))):
                query = select(_c.delivery_id, _c.guid, _c.status, _c.asked_at).where(_c.guid.in_(chunk))
                for row in connection.execute(query):
                    asked_at = row.asked_at if row.asked_at.tzinfo else row.asked_at.replace(tzinfo=UTC)
                    if row.status != "asking" or asked_at >= stale:
                        ids.add(int(row.delivery_id))
                    per_guid[row.guid] += 1
        return ids, per_guid

    def take(self, attempt_id: int, guid: str, event: str) -> bool:
        """Whether this process may ask for entry `attempt_id` now: it is new, or the process that was
        asking for it died. False: another process has it (or it was asked for already)."""
        now = self.clock.now()
        try:
            with one_statement(self.engine) as connection:
                connection.execute(
                    insert(t.redeliveries).values(
                        delivery_id=attempt_id, guid=guid, event=event[:60], status="asking", asked_at=now
                    )
                )
            return True
        except IntegrityError:
            pass
        with one_statement(self.engine) as connection:
            taken = connection.execute(
                update(t.redeliveries)
                .where(_c.delivery_id == attempt_id, _c.status == "asking", _c.asked_at < now - STALE)
                .values(asked_at=now)
            ).rowcount
        return taken == 1

    def done(self, attempt_id: int) -> None:
        """GitHub took the request: the entry is never asked for again."""
        self._finish(attempt_id, "asked", None)

    def refused(self, attempt_id: int, reason: str) -> None:
        """GitHub refused the request for good (an entry it no longer has): never asked for again."""
        self._finish(attempt_id, "refused", reason)

    def release(self, attempt_id: int) -> None:
        """GitHub did not answer: the entry is left for the next sweep to ask for."""
        with one_statement(self.engine) as connection:
            connection.execute(delete(t.redeliveries).where(_c.delivery_id == attempt_id, _c.status == "asking"))

    def ping(self) -> None:
        """Raises when the database cannot be reached: a sweep finds out before it calls GitHub."""
        with one_statement(self.engine, reads=True) as connection:
            connection.execute(select(func.count()).select_from(t.redeliveries).where(_c.delivery_id == 0))

    def _finish(self, attempt_id: int, status: str, error: str | None) -> None:
        with one_statement(self.engine) as connection:
            connection.execute(
                update(t.redeliveries).where(_c.delivery_id == attempt_id).values(status=status, error=error)
            )
