"""The issue a create-and-claim request opened, kept with its idempotency key as soon as GitHub opened it: a
retry with the key after a crash claims that issue instead of opening another.
"""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0010"
down_revision = "0009"

upgrade, downgrade = column("api_requests", lambda: sa.Column("issue", sa.Integer()), batch_drop=True)
