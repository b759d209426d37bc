"""A task's priority from its issue's labels (`priority_labels` in `.github/baton.yml`), kept beside the brief's:
the brief's wins, the labels' count when it says none.
"""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0022"
down_revision = "0021"

upgrade, downgrade = column("tickets", lambda: sa.Column("label_priority", sa.SmallInteger(), nullable=True))
