"""The agent API's idempotency keys (`Idempotency-Key`), per login: which request a key was first used for,
and the answer it got, so that a retry gets that answer again and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from baton.environment.clock import Clock

from . import tables as t

_c = t.api_requests.c
# Answers kept, and keys forgotten, many at once (`settle`): one statement each, run for many rows.
_ANSWERED = (
    update(t.api_requests)
    .where(_c.login == bindparam("who"), _c.key == bindparam("which"), _c.status.is_(None))
    .values(status=bindparam("answer"), body=bindparam("said"))
)
_RELEASED = delete(t.api_requests).where(
    _c.login == bindparam("who"), _c.key == bindparam("which"), _c.status.is_(None), _c.issue.is_(None)
)


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

    def claim_keys(self, asked: Sequence[tuple[str, str, str]]) -> list[Remembered | None]:
        """`claim_key` for many requests (login, key, fingerprint) that arrived together: every new key recorded
        by one statement in one transaction, and what the others were first used for read by one more. A key
        asked twice is new for its first request only; the second sees what the first left."""
        if not asked:
            return []
        now = self.clock.now()
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for login, key, fingerprint in asked:
            rows.setdefault((login.lower(), key), {"login": login.lower(), "key": key, "fingerprint": fingerprint,
                                                   "created_at": now})  # fmt: skip
        with self.engine.begin() as connection:
            dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
            made = connection.execute(
                dialect.insert(t.api_requests).values(list(rows.values())).on_conflict_do_nothing()
                .returning(_c.login, _c.key)
            )  # fmt: skip
            new = {(row.login, row.key) for row in made}
            seen = [where for where in rows if where not in new]
            earlier: dict[tuple[str, str], Remembered] = {}
            if seen:
                found = connection.execute(
                    select(_c.login, _c.key, _c.fingerprint, _c.status, _c.body, _c.issue, _c.created_at).where(
                        or_(*(and_(_c.login == login, _c.key == key) for login, key in seen))
                    )
                )
                for row in found:
                    created = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=UTC)
                    earlier[row.login, row.key] = Remembered(row.fingerprint, row.status, row.body, row.issue, created)
        answers: list[Remembered | None] = []
        for login, key, fingerprint in asked:
            where = (login.lower(), key)
            if where in new:  # the first request with the key: a later one in the batch sees it unanswered
                new.discard(where)
                mine = rows[where]
                earlier[where] = Remembered(mine["fingerprint"], None, None, None, now)
                answers.append(None)
            elif where in earlier:
                answers.append(earlier[where])
            else:  # forgotten meanwhile (its first request decided nothing): asked afresh
                answers.append(self.claim_key(login, key, fingerprint))
        return answers

    def settle(self, answers: Sequence[tuple[str, str, int | None, str | None]]) -> None:
        """Requests answered (login, key, status, body), all in one transaction: each answer is kept for its key,
        so that a retry gets it again; with `status` None the request decided nothing (Baton could not ask GitHub)
        and its key is forgotten, so that a retry is tried afresh. A key whose request opened an issue is kept,
        so that a retry claims that issue."""
        kept = [{"who": login.lower(), "which": key, "answer": status, "said": body}
                for login, key, status, body in answers if status is not None]  # fmt: skip
        forgotten = [{"who": login.lower(), "which": key} for login, key, status, _ in answers if status is None]
        if not (kept or forgotten):
            return
        with self.engine.begin() as connection:
            if kept:
                connection.execute(_ANSWERED, kept)
            if forgotten:
                connection.execute(_RELEASED, forgotten)

    def opened(self, login: str, key: str, number: int) -> None:
        """The create-and-claim request with `key` opened issue `number` on GitHub."""
        with self.engine.begin() as connection:
            connection.execute(
                update(t.api_requests).where(_c.login == login.lower(), _c.key == key).values(issue=number)
            )
