"""The webhook inbox.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
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
    )
    op.create_index("ix_webhook_deliveries_status_received_at", "webhook_deliveries", ["status", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_status_received_at", "webhook_deliveries")
    op.drop_table("webhook_deliveries")
