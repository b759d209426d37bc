"""Apply the alembic migrations that ship inside the package.

Alembic is loaded only to migrate: a process started on a database at the newest migration (every `baton`
command, every `baton serve` after the first) finds that out from one query and the migration files' names
for themselves, which costs a few milliseconds where loading alembic and every migration costs about 0.3 s of
CPU.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"

# Any fixed number: several processes starting at once take turns at migrating.
_PG_MIGRATION_LOCK = 0x6261746F6E


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


class NewerDatabase(RuntimeError):
    """The database was migrated by a newer Baton than this one: migrating it is not this Baton's to do."""


def upgrade(engine: Engine, revision: str = "head") -> None:
    stored = _stored(engine)
    if revision == "head" and stored == [head()]:
        return  # nothing to do, and alembic takes a while to find that out (it loads every migration)
    # Alembic would fail on a revision it cannot find with a traceback; an older Baton started after a rollback
    # meets exactly that, and the person rolling back needs to know what it means.
    unknown = sorted(set(stored or ()) - revisions())
    if unknown:
        raise NewerDatabase(
            f"the database in BATON_DATABASE_URL is at migration {', '.join(unknown)}, newer than this Baton's "
            f"newest ({head()}): a newer Baton migrated it; run that version, or restore the backup taken "
            "before the upgrade"
        )
    from alembic import command

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


def _stored(engine: Engine) -> list[str] | None:
    """The migrations the database says it is at (one query); None for a database never migrated."""
    try:
        with engine.connect() as connection:
            return list(connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all())
    except DBAPIError:  # no such table: a new database
        return None


def current(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


# A migration file's own revision and the one it follows: `revision = "0009"`, `down_revision = "0008"`.
_LINK = re.compile(r'^(revision|down_revision)(?:\s*:[^=\n]*)?\s*=\s*(?:"([^"\n]*)"|None)\s*$', re.MULTILINE)


@functools.cache
def revisions() -> frozenset[str]:
    """Every migration shipped with this package."""
    return frozenset(
        value
        for path in (MIGRATIONS / "versions").glob("*.py")
        for key, value in _LINK.findall(path.read_text(encoding="utf-8"))
        if key == "revision"
    )


@functools.cache
def head() -> str | None:
    """The newest migration shipped with this package, the one no other follows (read once per process, from
    the files; alembic's answer where they say something this reading does not know, such as a merge)."""
    revisions: set[str] = set()
    followed: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        links = _LINK.findall(path.read_text(encoding="utf-8"))
        named = [value for key, value in links if key == "revision"]
        if len(named) != 1 or len([key for key, _ in links if key == "down_revision"]) != 1:
            return _alembic_head()
        revisions.add(named[0])
        followed.update(value for key, value in links if key == "down_revision" and value)
    heads = revisions - followed
    return heads.pop() if len(heads) == 1 else _alembic_head()


def _alembic_head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
