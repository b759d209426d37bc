"""A task's priority, from its brief (`priority: p0` … `p4`, `high`, `medium`, `low`), kept beside the brief so
that the tasks offered are listed and handed out highest priority first, then oldest, by the database.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tickets", sa.Column("priority", sa.SmallInteger(), nullable=True))
    # No brief stored before this revision has a priority: `check` refused the key until now.


def downgrade() -> None:
    op.drop_column("tickets", "priority")
