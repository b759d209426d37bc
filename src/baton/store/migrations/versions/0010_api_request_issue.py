"""The issue a create-and-claim request opened, kept with its idempotency key as soon as GitHub opened it: a
retry with the key after a crash claims that issue instead of opening another.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("api_requests", sa.Column("issue", sa.Integer()))


def downgrade() -> None:
    with op.batch_alter_table("api_requests") as table:
        table.drop_column("issue")
