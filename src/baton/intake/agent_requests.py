"""Commands that arrive over the agent API instead of in a comment.

The caller is who GitHub says its token belongs to; from there on the call is decided as a comment by that
login would be: the same settings, the same access lookup, the same guards. The operation id is the caller's
idempotency key (or a fresh one), so a retry decides nothing twice. An issue Baton has not met yet is read
from GitHub and tracked on first use, as a first comment on it would make it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from baton.domain import Command, Refused, Run, Situation, TicketKey, create
from baton.domain import decide as decide_command
from baton.service.resolver import Missing, Resolved, Resolver
from baton.service.work import UNREAD, Issue, Outcome, Request, WorkService

from .commands import brief_teams
from .context import IssueSource


def prepare(
    resolver: Resolver, work: WorkService, repository: str, number: int, command: Command, login: str, is_bot: bool,
    operation_id: str, run: Run | None = None, kept: bool = True,
) -> Request:  # fmt: skip
    """`command` by `login` on `repository#number`, ready to decide: the repository's settings, and the caller's
    access and teams there, with what people must be told of them (`Request.notices`). A GitHub Actions `run`
    calling for `login` acts on its own installation's repositories only, and its event records it. Raises
    `Missing` (the same for a repository the caller cannot read as for one Baton does not serve). `kept`: whether
    the result is kept for a retry with the same operation id (`Request.kept`)."""
    installation_id, repository_id = resolver.readable(repository, login, within(run))
    key = TicketKey(installation_id, repository_id, number)
    teams = brief_teams(work, key, [command])
    resolved = as_run(resolver.resolve(installation_id, repository, login, is_bot, key, teams), run)
    issue = Issue(key, repository, "", read=False)
    assignee, told = None, resolved.notices
    if command.name == "assign" and command.user:  # whom it names, with their access: the guard checks they may run
        user = command.user
        assignee, more = resolver.person(installation_id, repository, user, user.lower().endswith("[bot]"),
                                         resolved.policy, key)  # fmt: skip
        told = (*told, *more)
    return Request(issue, command, resolved.actor, operation_id, resolved.policy, via="api", run=run, notices=told,
                   assignee=assignee, kept=kept)  # fmt: skip


def within(run: Run | None) -> int | None:
    """The installation a GitHub Actions `run` may act in (None: a person's token, any they can read)."""
    return run.installation_id if run is not None else None


def as_run(resolved: Resolved, run: Run | None) -> Resolved:
    """The caller as a GitHub Actions run acting for them: their access, and the run's workflow (`runners:`)."""
    return resolved if run is None else replace(resolved, actor=replace(resolved.actor, workflow=run.workflow))


def decide_all(
    work: WorkService, issues: IssueSource | None, requests: Sequence[Request], *, unknown: bool = True
) -> list[Outcome | Exception]:
    """Decide prepared requests together (`WorkService.apply_all`), each as if alone. An issue Baton has no
    ticket for yet is read from GitHub first, as a first comment on it would carry it: where it is not open
    there, its request gets `Missing`. Without `unknown`, its request is left `UNREAD` (nothing was decided), for the
    caller to decide again where it may wait for GitHub."""
    outcomes: list[Outcome | Exception] = list(work.apply_all(requests))
    if not unknown:
        return outcomes
    again: list[tuple[int, Request]] = []
    for n, (request, outcome) in enumerate(zip(requests, outcomes, strict=True)):
        if isinstance(outcome, Outcome) and outcome.kind == UNREAD:
            key = request.issue.key
            try:
                read = issues.issue(key.installation_id, request.issue.repository, key.number) if (
                    issues is not None) else None  # fmt: skip
            except Exception as error:  # this request fails (GitHub could not be asked), the others go on
                outcomes[n] = error
                continue
            if read is None:
                outcomes[n] = Missing(f"{request.issue.repository} has no open issue #{key.number}.")
                continue
            issue = Issue(key, request.issue.repository, read.author, read.body, read.labels, read.title,
                          links=read.links)  # fmt: skip
            again.append((n, replace(request, issue=issue)))
    if again:
        for (n, _), outcome in zip(again, work.apply_all([r for _, r in again]), strict=True):
            outcomes[n] = outcome
    return outcomes


def create_and_claim(
    resolver: Resolver, work: WorkService, issues: IssueSource | None, repository: str, title: str, body: str,
    login: str, is_bot: bool, operation_id: str, *, opened: int | None = None,
    on_open: Callable[[int], None] | None = None, run: Run | None = None,
) -> tuple[TicketKey | None, Outcome | Refused]:  # fmt: skip
    """Open an issue through the App and claim it for `login` at once: its ticket is made claimed, never open.
    The caller is its task owner. Whether `login` may claim it is decided first, so that an issue is opened only
    for someone who may run it. Raises `Missing`.

    `on_open(number)` is told as soon as GitHub opened the issue; a retry of a request that got that far but no
    further (Baton stopped) passes it as `opened`, and that issue is claimed instead of another being opened.

    GitHub's `issues` `opened` webhook about it is Baton's own (`performed_via_github_app`) and offers nothing;
    under `offer: labeled` the issue gets the offer label, as an offered issue has."""
    installation_id, repository_id = resolver.readable(repository, login, within(run))
    if issues is None:
        raise Missing(f"Baton cannot open issues on {repository}: it runs without a GitHub App.")
    # No issue to tell anything on yet: nothing is (`where` None).
    resolved = as_run(resolver.resolve(installation_id, repository, login, is_bot, None), run)
    actor, policy = resolved.actor, resolved.policy
    would_be, _ = create(TicketKey(installation_id, repository_id, 0), repository, login)
    first = decide_command(would_be, Command("claim"), actor, Situation(policy))
    if isinstance(first, Refused):
        return None, first
    labels = [policy.offer_label] if policy.offer == "labeled" else []
    if opened is None:
        made = issues.create(installation_id, repository, title, body, labels)
        if on_open is not None:
            on_open(made.number)
    else:
        found = issues.issue(installation_id, repository, opened)
        if found is None:
            raise Missing(f"The issue this request opened, {repository}#{opened}, is no longer open.")
        made = found
    key = TicketKey(installation_id, repository_id, made.number)
    issue = Issue(key, repository, login, made.body, made.labels or tuple(labels), made.title or title)
    request = Request(issue, Command("claim"), actor, operation_id, policy, via="api", run=run)
    return key, work.apply_all([request])[0]
