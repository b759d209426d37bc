"""The board's sessions of people signed in with GitHub (docs/board.md#signing-in), one row each, shared by every
process of a deployment. A row is found by the SHA-256 of the session id its cookie carries, so the table
alone opens no session; the GitHub token in it is encrypted by the caller before it gets here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, delete, insert, select, update

from . import tables as t
from .reads import utc

_c = t.board_sessions.c


@dataclass(frozen=True)
class BoardSession:
    login: str
    token: str  # encrypted, as stored
    repositories: frozenset[int]  # the ids of the repositories the person may read
    checked_at: datetime  # when GitHub last said which they are
    expires_at: datetime


class BoardSessions:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def create(self, key: str, session: BoardSession) -> None:
        """A new session under `key` (the SHA-256 of its id); sessions that ended are cleared out on the way."""
        with self.engine.begin() as connection:
            connection.execute(delete(t.board_sessions).where(_c.expires_at <= session.checked_at.astimezone(UTC)))
            connection.execute(
                insert(t.board_sessions).values(
                    id=key,
                    login=session.login,
                    token=session.token,
                    repositories=sorted(session.repositories),
                    checked_at=session.checked_at.astimezone(UTC),
                    expires_at=session.expires_at.astimezone(UTC),
                )
            )

    def find(self, key: str) -> BoardSession | None:
        with self.engine.connect() as connection:
            row = connection.execute(select(t.board_sessions).where(_c.id == key)).first()
        if row is None:
            return None
        return BoardSession(row.login, row.token, frozenset(int(r) for r in row.repositories), utc(row.checked_at),
                            utc(row.expires_at))  # fmt: skip

    def checked(self, key: str, repositories: frozenset[int], at: datetime) -> None:
        """GitHub said again, at `at`, which repositories the session's person may read."""
        with self.engine.begin() as connection:
            connection.execute(
                update(t.board_sessions)
                .where(_c.id == key)
                .values(repositories=sorted(repositories), checked_at=at.astimezone(UTC))
            )

    def end(self, key: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(delete(t.board_sessions).where(_c.id == key))
