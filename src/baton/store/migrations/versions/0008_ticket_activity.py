"""Quiet claims: each ticket's last runner activity, and whether its claim is flagged stale.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

When = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ticket_activity",
        sa.Column("ticket_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("last_activity_at", When, nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("stale_at", When),
        sa.ForeignKeyConstraint(["ticket_id"], ["tickets.id"], name="fk_ticket_activity_ticket_id_tickets"),
        sa.PrimaryKeyConstraint("ticket_id", name="pk_ticket_activity"),
    )


def downgrade() -> None:
    op.drop_table("ticket_activity")
