"""What GitHub should show for a ticket (docs/design.md §6): its one state label, its assignee, its status comment, and
the `baton/acceptance` check run on the heads of its pull requests.

Pure: the writer compares this with what GitHub has and writes only the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .brief import counted, evidence_line
from .evidence import OWN_CHECK, EvidenceRail, deployment_text, mismatch_text, repository_text, same_commit, short
from .issue import IssueState, issue_line
from .model import Ticket, WorkState
from .quiet import Quiet, quiet_line
from .transitions import next_step

LABEL_PREFIX = "baton:"
STATUS_MARKER = "<!-- baton:status -->"

# name -> (colour, description), for creating a label where the repository lacks it
LABELS = {
    "baton:draft": ("d4c5f9", "Baton: the brief is being written"),
    "baton:open": ("0e8a16", "Baton: offered; an agent can /claim it"),
    "baton:claimed": ("fbca04", "Baton: an agent works on it"),
    "baton:delivered": ("1d76db", "Baton: delivered, awaiting review"),
    "baton:accepted": ("5319e7", "Baton: a reviewer accepted it"),
    "baton:withdrawn": ("cccccc", "Baton: taken off the board"),
    "baton:stale": ("e99695", "Baton: the claim has been quiet for a while"),
    "baton:blocked": ("b60205", "Baton: waits for issues it depends on to close"),
}


def state_label(state: WorkState) -> str:
    return f"{LABEL_PREFIX}{state.value}"


@dataclass(frozen=True)
class Review:
    """The last review, when the status comment needs to name it."""

    reviewer: str
    independent: bool
    role: str = "reviewer"  # `repository_maintainer`: a maintainer outside the reviewers list, an override

    def by(self) -> str:
        """ " by @mona", with what sets the review apart: an override, or the runner verifying their own work."""
        override = " as repository maintainer (override)" if self.role == "repository_maintainer" else ""
        return f" by @{self.reviewer}{override}" + ("" if self.independent else " (self-verified)")


STALE_LABEL = "baton:stale"
BLOCKED_LABEL = "baton:blocked"


@dataclass(frozen=True)
class BriefChange:
    """One `brief_changed` event, as the status comment tells it."""

    revision: int
    attempt: int
    changes: tuple[str, ...]


@dataclass(frozen=True)
class View:
    label: str
    assignee: str | None
    comment: str
    stale: bool = False  # `baton:stale` beside the state label
    blocked: bool = False  # `baton:blocked` beside `baton:open`

    @property
    def extra_labels(self) -> tuple[str, ...]:
        """The labels that stand beside the state label."""
        return ((STALE_LABEL,) if self.stale else ()) + ((BLOCKED_LABEL,) if self.blocked else ())


def work_line(ticket: Ticket, review: Review | None = None) -> str:
    match ticket.state:
        case WorkState.DRAFT:
            return "Draft — the brief is being finished"
        case WorkState.OPEN:
            return "Open — not claimed"
        case WorkState.CLAIMED:
            return f"Claimed — attempt {ticket.attempt} by @{ticket.runner}"
        case WorkState.DELIVERED:
            return f"Delivered — attempt {ticket.attempt} by @{ticket.runner}, awaiting review"
        case WorkState.ACCEPTED:
            by = review.by() if review is not None else ""
            return f"Accepted{by} — attempt {ticket.attempt} by @{ticket.runner}"
        case _:
            return "Withdrawn"


def brief_line(ticket: Ticket, changed: Sequence[BriefChange]) -> str | None:
    """What changed in the brief while the runner works on it (claimed or delivered, this attempt), or None."""
    if ticket.state not in (WorkState.CLAIMED, WorkState.DELIVERED):
        return None
    said = [f"revision {c.revision}: {'; '.join(c.changes)}" for c in changed if c.attempt == ticket.attempt]
    if not said:
        return None
    return f"changed during attempt {ticket.attempt} — " + " / ".join(said) + ". Read the issue body again."


def asked_lines(ticket: Ticket) -> list[str]:
    """What the brief says in its own words, for the runner and the reviewer while the work is live: how the
    runner gets access, each evidence sentence with what Baton reads it to require, and a reviewer named in
    words rather than as a login or team."""
    brief = ticket.brief
    if brief is None or ticket.state in (WorkState.ACCEPTED, WorkState.WITHDRAWN):
        return []
    lines = []
    if brief.access:
        lines.append(f"**Access:** {brief.access}")
    if brief.evidence_lines:
        read = [f"“{line}” ({counted(evidence_line(line).elements()) or 'for the reviewer'})"
                for line in brief.evidence_lines]  # fmt: skip
        lines.append(f"**Evidence asked:** {'; '.join(read)}")
    if brief.reviewer_as_written:
        lines.append(f"**Reviewer:** {brief.reviewer_as_written} (as the brief says it; not a GitHub login or team)")
    return lines


def blocker_name(ticket: Ticket, blocker: str) -> str:
    """A blocker (`owner/repo#N`, lower-case) as the ticket's issue names it: `#N` in its own repository."""
    where, _, number = blocker.rpartition("#")
    return f"#{number}" if where == ticket.repository.lower() else blocker


def blocked_lines(ticket: Ticket, blockers: Sequence[str]) -> list[str]:
    """One line per open issue an open task waits for; none for a task in any other state."""
    if ticket.state is not WorkState.OPEN:
        return []
    return [f"Blocked by {blocker_name(ticket, blocker)} (open)" for blocker in blockers]


def view(
    ticket: Ticket,
    review: Review | None = None,
    rail: EvidenceRail | None = None,
    quiet: Quiet | None = None,
    changed: Sequence[BriefChange] = (),
    issue: IssueState | None = None,
    blockers: Sequence[str] = (),
) -> View:
    """The labels, assignee and status comment for a ticket: the three rails side by side, a `Mismatch:` line
    when the runner's report and GitHub disagree, a `Quiet:` line and `baton:stale` while a claim is flagged
    stale (`quiet`), the brief's own words where it has them (`asked_lines`), a `Brief:` line when the brief
    changed under the current attempt (`changed`: the ticket's brief changes), an `Issue:` line while a person's
    close of the issue flags the ticket (`issue`: the issue's state, `baton.domain.issue`), a `Blocked by` line per
    open issue an open task waits for and `baton:blocked` beside `baton:open` (`blockers`: `owner/repo#N`), and
    what comes next. Without a rail (nothing recorded yet) the evidence rails are at their first states."""
    rail = rail or EvidenceRail(ticket.key.number)
    stale = quiet is not None and ticket.state is WorkState.CLAIMED
    lines = [STATUS_MARKER, f"**Work:** {work_line(ticket, review)}"]
    blocked = blocked_lines(ticket, blockers)
    lines += blocked
    closed = issue_line(ticket, issue)
    if closed is not None:
        lines.append(f"**Issue:** {closed}")
    if quiet is not None and stale:
        lines.append(f"**Quiet:** {quiet_line(ticket, quiet)}")
    lines.append(f"**Repository:** {repository_text(rail)}")
    mismatch = mismatch_text(rail)
    if mismatch is not None:
        lines.append(f"**Mismatch:** {mismatch}")
    lines.append(f"**Deployment:** {deployment_text(rail)}")
    lines += asked_lines(ticket)
    brief = brief_line(ticket, changed)
    if brief is not None:
        lines.append(f"**Brief:** {brief}")
    step = BLOCKED_STEP if blocked else next_step(ticket)
    lines += ["", f"Revision {ticket.revision}. {step}"]
    holds = ticket.state in (WorkState.CLAIMED, WorkState.DELIVERED)
    return View(state_label(ticket.state), ticket.runner if holds else None, "\n".join(lines), stale, bool(blocked))


BLOCKED_STEP = "An agent can /claim it once the issues it waits for are closed (a maintainer can /claim force now)."


def comment_due(ticket: Ticket, rail: EvidenceRail | None, answered: bool) -> bool:
    """Whether an issue Baton offered shows its status comment yet: once somebody acted on it (a command
    answered there, `answered`; any change to the ticket since it was created; evidence recorded about it).
    Until then its label says all there is, and offering a backlog of hundreds costs one write each. The
    comment then tells the first command's result."""
    if answered or ticket.revision > 1:
        return True
    if rail is None:
        return False
    return bool(rail.pull_requests or rail.branches or rail.checks or rail.deployments or rail.reports)


# ---------------------------------------------------------------------------------------------- the check run

CHECK_NAME = OWN_CHECK


@dataclass(frozen=True)
class Acceptance:
    """One ticket's part in the check on a pull request head: the ticket, its last acceptance, and the
    commits that acceptance covered (the heads of its pull requests then, and the reported commit)."""

    ticket: Ticket
    review: Review | None = None
    heads: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckView:
    """A `baton/acceptance` check run as it should be: `in_progress`, or `completed` with a conclusion."""

    status: str
    conclusion: str | None
    title: str
    summary: str

    def to_dict(self) -> dict[str, str | None]:
        return {"status": self.status, "conclusion": self.conclusion, "title": self.title, "summary": self.summary}


_STAYS = "The work state stays accepted; a maintainer can /reopen the issue if they need another look."


def _accepted_by(part: Acceptance) -> str:
    return part.review.by() if part.review is not None else ""


def acceptance_check(head: str, parts: Sequence[Acceptance]) -> CheckView:
    """The check on pull request head `head`, for every tracked ticket the pull request links.

    Success once every one of them is accepted at this head (a withdrawn one no longer counts). In progress
    while any of them is not accepted yet. When one was accepted at another head and the head moved since,
    the check completes `neutral`: it does not block a merge, and says which commits the acceptance did
    not cover. The work state stays accepted either way.
    """
    waiting, moved, accepted, withdrawn, refs = [], [], [], [], []
    for part in sorted(parts, key=lambda p: p.ticket.key.number):
        ticket = part.ticket
        if ticket.state is WorkState.ACCEPTED:
            if any(same_commit(head, covered) for covered in part.heads):
                accepted.append(f"{ticket.ref}: accepted{_accepted_by(part)} at {short(head)}.")
            elif part.heads:
                at = ", ".join(short(h) for h in part.heads)
                moved.append(
                    f"{ticket.ref}: accepted{_accepted_by(part)} at {at}. The head has moved to {short(head)} "
                    f"since, and the commits after {at} were not part of the acceptance. {_STAYS}"
                )
            else:
                moved.append(
                    f"{ticket.ref}: accepted{_accepted_by(part)} before GitHub showed any commit of it, so "
                    f"{short(head)} was not part of the acceptance. {_STAYS}"
                )
        elif ticket.state is WorkState.WITHDRAWN:
            withdrawn.append(f"{ticket.ref}: withdrawn; its acceptance is no longer awaited.")
        else:
            waiting.append(f"{ticket.ref}: {work_line(ticket)}. {next_step(ticket)}")
            refs.append(ticket.ref)
    summary = "\n\n".join(waiting + moved + accepted + withdrawn)
    if waiting:
        return CheckView("in_progress", None, f"Waiting for acceptance of {', '.join(refs)}", summary)
    if moved:
        return CheckView("completed", "neutral", f"Head {short(head)} moved after the acceptance", summary)
    if accepted:
        return CheckView("completed", "success", f"Accepted at {short(head)}", summary)
    return CheckView("completed", "neutral", "Withdrawn: nothing awaits acceptance", summary)
