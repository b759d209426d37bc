"""The outbox: issues due for reconciling on GitHub, per-command answers, Baton's status comments."""

import sqlalchemy as sa
from alembic import op

from baton.store.migration_steps import ISSUE, Id, When, issue_key

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "outbox",
        *issue_key(),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("due_at", When, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.PrimaryKeyConstraint(*ISSUE, name="pk_outbox"),
    )
    op.create_index("ix_outbox_due_at", "outbox", ["due_at"])
    op.create_table(
        "outbox_items",
        sa.Column("id", Id, nullable=False),
        *issue_key(),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("author", sa.String(100), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.Column("sent_at", When),
        sa.Column("result_id", sa.BigInteger),
        sa.PrimaryKeyConstraint("id", name="pk_outbox_items"),
    )
    op.create_index("ix_outbox_items_installation_id_repository_id_number_sent_at", "outbox_items", [*ISSUE, "sent_at"])
    op.create_table(
        "projections",
        *issue_key(),
        sa.Column("status_comment_id", sa.BigInteger),
        sa.PrimaryKeyConstraint(*ISSUE, name="pk_projections"),
    )


def downgrade() -> None:
    op.drop_table("projections")
    op.drop_index("ix_outbox_items_installation_id_repository_id_number_sent_at", "outbox_items")
    op.drop_table("outbox_items")
    op.drop_index("ix_outbox_due_at", "outbox")
    op.drop_table("outbox")
