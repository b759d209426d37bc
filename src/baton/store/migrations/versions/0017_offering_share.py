"""Offering's share of the write budget: each logged GitHub write says whether it offered an issue, so every
process can keep offering (and backfill) to half of any minute's and any hour's writes.
"""

import sqlalchemy as sa

from baton.store.migration_steps import column

revision = "0017"
down_revision = "0016"

upgrade, downgrade = column(
    "write_log", lambda: sa.Column("offering", sa.Boolean, nullable=False, server_default=sa.false()), batch=True
)
