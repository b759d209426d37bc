"""Hooks that carry commands: comments, a new issue's body, a review's body, and the `baton:` labels.

A handler reads the command text (its first `MAX_COMMANDS` commands; the `Source` counts the ones ignored,
for one note), works out who the actor is, and hands each command to the work service with an operation
id derived from the comment, issue or review, so processing a hook twice (a redelivery after a
failure) never applies anything twice. A comment on an issue and a new issue's body carry nothing but
commands on that issue: they are read into requests (`comment_requests`, `body_requests`) and decided
together with others on the same ticket. Commands on a pull request act on the issue its description
links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from baton.domain import AccessNeeded, Actor, Command, Policy, TicketKey
from baton.github.client import WouldWait
from baton.github.issues import label_names, link_counts
from baton.github.webhooks import command_text, dig, issue_number, login, number, text
from baton.reading.commands import MAX_COMMANDS, ignored_text, misspelt, read
from baton.reading.linking import linked_issues
from baton.service.resolver import Notice, Resolved
from baton.service.work import Issue, Outcome, Request, Source, WorkService

from .context import Intake
from .envelope import Envelope


def _requests(intake: Intake, envelope: Envelope, body: str, what: str, source: Source) -> list[Request]:
    """The commands in `body`, on the hook's issue, each with its actor, settings and operation id; then
    its misspelt commands, which the work service answers together."""
    key = envelope.ticket(issue_number(envelope.payload, "issue", "number"))
    author = login(envelope.payload, "issue", "user", "login")
    commands, ignored = read(body)
    typos = misspelt(body)
    if not (commands or typos) or key is None or not envelope.repository or not intake.active(envelope):
        return []
    # The issue's body and labels: a command may be what first makes a ticket of it (`_first_sight`).
    about = dig(envelope.payload, "issue", default={})
    issue = Issue(key, envelope.repository, author, text(about, "body"), label_names(about), text(about, "title"),
                  links=link_counts(about))  # fmt: skip
    if commands:
        resolved = _resolve(intake, envelope, key, brief_teams(intake.work, key, commands), lazy=True)
    else:
        policy, notices = intake.resolver.settings(key.installation_id, envelope.repository, key, envelope.sender)
        resolved = Resolved(_sender(envelope), policy, notices)
    actor, policy = resolved.actor, resolved.policy
    source = replace(source, ignored=ignored)
    return [
        Request(
            issue,
            command,
            actor,
            envelope.operation(what, index),
            policy,
            source,
            assignee,
            hook=envelope.hook.id,
            notices=resolved.notices + told,
        )
        for index, command in enumerate(commands)
        for assignee, told in [_assignee(intake, envelope, command, policy, key)]
    ] + _misspelt(issue, typos, actor, envelope, what, policy, source, resolved.notices)


def _resolve(
    intake: Intake, envelope: Envelope, where: TicketKey, teams: frozenset[str], *, lazy: bool = False
) -> Resolved:
    """The sender, with their access to the hook's repository and the repository's settings. `lazy`, for
    requests decided by `apply_all`: a sender GitHub would have to be asked about (and no brief's reviewer team
    to look up) comes with only their login, and is looked up when a decision needs more (`apply_all`)."""
    assert envelope.installation_id is not None
    login = envelope.sender
    bot = envelope.sender_is_bot or login.lower().endswith("[bot]")
    resolver, installation_id, repository = intake.resolver, envelope.installation_id, envelope.repository
    if lazy and not teams and not resolver.known(installation_id, repository, login):
        policy, notices = resolver.settings(installation_id, repository, where, login)
        return Resolved(Actor(login, is_bot=bot, access_known=False), policy, notices)
    return resolver.resolve(installation_id, repository, login, bot, where, teams)


def apply_all(intake: Intake, requests: list[Request], done: Sequence[str] = ()) -> list[Outcome]:
    """`WorkService.apply_all`, first with the senders as they came (some known by their login alone, `_resolve`).
    When a decision needs to know who one of them is, the transaction rolls back, the first such sender of each
    ticket is looked up (side by side where there are several), and the requests are decided again: the commands
    that follow a claim on its ticket are then mostly refused by its state, which needs no lookup. So a claim of a
    task someone else already runs is refused without waiting for GitHub; the senders decided without a lookup
    are looked up afterwards, in the directory's own thread, for their next command."""
    while True:
        try:
            outcomes = intake.work.apply_all(requests, done=done)
        except AccessNeeded:  # nothing was decided; each round looks one more sender up at least
            requests = _looked_up(intake, requests)
            continue
        intake.resolver.learn({_who(r) for r in requests if not r.actor.access_known})
        return outcomes


def _who(request: Request) -> tuple[int, str, str]:
    """The sender of `request` as the resolver names a person: installation, repository, login."""
    return request.issue.key.installation_id, request.issue.repository, request.actor.login


def _looked_up(intake: Intake, requests: list[Request]) -> list[Request]:
    """The requests, with the first sender of each ticket known by their login alone looked up (and that sender's
    other requests of the repository)."""
    first: dict[TicketKey, Request] = {}
    for request in requests:
        if not request.actor.access_known:
            first.setdefault(request.issue.key, request)
    wanted = {_who(r): r for r in first.values()}
    intake.resolver.warm(set(wanted))
    people = {person: intake.resolver.person(*person, r.actor.is_bot, r.policy, r.issue.key)
              for person, r in wanted.items()}  # fmt: skip
    return [replace(r, actor=people[_who(r)][0], notices=r.notices + people[_who(r)][1])
            if not r.actor.access_known and _who(r) in people else r for r in requests]  # fmt: skip


def _sender(envelope: Envelope) -> Actor:
    """The sender, not looked up: a misspelt command changes nothing, so it needs no permission."""
    return Actor(envelope.sender, is_bot=envelope.sender_is_bot)


def _misspelt(
    issue: Issue, typos: list[str], actor: Actor, envelope: Envelope, what: str, policy: Policy, source: Source,
    notices: tuple[Notice, ...],
) -> list[Request]:  # fmt: skip
    """A request for each misspelt command of a comment, named as it was typed (no command has the name)."""
    return [
        Request(
            issue,
            Command(word),
            actor,
            envelope.operation(f"{what}:misspelt", index),
            policy,
            source,
            hook=envelope.hook.id,
            notices=notices,
        )
        for index, word in enumerate(typos)
    ]


def comment_requests(intake: Intake, envelope: Envelope) -> list[Request] | None:
    """The commands of a comment on an issue; None for a comment on a pull request (`comment_created`)."""
    on_issue = _may_command(intake, envelope)
    if not on_issue:
        return None if on_issue is None else []
    comment_id = number(envelope.payload, "comment", "id")
    body = command_text(envelope.payload, "comment", "body")
    requests = _requests(intake, envelope, body, f"comment:{comment_id}", Source(comment_id))
    if not requests:  # a comment with commands is activity where they are decided
        _runner_comment(intake, envelope)
    return requests


def _may_command(intake: Intake, envelope: Envelope) -> bool | None:
    """Whether a new comment's commands act on its issue: False for Baton's own comments (they carry none), None for
    a comment on a pull request (`comment_created` reads those, for the issue it links)."""
    if intake.from_baton(envelope, "comment"):
        return False
    return None if dig(envelope.payload, "issue", "pull_request") is not None else True


def look_ahead(intake: Intake, envelopes: Sequence[Envelope], *, at_hand: bool = False) -> None:
    """Before a batch's comments are read: the settings of their repositories and the first commenter of each issue
    whose comment carries commands (mostly a race's winner, whose claim needs their access), where Baton does not
    know them yet, asked of GitHub side by side (`Resolver.warm`). Reading the comments would ask for the settings
    first, and deciding a claim asks for its claimer only then, after a transaction that rolls back (`apply_all`).

    `at_hand` (on the event loop, where nothing may wait for GitHub): raises `WouldWait` instead, before anything is
    read or decided, so the batch goes to the decide lane at once."""
    first: dict[tuple[int, str, int | None], tuple[int, str, str]] = {}
    for envelope in envelopes:
        payload, installation_id = envelope.payload, envelope.installation_id
        if (envelope.hook.event, envelope.hook.action) != ("issue_comment", "created") or installation_id is None:
            continue
        if not envelope.repository or not _may_command(intake, envelope):
            continue
        try:
            if not read(command_text(payload, "comment", "body")).commands:
                continue
            issue = (installation_id, envelope.repository.lower(), issue_number(payload, "issue", "number"))
        except Exception:  # a value GitHub never sends: reading the comment meets it again, and says so
            continue
        first.setdefault(issue, (installation_id, envelope.repository, envelope.sender))
    people = set(first.values())
    if not at_hand:
        intake.resolver.warm(people)
    elif not intake.resolver.knows_all(people):
        raise WouldWait("a commenter, or their repository's settings, not known yet")


def _runner_comment(intake: Intake, envelope: Envelope) -> None:
    """A comment of the runner on the issue without commands is activity on its claim all the same."""
    key = envelope.ticket(issue_number(envelope.payload, "issue", "number"))
    if key is not None and envelope.sender and intake.active(envelope):
        intake.work.activity.record(key, "comment", by=envelope.sender, runner_only=True)


def body_requests(intake: Intake, envelope: Envelope) -> list[Request] | None:
    """Commands in a new issue's body: `/claim` there creates the ticket already claimed by its author."""
    if intake.from_baton(envelope, "issue"):
        return []
    body = command_text(envelope.payload, "issue", "body")
    return _requests(intake, envelope, body, f"issue:{number(envelope.payload, 'issue', 'id')}", Source(None))


def comment_created(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    requests = comment_requests(intake, envelope)
    if requests is not None:
        return tuple(apply_all(intake, requests))
    # the issue is a pull request; its body is the PR's
    comment_id = number(envelope.payload, "comment", "id")
    body = text(envelope.payload, "comment", "body")
    pull = envelope.payload.get("issue") or {}
    return on_pull_request(intake, envelope, body, pull, Source(comment_id), f"comment:{comment_id}")


def review_commands(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """Commands in a review's body; GitHub has no reactions on reviews, so only replies answer them."""
    review_id = number(envelope.payload, "review", "id")
    pull = envelope.payload.get("pull_request")
    pull = pull if isinstance(pull, dict) else {}
    body = text(envelope.payload, "review", "body")
    return on_pull_request(intake, envelope, body, pull, Source(None, reactable=False), f"review:{review_id}")


def on_pull_request(
    intake: Intake, envelope: Envelope, body: str, pull: dict[str, Any], source: Source, what: str
) -> tuple[Outcome, ...]:
    """Commands on a pull request act on the issue its description links with a closing keyword;
    `/accept #42` names one when it links several. Answers go on the pull request."""
    answer_on = envelope.ticket(issue_number(pull, "number"))
    commands, ignored = read(body)
    typos = misspelt(body)
    if not (commands or typos) or answer_on is None or not envelope.repository or not intake.active(envelope):
        return ()
    repository, login = envelope.repository, envelope.sender
    links = linked_issues(text(pull, "body"), repository)
    source = replace(source, number=answer_on.number, ignored=ignored)
    requests: list[Request] = []
    actor: Actor | None = None
    for index, command in enumerate(commands):
        op = envelope.operation(what, index)
        target = _target(links, command.issue)
        key = replace(answer_on, number=target) if isinstance(target, int) else None
        if key is not None and intake.work.ticket(key) is None:
            target = f"#{key.number} is not tracked by Baton yet: comment on the issue itself first."
        if isinstance(target, str):
            intake.work.reply(answer_on, repository, login, f"/{command.name}: {target}", op)
            continue
        assert key is not None
        if actor is None:
            resolved = _resolve(intake, envelope, answer_on, brief_teams(intake.work, key, commands))
            actor, policy, notices = resolved.actor, resolved.policy, resolved.notices
        else:
            policy, notices = intake.resolver.settings(answer_on.installation_id, repository, answer_on, login)
        assignee, told = _assignee(intake, envelope, command, policy, answer_on)
        issue = Issue(key, repository, "")
        requests.append(Request(issue, command, actor, op, policy, source, assignee, hook=envelope.hook.id,
                                notices=notices + told))  # fmt: skip
    # Misspelt commands are answered on a pull request that links a tracked issue (as on the first such issue),
    # else left alone.
    tracked = (key for key in (replace(answer_on, number=n) for n in links if typos) if intake.work.ticket(key))
    typo_on = next(tracked, None)
    if typo_on is not None:
        policy, notices = intake.resolver.settings(answer_on.installation_id, repository, answer_on, login)
        issue = Issue(typo_on, repository, "")
        requests += _misspelt(issue, typos, actor or _sender(envelope), envelope, what, policy, source, notices)
    if ignored and not requests:  # no decision carries the note: it goes alone, with the id of the first ignored
        intake.work.reply(answer_on, repository, login, ignored_text(ignored), envelope.operation(what, MAX_COMMANDS))
    # One transaction for the comment's commands, as for an issue's, so it gets one 👍 at most.
    return tuple(intake.work.apply_all(requests))


def _assignee(
    intake: Intake, envelope: Envelope, command: Command, policy: Policy, where: TicketKey
) -> tuple[Actor | None, tuple[Notice, ...]]:
    """Whom an `/assign @user` names, with their access: the guard assigns only someone who may run it."""
    if command.name != "assign" or not command.user:
        return None, ()
    assert envelope.installation_id is not None
    login = command.user
    bot = login.lower().endswith("[bot]")
    return intake.resolver.person(envelope.installation_id, envelope.repository, login, bot, policy, where)


def brief_teams(work: WorkService, key: TicketKey, commands: list[Command]) -> frozenset[str]:
    """The team a ticket's brief names as its reviewer, when a command reviews: whether the sender is an
    active member of it is asked with the teams the settings list."""
    if not any(command.name in ("accept", "send-back") for command in commands):
        return frozenset()
    ticket = work.ticket(key)
    reviewer = ticket.brief.reviewer if ticket is not None and ticket.brief is not None else None
    return frozenset({reviewer.lower()}) if reviewer and "/" in reviewer else frozenset()


def _target(links: list[int], named: int | None) -> int | str:
    """The linked issue a command acts on, or why there is none."""
    listed = ", ".join(f"#{n}" for n in links)
    if not links:
        return "this pull request links no issue. Add `Fixes #N` to its description, or comment on the issue."
    if named is not None:
        return named if named in links else f"#{named} is not linked from this pull request (it links {listed})."
    if len(links) == 1:
        return links[0]
    return f"this pull request links {listed}: say which, as in `/accept #{links[0]}`."


def label_changed(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """A `baton:` label added or removed by hand is put back (`WorkService.label_changed`). Baton's own label
    writes come back too, often after the ticket moved on (a claim made before the offer's `baton:open`
    was written): they are not a change by hand, and the projection already shows the state as it is."""
    key = envelope.ticket(issue_number(envelope.payload, "issue", "number"))
    author = login(envelope.payload, "issue", "user", "login")
    label = text(envelope.payload, "label", "name")
    if key is None or not label or not intake.active(envelope) or intake.by_baton(envelope):
        return ()
    issue = Issue(key, envelope.repository, author)
    intake.work.label_changed(issue, label, envelope.action == "labeled", envelope.sender)
    return ()
