"""The work rail: tickets, attempts, deliveries, reviews, events, operations, runner claims."""

import sqlalchemy as sa
from alembic import op

from baton.store.migration_steps import Id, When, of_ticket, on_ticket, repository_key

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "tickets",
        sa.Column("id", Id, primary_key=True),
        *repository_key(),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("repository", sa.String(200), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(100), nullable=False),
        sa.Column("runner", sa.String(100)),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("deliveries", sa.Integer, nullable=False),
        sa.Column("brief", sa.JSON),
        sa.Column("created_at", When, nullable=False),
        sa.Column("updated_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tickets"),
        sa.UniqueConstraint(
            "installation_id",
            "repository_id",
            "number",
            name="uq_tickets_installation_id_repository_id_number",
        ),
    )
    op.create_index("ix_tickets_repository_state", "tickets", ["repository", "state"])
    op.create_table(
        "attempts",
        *of_ticket(
            "attempts",
            sa.Column("number", sa.Integer, nullable=False),
            sa.Column("runner", sa.String(100), nullable=False),
            sa.Column("started_revision", sa.Integer, nullable=False),
            sa.Column("started_at", When, nullable=False),
            sa.Column("ended_at", When),
            sa.Column("end_reason", sa.String(40)),
            unique="number",
        ),
    )
    op.create_table(
        "deliveries",
        *of_ticket(
            "deliveries",
            sa.Column("number", sa.Integer, nullable=False),
            sa.Column("attempt", sa.Integer, nullable=False),
            sa.Column("runner", sa.String(100), nullable=False),
            sa.Column("text", sa.Text, nullable=False),
            sa.Column("evidence", sa.JSON, nullable=False),
            sa.Column("revision", sa.Integer, nullable=False),
            sa.Column("created_at", When, nullable=False),
            unique="number",
        ),
    )
    op.create_table(
        "reviews",
        *of_ticket(
            "reviews",
            sa.Column("attempt", sa.Integer, nullable=False),
            sa.Column("delivery", sa.Integer, nullable=False),
            sa.Column("reviewer", sa.String(100), nullable=False),
            sa.Column("role", sa.String(40), nullable=False),
            sa.Column("verdict", sa.String(20), nullable=False),
            sa.Column("independent", sa.Boolean, nullable=False),
            sa.Column("note", sa.Text, nullable=False),
            sa.Column("revision", sa.Integer, nullable=False),
            sa.Column("created_at", When, nullable=False),
        ),
    )
    op.create_table(
        "events",
        *of_ticket(
            "events",
            sa.Column("type", sa.String(40), nullable=False),
            sa.Column("actor", sa.String(100), nullable=False),
            sa.Column("role", sa.String(40), nullable=False),
            sa.Column("attempt", sa.Integer, nullable=False),
            sa.Column("revision", sa.Integer, nullable=False),
            sa.Column("operation_id", sa.String(200)),
            sa.Column("data", sa.JSON, nullable=False),
            sa.Column("created_at", When, nullable=False),
        ),
    )
    op.create_index("ix_events_ticket_id_id", "events", ["ticket_id", "id"])
    op.create_table(
        "operations",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("ticket_id", Id),
        sa.Column("result", sa.JSON, nullable=False),
        sa.Column("created_at", When, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_operations"),
        on_ticket("operations"),
    )
    op.create_table(
        "runner_claims",
        *repository_key(),
        sa.Column("login", sa.String(100), nullable=False),
        sa.Column("active", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("installation_id", "repository_id", "login", name="pk_runner_claims"),
    )


def downgrade() -> None:
    for table in ("runner_claims", "operations", "events", "reviews", "deliveries", "attempts"):
        op.drop_table(table)
    op.drop_index("ix_tickets_repository_state", "tickets")
    op.drop_table("tickets")
