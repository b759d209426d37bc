"""Offering's share of the write budget: each logged GitHub write says whether it offered an issue, so every
process can keep offering (and backfill) to half of any minute's and any hour's writes.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("write_log") as table:
        table.add_column(sa.Column("offering", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("write_log") as table:
        table.drop_column("offering")
