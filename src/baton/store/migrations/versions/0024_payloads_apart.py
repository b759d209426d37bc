"""Each hook's payload in a table of its own, `webhook_payloads`, written once: SQLite rewrites a whole row on every
update, and a hook's row changes twice (taken, then finished), a GitHub payload of about 10 KB with it each time.
"""

import sqlalchemy as sa
from alembic import op

from baton.store.migration_steps import table

revision = "0024"
down_revision = "0023"

create_payloads, drop_payloads = table(
    "webhook_payloads",
    lambda: (
        sa.Column("id", sa.String(100), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_payloads"),
    ),
)


def upgrade() -> None:
    create_payloads()
    op.execute(
        "INSERT INTO webhook_payloads (id, payload) SELECT id, payload FROM webhook_deliveries WHERE payload <> ''"
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("payload")


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("payload", sa.Text(), nullable=False, server_default=""))
    op.execute(
        "UPDATE webhook_deliveries SET payload = (SELECT p.payload FROM webhook_payloads p WHERE p.id = "
        "webhook_deliveries.id) WHERE id IN (SELECT id FROM webhook_payloads)"
    )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.alter_column("payload", server_default=None)
    drop_payloads()
