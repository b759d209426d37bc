"""Quiet claims: each ticket's last runner activity, and whether its claim is flagged stale."""

import sqlalchemy as sa

from baton.store.migration_steps import Id, When, on_ticket, table

revision = "0008"
down_revision = "0007"

upgrade, downgrade = table(
    "ticket_activity",
    lambda: (
        sa.Column("ticket_id", Id, nullable=False),
        sa.Column("last_activity_at", When, nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("stale_at", When),
        on_ticket("ticket_activity"),
        sa.PrimaryKeyConstraint("ticket_id", name="pk_ticket_activity"),
    ),
)
