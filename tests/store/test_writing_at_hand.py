"""`writing_at_hand`: on SQLite, a thread that finds the process's writer lock free keeps it for every transaction
it begins inside, so that the event loop deciding agent calls never waits for another thread of the process; where
another thread writes, the pool has no connection to spare, or the database is PostgreSQL, it says no at once."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from baton.store import make_engine
from baton.store.engine import writing_at_hand


def test_a_free_writer_lock_is_kept_for_each_transaction_inside_and_other_threads_write_after(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    order: list[str] = []
    began = threading.Event()

    def other() -> None:
        began.set()
        with engine.begin() as connection:  # waits for the writer lock held at hand
            connection.execute(text("CREATE TABLE IF NOT EXISTS later (x INTEGER)"))
            order.append("other")

    thread = threading.Thread(target=other)
    with writing_at_hand(engine) as free:
        assert free
        thread.start()
        assert began.wait(5)
        for n in range(3):  # each begins without waiting for the lock this thread holds
            with engine.begin() as connection:
                connection.execute(text("CREATE TABLE IF NOT EXISTS at_hand (x INTEGER)"))
                connection.execute(text("INSERT INTO at_hand VALUES (:x)"), {"x": n})
        thread.join(0.2)
        assert thread.is_alive()  # still waiting
        with writing_at_hand(engine) as again:
            assert not again  # not taken twice
        order.append("at hand")
    thread.join(10)
    assert order == ["at hand", "other"]
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM at_hand")).scalar_one() == 3
    engine.dispose()


def test_while_another_thread_writes_or_the_pool_is_out_of_connections_the_answer_is_no_at_once(
    sqlite_url: str,
) -> None:
    engine = make_engine(sqlite_url, pool_size=2, max_overflow=4)
    writing, done = threading.Event(), threading.Event()

    def other() -> None:
        with engine.begin() as connection:
            connection.execute(text("SELECT 1"))
            writing.set()
            done.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert writing.wait(5)
    with writing_at_hand(engine) as free:
        assert not free
    done.set()
    thread.join(10)
    with writing_at_hand(engine) as free:
        assert free
    held = [engine.connect(), engine.connect()]  # the two the pool keeps, out
    with writing_at_hand(engine) as free:
        assert not free
    held.pop().close()
    with writing_at_hand(engine) as free:
        assert free
    held.pop().close()
    engine.dispose()


@pytest.mark.postgres
def test_postgresql_is_never_written_at_hand(postgres_url: str) -> None:
    engine = make_engine(postgres_url)
    with writing_at_hand(engine) as free:
        assert not free
    engine.dispose()
