"""A task's priority, from its brief (`priority: p0` … `p4`, `high`, `medium`, `low`), kept beside the brief so
that the tasks offered are listed and handed out highest priority first, then oldest, by the database.
"""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0019"
down_revision = "0018"

# No brief stored before this revision has a priority: `check` refused the key until now.
upgrade, downgrade = column("tickets", lambda: sa.Column("priority", sa.SmallInteger(), nullable=True))
