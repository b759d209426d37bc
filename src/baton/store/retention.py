"""What Baton keeps, and for how long (docs/operations.md, "Storage"). The events of both rails — the audit log —
are kept for good; what only served a moment is pruned:

- a hook processed (`done` or `ignored`) loses its payload after `Keep.payloads`, and keeps its id,
  so that a redelivery of it is still recognised and changes nothing; its row goes after `Keep.hooks`.
  A failed or pending hook keeps everything (`baton replay` needs its payload);
- a redelivery Baton asked GitHub for goes with the hooks (`Keep.hooks`);
- an agent API idempotency key goes after `Keep.keys` (a retry after that is a new request);
- a board session goes as soon as it has expired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Delete, Engine, Executable, Select, delete, select

from baton.environment import settings
from baton.environment.clock import Clock

from . import tables as t
from .engine import one_statement

_w = t.webhook_deliveries.c
_p = t.webhook_payloads.c
PROCESSED = ("done", "ignored")
# GitHub redelivers a hook for up to three days: a hook's row is never pruned sooner, or a redelivery
# of it would be decided again.
REDELIVERY_WINDOW = timedelta(seconds=settings.REDELIVERY_WINDOW)
# Pruned in batches of this many rows, each in a transaction of its own: a year's backlog never holds a lock long.
BATCH = 5000


@dataclass(frozen=True)
class Keep:
    """How long each kind is kept (settings `BATON_KEEP_PAYLOADS`, `BATON_KEEP_DELIVERIES`)."""

    payloads: timedelta = timedelta(days=14)
    hooks: timedelta = timedelta(days=90)
    keys: timedelta = timedelta(hours=24)

    @classmethod
    def of(cls, kept: settings.Settings) -> Keep:
        """What `BATON_KEEP_PAYLOADS` and `BATON_KEEP_DELIVERIES` say (idempotency keys: a day, always)."""
        return cls(timedelta(seconds=kept.keep_payloads), timedelta(seconds=kept.keep_deliveries))

    def older_than(self, age: timedelta) -> Keep:
        """Everything kept at most `age` (`baton db prune --older-than`), hooks' rows never less than
        GitHub's redelivery window."""
        return Keep(min(self.payloads, age), max(REDELIVERY_WINDOW, min(self.hooks, age)), min(self.keys, age))


@dataclass(frozen=True)
class Pruned:
    payloads: int = 0  # hooks' payloads emptied
    hooks: int = 0  # hooks' rows removed
    redeliveries: int = 0
    keys: int = 0  # idempotency keys
    sessions: int = 0  # board sessions

    def total(self) -> int:
        return self.payloads + self.hooks + self.redeliveries + self.keys + self.sessions

    def counts(self) -> dict[str, int]:
        """By the names `baton db prune --json` and the log line give them: a hook's row is a `deliveries` row."""
        return {"payloads": self.payloads, "deliveries": self.hooks, "redeliveries": self.redeliveries,
                "keys": self.keys, "sessions": self.sessions}  # fmt: skip


class Retention:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def prune(self, keep: Keep, now: datetime | None = None) -> Pruned:
        now = now or self.clock.now()
        processed = _w.status.in_(PROCESSED)
        hooks_before = now - max(keep.hooks, REDELIVERY_WINDOW)
        return Pruned(
            # rows first, with their payloads: a payload about to go with its row is not counted apart
            hooks=self._batches(
                lambda ids: (
                    delete(t.webhook_payloads).where(_p.id.in_(ids)),
                    delete(t.webhook_deliveries).where(_w.id.in_(ids)),
                ),
                select(_w.id).where(processed, _w.processed_at < hooks_before),
            ),
            payloads=self._batches(
                lambda ids: delete(t.webhook_payloads).where(_p.id.in_(ids)),
                select(_p.id)
                .join(t.webhook_deliveries, _w.id == _p.id)
                .where(processed, _w.processed_at < now - keep.payloads),
            ),
            redeliveries=self._batches(
                lambda ids: delete(t.redeliveries).where(t.redeliveries.c.delivery_id.in_(ids)),
                select(t.redeliveries.c.delivery_id).where(
                    t.redeliveries.c.status != "asking", t.redeliveries.c.asked_at < hooks_before
                ),
            ),
            keys=self._delete(delete(t.api_requests).where(t.api_requests.c.created_at < now - keep.keys)),
            sessions=self._delete(delete(t.board_sessions).where(t.board_sessions.c.expires_at < now)),
        )

    def _batches(
        self, change: Callable[[Sequence[Any]], Executable | tuple[Executable, ...]], chosen: Select[Any]
    ) -> int:
        """`change` made to the rows `chosen` picks, `BATCH` at a time, each batch in a transaction: its statement,
        or its statements in order."""
        done = 0
        while True:
            with self.engine.begin() as connection:
                ids = connection.execute(chosen.limit(BATCH)).scalars().all()
                if not ids:
                    return done
                made = change(ids)
                for statement in made if isinstance(made, tuple) else (made,):
                    connection.execute(statement)
            done += len(ids)

    def _delete(self, statement: Delete) -> int:
        with one_statement(self.engine) as connection:
            return connection.execute(statement).rowcount
