"""The board stays light with many tickets: an index per column's order (a state's tickets, the longest there
first), one for finding a ticket by its repository's name in any case and its number, and one for a ticket's
reviews (its last verdict, on its card and its page). Both engines index the expressions the reads use.
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"


def upgrade() -> None:
    op.create_index("ix_tickets_state_since", "tickets", ["state", sa.text("coalesce(state_since, updated_at)"), "id"])
    op.create_index("ix_tickets_lower_repository_number", "tickets", [sa.text("lower(repository)"), "number"])
    op.create_index("ix_reviews_ticket_id_id", "reviews", ["ticket_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_reviews_ticket_id_id", "reviews")
    op.drop_index("ix_tickets_lower_repository_number", "tickets")
    op.drop_index("ix_tickets_state_since", "tickets")
