"""Answers given up: why GitHub never got one (it refused it for good, or failed it on the issue's last try)."""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0007"
down_revision = "0006"

upgrade, downgrade = column("outbox_items", lambda: sa.Column("dropped", sa.Text), batch=True)
