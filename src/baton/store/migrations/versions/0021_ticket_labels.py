"""An issue's labels kept beside its ticket (`tables.tickets.labels`), so that claim-next can hand out only the
tasks that carry the labels an agent asks for, in the same query that picks the task.

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tickets", sa.Column("labels", sa.Text(), nullable=True))
    # No ticket made before this revision has its labels: they are learned at the next label change.


def downgrade() -> None:
    op.drop_column("tickets", "labels")
