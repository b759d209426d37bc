"""`Checkpoints`: on a SQLite database in a file, each step copies the write-ahead log into the database file without
waiting for the pool's connections; a database in memory or on PostgreSQL has none to copy."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from baton.store import make_engine
from baton.store.engine import CHECKPOINT_EVERY, checkpoints


def test_a_step_copies_the_log_into_the_database_file(tmp_path: Path) -> None:
    database = tmp_path / "baton.db"
    engine = make_engine(f"sqlite:///{database}")
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE filler (body TEXT)"))
        steps = checkpoints(engine)
        assert steps is not None
        assert steps.step() == CHECKPOINT_EVERY
        before = database.stat().st_size
        with engine.begin() as connection:  # 2 MB in the log, under SQLite's own 1,000 pages
            connection.execute(text("INSERT INTO filler VALUES (:body)"), [{"body": "x" * 10_000}] * 200)
        assert database.stat().st_size == before  # in the log only, until a checkpoint
        with engine.connect() as reading:  # a reader holding its snapshot does not stop it (PASSIVE)
            reading.execute(text("SELECT count(*) FROM filler")).scalar_one()
            steps.step()
        assert database.stat().st_size - before > 1_900_000
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM filler")).scalar_one() == 200
        steps.close()
        steps.close()  # twice: nothing left to close
    finally:
        engine.dispose()


def test_a_database_in_memory_or_on_postgresql_has_no_log_to_copy() -> None:
    for url in ("sqlite://", "sqlite:///:memory:", "postgresql://nobody@127.0.0.1:1/none"):
        engine = make_engine(url)
        try:
            assert checkpoints(engine) is None, url
        finally:
            engine.dispose()
