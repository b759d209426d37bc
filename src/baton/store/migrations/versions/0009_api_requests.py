"""The agent API's idempotency keys: each login's key, what request it was first used for, and its answer."""

import sqlalchemy as sa

from baton.store.migration_steps import table

revision = "0009"
down_revision = "0008"

upgrade, downgrade = table(
    "api_requests",
    lambda: (
        sa.Column("login", sa.String(100), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status", sa.Integer()),
        sa.Column("body", sa.Text()),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("login", "key", name="pk_api_requests"),
    ),
)
