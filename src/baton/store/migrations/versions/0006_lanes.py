"""Two lanes: deliveries retried with backoff, answers that wait on their own, one write budget per installation."""

import sqlalchemy as sa
from alembic import op

from baton.store.migration_steps import Id, When

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as table:
        table.add_column(sa.Column("next_attempt_at", When))
    with op.batch_alter_table("outbox") as table:
        table.add_column(sa.Column("urgency", sa.Integer, nullable=False, server_default="1"))
    with op.batch_alter_table("outbox_items") as table:
        table.add_column(sa.Column("due_at", When))
    op.create_table(
        "write_budgets",
        sa.Column("installation_id", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("next_at", When),
        sa.Column("paused_until", When),
        sa.Column("pause_reason", sa.Text),
        sa.Column("holder", sa.String(100)),
        sa.Column("held_until", When),
        sa.PrimaryKeyConstraint("installation_id", name="pk_write_budgets"),
    )
    op.create_table(
        "write_log",
        sa.Column("id", Id, nullable=False),
        sa.Column("installation_id", sa.BigInteger, nullable=False),
        sa.Column("at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_write_log"),
    )
    op.create_index("ix_write_log_installation_id_at", "write_log", ["installation_id", "at"])


def downgrade() -> None:
    op.drop_index("ix_write_log_installation_id_at", "write_log")
    op.drop_table("write_log")
    op.drop_table("write_budgets")
    with op.batch_alter_table("outbox_items") as table:
        table.drop_column("due_at")
    with op.batch_alter_table("outbox") as table:
        table.drop_column("urgency")
    with op.batch_alter_table("webhook_deliveries") as table:
        table.drop_column("next_attempt_at")
