"""Hooks that change what a repository offers (`baton.domain.offering`): an issue opened, labelled,
unlabelled, closed, reopened, deleted or transferred, and the App installed on repositories that already
hold open issues.

An issue closed is not work: its ticket is withdrawn while nobody works on it, flagged when somebody does
(`baton.domain.issue`); reopened, it is offered again.

An installation (or repositories added to one) does not list the issues while GitHub waits for the answer,
nor while the installation hook is decided: it stores one backfill hook per repository in the
inbox (`baton_backfill`), keyed by the installation hook's id, so a redelivery stores nothing new. The
decide lane takes them like any other hook, in whichever process is free, with the same leases and
retries. Listing issues is a read; the tickets it creates are shown on GitHub by the writer, within the
installation's write budget, like every other change.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from baton.domain import Policy, TicketKey
from baton.domain.evidence import stamp
from baton.domain.issue import CLOSED, IN_HAND, OPEN, IssueState, closed_by_merge
from baton.domain.offering import DELETED, TRANSFERRED, UNFINISHED, UNLABELED, offered
from baton.domain.status import LABELS
from baton.github.issues import label_names, link_counts
from baton.github.webhooks import dig, full_name, issue_number, login, number, text
from baton.service.offering import UNTRACKED, Offering
from baton.service.work import Issue, Outcome, Request
from baton.store.inbox import Incoming

from .commands import body_requests, label_changed
from .context import Configs, Intake, IssueSource
from .dependencies import blocker_changed
from .envelope import Envelope
from .evidence import issue_state

BACKFILL = "baton_backfill"  # the event of the hooks that offer a repository's existing issues
BATON = "baton"  # the actor of what Baton does by itself


def _issue(envelope: Envelope, where: str = "issue") -> Issue | None:
    """The hook's issue as offering needs it; None when a part is missing."""
    key = envelope.ticket(issue_number(envelope.payload, where, "number"))
    if key is None or not envelope.repository:
        return None
    issue = dig(envelope.payload, where, default={})
    author = login(issue, "user", "login")
    return Issue(key, envelope.repository, author, text(issue, "body"), label_names(issue), text(issue, "title"),
                 links=link_counts(issue))  # fmt: skip


def _operation(envelope: Envelope, part: str = "") -> str:
    return f"{envelope.installation_id}:offering:{envelope.hook.id}{part}"


def _offering(intake: Intake) -> Offering:
    return intake.offering or Offering(intake.work)


def _policy(intake: Intake, envelope: Envelope, issue: Issue) -> Policy:
    """The repository's settings; no command is decided here, so an invalid settings file is explained at once
    (`Intake.tell`)."""
    policy, notices = intake.resolver.settings(issue.key.installation_id, issue.repository, issue.key, envelope.sender)
    intake.tell(notices)
    return policy


def _offer_if_offered(
    intake: Intake, envelope: Envelope, issue: Issue, part: str = "", *, new_only: bool = False
) -> None:
    policy = _policy(intake, envelope, issue)
    if offered(policy, issue.labels):
        _offering(intake).offer(issue, envelope.sender or BATON, _operation(envelope, part), new_only=new_only,
                                policy=policy)  # fmt: skip


def opened_requests(intake: Intake, envelope: Envelope) -> list[Request] | None:
    """A new issue's commands, decided with others (`body_requests`); None for an issue whose body holds
    none, which `opened` offers instead. Either way one transaction creates the ticket."""
    return body_requests(intake, envelope) or None


def opened(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """An issue opened: its body's commands create its ticket (`/claim` there: claimed by its author), else
    it is offered when the repository offers it."""
    requests = body_requests(intake, envelope)
    if requests:
        return tuple(intake.work.apply_all(requests))
    issue = _issue(envelope)
    if issue is not None and intake.active(envelope) and not intake.from_baton(envelope, "issue"):
        _offer_if_offered(intake, envelope, issue)
    return ()


def labels(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """A label added or removed: a `baton:` state label is put back (`label_changed`); any other is kept with the
    ticket, and a label `priority_labels` maps gives the ticket its priority; the offer label offers the issue, or
    withdraws its open ticket."""
    label_changed(intake, envelope)
    label = text(envelope.payload, "label", "name")
    issue = _issue(envelope)
    if issue is None or not label or label in LABELS or not intake.active(envelope):
        return ()
    closed = text(envelope.payload, "issue", "state") == "closed"
    policy = None if closed else _policy(intake, envelope, issue)
    mapped = policy is not None and policy.label_priority([label]) is not None  # a label that gives a priority
    change = (label, envelope.action == "labeled")
    at = envelope.hook.received_at
    intake.work.relabeled(issue.key, issue.labels, change, policy if mapped else None, at)  # a ticket's, if any
    if policy is None:
        return ()
    if policy.offer != "labeled" or label.lower() != policy.offer_label.lower():
        return ()
    if offered(policy, issue.labels):
        _offering(intake).offer(issue, envelope.sender or BATON, _operation(envelope), policy=policy)
    elif envelope.action == "unlabeled":
        _offering(intake).withdraw(issue, envelope.sender or BATON, _operation(envelope), UNLABELED, label=label)
    return ()


def _issue_state(intake: Intake, envelope: Envelope, issue: Issue) -> IssueState:
    """The issue's state as the hook tells it: when GitHub stamped the change (`closed_at`, or
    `updated_at` for a reopening; the hook's arrival when the payload has neither), who made it, GitHub's
    `state_reason`, and whether a merged pull request on the ticket's rail closed it."""
    payload = envelope.payload
    closing = envelope.action == "closed"
    at = text(payload, "issue", "closed_at" if closing else "updated_at") or stamp(envelope.hook.received_at)
    reason = text(payload, "issue", "state_reason") or None
    merged = False
    if closing and reason in (None, "completed") and intake.evidence is not None:
        merged = closed_by_merge(intake.evidence.rail(issue.key), at)
        # the merge may not have reached the rail yet (GitHub's hooks arrive in any order): for a ticket
        # somebody works on, whose flag depends on it, GitHub's timeline says whether a commit closed it
        if not merged and intake.issues is not None and envelope.installation_id is not None:
            stored = intake.work.ticket(issue.key)
            if stored is not None and stored.state in IN_HAND:
                found = intake.issues.closing_commit(envelope.installation_id, issue.repository, issue.key.number)
                merged = found is not None
    return IssueState(CLOSED if closing else OPEN, at, envelope.sender, reason if closing else None, merged)


def closed(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """An issue closed: evidence (`issue_state`), and not work any more (`baton.domain.issue`): its `draft`
    or `open` ticket is withdrawn, naming who closed it and why; a ticket somebody works on keeps its state
    and is flagged, unless a merged pull request closed the issue."""
    issue_state(intake, envelope)
    blocker_changed(intake, envelope)
    issue = _issue(envelope)
    if issue is not None and intake.active(envelope):
        _offering(intake).issue_changed(issue, _issue_state(intake, envelope, issue), _operation(envelope))
    return ()


def reopened(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """An issue reopened: evidence (`issue_state`); a ticket its close withdrew is offered again (in the state
    it left), and an issue Baton has no ticket for yet (it was closed before Baton heard of it) is offered as
    a new one, when the repository offers it."""
    issue_state(intake, envelope)
    blocker_changed(intake, envelope)
    issue = _issue(envelope)
    if issue is None or not intake.active(envelope):
        return ()
    policy = _policy(intake, envelope, issue)
    wanted = offered(policy, issue.labels)
    state = _issue_state(intake, envelope, issue)
    if _offering(intake).issue_changed(issue, state, _operation(envelope), offered=wanted) == UNTRACKED and wanted:
        _offering(intake).offer(issue, envelope.sender or BATON, _operation(envelope, ":new"), new_only=True,
                                policy=policy)  # fmt: skip
        _offering(intake).issue_changed(issue, state, _operation(envelope, ":state"), offered=wanted)
    return ()


def deleted(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """An issue deleted: its ticket is withdrawn whatever state it was in but final; GitHub has nothing left
    to show it on. What it blocked waits for it no longer."""
    blocker_changed(intake, envelope)
    issue = _issue(envelope)
    if issue is not None:
        _offering(intake).withdraw(
            issue, envelope.sender or BATON, _operation(envelope), DELETED, UNFINISHED, show=False
        )
    return ()


def transferred(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """An issue moved to another repository: its ticket here is withdrawn (as for a deleted issue), and the
    issue it became is offered there, when that repository is the installation's and offers it."""
    issue = _issue(envelope)
    new_repository = full_name(envelope.payload, "changes", "new_repository", "full_name")
    if issue is not None:
        _offering(intake).withdraw(
            issue, envelope.sender or BATON, _operation(envelope, ":from"), TRANSFERRED, UNFINISHED,
            show=False, where=new_repository or "another repository",
        )  # fmt: skip
    repository_id = number(envelope.payload, "changes", "new_repository", "id")
    moved = dig(envelope.payload, "changes", "new_issue", default={})
    moved_number = issue_number(moved, "number")
    if envelope.installation_id is None or repository_id is None or moved_number is None or not new_repository:
        return ()
    present = intake.installations.present(envelope.installation_id) if intake.installations else {}
    if not present.get(new_repository, not present) or not intake.active(envelope):
        return ()  # not a repository of this installation (as far as Baton was told)
    key = TicketKey(envelope.installation_id, repository_id, moved_number)
    new = Issue(
        key,
        new_repository,
        login(moved, "user", "login"),
        text(moved, "body"),
        label_names(moved),
        text(moved, "title"),
        links=link_counts(moved),
    )
    _offer_if_offered(intake, envelope, new, ":to")
    return ()


# -- installations ----------------------------------------------------------------------------------


def backfills(intake: Intake, envelope: Envelope, repositories: list[tuple[int, str]]) -> None:
    """Store one backfill hook per repository newly reached by the installation (never twice for one
    installation hook)."""
    if intake.inbox is None or envelope.installation_id is None or not repositories:
        return
    batch = [
        Incoming(
            f"{envelope.hook.id}:backfill:{repository_id}"[:100],
            BACKFILL,
            "repository",
            envelope.installation_id,
            json.dumps({
                "installation": {"id": envelope.installation_id},
                "repository": {"id": repository_id, "full_name": name},
                "sender": {"login": envelope.sender or BATON},
            }),
        )
        for repository_id, name in repositories
    ]  # fmt: skip
    intake.inbox.receive_all(batch)


def backfill_hook(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """A stored backfill: offer the repository's open issues."""
    if intake.issues is None or envelope.installation_id is None or envelope.repository_id is None:
        return ()
    if not envelope.repository or not intake.active(envelope):
        return ()
    backfill(
        _offering(intake), intake.issues, intake.resolver.configs, envelope.installation_id, envelope.repository_id,
        envelope.repository, envelope.hook.id,
    )  # fmt: skip
    return ()


def backfill(
    offering: Offering,
    issues: IssueSource,
    configs: Configs,
    installation_id: int,
    repository_id: int,
    repository: str,
    run: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Offer every open issue of a repository that it offers and that has no ticket yet (and put back one
    that offering withdrew). Idempotent: an issue with a ticket is left as it is. How many issues came to
    what: `created`, `reoffered`, `tracked` (had a ticket), `not offered`. `progress(done, total)` is told
    after each issue offered."""
    policy = configs.load(installation_id, repository).policy
    place = TicketKey(installation_id, repository_id, 0).repository_key
    listed = [
        Issue(
            place.ticket(found.number),
            repository,
            found.author,
            found.body,
            found.labels,
            found.title,
            links=found.links,
        )
        for found in issues.open_issues(installation_id, repository)
    ]
    chosen = [issue for issue in listed if offered(policy, issue.labels)]
    operation = f"{installation_id}:backfill:{run or uuid.uuid4().hex}:{repository_id}"
    counts = offering.offer_all(chosen, BATON, operation, progress, policy)
    offering.work.learn_links(chosen)  # links made before Baton was installed
    counts["tracked"] = counts.get("tracked", 0) + counts.pop("duplicate", 0)
    if len(listed) > len(chosen):
        counts["not offered"] = len(listed) - len(chosen)
    return counts
