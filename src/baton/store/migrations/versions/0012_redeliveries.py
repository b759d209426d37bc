"""Redeliveries Baton asked GitHub for: each failed entry of the App's delivery log, asked for once.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "redeliveries",
        sa.Column("delivery_id", sa.BigInteger, autoincrement=False, nullable=False),
        sa.Column("guid", sa.String(100), nullable=False),
        sa.Column("event", sa.String(60), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", sa.Text),
        sa.PrimaryKeyConstraint("delivery_id", name="pk_redeliveries"),
    )
    op.create_index("ix_redeliveries_guid", "redeliveries", ["guid"])


def downgrade() -> None:
    op.drop_index("ix_redeliveries_guid", "redeliveries")
    op.drop_table("redeliveries")
