"""The board's sessions of people signed in with GitHub: who, the repositories they may read, and their
GitHub token encrypted, so that any process of a deployment accepts the session and refreshes it.
"""

import sqlalchemy as sa

from baton.store.migration_steps import table

revision = "0013"
down_revision = "0012"

upgrade, downgrade = table(
    "board_sessions",
    lambda: (
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("login", sa.String(100), nullable=False),
        sa.Column("token", sa.Text, nullable=False),
        sa.Column("repositories", sa.JSON, nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_board_sessions"),
    ),
    {"ix_board_sessions_expires_at": ("expires_at",)},
)
