"""From stored hooks to decisions: which handler takes each (event, action), and the decide
lane's loop over a batch of taken hooks, with retries for passing failures."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from githubkit.exception import RequestError, RequestFailed
from sqlalchemy.exc import DBAPIError, IntegrityError

from baton.github.client import WouldWait
from baton.github.facts import EVIDENCE_EVENTS
from baton.github.refusals import rate_limit
from baton.github.webhooks import Unreadable
from baton.service.work import Outcome, Request
from baton.store.inbox import Hook, Inbox

from .briefs import issue_edited
from .commands import apply_all, comment_created, comment_requests, look_ahead, review_commands
from .context import DirectoryUnavailable, Intake
from .dependencies import LINKS, linked, links_seen
from .envelope import Envelope
from .evidence import evidence
from .installations import STATUS, installation, installation_repositories
from .offering import (
    BACKFILL,
    backfill_hook,
    closed,
    deleted,
    labels,
    opened,
    opened_requests,
    reopened,
    transferred,
)
from .priorities import pushed

log = logging.getLogger("baton.intake")

Handler = Callable[[Intake, Envelope], tuple[Outcome, ...]]
Reader = Callable[[Intake, Envelope], "list[Request] | None"]


def _review_submitted(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """A submitted review: the commands in its body, and the pull request it carries as evidence."""
    outcomes = review_commands(intake, envelope)
    evidence(intake, envelope)
    return outcomes


HANDLERS: dict[tuple[str, str], Handler] = {
    **{(event, action): evidence for event, kind in EVIDENCE_EVENTS.items() for action in kind.actions},
    ("pull_request_review", "submitted"): _review_submitted,
    ("issues", "closed"): closed,
    ("issues", "reopened"): reopened,
    ("issues", "deleted"): deleted,
    ("issues", "transferred"): transferred,
    **{("installation", action): installation for action in STATUS},
    ("installation_repositories", "added"): installation_repositories,
    ("installation_repositories", "removed"): installation_repositories,
    ("issues", "labeled"): labels,
    ("issues", "unlabeled"): labels,
    ("issue_comment", "created"): comment_created,
    ("issues", "opened"): opened,
    ("issues", "edited"): issue_edited,
    (BACKFILL, "repository"): backfill_hook,
    **dict.fromkeys(LINKS, linked),
    ("push", ""): pushed,  # evidence, and the labels' priorities again when the settings changed
}

# Hooks that carry nothing but commands on one issue: read into requests, and decided with the others
# on the same ticket (`decide`). A reader answers None for a hook its handler must take after all (a
# comment on a pull request acts on the issue the pull request links).
COMMAND_READERS: dict[tuple[str, str], Reader] = {
    ("issue_comment", "created"): comment_requests,
    ("issues", "opened"): opened_requests,
}


def _route(hook: Hook) -> tuple[str, str]:
    return hook.event, hook.action or ""


def process(inbox: Inbox, intake: Intake, hook_id: str) -> None:
    """Process one stored hook (unless another process has taken it)."""
    hook = inbox.take(hook_id)
    if hook is not None:
        decide(inbox, intake, [hook])


# A hook that failed for a passing reason is tried again after 2, 4, 8 … seconds (at most five minutes
# apart), this many times in all; then it ends `failed` with the reason, for `baton replay`.
MAX_HOOK_ATTEMPTS = 8


def passing(error: BaseException) -> bool:
    """GitHub or the database failing for a moment (5xx, a timeout, a rate limit, a lost connection), as
    opposed to a hook that can never be processed."""
    if isinstance(error, RequestFailed):  # a secondary rate limit is a 403
        return error.response.status_code >= 500 or rate_limit(error) is not None
    return isinstance(error, RequestError | DBAPIError | DirectoryUnavailable) and not isinstance(error, IntegrityError)


def retry_after(attempts: int, error: BaseException | None = None) -> float:
    """Seconds until a hook that failed for a passing reason is tried again: as long as GitHub asks
    when the failure is a rate limit, else 2, 4, 8 … by the attempts made (at most five minutes)."""
    asked = rate_limit(error) if error is not None else None
    return float(min(300, 2**attempts)) if asked is None else max(1.0, asked)


def comments_only(hooks: Sequence[Hook]) -> bool:
    """Whether every hook is a comment made on an issue or a pull request (what `decide(..., at_hand=True)` takes)."""
    return all(_route(hook) == ("issue_comment", "created") and hook.attempts <= MAX_HOOK_ATTEMPTS for hook in hooks)


def decide(inbox: Inbox, intake: Intake, hooks: Sequence[Hook], *, at_hand: bool = False) -> None:
    """Process taken hooks, in order, each payload parsed once. Runs of hooks that carry only
    commands are decided together: the commands on one ticket in one transaction
    (`WorkService.apply_all`). A hook that fails for a passing reason is put back to be tried again
    later; one that keeps failing, or fails for any other reason, ends `failed` with the reason. A hook
    no handler takes ends `ignored`, and so does one carrying a value GitHub never sends (`Unreadable`),
    with that as its reason: no attempt could ever process it. The hooks' leases are kept while this
    runs.

    `at_hand`: on the event loop, inside `not_waiting` (`Runtime.stored`): nothing is looked up side by side, and a
    hook that needs more than its commands decided (a comment on a pull request) raises `WouldWait` before the
    batch's commands are decided, as asking GitHub does: the batch is then decided in a thread, from the start."""
    with inbox.leased(hooks):
        _decide(inbox, intake, hooks, at_hand)


class Interrupted(Exception):
    """A hook whose processing was cut off again and again (its process died each time)."""


def _decide(inbox: Inbox, intake: Intake, hooks: Sequence[Hook], at_hand: bool = False) -> None:
    finished: list[tuple[str, str]] = []
    decided: list[Hook] = []  # finished without finish_all (with their commands' decisions, or ignored as unreadable)
    waiting: list[tuple[Hook, list[Request]]] = []

    def failed(hook: Hook, error: BaseException) -> None:
        reason = f"{type(error).__name__}: {error}"[:2000]
        if isinstance(error, Unreadable):
            log.info("delivery %s (%s) ignored: %s", hook.id, hook.event, reason)
            inbox.finish(hook.id, "ignored", reason)
            decided.append(hook)
            return
        log.warning("delivery %s (%s) failed: %s", hook.id, hook.event, type(error).__name__)
        if passing(error) and hook.attempts < MAX_HOOK_ATTEMPTS:
            inbox.retry(hook.id, retry_after(hook.attempts, error), reason)
        else:
            inbox.finish(hook.id, "failed", reason)

    def flush() -> None:
        if not waiting:
            return
        with_commands = [hook.id for hook, requests in waiting if requests]  # finished with their decisions
        try:
            apply_all(intake, [request for _, requests in waiting for request in requests], done=with_commands)
        except Exception as error:  # every one is tried again: operation ids keep what was decided
            for hook, _ in waiting:
                failed(hook, error)
        else:  # each outcome has its log line (`baton.decisions`)
            finished.extend((hook.id, "done") for hook, requests in waiting if not requests)
            decided.extend(hook for hook, requests in waiting if requests)
        waiting.clear()

    opened: list[tuple[Hook, Envelope | BaseException | None]] = []
    for hook in hooks:
        if hook.attempts > MAX_HOOK_ATTEMPTS:  # only interruptions take it this far: it may be the cause
            opened.append((hook, Interrupted(f"processing was cut off {hook.attempts - 1} times")))
            continue
        if _route(hook) not in HANDLERS:
            opened.append((hook, None))
            continue
        try:
            opened.append((hook, Envelope.open(hook, intake.parsed)))
        except Exception as error:
            opened.append((hook, error))

    try:
        look_ahead(intake, [envelope for _, envelope in opened if isinstance(envelope, Envelope)], at_hand=at_hand)
        for hook, envelope in opened:
            if isinstance(envelope, BaseException):
                failed(hook, envelope)
                continue
            reader = COMMAND_READERS.get(_route(hook))
            if reader is not None:
                try:
                    requests = reader(intake, envelope) if envelope is not None else []
                except Exception as error:
                    failed(hook, error)
                    continue
                if requests is not None:
                    waiting.append((hook, requests))
                    continue
            if at_hand:  # a hook with more than commands to do: the batch goes to a thread before anything is decided
                raise WouldWait(f"{hook.event} {hook.action or ''}".strip())
            flush()
            handler = HANDLERS.get(_route(hook))
            if handler is None or envelope is None:
                finished.append((hook.id, "ignored"))
                continue
            try:
                handler(intake, envelope)
                if hook.event == "issues":
                    links_seen(intake, envelope)
            except Exception as error:
                failed(hook, error)
            else:
                finished.append((hook.id, "done"))
        flush()
    except WouldWait:  # nothing of the batch was decided: the lane that decides it takes the parses too
        for hook, envelope in opened:
            if isinstance(envelope, Envelope):
                intake.parsed.keep(hook.id, hook.payload, envelope.payload)
        raise
    inbox.finish_all(finished)
    if intake.metrics is not None:
        done = {hook_id for hook_id, _ in finished}
        intake.metrics.decided_hooks([*decided, *(d for d in hooks if d.id in done)])
