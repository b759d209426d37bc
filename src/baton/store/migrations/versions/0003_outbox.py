"""The outbox: issues due for reconciling on GitHub, per-command answers, Baton's status comments."""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
When = sa.DateTime(timezone=True)
KEY = ("installation_id", "repository_id", "number")


def _key() -> list[sa.Column[Any]]:
    return [
        sa.Column("installation_id", sa.BigInteger, nullable=False),
        sa.Column("repository_id", sa.BigInteger, nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "outbox",
        *_key(),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("due_at", When, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text),
        sa.PrimaryKeyConstraint(*KEY, name="pk_outbox"),
    )
    op.create_index("ix_outbox_due_at", "outbox", ["due_at"])
    op.create_table(
        "outbox_items",
        sa.Column("id", Id, nullable=False),
        *_key(),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("author", sa.String(100), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.Column("sent_at", When),
        sa.Column("result_id", sa.BigInteger),
        sa.PrimaryKeyConstraint("id", name="pk_outbox_items"),
    )
    op.create_index("ix_outbox_items_installation_id_repository_id_number_sent_at", "outbox_items", [*KEY, "sent_at"])
    op.create_table(
        "projections",
        *_key(),
        sa.Column("status_comment_id", sa.BigInteger),
        sa.PrimaryKeyConstraint(*KEY, name="pk_projections"),
    )


def downgrade() -> None:
    op.drop_table("projections")
    op.drop_index("ix_outbox_items_installation_id_repository_id_number_sent_at", "outbox_items")
    op.drop_table("outbox_items")
    op.drop_index("ix_outbox_due_at", "outbox")
    op.drop_table("outbox")
