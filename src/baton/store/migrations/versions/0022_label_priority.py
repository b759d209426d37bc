"""A task's priority from its issue's labels (`priority_labels` in `.github/baton.yml`), kept beside the brief's:
the brief's wins, the labels' count when it says none.

Revision ID: 0022
Revises: 0021
"""

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tickets", sa.Column("label_priority", sa.SmallInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("tickets", "label_priority")
