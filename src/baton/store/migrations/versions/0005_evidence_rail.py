"""The evidence rail: rails per ticket, the link index, the facts log, evidence events, check runs."""

import sqlalchemy as sa
from alembic import op

from baton.store.migration_steps import REPOSITORY, Id, When, on_ticket, repository_key

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    op.create_table(
        "evidence_rails",
        sa.Column("ticket_id", Id, nullable=False, autoincrement=False),
        *repository_key(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("repository_state", sa.String(20), nullable=False),
        sa.Column("deployment_state", sa.String(20), nullable=False),
        sa.Column("rail", sa.JSON, nullable=False),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint("ticket_id", name="pk_evidence_rails"),
        on_ticket("evidence_rails"),
    )
    op.create_index("ix_evidence_rails_repository_state", "evidence_rails", [*REPOSITORY, "repository_state"])
    op.create_table(
        "evidence_links",
        *repository_key(),
        sa.Column("subject", sa.String(300), nullable=False),
        sa.Column("ticket_id", Id, nullable=False),
        sa.PrimaryKeyConstraint(*REPOSITORY, "subject", "ticket_id", name="pk_evidence_links"),
        on_ticket("evidence_links"),
    )
    op.create_table(
        "evidence_facts",
        sa.Column("id", Id, nullable=False),
        *repository_key(),
        sa.Column("subject", sa.String(300), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("stamp", When),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("fact", sa.JSON, nullable=False),
        sa.Column("source", sa.String(120), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_evidence_facts"),
        sa.UniqueConstraint(*REPOSITORY, "digest", name="uq_evidence_facts_installation_id_repository_id_digest"),
    )
    op.create_index(
        "ix_evidence_facts_installation_id_repository_id_subject", "evidence_facts", [*REPOSITORY, "subject"]
    )
    op.create_index(
        "ix_evidence_facts_installation_id_repository_id_kind_stamp",
        "evidence_facts",
        [*REPOSITORY, "kind", "stamp"],
    )
    op.create_table(
        "evidence_events",
        sa.Column("id", Id, nullable=False),
        sa.Column("ticket_id", Id, nullable=False),
        sa.Column("type", sa.String(40), nullable=False),
        sa.Column("source", sa.String(120), nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
        sa.Column("repository_state", sa.String(20), nullable=False),
        sa.Column("deployment_state", sa.String(20), nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_evidence_events"),
        on_ticket("evidence_events"),
    )
    op.create_index("ix_evidence_events_ticket_id_id", "evidence_events", ["ticket_id", "id"])
    op.create_table(
        "check_runs",
        *repository_key(),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("check_run_id", sa.BigInteger),
        sa.Column("shown", sa.JSON),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint(*REPOSITORY, "head_sha", name="pk_check_runs"),
    )


def downgrade() -> None:
    op.drop_table("check_runs")
    op.drop_index("ix_evidence_events_ticket_id_id", "evidence_events")
    op.drop_table("evidence_events")
    op.drop_index("ix_evidence_facts_installation_id_repository_id_kind_stamp", "evidence_facts")
    op.drop_index("ix_evidence_facts_installation_id_repository_id_subject", "evidence_facts")
    op.drop_table("evidence_facts")
    op.drop_table("evidence_links")
    op.drop_index("ix_evidence_rails_repository_state", "evidence_rails")
    op.drop_table("evidence_rails")
