"""Redeliveries Baton asked GitHub for: each failed entry of the App's delivery log, asked for once."""

import sqlalchemy as sa

from baton.store.migration_steps import table

revision = "0012"
down_revision = "0011"

upgrade, downgrade = table(
    "redeliveries",
    lambda: (
        sa.Column("delivery_id", sa.BigInteger, autoincrement=False, nullable=False),
        sa.Column("guid", sa.String(100), nullable=False),
        sa.Column("event", sa.String(60), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", sa.Text),
        sa.PrimaryKeyConstraint("delivery_id", name="pk_redeliveries"),
    ),
    {"ix_redeliveries_guid": ("guid",)},
)
