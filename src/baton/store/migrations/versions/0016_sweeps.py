"""Sweeps one process makes at a time (the App's installations, listed from GitHub every hour)."""

import sqlalchemy as sa

from baton.store.migration_steps import table

revision = "0016"
down_revision = "0015"

upgrade, downgrade = table(
    "sweeps",
    lambda: (
        sa.Column("name", sa.String(60), nullable=False),
        sa.Column("holder", sa.String(100)),
        sa.Column("held_until", sa.DateTime(timezone=True)),
        sa.Column("swept_at", sa.DateTime(timezone=True)),
        sa.PrimaryKeyConstraint("name", name="pk_sweeps"),
    ),
)
