"""The board's sessions of people signed in with GitHub: who, the repositories they may read, and their
GitHub token encrypted, so that any process of a deployment accepts the session and refreshes it.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "board_sessions",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("login", sa.String(100), nullable=False),
        sa.Column("token", sa.Text, nullable=False),
        sa.Column("repositories", sa.JSON, nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_board_sessions"),
    )
    op.create_index("ix_board_sessions_expires_at", "board_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_board_sessions_expires_at", "board_sessions")
    op.drop_table("board_sessions")
