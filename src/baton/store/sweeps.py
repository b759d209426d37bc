"""Sweeps that one process makes at a time, whichever processes run (`sweeps`): a process takes a sweep's row
before it sweeps, and of two that try at once the database lets one take it. A holder that died lets go when
its hold runs out; the row also keeps when the last sweep ended, so a process sweeps only once that is long
enough ago.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Engine, insert, update
from sqlalchemy.exc import IntegrityError

from baton.environment.clock import Clock

from . import tables as t
from .engine import one_statement

_s = t.sweeps.c


class Sweeps:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def take(self, name: str, holder: str, hold: timedelta, since: timedelta | None = None) -> bool:
        """Whether `holder` sweeps `name` now, for at most `hold`: no other process holds it (or its hold ran
        out) and, with `since`, the last sweep ended at least that long ago."""
        now = self.clock.now()
        try:
            with one_statement(self.engine) as connection:
                connection.execute(insert(t.sweeps).values(name=name, holder=holder, held_until=now + hold))
            return True
        except IntegrityError:
            pass
        free = _s.held_until.is_(None) | (_s.held_until < now)
        if since is not None:
            free &= _s.swept_at.is_(None) | (_s.swept_at <= now - since)
        with one_statement(self.engine) as connection:
            taken = connection.execute(
                update(t.sweeps).where(_s.name == name, free).values(holder=holder, held_until=now + hold)
            ).rowcount
        return taken == 1

    def done(self, name: str, holder: str) -> None:
        """The sweep ended: the next is due `since` from now."""
        self._let_go(name, holder, swept_at=self.clock.now())

    def release(self, name: str, holder: str) -> None:
        """The sweep failed: any process may sweep again at once."""
        self._let_go(name, holder)

    def _let_go(self, name: str, holder: str, **values: datetime) -> None:
        with one_statement(self.engine) as connection:
            connection.execute(
                update(t.sweeps)
                .where(_s.name == name, _s.holder == holder)
                .values(holder=None, held_until=None, **values)
            )
