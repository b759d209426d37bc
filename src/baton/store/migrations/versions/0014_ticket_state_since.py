"""When each ticket entered its state (or, while claimed, its runner's hands): how long it has been there,
as the board shows it. A brief edited, a title changed or the same runner's state kept do not move it.

Existing tickets take the time of their last work event that did, read from their history.
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"

# The events that move a ticket to a state or to a new runner, as of this revision: every work event but
# `brief_changed`, and the `created` event that starts a history.
_MOVES = ("created", "published", "claimed", "assigned", "sent_back", "delivered", "accepted", "released",
          "reopened", "withdrawn")  # fmt: skip


def upgrade() -> None:
    op.add_column("tickets", sa.Column("state_since", sa.DateTime(timezone=True)))
    tickets = sa.table("tickets", sa.column("id"), sa.column("state_since"), sa.column("updated_at"))
    events = sa.table("events", sa.column("ticket_id"), sa.column("type"), sa.column("created_at"))
    last_move = (
        sa.select(sa.func.max(events.c.created_at))
        .where(events.c.ticket_id == tickets.c.id, events.c.type.in_(_MOVES))
        .scalar_subquery()
    )
    op.execute(tickets.update().values(state_since=sa.func.coalesce(last_move, tickets.c.updated_at)))


def downgrade() -> None:
    with op.batch_alter_table("tickets") as table:
        table.drop_column("state_since")
