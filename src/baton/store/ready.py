"""Which ready task comes next (claim-next, `WorkService.claim_next`): the first open task that nothing open
blocks, of the repositories asked about and carrying every label asked for, highest priority first, then oldest
(`WorkTx.next_ready`, a hot statement on the driver's cursor; `WorkTx.ready_tasks` reads the first n at once, for
a batch of asks); and, when there is none, how many tasks there are ready, blocked and claimed (`counts`).

Both run inside the caller's transaction. On PostgreSQL the task is locked as it is read, skipping any row
another transaction holds (`FOR NO KEY UPDATE SKIP LOCKED`, the lock `WorkTx.tickets(lock=True)` takes): two
processes handing out tasks at once each take a different one, and neither waits for the other. SQLite has one
writer at a time, so the rows a transaction reads are not taken by anyone else before it ends.

An issue's labels are kept on its ticket as text, lower-case, each between two newlines (`labels_text`), so that
"carries the label" is a `LIKE` both engines run the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, case, func, or_, select

from baton.domain import RepositoryKey, WorkState
from baton.domain.status import LABELS

from . import tables as t
from .dependencies import unblocked

_T = t.tickets.c


def label_name(name: str) -> str | None:
    """A label as it is kept and asked for: its name in lower case (GitHub compares them so); None for Baton's
    own, and for a name with a line break, which cannot be kept between newlines."""
    lowered = name.strip().lower()
    if not lowered or "\n" in lowered or "\r" in lowered or lowered in LABELS:
        return None
    return lowered


def labels_text(names: Iterable[str]) -> str:
    """An issue's labels as its ticket keeps them."""
    kept = sorted({one for one in map(label_name, names) if one is not None})
    return "\n" + "\n".join(kept) + "\n" if kept else ""


def _matching(repositories: Sequence[RepositoryKey], labels: Collection[str]) -> list[ColumnElement[bool]]:
    places = [and_(_T.installation_id == one.installation_id, _T.repository_id == one.repository_id)
              for one in repositories]  # fmt: skip
    carried = [_T.labels.contains(f"\n{label}\n", autoescape=True) for label in labels]
    return [or_(*places), *carried]


def counts(connection: Connection, repositories: Sequence[RepositoryKey], labels: Collection[str]) -> dict[str, int]:
    """How many tasks of `repositories` carrying every one of `labels` are ready, blocked (open, but something
    open blocks them) and claimed."""
    if not repositories:
        return {"ready": 0, "blocked": 0, "claimed": 0}
    is_open = _T.state == WorkState.OPEN.value
    ready = unblocked()

    def count(condition: ColumnElement[bool]) -> Any:
        return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

    row = connection.execute(
        select(count(and_(is_open, ready)), count(and_(is_open, ~ready)), count(_T.state == WorkState.CLAIMED.value))
        .where(_T.state.in_([WorkState.OPEN.value, WorkState.CLAIMED.value]), *_matching(repositories, labels))
    ).one()  # fmt: skip
    return {"ready": int(row[0]), "blocked": int(row[1]), "claimed": int(row[2])}


__all__ = ["counts", "label_name", "labels_text"]
