"""When each label of a ticket last changed, by the hook that said so: GitHub's hooks about one label (added, then
removed) may be decided in the other order, and the older must not undo the later.
"""

import sqlalchemy as sa

from baton.store.migration_steps import issue_key, table

revision = "0023"
down_revision = "0022"

upgrade, downgrade = table(
    "label_changes",
    lambda: (
        *issue_key(),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("installation_id", "repository_id", "number", "label", name="pk_label_changes"),
    ),
)
