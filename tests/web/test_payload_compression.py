"""Hooks' payloads as the database keeps them (migration 0025): on PostgreSQL, compressed with lz4 where the server
offers it, pglz's ten-fold cheaper stand-in for a 10 KB GitHub payload; on SQLite as sent. Either way the payload
a hook stored through `POST /webhooks/github` reads back whole."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from baton.store import tables as t
from support import webhook_hub
from support.webhook_hub import Hub, comment

hub = webhook_hub.hub


@pytest.mark.both_engines
def test_a_payload_stored_through_the_webhook_route_reads_back_whole_and_on_postgresql_lz4_compressed(
    hub: Hub,
) -> None:
    payload = comment("agent-a", "/claim")
    # as long as a GitHub payload, and compressible as one (the database compresses what passes 2 KB)
    payload["issue"]["body"] = "The brief: " + "make the board show the runner; " * 300
    hook = hub.send("issue_comment", payload)
    with hub.app.state.work.units.engine.connect() as connection:
        stored = connection.execute(
            t.webhook_payloads.select().where(t.webhook_payloads.c.id == hook)
        ).one()  # fmt: skip
        assert json.loads(stored.payload) == payload
        if connection.dialect.name == "postgresql":
            offered = connection.execute(text(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
            )).scalar_one()  # fmt: skip
            assert offered, "this PostgreSQL has no lz4: the test cannot tell the migration's work"
            method = connection.execute(
                text("SELECT pg_column_compression(payload) FROM webhook_payloads WHERE id = :id"), {"id": hook}
            ).scalar_one()
            assert method == "lz4"
