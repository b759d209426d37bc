"""A ticket's whole timeline for the read API: its work events and its evidence events, merged by the time
Baton recorded them, each tagged with its rail. Read-only, in one snapshot (`Reads`).

Pages are keyset pages: a cursor is the last work event id and the last evidence event id a page showed, so a
page reads at most `limit + 1` rows of each table however long the history, and an event recorded after a
page was read is on a later page, never lost. Within each table ids grow with the time of recording; of two
events recorded at the same moment the work event comes first (a delivery, then the report it carried).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, select

from .reads import MAX_LIMIT, Reads, utc
from .tables import events, evidence_events

Rail = Literal["work", "repository", "deployment"]
RAILS: tuple[Rail, ...] = ("work", "repository", "deployment")
DEFAULT_LIMIT = MAX_LIMIT  # a page holds the whole history of nearly every ticket

# Evidence events about where the change is deployed (a comparison decides whether a deployment ships a merge);
# every other evidence event (pull requests, branches, checks, reports, the issue closed or reopened, what an
# acceptance covered) is about the repository.
DEPLOYMENT_TYPES = ("deployment", "deployment_status", "comparison")


@dataclass(frozen=True)
class Cursor:
    """Where a page ended: the last work event and the last evidence event it showed (0: none yet)."""

    work: int = 0
    evidence: int = 0

    def __str__(self) -> str:
        return f"{self.work}.{self.evidence}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """A cursor as `next` gave it; ValueError for anything else."""
        work, dot, evidence = text.partition(".")
        if not (dot and work.isascii() and work.isdigit() and evidence.isascii() and evidence.isdigit()):
            raise ValueError(f"{text!r} is not a cursor this API gave")
        if len(work) > 18 or len(evidence) > 18:
            raise ValueError(f"{text!r} is not a cursor this API gave")
        return cls(int(work), int(evidence))


@dataclass(frozen=True)
class TimelineEntry:
    rail: Rail
    id: int  # the row's id in its own table
    type: str
    data: dict[str, Any]
    created_at: datetime
    # work events
    actor: str | None = None
    role: str | None = None
    attempt: int | None = None
    revision: int | None = None
    operation_id: str | None = None
    # evidence events: what told Baton, and the rails after it
    source: str | None = None
    repository_state: str | None = None
    deployment_state: str | None = None

    @property
    def key(self) -> str:
        return f"{'work' if self.rail == 'work' else 'evidence'}-{self.id}"


@dataclass(frozen=True)
class Timeline:
    entries: list[TimelineEntry]
    next: Cursor | None  # None: nothing after this page


def evidence_rail(type_: str) -> Rail:
    return "deployment" if type_ in DEPLOYMENT_TYPES else "repository"


def _work(connection: Connection, ticket_id: int, after: int, limit: int) -> Iterator[TimelineEntry]:
    query = select(events).where(events.c.ticket_id == ticket_id, events.c.id > after)
    for e in connection.execute(query.order_by(events.c.id).limit(limit)):
        yield TimelineEntry(
            "work", int(e.id), e.type, dict(e.data), utc(e.created_at), actor=e.actor, role=e.role,
            attempt=e.attempt, revision=e.revision, operation_id=e.operation_id,
        )  # fmt: skip


def _evidence(
    connection: Connection, ticket_id: int, after: int, limit: int, rails: frozenset[Rail]
) -> Iterator[TimelineEntry]:
    c = evidence_events.c
    query = select(evidence_events).where(c.ticket_id == ticket_id, c.id > after)
    if "repository" not in rails:
        query = query.where(c.type.in_(DEPLOYMENT_TYPES))
    elif "deployment" not in rails:
        query = query.where(c.type.not_in(DEPLOYMENT_TYPES))
    for e in connection.execute(query.order_by(c.id).limit(limit)):
        yield TimelineEntry(
            evidence_rail(e.type), int(e.id), e.type, dict(e.data), utc(e.created_at), source=e.source,
            repository_state=e.repository_state, deployment_state=e.deployment_state,
        )  # fmt: skip


def _order(entry: TimelineEntry) -> tuple[datetime, int, int]:
    return entry.created_at, 0 if entry.rail == "work" else 1, entry.id


class TimelineReads(Reads):
    def timeline(
        self, repository: str, number: int, *, after: Cursor | None = None, limit: int = DEFAULT_LIMIT,
        rails: frozenset[Rail] = frozenset(RAILS),
    ) -> Timeline | None:  # fmt: skip
        """One page of a ticket's timeline, oldest first, of the `rails` asked for; None when there is no
        such ticket."""
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
        after = after or Cursor()
        with self._connect() as connection:
            found = self._find(connection, repository, number)
            if found is None:
                return None
            ticket_id, *_ = found
            work = list(_work(connection, ticket_id, after.work, limit + 1)) if "work" in rails else []
            evidence: list[TimelineEntry] = []
            if rails - {"work"}:
                evidence = list(_evidence(connection, ticket_id, after.evidence, limit + 1, rails))
        merged = list(heapq.merge(work, evidence, key=_order))
        page = merged[:limit]
        if len(merged) <= limit:
            return Timeline(page, None)
        last_work = max((e.id for e in page if e.rail == "work"), default=after.work)
        last_evidence = max((e.id for e in page if e.rail != "work"), default=after.evidence)
        return Timeline(page, Cursor(last_work, last_evidence))


__all__ = [
    "DEFAULT_LIMIT",
    "DEPLOYMENT_TYPES",
    "RAILS",
    "Cursor",
    "Rail",
    "Timeline",
    "TimelineEntry",
    "TimelineReads",
    "evidence_rail",
]
