"""Sweeps one process makes at a time (the App's installations, listed from GitHub every hour).

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("name", sa.String(60), nullable=False),
        sa.Column("holder", sa.String(100)),
        sa.Column("held_until", sa.DateTime(timezone=True)),
        sa.Column("swept_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("name", name="pk_sweeps"),
    )


def downgrade() -> None:
    op.drop_table("sweeps")
