"""The agent API's idempotency keys (`Idempotency-Key`), per login: which request a key was first used for,
and the answer it got, so that a retry gets that answer again and changes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from baton.environment.clock import Clock

from . import tables as t

_c = t.api_requests.c


@dataclass(frozen=True)
class Remembered:
    fingerprint: str
    status: int | None  # None: the first request with the key has not been answered (yet, or it died)
    body: str | None
    issue: int | None = None  # the issue a create-and-claim with the key opened
    created_at: datetime | None = None


class ApiRequests:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    def claim_key(self, login: str, key: str, fingerprint: str) -> Remembered | None:
        """Record `key` for this request; None when it is new, else what the key was first used for."""
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    insert(t.api_requests).values(
                        login=login.lower(), key=key, fingerprint=fingerprint, created_at=self.clock.now()
                    )
                )
            return None
        except IntegrityError:
            pass
        with self.engine.connect() as connection:
            row = connection.execute(
                select(_c.fingerprint, _c.status, _c.body, _c.issue, _c.created_at).where(
                    _c.login == login.lower(), _c.key == key
                )
            ).one()
        created = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)
        return Remembered(row.fingerprint, row.status, row.body, row.issue, created)

    def release(self, login: str, key: str) -> None:
        """Forget `key`, whose first request decided nothing (Baton could not ask GitHub): a retry is tried
        afresh. A key whose request opened an issue is kept, so that a retry claims that issue."""
        with self.engine.begin() as connection:
            connection.execute(
                delete(t.api_requests).where(
                    _c.login == login.lower(), _c.key == key, _c.status.is_(None), _c.issue.is_(None)
                )
            )

    def opened(self, login: str, key: str, number: int) -> None:
        """The create-and-claim request with `key` opened issue `number` on GitHub."""
        with self.engine.begin() as connection:
            connection.execute(
                update(t.api_requests).where(_c.login == login.lower(), _c.key == key).values(issue=number)
            )

    def answered(self, login: str, key: str, status: int, body: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(
                update(t.api_requests)
                .where(_c.login == login.lower(), _c.key == key, _c.status.is_(None))
                .values(status=status, body=body)
            )
