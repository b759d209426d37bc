"""An issue's labels kept beside its ticket (`tables.tickets.labels`), so that claim-next can hand out only the
tasks that carry the labels an agent asks for, in the same query that picks the task.
"""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0021"
down_revision = "0020"

# No ticket made before this revision has its labels: they are learned at the next label change.
upgrade, downgrade = column("tickets", lambda: sa.Column("labels", sa.Text(), nullable=True))
