"""The webhook inbox."""

import sqlalchemy as sa

from baton.store.migration_steps import table

revision = "0002"
down_revision = "0001"

upgrade, downgrade = table(
    "webhook_deliveries",
    lambda: (
        sa.Column("id", sa.String(100), nullable=False),
        sa.Column("event", sa.String(60), nullable=False),
        sa.Column("action", sa.String(60)),
        sa.Column("installation_id", sa.BigInteger),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
    ),
    {"ix_webhook_deliveries_status_received_at": ("status", "received_at")},
)
