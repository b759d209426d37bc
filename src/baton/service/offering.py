"""Keeping tickets in step with what a repository offers (`baton.domain.offering`), one unit of work each.

An offered issue without a ticket gets an `open` one (a `draft` when the brief in its body says so), shown on
GitHub with its label through the outbox, in its lowest tier (offering's share of the write budget; the
status comment follows the first command); an issue that stops being offered has
its open ticket withdrawn, with an event that says why and who did it. Each change carries an operation id
from the hook (or backfill) that caused it, so doing it twice changes nothing (what changes nothing is
not recorded at all), and creating a ticket races safely with a command creating it: the first insert
wins and the other reads what won.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from baton.domain import Event, Policy, Ticket, WorkState
from baton.domain.issue import NOT_STARTED, IssueState, flagged, mention, newer
from baton.domain.offering import CLOSED, reoffer, withdrawal, withdrawn_by_offering, withdrawn_state
from baton.reading.briefs import read_brief
from baton.store import Conflict, StoredTicket
from baton.store.issue_states import issue_state, save_issue_state

from .unit import UnitOfWork
from .work import Issue, WorkService

# What `offer` did: made a ticket, put a withdrawn one back, found one already there, or had done it before.
CREATED, REOFFERED, TRACKED, DUPLICATE = "created", "reoffered", "tracked", "duplicate"
# What `issue_changed` did besides: withdrew a ticket, flagged one, saw an older change or an untracked issue.
WITHDRAWN, FLAGGED, STALE, UNTRACKED = "withdrawn", "flagged", "stale", "untracked"


class Offering:
    def __init__(self, work: WorkService) -> None:
        self.work = work

    def offer(
        self, issue: Issue, actor: str, operation_id: str, *, new_only: bool = False, policy: Policy | None = None
    ) -> str:
        """Make an offered issue an open ticket, or put back one offering withdrew (unless `new_only`). The
        caller has checked that the repository offers the issue; `policy` gives the priority its labels mean."""

        def attempt(uow: UnitOfWork) -> str:
            first = uow.work.results([operation_id]).get(operation_id)
            if first is not None:
                return DUPLICATE
            stored = uow.work.ticket(issue.key)
            if stored is None:
                ticket_id, _ = self.work.new_ticket(uow, issue, operation_id, read_brief(issue.body), known, policy)
                return _done(uow, issue, ticket_id, operation_id, CREATED, offering=True)
            if new_only:
                return TRACKED
            history = uow.work.events(stored.id)
            applied = reoffer(stored.ticket, actor, withdrawn_state(history))
            if applied is None or not withdrawn_by_offering(history):
                return TRACKED  # nothing changes, and nothing is recorded
            _change(uow, stored, applied.ticket, applied.event, operation_id)
            return _done(uow, issue, stored.id, operation_id, REOFFERED, offering=True)

        known = self.work.blocker_states([issue])
        return self.work.units.settle(f"operation {operation_id}", attempt)

    def offer_all(
        self, issues: Sequence[Issue], actor: str, operation: str, progress: Callable[[int, int], None] | None = None,
        policy: Policy | None = None,
    ) -> dict[str, int]:  # fmt: skip
        """`offer` each issue (operation ids `operation:NUMBER`); how many of each result. `progress(done,
        total)` after each."""
        counts: dict[str, int] = {}
        for done, issue in enumerate(issues, 1):
            result = self.offer(issue, actor, f"{operation}:{issue.key.number}", policy=policy)
            counts[result] = counts.get(result, 0) + 1
            if progress is not None:
                progress(done, len(issues))
        return counts

    def withdraw(
        self,
        issue: Issue,
        actor: str,
        operation_id: str,
        cause: str,
        states: tuple[WorkState, ...] = (WorkState.OPEN,),
        *,
        show: bool = True,
        **words: str,
    ) -> bool:
        """Withdraw the issue's ticket when it is in one of `states`, recording `cause`; with `show`, GitHub
        is told (not for an issue that is gone). True when it was withdrawn now."""

        def attempt(uow: UnitOfWork) -> bool:
            if uow.work.results([operation_id]).get(operation_id) is not None:
                return False
            stored = uow.work.ticket(issue.key)
            if stored is None or stored.ticket.state not in states:
                return False  # nothing changes, and nothing is recorded
            applied = withdrawal(stored.ticket, actor, cause, **words)
            _change(uow, stored, applied.ticket, applied.event, operation_id)
            _done(uow, issue, stored.id, operation_id, "withdrawn", show=show)
            return True

        return self.work.units.settle(f"operation {operation_id}", attempt)

    def issue_changed(self, issue: Issue, state: IssueState, operation_id: str, *, offered: bool = True) -> str:
        """The issue was closed or reopened on GitHub (`baton.domain.issue`), in one unit of work: the state is
        recorded unless a later change was recorded already (hooks arrive out of order); a close
        withdraws a `draft` or `open` ticket, and flags one somebody works on (a reply tells the runner, once);
        a reopening puts back a ticket a close (or offering) withdrew, when the repository `offered` it. An
        untracked issue is left to the caller."""

        def attempt(uow: UnitOfWork) -> str:
            if uow.work.results([operation_id]).get(operation_id) is not None:
                return DUPLICATE
            # the ticket's row stays locked until the end: a close and a reopening decided side by side take
            # turns, and the later sees what the earlier recorded
            stored = uow.work.tickets([issue.key], lock=True)[issue.key]
            if stored is None:
                return UNTRACKED
            recorded = issue_state(uow.connection, stored.id)
            if not newer(recorded, state):
                return STALE
            save_issue_state(uow.connection, stored.id, state)
            ticket = stored.ticket
            actor = state.by or "baton"
            if state.closed and ticket.state in NOT_STARTED:
                applied = withdrawal(ticket, actor, CLOSED, how=state.words(), state_reason=state.reason or "")
                _change(uow, stored, applied.ticket, applied.event, operation_id)
                return _done(uow, issue, stored.id, operation_id, WITHDRAWN)
            if state.closed and flagged(ticket, state) and ticket.runner:
                # no work changes, so no operation is recorded: the state recorded above tells a close told
                # twice (`newer`), and the runner hears of it once
                if (state.by or "").lower() != ticket.runner.lower():  # a runner who closed it knows
                    uow.outbox.queue_all({issue.key: [("reply", None, ticket.runner, mention(ticket, state))]},
                                         self.work.answer_delay)  # fmt: skip
                uow.outbox.due(issue.key, issue.repository)
                return FLAGGED
            if not state.closed and offered:
                history = uow.work.events(stored.id)
                back = reoffer(ticket, actor, withdrawn_state(history))
                if back is not None and withdrawn_by_offering(history):
                    _change(uow, stored, back.ticket, back.event, operation_id)
                    return _done(uow, issue, stored.id, operation_id, REOFFERED)
            if recorded is not None and flagged(ticket, recorded):
                uow.outbox.due(issue.key, issue.repository)  # the status comment's `Issue:` line goes
            return TRACKED

        return self.work.units.settle(f"operation {operation_id}", attempt)


def _change(uow: UnitOfWork, stored: StoredTicket, after: Ticket, event: Event, operation_id: str) -> None:
    if not uow.work.count_claims(stored.ticket, after, None):
        raise Conflict("a claim count moved")
    if not uow.work.swap(stored.id, stored.ticket.revision, after):
        raise Conflict("lost")
    uow.work.append(stored.id, event, operation_id)


def _done(
    uow: UnitOfWork, issue: Issue, ticket_id: int, operation_id: str, result: str, *, show: bool = True,
    offering: bool = False,
) -> str:  # fmt: skip
    """Record a change's result under its operation id (doing it again returns `DUPLICATE`), and mark the
    issue due on GitHub unless it is gone (`offering`: in the outbox's lowest tier)."""
    uow.work.record_operation(operation_id, ticket_id, {"offering": result})
    if show:
        uow.outbox.due(issue.key, issue.repository, offering=offering)
    return result


__all__ = ["CREATED", "DUPLICATE", "FLAGGED", "REOFFERED", "STALE", "TRACKED", "UNTRACKED", "WITHDRAWN", "Offering"]
