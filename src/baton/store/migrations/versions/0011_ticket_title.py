"""The issue's title on its ticket, as GitHub last told it: for the tasks an agent lists and the read API."""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0011"
down_revision = "0010"

upgrade, downgrade = column("tickets", lambda: sa.Column("title", sa.Text()), batch_drop=True)
