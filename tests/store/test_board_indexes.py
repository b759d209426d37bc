"""Migration 0018's indexes on SQLite and PostgreSQL: made over a store that had tickets before it, used by the
board's per-state read and by a ticket's lookup by repository name in any case, and the reads' answers the
same as before them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, event, text

from baton.domain import WorkState
from baton.store import make_engine, tables
from baton.store.migrate import alembic_config, current, head, upgrade
from baton.store.reads import Reads
from support.databases import scratch_database, url_of

INDEXES = {"ix_tickets_state_since", "ix_tickets_lower_repository_number", "ix_reviews_ticket_id_id"}
STATES = ("open", "claimed", "delivered", "accepted", "withdrawn")
BOARD = (WorkState.OPEN, WorkState.CLAIMED, WorkState.DELIVERED, WorkState.ACCEPTED)


@pytest.fixture(params=["sqlite", "postgresql"])
def before(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A store at migration 0017, the one before the indexes."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
        upgrade(engine, "0017")
        yield engine
        engine.dispose()
        return
    with scratch_database("baton_indexes") as (admin, name):
        engine = make_engine(url_of(admin, name))
        config = alembic_config()
        with engine.connect() as connection:  # the scratch database is at the newest: back down to 0017
            config.attributes["connection"] = connection
            command.downgrade(config, "0017")
            connection.commit()
        yield engine
        engine.dispose()


def _indexes(engine: Engine) -> set[str]:
    query = (
        "SELECT name FROM sqlite_master WHERE type = 'index'"
        if engine.dialect.name == "sqlite"
        else "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
    )
    with engine.connect() as connection:
        return set(connection.exec_driver_sql(query).scalars())


def _seed(engine: Engine) -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    rows = []
    for index in range(2000):
        state = STATES[index % len(STATES)]
        since = now - timedelta(minutes=index * 37 % 5000)
        rows.append(dict(
            id=index + 1, installation_id=1, repository_id=100 + index % 10, number=index // 10 + 1,
            repository=f"Octo/Repo-{index % 10}", state=state, revision=2, owner="olivia",
            runner=None if state == "open" else f"agent-{index % 3}", attempt=1, deliveries=0, created_at=since,
            # a few rows no migration dated: their time in the state is their last update
            updated_at=since, state_since=None if index % 50 == 0 else since,
        ))  # fmt: skip
    with engine.begin() as connection:
        connection.execute(tables.tickets.insert(), rows)


def _plans(engine: Engine, call: Any) -> str:
    """The plans of the SELECTs `call` makes, as the engine's EXPLAIN words them."""
    statements: list[tuple[str, Any]] = []

    def seen(connection: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        call()
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    sqlite = engine.dialect.name == "sqlite"
    lines = []
    with engine.connect() as connection:
        if not sqlite:
            # the seeded tables are small: a sequential scan would do as well; the question is whether the index can
            connection.execute(text("SET enable_seqscan = off"))
        for statement, parameters in statements:
            explained = connection.exec_driver_sql(("EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN ") + statement,
                                                   parameters)  # fmt: skip
            lines += [str(row[-1]) for row in explained]
    return "\n".join(lines)


def test_the_indexes_are_made_over_existing_tickets_and_serve_the_board_and_a_ticket_s_lookup(before: Engine) -> None:
    _seed(before)
    assert not INDEXES & _indexes(before)

    upgrade(before)
    assert current(before) == head() and _indexes(before) >= INDEXES
    if before.dialect.name == "postgresql":
        with before.begin() as connection:
            connection.execute(text("ANALYZE tickets"))
    reads = Reads(before)
    board = reads.board(states=BOARD, per_state=30)
    filtered = reads.board(repository="octo/repo-3", runner="AGENT-1", states=tuple(WorkState), per_state=5)
    found = reads.ticket("OCTO/repo-7", 12)
    assert [len([row for row in board.rows if row.ticket.state is state]) for state in BOARD] == [30] * 4
    assert board.totals == {state: 400 for state in BOARD}

    assert "ix_tickets_state_since" in _plans(before, lambda: reads.board(states=BOARD, per_state=30))
    assert "ix_tickets_lower_repository_number" in _plans(before, lambda: reads.ticket("OCTO/repo-7", 12))

    # the same answers without the indexes (the reads of today need the columns of later migrations)
    with before.begin() as connection:
        for index in sorted(INDEXES):
            connection.execute(text(f"DROP INDEX {index}"))
    assert not INDEXES & _indexes(before)
    assert reads.board(states=BOARD, per_state=30) == board
    assert reads.board(repository="octo/repo-3", runner="AGENT-1", states=tuple(WorkState), per_state=5) == filtered
    assert found is not None and reads.ticket("OCTO/repo-7", 12) == found
