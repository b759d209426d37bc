"""Runner activity: the one way anything tells Baton "the runner was active on ticket K now".

Comments on the issue, pushes and pull request updates on a linked branch, and every applied command are
recorded through `record_activity`, inside the unit of work of whatever noticed them (the clock of the
unit's activity facet says when). A caller without a unit of its own (an API that agents write through)
uses `Activity.record`.

Activity restarts the claim's quiet period. When the claim was flagged stale, the flag ends: an
`activity_resumed` event (unless `quietly`), and the issue is marked due so GitHub drops the `baton:stale`
label and the status comment's line.

Nothing here imports the work rail: the evidence service records pushes with it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, Unpack

from baton.domain.model import TicketKey
from baton.store.activity import ActivityTx, Touched, Touching
from baton.store.outbox.marking import OutboxTx


class ActivityUnit(Protocol):
    """What recording activity needs of a unit of work (`baton.service.unit.UnitOfWork`)."""

    @property
    def activity(self) -> ActivityTx: ...

    @property
    def outbox(self) -> OutboxTx: ...


def record_activity(uow: ActivityUnit, key: TicketKey, source: str, **how: Unpack[Touching]) -> Touched | None:
    """Record activity on the ticket now, inside the caller's unit of work.

    `source` says what it was (`comment`, `push`, `pull_request`, `/claim`, …) and `by` who, when known; with
    `runner_only`, only the ticket's runner counts (a comment by someone else is not the runner's activity).
    `quietly`: a stale flag that ends leaves no event (a transition that ends the attempt says enough).
    `known`: the ticket's id and repository, when the caller has them. None when nothing was recorded (the
    issue is not tracked, or `by` is not its runner)."""
    touched = uow.activity.touch(key, source, **how)
    if touched is not None and touched.resumed:
        uow.outbox.due(key, touched.repository)
    return touched


class ActivityUnits(Protocol):
    def begin(self) -> AbstractContextManager[ActivityUnit]: ...


class Activity:
    """Recording activity in a unit of work of its own."""

    def __init__(self, units: ActivityUnits) -> None:
        self.units = units

    def record(self, key: TicketKey, source: str, *, by: str | None = None, runner_only: bool = False) -> bool:
        """True when the ticket is tracked and the activity counted."""
        with self.units.begin() as uow:
            return record_activity(uow, key, source, by=by, runner_only=runner_only) is not None


__all__ = ["Activity", "ActivityUnit", "record_activity"]
