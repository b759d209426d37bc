"""Apply the alembic migrations that ship inside the package."""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

MIGRATIONS = Path(__file__).parent / "migrations"

# Any fixed number: several processes starting at once take turns at migrating.
_PG_MIGRATION_LOCK = 0x6261746F6E


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    if revision == "head" and _at_head(engine):
        return  # nothing to do, and alembic takes a while to find that out (it loads every migration)
    config = alembic_config()
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
            connection.commit()
        try:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
            connection.commit()
        finally:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_MIGRATION_LOCK})
                connection.commit()


def _at_head(engine: Engine) -> bool:
    """Whether the database is at the newest migration already: one query."""
    try:
        with engine.connect() as connection:
            versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except DBAPIError:  # no such table: a new database
        return False
    return versions == [head()]


def current(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


@functools.cache
def head() -> str | None:
    """The newest migration shipped with this package (read once per process)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
