"""Answers given up: why GitHub never got one (it refused it for good, or failed it on the issue's last try).

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox_items") as table:
        table.add_column(sa.Column("dropped", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("outbox_items") as table:
        table.drop_column("dropped")
