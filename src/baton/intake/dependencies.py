"""GitHub's word on what blocks an issue: a "blocked by" dependency or a sub-issue added or removed
(`issue_dependencies`, `sub_issues`), and an issue closed or reopened, which every issue it blocks learns.
Baton keeps them (`baton.store.dependencies`), so that whether a task is ready is a query, not a GitHub call.

Links made before Baton saw an issue (before it was installed, or while it was down) are never told: every issue
object GitHub sends counts the issue's links, and where those counts disagree with what Baton keeps, Baton lists
the links (`WorkService.learn_links`): when it first tracks the issue, and at each `issues` hook about it."""

from __future__ import annotations

from baton.github.issues import link_counts
from baton.github.webhooks import dig, full_name, issue_number, text
from baton.service.readiness import BATON
from baton.service.work import Issue, Outcome
from baton.store.dependencies import BLOCKED_BY, SUB_ISSUE, ref

from .context import Intake
from .envelope import Envelope

# (event, action) -> (the kind, the blocked issue's field, the blocker's field, its repository's field, added)
# Each link is told twice, once to each side's repository; Baton keeps it from the blocked side's hook.
LINKS = {
    ("issue_dependencies", "blocked_by_added"): (BLOCKED_BY, "blocked_issue", "blocking_issue", "blocking_issue_repo",
                                                  True),
    ("issue_dependencies", "blocked_by_removed"): (BLOCKED_BY, "blocked_issue", "blocking_issue",
                                                    "blocking_issue_repo", False),
    ("sub_issues", "sub_issue_added"): (SUB_ISSUE, "parent_issue", "sub_issue", "sub_issue_repo", True),
    ("sub_issues", "sub_issue_removed"): (SUB_ISSUE, "parent_issue", "sub_issue", "sub_issue_repo", False),
}  # fmt: skip


def linked(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """A dependency or a sub-issue added or removed, on the side of the issue it blocks."""
    source, blocked_field, blocker_field, repository_field, added = LINKS[(envelope.hook.event, envelope.action)]
    payload = envelope.payload
    key = envelope.ticket(issue_number(payload, blocked_field, "number"))
    blocker = issue_number(payload, blocker_field, "number")
    where = full_name(payload, repository_field, "full_name") or envelope.repository
    if key is None or blocker is None or not where or not intake.active(envelope):
        return ()
    is_open = text(payload, blocker_field, "state") != "closed" if added else None
    intake.work.depends(key, source, ref(where, blocker), is_open, envelope.sender or BATON)
    return ()


def blocker_changed(intake: Intake, envelope: Envelope) -> None:
    """An issue closed, reopened or deleted: every issue it blocks learns whether it is open (a deleted one is
    not)."""
    number = issue_number(envelope.payload, "issue", "number")
    if number is not None and envelope.repository:
        intake.work.blocker_seen(ref(envelope.repository, number), envelope.action == "reopened",
                                 envelope.sender or BATON)  # fmt: skip


def links_seen(intake: Intake, envelope: Envelope) -> None:
    """An `issues` hook about a tracked issue: its links are read again where GitHub's counts of them disagree
    with Baton's (links changed while Baton heard nothing)."""
    if envelope.action in ("deleted", "transferred"):  # the issue is gone from here
        return
    key = envelope.ticket(issue_number(envelope.payload, "issue", "number"))
    links = link_counts(dig(envelope.payload, "issue"))
    if key is None or links is None or not envelope.repository or not intake.active(envelope):
        return
    if intake.work.ticket(key) is not None:
        intake.work.learn_links([Issue(key, envelope.repository, "", links=links)], always=True)
