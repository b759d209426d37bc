"""Installations and their repositories."""

import sqlalchemy as sa
from alembic import op

from baton.store.migration_steps import When, repository_key

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "installations",
        sa.Column("id", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("account", sa.String(100), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_installations"),
    )
    op.create_table(
        "installation_repositories",
        *repository_key(),
        sa.Column("full_name", sa.String(200), nullable=False),
        sa.Column("present", sa.Boolean, nullable=False),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint("installation_id", "repository_id", name="pk_installation_repositories"),
    )


def downgrade() -> None:
    op.drop_table("installation_repositories")
    op.drop_table("installations")
