"""The issue's own state on GitHub (open or closed), beside the ticket's work state. Standard library only.

A closed issue is not work: a ticket nobody works on yet (`draft`, `open`) is withdrawn when its issue is
closed, and offered again when it is reopened (`baton.domain.offering`). A ticket somebody works on keeps
its work state when a person closes its issue, since only a reviewer's `/accept` or a maintainer decides
what becomes of delivered work; the ticket is flagged instead (`flagged`, `issue_line`). An issue closed by a
merged pull request is evidence only, and flags nothing.

GitHub's hooks can arrive out of order: each change carries the moment GitHub stamped it (`closed_at`
for a close, `updated_at` for a reopening), and a change older than the one recorded is ignored (`newer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .evidence import EvidenceRail, instant
from .model import Ticket, WorkState

OPEN, CLOSED = "open", "closed"

# GitHub's `state_reason` of a closed issue, in the words Baton shows.
REASONS = {"completed": "completed", "not_planned": "not planned", "duplicate": "a duplicate"}

# The work states a closed issue takes its ticket out of: nobody works on it yet.
NOT_STARTED = (WorkState.DRAFT, WorkState.OPEN)
# The work states a person's close flags: somebody works on it, or the work awaits review.
IN_HAND = (WorkState.CLAIMED, WorkState.DELIVERED)


@dataclass(frozen=True)
class IssueState:
    """What GitHub last said of the issue's state: `open` or `closed`, GitHub's `state_reason` for a close,
    who changed it, when (GitHub's ISO 8601 stamp), and `merged`: the close came from a merged pull request."""

    state: str
    at: str
    by: str | None = None
    reason: str | None = None
    merged: bool = False

    @property
    def closed(self) -> bool:
        return self.state == CLOSED

    def words(self) -> str:
        """ "closed as not planned by @maria", "reopened by @maria"."""
        by = f" by @{self.by}" if self.by else ""
        if not self.closed:
            return f"reopened{by}"
        how = REASONS.get(self.reason or "", self.reason or "")
        if self.merged:
            return f"closed by a merged pull request{by}"
        return f"closed as {how}{by}" if how else f"closed{by}"

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state, "reason": self.reason, "by": self.by, "at": self.at, "merged": self.merged}


# How far apart a pull request's merge and the close of an issue it links may be stamped for the merge to
# count as the close (GitHub closes the issue in the same second; its stamps can lag each other a little).
MERGE_MARGIN = timedelta(minutes=2)


def closed_by_merge(rail: EvidenceRail, closed_at: str) -> bool:
    """Whether the rail holds a merged pull request, linked to the ticket or reported for it, that merged
    when the issue closed: GitHub closed it for the merge ("Fixes #42"), and nobody closed it by hand."""
    moment = instant(closed_at)
    for pull in rail.pull_requests:
        merge = pull.merge
        if merge is None:
            continue
        linked = rail.ticket in merge.links | pull.latest.links or rail.reported_pull_request == pull.number
        if linked and abs(instant(merge.stamp) - moment) <= MERGE_MARGIN:
            return True
    return False


def newer(recorded: IssueState | None, incoming: IssueState) -> bool:
    """Whether `incoming` is a change to act on: later than what is recorded, or as late and different (two
    changes in one second: the one that arrives last wins). The same change told twice is not."""
    if recorded is None:
        return True
    if incoming.at != recorded.at:
        return incoming.at > recorded.at  # GitHub's stamps share one format, so they order as text
    return (incoming.state, incoming.reason) != (recorded.state, recorded.reason)


def flagged(ticket: Ticket, issue: IssueState | None) -> bool:
    """Whether the ticket is flagged: somebody works on it, and a person (not a merge) closed its issue."""
    return issue is not None and issue.closed and not issue.merged and ticket.state in IN_HAND


def issue_line(ticket: Ticket, issue: IssueState | None) -> str | None:
    """The status comment's `Issue:` line of a flagged ticket, or None."""
    if issue is None or not flagged(ticket, issue):
        return None
    return (
        f"Issue {issue.words()}. The work state stays {ticket.state.value}: a reviewer can /accept or "
        "/send-back a delivery, and a maintainer can /reopen or /withdraw the task."
    )


def mention(ticket: Ticket, issue: IssueState) -> str:
    """The one reply that tells the runner their ticket's issue was closed by a person."""
    return (
        f"this issue was {issue.words()} while you hold it ({ticket.state.value}, attempt {ticket.attempt}). "
        "The work state stays; check with the maintainers before you go on."
    )


@dataclass(frozen=True)
class LinkCounts:
    """What GitHub's issue object says of the issue's links (`issue_dependencies_summary`, `sub_issues_summary`),
    or what Baton keeps of them: the issues it is blocked by (all, and those open) and its sub-issues (all, and
    those closed). Baton reads the links themselves when its own counts disagree with GitHub's."""

    blocked_by: int = 0
    blocked_by_open: int = 0
    sub_issues: int = 0
    sub_issues_closed: int = 0

    @property
    def any(self) -> bool:
        return self.blocked_by > 0 or self.sub_issues > 0


@dataclass(frozen=True)
class Linked:
    """An issue's links as GitHub lists them: its blockers and its sub-issues, each `(owner/repo, number, open)`."""

    blocked_by: tuple[tuple[str, int, bool], ...] = ()
    sub_issues: tuple[tuple[str, int, bool], ...] = ()
