"""The marking side of the outbox, a facet of a unit of work: inside the transaction of a change to a ticket
or its evidence, mark the issue due for the writer and queue the answers to commands. Every change marks
due this one way. (`writing.py` is the writer's side.)

It imports nothing of the work rail, so the evidence service can use it too.
"""

from __future__ import annotations

from sqlalchemy import Connection

from baton.domain.model import Answer, TicketKey
from baton.environment.clock import Clock

from ..statements import RawTx, Statements, key_params

_STATEMENTS = Statements({
    # Due for reconciling: an existing row becomes due at the earlier of its time and the new one, and as
    # urgent as the more urgent of the two; its version rises, so the writer sees the change. Its tries
    # start again from none: a row that gave up (GitHub refused it, or failed it `MAX_ATTEMPTS` times)
    # shows the new state all the same.
    "mark_due": """
        INSERT INTO outbox (installation_id, repository_id, number, repository, version, due_at, attempts, urgency)
        VALUES (:installation_id, :repository_id, :number, :repository, 1, :due_at, 0, :urgency)
        ON CONFLICT (installation_id, repository_id, number) DO UPDATE SET version = outbox.version + 1,
            due_at = MIN(outbox.due_at, excluded.due_at), urgency = MIN(outbox.urgency, excluded.urgency),
            attempts = 0""",
    "add_item": """
        INSERT INTO outbox_items (installation_id, repository_id, number, kind, comment_id, author, message,
            created_at, due_at)
        VALUES (:installation_id, :repository_id, :number, :kind, :comment_id, :author, :message, :now, :due_at)""",
}, many=("mark_due", "add_item"))  # fmt: skip

# How urgent an issue's writes are, most urgent first: a 👍 waits on it; its ticket changed; it is only
# offered (its label, within offering's share of the write budget, `budget.Budgets.slot`). A row takes the
# most urgent of the reasons it was marked due for.
URGENT, ORDINARY, OFFERING = 0, 1, 2


class OutboxTx(RawTx):
    """Marking issues due and queueing answers, inside the caller's open transaction. Methods never commit."""

    def __init__(self, connection: Connection, clock: Clock) -> None:
        super().__init__(connection, _STATEMENTS, clock)

    def due(
        self, key: TicketKey, repository: str, after: float = 0.0, *, urgent: bool = False, offering: bool = False
    ) -> None:
        """Mark the issue due for reconciling on GitHub in `after` seconds (`urgent`: a 👍 waits on it;
        `offering`: it is only being offered, the lowest tier)."""
        if offering and not urgent:
            self._many("mark_due", [{**key_params(key), "repository": repository, "due_at": self._now(after),
                                     "urgency": OFFERING}])  # fmt: skip
        else:
            self.due_all({key: (repository, after, urgent)})

    def due_all(self, wanted: dict[TicketKey, tuple[str, float, bool]]) -> None:
        """`due` for many issues in one statement: each key's (repository, after, urgent)."""
        if wanted:
            self._many("mark_due", [
                {**key_params(key), "repository": repository, "due_at": self._now(after),
                 "urgency": URGENT if urgent else ORDINARY}
                for key, (repository, after, urgent) in wanted.items()
            ])  # fmt: skip

    def queue_all(self, answers: dict[TicketKey, list[Answer]], reply_delay: float) -> None:
        """Per-command answers on each issue, in their order: a reaction is due at once, a reply after
        `reply_delay`, so the replies of one race share a comment. The caller marks the issues due."""
        now, later = self._now(), self._now(reply_delay)
        rows = [
            {**key_params(key), "kind": kind, "comment_id": comment_id, "author": author, "message": message,
             "now": now, "due_at": now if kind == "reaction" else later}
            for key, items in answers.items() for kind, comment_id, author, message in items
        ]  # fmt: skip
        if rows:
            self._many("add_item", rows)
