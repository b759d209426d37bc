"""What keeps an issue from being ready: GitHub's "blocked by" dependencies and an issue's sub-issues, with each
blocker's state as last seen, so that whether a task is ready is a query, not a GitHub call.
"""

import sqlalchemy as sa

from baton.store.migration_steps import table

revision = "0020"
down_revision = "0019"

upgrade, downgrade = table(
    "dependencies",
    lambda: (
        sa.Column("installation_id", sa.BigInteger(), primary_key=True),
        sa.Column("repository_id", sa.BigInteger(), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True),
        sa.Column("source", sa.String(20), primary_key=True),
        sa.Column("blocker", sa.String(300), primary_key=True),
        sa.Column("open", sa.Boolean(), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
    ),
    {"ix_dependencies_blocker": ("blocker",)},
)
