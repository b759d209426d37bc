"""The issue's own state on GitHub (open, or closed with GitHub's reason, by whom, when), beside each ticket:
a closed issue withdraws a ticket nobody works on, and flags one somebody does.
"""

import sqlalchemy as sa

from baton.store.migration_steps import Id, on_ticket, table

revision = "0015"
down_revision = "0014"

upgrade, downgrade = table(
    "issue_states",
    lambda: (
        sa.Column("ticket_id", Id, nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("reason", sa.String(40)),
        sa.Column("actor", sa.String(100)),
        sa.Column("at", sa.String(40), nullable=False),
        sa.Column("merged", sa.Boolean, nullable=False),
        on_ticket("issue_states"),
        sa.PrimaryKeyConstraint("ticket_id", name="pk_issue_states"),
    ),
)
