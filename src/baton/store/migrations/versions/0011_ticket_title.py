"""The issue's title on its ticket, as GitHub last told it: for the tasks an agent lists and the read API.

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tickets", sa.Column("title", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("tickets") as table:
        table.drop_column("title")
