"""The PostgreSQL server the tests use (BATON_TEST_POSTGRES_URL), and scratch databases made on it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Engine, create_engine, text

from baton.store import make_engine, normalise_url, upgrade

POSTGRES_URL = os.environ.get("BATON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
POSTGRES_REQUIRED = os.environ.get("BATON_REQUIRE_POSTGRES") == "1"


def postgres_unavailable(reason: str) -> None:
    if POSTGRES_REQUIRED:
        pytest.fail(f"PostgreSQL is required here (BATON_REQUIRE_POSTGRES=1) but {reason}")
    pytest.skip(f"no PostgreSQL at {POSTGRES_URL}: {reason}")


@contextmanager
def scratch_database(prefix: str) -> Iterator[tuple[Engine, str]]:
    """A new, migrated PostgreSQL database beside POSTGRES_URL's, dropped afterwards: yields an admin engine
    (autocommit, on the server's default database) and the new database's name."""
    try:
        admin = create_engine(normalise_url(POSTGRES_URL), isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as error:
        postgres_unavailable(f"{type(error).__name__}: {error}")
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
        # A commit here need not wait for the disk: these tests stop Baton's processes, never PostgreSQL's,
        # and a commit is as visible to other sessions either way. It saves about 0.6 ms per commit.
        connection.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    try:
        engine = make_engine(url_of(admin, name))
        upgrade(engine)
        engine.dispose()
        yield admin, name
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def url_of(admin: Engine, name: str) -> str:
    """The URL of database `name` on `admin`'s server."""
    return admin.url.set(database=name).render_as_string(hide_password=False)
