"""The issue's own state on GitHub (open, or closed with GitHub's reason, by whom, when), beside each ticket:
a closed issue withdraws a ticket nobody works on, and flags one somebody does.

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "issue_states",
        sa.Column("ticket_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("reason", sa.String(40)),
        sa.Column("actor", sa.String(100)),
        sa.Column("at", sa.String(40), nullable=False),
        sa.Column("merged", sa.Boolean, nullable=False),
        sa.ForeignKeyConstraint(["ticket_id"], ["tickets.id"], name="fk_issue_states_ticket_id_tickets"),
        sa.PrimaryKeyConstraint("ticket_id", name="pk_issue_states"),
    )


def downgrade() -> None:
    op.drop_table("issue_states")
