"""Migration 0025 both ways: on PostgreSQL the payload column compresses with lz4 after it and with the server's
default after its downgrade; on SQLite, which compresses nothing, both ways change nothing and run."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from baton.service.unit import Units
from baton.store import upgrade
from baton.store.migrate import alembic_config


def _compression(units: Units) -> str | None:
    """The payload column's own compression method ("l": lz4, "": the server's default); None on SQLite."""
    if units.engine.dialect.name != "postgresql":
        return None
    with units.engine.connect() as connection:
        return str(connection.execute(text(
            "SELECT attcompression FROM pg_attribute "
            "WHERE attrelid = 'webhook_payloads'::regclass AND attname = 'payload'"
        )).scalar_one())  # fmt: skip


def test_the_payload_column_takes_lz4_and_gives_it_back(store: Units) -> None:
    postgres = store.engine.dialect.name == "postgresql"
    assert _compression(store) == ("l" if postgres else None)
    config = alembic_config()
    with store.engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0024")
        connection.commit()
    assert _compression(store) == ("" if postgres else None)
    upgrade(store.engine)
    assert _compression(store) == ("l" if postgres else None)
