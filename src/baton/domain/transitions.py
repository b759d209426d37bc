"""The work rail's transitions: one per command of docs/design.md §2 (docs/state-machine.md), each a pure
decision.

`decide()` takes a ticket, a parsed command, the actor and the facts read in the same transaction, and
returns `Applied` (the new ticket and its one event), `Refused` (a stable code and a message that says
what the state is and what to do next) or `Noted` (a command that changes nothing, like `/status`).

The new ticket is never built by hand: a transition emits an event and `evolve()` applies it, so
replaying the event log rebuilds exactly the ticket the transitions produced.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from .brief import required, shortfall, unmet_lines
from .model import (
    Actor,
    AttemptEnd,
    Brief,
    Command,
    Event,
    Evidence,
    Policy,
    Role,
    Ticket,
    TicketKey,
    Verdict,
    WorkState,
)
from .roles import is_maintainer, maintainers_are, may_run, names, review_role, runners_are

DRAFT, OPEN, CLAIMED, DELIVERED, ACCEPTED, WITHDRAWN = (
    WorkState.DRAFT,
    WorkState.OPEN,
    WorkState.CLAIMED,
    WorkState.DELIVERED,
    WorkState.ACCEPTED,
    WorkState.WITHDRAWN,
)


@dataclass(frozen=True)
class Situation:
    """Facts read in the same transaction as the decision."""

    policy: Policy = field(default_factory=Policy)
    active_claims: int = 0  # tickets the actor holds as `claimed` in this repository
    assignee: Actor | None = None  # whom an /assign names, with their access (None: not looked up)
    # the delivery's reported branch, commit and pull request that GitHub has not verified, in words
    # (`branch typo`), read for an /accept only: those GitHub answered it does not know, and those not seen yet
    not_found: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()
    # what keeps the task from being ready (`owner/repo#N`, open): its "blocked by" issues and open sub-issues
    blockers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Applied:
    ticket: Ticket
    event: Event
    message: str | None = None  # what the answer tells beside the 👍 (an acceptance of evidence GitHub lacks)


@dataclass(frozen=True)
class Refused:
    """A command refused: a stable code, whose HTTP status is declared in `refusals.py`, and a message."""

    code: str
    message: str


@dataclass(frozen=True)
class Noted:
    """A command that changes no state: it reads or refreshes (`/status`, `/help`), or asks for what is so
    already (the runner's `/claim` of what it holds), which `message` then tells, beside the 👍."""

    command: str
    code: str | None = None
    message: str | None = None


Decision = Applied | Refused | Noted
Guard = Callable[[Ticket, Command, Actor, Situation], Decision]


# ---------------------------------------------------------------------------------------------- words


def describe(ticket: Ticket) -> str:
    """The state in the words a refusal or the status comment uses."""
    match ticket.state:
        case WorkState.DRAFT:
            return "a draft"
        case WorkState.CLAIMED:
            return f"claimed by @{ticket.runner}"
        case WorkState.DELIVERED:
            return f"delivered by @{ticket.runner}"
        case state:
            return state.value


def next_step(ticket: Ticket) -> str:
    """What can happen next from this state, in one sentence."""
    match ticket.state:
        case WorkState.DRAFT:
            return "The task owner or a maintainer can /publish it."
        case WorkState.OPEN:
            return "An agent can /claim it."
        case WorkState.CLAIMED:
            return f"@{ticket.runner} works on it; /deliver comes next."
        case WorkState.DELIVERED:
            return "It awaits review: a reviewer can /accept or /send-back."
        case WorkState.ACCEPTED:
            return "It is finished; a maintainer can /reopen it."
        case _:
            return "It was withdrawn: nobody is offered it now (reopening a closed issue offers it again)."


def _either(states: Iterable[WorkState]) -> str:
    values = [state.value for state in states]
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


# ---------------------------------------------------------------------------------------------- events


def evolve(ticket: Ticket, event: Event) -> Ticket:
    """Apply one event to a ticket. The only place a ticket's fields change."""
    at = replace(ticket, revision=event.revision)
    match event.type:
        case "published":
            return replace(at, state=OPEN)
        case "claimed" | "assigned" | "sent_back":
            return replace(at, state=CLAIMED, runner=event.data["runner"], attempt=event.attempt)
        case "delivered":
            return replace(at, state=DELIVERED, deliveries=ticket.deliveries + 1)
        case "accepted":
            return replace(at, state=ACCEPTED)
        case "released":
            return replace(at, state=OPEN, runner=None)
        case "reopened":  # offering puts a ticket back in the state it left (`data["state"]`), a draft too
            return replace(at, state=WorkState(event.data.get("state", OPEN.value)), runner=None)
        case "withdrawn":
            return replace(at, state=WITHDRAWN, runner=None)
        case "brief_changed":
            return replace(at, brief=Brief.from_dict(event.data["brief"]), owner=event.data["owner"])
    raise ValueError(f"not a work event: {event.type}")


def create(
    key: TicketKey, repository: str, owner: str, *, draft: bool = False, brief: Brief | None = None
) -> tuple[Ticket, Event]:
    """A new ticket at revision 1, with the `created` event that replay starts from."""
    state = DRAFT if draft else OPEN
    event = Event(
        "created",
        owner,
        Role.REQUESTER,
        1,
        0,
        {"state": state.value, "owner": owner, "brief": brief.to_dict() if brief else None},
    )
    return Ticket(key, repository, state, 1, owner, brief=brief), event


def replay(key: TicketKey, repository: str, events: Iterable[Event]) -> Ticket:
    """Rebuild a ticket from its history (events that are not work transitions are skipped)."""
    ticket: Ticket | None = None
    for event in events:
        if event.type == "created":
            ticket = Ticket(
                key,
                repository,
                WorkState(event.data["state"]),
                event.revision,
                event.data["owner"],
                brief=Brief.from_dict(event.data.get("brief")),
            )
        elif event.type in WORK_EVENTS or event.type == "brief_changed":
            if ticket is None:
                raise ValueError("history does not start with `created`")
            ticket = evolve(ticket, event)
    if ticket is None:
        raise ValueError("empty history")
    return ticket


def _apply(ticket: Ticket, type_: str, actor: Actor, role: Role, attempt: int, **data: object) -> Applied:
    event = Event(type_, actor.login, role, ticket.revision + 1, attempt, dict(data))
    return Applied(evolve(ticket, event), event)


def _ended(ticket: Ticket, reason: AttemptEnd) -> dict[str, object] | None:
    """The current attempt's end, when a transition ends one that is still running."""
    if ticket.state == CLAIMED:
        return {"attempt": ticket.attempt, "reason": reason.value}
    return None


# ---------------------------------------------------------------------------------------------- refusals


def _not_maintainer(ticket: Ticket, command: Command, actor: Actor, policy: Policy, owner: bool = False) -> Refused:
    who, how = maintainers_are(ticket.repository, actor, policy)
    needed = f"its task owner (@{ticket.owner}) or a repository maintainer" if owner else "a repository maintainer"
    return Refused(
        "not_permitted", f"@{actor.login} cannot /{command.name} {ticket.ref}: that needs {needed}, {who}. {how}."
    )


def _not_reviewer(ticket: Ticket, command: Command, actor: Actor, policy: Policy) -> Refused:
    if policy.reviewers:
        bot = " (bots count only when listed by name)" if actor.is_bot else ""
        who = (
            f"someone listed in `reviewers:` of `.github/baton.yml` ({names(policy.reviewers)}){bot}, or a "
            "repository maintainer as an override. Ask a reviewer to look at it, or ask to be added to that list"
        )
    else:
        maintainers, how = maintainers_are(ticket.repository, actor, policy)
        who = (
            f"and {ticket.repository} lists no `reviewers:`, so its repository maintainers review: {maintainers}. {how}"
        )
    return Refused("not_reviewer", f"@{actor.login} cannot /{command.name} {ticket.ref}: that needs a reviewer, {who}.")


def _self_review(ticket: Ticket, command: Command, actor: Actor) -> Refused:
    return Refused(
        "self_review",
        f"@{actor.login} cannot /{command.name} {ticket.ref}: @{actor.login} is its runner, and "
        f"{ticket.repository} requires an independent reviewer. Ask another reviewer.",
    )


def _missing(command: Command, what: str) -> Refused:
    rule = RULES[command.name]
    return Refused("missing_argument", f"/{command.name} needs {what}, as in `{rule.usage}`.")


# ---------------------------------------------------------------------------------------------- guards


def _owner_or_maintainer(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Role | Refused:
    """The role in which the task owner, else a maintainer, may `/publish` or `/withdraw`; refused to anyone else."""
    if actor.is_(ticket.owner):
        return Role.TASK_OWNER
    if is_maintainer(actor, situation.policy):
        return Role.REPOSITORY_MAINTAINER
    return _not_maintainer(ticket, command, actor, situation.policy, owner=True)


def _publish(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    role = _owner_or_maintainer(ticket, command, actor, situation)
    if isinstance(role, Refused):
        return role
    gaps = (ticket.brief or Brief()).missing(situation.policy.require_reviewer)
    if gaps:
        return Refused(
            "incomplete_brief",
            f"{ticket.ref} cannot be published: its brief lacks {', '.join(gaps)}. "
            "Add them to the issue's brief and /publish again.",
        )
    return _apply(ticket, "published", actor, role, ticket.attempt)


def _claim(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    policy = situation.policy
    if not may_run(actor, policy):
        who = f"{runners_are(ticket.repository, actor, policy)}, or ask a maintainer to /assign it"
        return Refused("not_permitted", f"@{actor.login} cannot /claim {ticket.ref}: that needs a runner, and {who}.")
    forced = command.text.split()[:1] == ["force"]
    if situation.blockers and not forced:
        return blocked(ticket, situation.blockers)
    if situation.blockers and not is_maintainer(actor, policy):
        return _not_maintainer(ticket, replace(command, name="claim force"), actor, policy)
    if situation.active_claims >= policy.max_active_claims:
        return claim_limit(ticket, actor, situation)
    # a maintainer's claim of a task that is not ready records what it overrode
    override = {"override": {"blocked_by": list(situation.blockers)}} if situation.blockers else {}
    return _apply(ticket, "claimed", actor, Role.RUNNER, ticket.attempt + 1, runner=actor.login, **override)


def blocked(ticket: Ticket, blockers: tuple[str, ...]) -> Refused:
    """A task that is not ready: what blocks it, named as its own repository's `#N` where it can be."""
    own = f"{ticket.repository.lower()}#"
    named = [f"#{b.removeprefix(own)}" if b.startswith(own) else b for b in blockers]
    which = "it is" if len(named) == 1 else "they are"
    return Refused(
        "blocked",
        f"{ticket.ref} is not ready: it is blocked by {', '.join(named)}, still open. Claim another task, or "
        f"this one once {which} closed (a maintainer may /claim force).",
    )


def claim_limit(ticket: Ticket, actor: Actor, situation: Situation) -> Refused:
    """Also used by the store, which enforces the limit atomically with the claim."""
    limit = situation.policy.max_active_claims
    held = max(situation.active_claims, limit)
    return Refused(
        "claim_limit",
        f"@{actor.login} already holds {held} claim{'' if held == 1 else 's'} in {ticket.repository} "
        f"(the limit is {limit}). "
        f"Deliver or /release one before claiming {ticket.ref}.",
    )


def _release(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    target = command.user or ticket.runner
    if target is None or target.lower() != (ticket.runner or "").lower():
        return Refused(
            "not_runner",
            f"@{target} does not hold {ticket.ref}; it is {describe(ticket)} (revision {ticket.revision}).",
        )
    ended = _ended(ticket, AttemptEnd.RELEASED)
    if actor.is_(ticket.runner):
        return _apply(ticket, "released", actor, Role.RUNNER, ticket.attempt, ended=ended)
    if command.user is not None and is_maintainer(actor, situation.policy):
        ended = _ended(ticket, AttemptEnd.RELEASED_BY_MAINTAINER)
        return _apply(ticket, "released", actor, Role.REPOSITORY_MAINTAINER, ticket.attempt, ended=ended)
    who, how = maintainers_are(ticket.repository, actor, situation.policy)
    return Refused(
        "not_runner",
        f"{ticket.ref} is {describe(ticket)} (revision {ticket.revision}); only @{ticket.runner} can "
        f"/release it, or a repository maintainer with /release @{ticket.runner}, {who}. {how}.",
    )


def _assign(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    if command.user is None:
        return _missing(command, "the person to assign")
    if not is_maintainer(actor, situation.policy):
        return _not_maintainer(ticket, command, actor, situation.policy)
    assignee = situation.assignee
    if assignee is not None and not may_run(assignee, situation.policy):
        who = runners_are(ticket.repository, assignee, situation.policy).rpartition(". ")[0]
        return Refused(
            "not_permitted",
            f"@{actor.login} cannot /assign {ticket.ref} to @{assignee.login}: that needs a runner, and {who}. "
            f"Give @{assignee.login} access, or assign someone who has it.",
        )
    return _apply(
        ticket,
        "assigned",
        actor,
        Role.REPOSITORY_MAINTAINER,
        ticket.attempt + 1,
        runner=command.user,
        ended=_ended(ticket, AttemptEnd.REASSIGNED),
    )


def _deliver(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    if not actor.is_(ticket.runner):
        return Refused(
            "not_runner",
            f"{ticket.ref} is {describe(ticket)} (revision {ticket.revision}); only @{ticket.runner} can /deliver it.",
        )
    needed = required(ticket.brief, situation.policy.required_evidence)
    gaps = shortfall(needed, command.evidence)
    if not command.summarised():
        gaps.insert(0, "a summary")
    if gaps:
        unmet = unmet_lines(ticket.brief, needed, command.evidence)
        asks = f" The brief asks for {'; '.join(f'“{line}”' for line in unmet)}." if unmet else ""
        return Refused(
            "missing_evidence",
            f"{ticket.ref} cannot be delivered: the delivery lacks {', '.join(gaps)}.{asks} Send /deliver again "
            "with a line saying what was done and an evidence line for each item (`branch:`, `commit:`, `pr:`, "
            "`tests:`, `screenshot:`).",
        )
    return _apply(
        ticket,
        "delivered",
        actor,
        Role.RUNNER,
        ticket.attempt,
        delivery=ticket.deliveries + 1,
        text=command.text,
        evidence=command.evidence.to_dict(),
        ended={"attempt": ticket.attempt, "reason": AttemptEnd.DELIVERED.value},
    )


def _review(verdict: Verdict) -> Guard:
    def guard(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
        policy = situation.policy
        role = review_role(ticket, actor, policy)
        if role is None:
            return _not_reviewer(ticket, command, actor, policy)
        independent = not actor.is_(ticket.runner)
        if not independent and not policy.allow_self_review:
            return _self_review(ticket, command, actor)
        if verdict is Verdict.SENT_BACK and not command.text:
            return _missing(command, "feedback saying what to change")
        review = {
            "verdict": verdict.value,
            "attempt": ticket.attempt,
            "delivery": ticket.deliveries,
            "independent": independent,
            "note": command.text,
        }
        if verdict is Verdict.ACCEPTED:
            unverified = _unverified(ticket, situation)
            if unverified is not None:
                return unverified
            applied = _apply(ticket, "accepted", actor, role, ticket.attempt, review=review)
            if situation.not_found:
                said = f"{ticket.ref} is accepted, but GitHub did not find {_listed(situation.not_found)}, which the "
                return replace(applied, message=said + "delivery reported. The acceptance stands.")
            return applied
        return _apply(ticket, "sent_back", actor, role, ticket.attempt + 1, runner=ticket.runner, review=review)

    return guard


def _listed(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def _unverified(ticket: Ticket, situation: Situation) -> Refused | None:
    """Under `require_verified_evidence`, an /accept waits until GitHub verified every reported item."""
    if not situation.policy.require_verified_evidence or not (situation.not_found or situation.unverified):
        return None
    items = [f"{item} (not found on GitHub)" for item in situation.not_found]
    items += [f"{item} (not verified yet)" for item in situation.unverified]
    return Refused(
        "unverified_evidence",
        f"{ticket.ref} cannot be accepted yet: this repository accepts only evidence GitHub verified "
        f"(`require_verified_evidence: true`), and the delivery reported {_listed(tuple(items))}. Accept once "
        "GitHub shows them (a push or a pull request is seen within seconds), or /send-back for real evidence.",
    )


def _for_a_reason(ticket: Ticket, command: Command, actor: Actor, role: Role, event: str, end: AttemptEnd) -> Decision:
    """`/reopen` and `/withdraw`: each needs a reason, and ends the current attempt with it."""
    if not command.text:
        return _missing(command, "a reason")
    return _apply(ticket, event, actor, role, ticket.attempt, reason=command.text, ended=_ended(ticket, end))


def _reopen(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    if not is_maintainer(actor, situation.policy):
        return _not_maintainer(ticket, command, actor, situation.policy)
    return _for_a_reason(ticket, command, actor, Role.REPOSITORY_MAINTAINER, "reopened", AttemptEnd.REOPENED)


def _withdraw(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    role = _owner_or_maintainer(ticket, command, actor, situation)
    if isinstance(role, Refused):
        return role
    return _for_a_reason(ticket, command, actor, role, "withdrawn", AttemptEnd.WITHDRAWN)


def _note(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    return Noted(command.name)


# ---------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Rule:
    """One command: its usage, who may use it, and the transition it makes.

    This table is the only list of commands: the parser, `/help`, `docs/commands.md` and
    `docs/state-machine.md` are all made from it.
    """

    name: str
    usage: str
    summary: str
    who: str
    sources: tuple[WorkState, ...]  # () means any state
    target: WorkState | None  # None: no state change
    guard: Guard
    event: str | None = None


RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule("publish", "/publish", "Offer a drafted task once its brief is complete.",
             "task owner, maintainer", (DRAFT,), OPEN, _publish, "published"),
        Rule("claim", "/claim [rev=N]",
             "Take an open task; you become its runner (`/claim force`: a maintainer takes one not ready yet).",
             "an eligible runner", (OPEN,), CLAIMED, _claim, "claimed"),
        Rule("release", "/release [@user]", "Give a claim back; `@user` lets a maintainer release someone's.",
             "the active runner; maintainer with @user", (CLAIMED,), OPEN, _release, "released"),
        Rule("assign", "/assign @user", "Make @user (one who may run it) the runner, ending any current attempt.",
             "maintainer", (OPEN, CLAIMED), CLAIMED, _assign, "assigned"),
        Rule("deliver", "/deliver <summary and evidence lines>",
             "Hand in the work with evidence (branch:, commit:, pr:, tests:, screenshot:).",
             "the active runner", (CLAIMED,), DELIVERED, _deliver, "delivered"),
        Rule("accept", "/accept [#N] [note]", "Accept the delivered work.",
             "a reviewer who is not the runner", (DELIVERED,), ACCEPTED, _review(Verdict.ACCEPTED), "accepted"),
        Rule("send-back", "/send-back <feedback>",
             "Return the work to the same runner, who starts a new attempt.",
             "a reviewer who is not the runner", (DELIVERED,), CLAIMED, _review(Verdict.SENT_BACK), "sent_back"),
        Rule("reopen", "/reopen <reason>", "Clear the claim and offer the task again.",
             "maintainer", (CLAIMED, DELIVERED, ACCEPTED), OPEN, _reopen, "reopened"),
        Rule("withdraw", "/withdraw <reason>", "Take the task off the board.",
             "task owner, maintainer", (DRAFT, OPEN, CLAIMED, DELIVERED), WITHDRAWN, _withdraw, "withdrawn"),
        Rule("status", "/status", "Refresh the status comment.", "anyone", (), None, _note),
        Rule("help", "/help", "List the commands you may use on this issue.", "anyone", (), None, _note),
    )
}  # fmt: skip

WORK_EVENTS = frozenset(rule.event for rule in RULES.values() if rule.event)

_ALL_EVIDENCE = Evidence("branch", "commit", 1, ("tests",), ("screenshot",))

# The codes that mean "not this person", "not now" or "nothing to do": /help leaves such commands out.
_NOT_FOR_YOU = frozenset({
    "wrong_state", "not_runner", "not_reviewer", "self_review", "not_permitted", "already_held", "already_delivered",
    "blocked",
})  # fmt: skip


# C0 control characters but tab and newline. None belongs in a note, a reason or evidence, and PostgreSQL's
# text cannot hold U+0000: a command that carries one is refused with a reply, never stored.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")


def _control_character(command: Command) -> Refused | None:
    """The refusal of a command whose text or evidence holds a control character."""
    evidence = command.evidence
    values = (command.text, command.user or "", evidence.branch or "", evidence.commit or "")
    for value in (*values, *evidence.tests, *evidence.screenshots):
        found = _CONTROL.search(value)
        if found is not None:
            return Refused(
                "control_character",
                f"/{command.name} was not run: its text holds the control character U+{ord(found.group()):04X}, "
                "which Baton does not store. Remove it and send the command again.",
            )
    return None


class AccessNeeded(Exception):
    """A decision needs to know who the actor is (their permission, roles, teams), and only their login is known
    (`Actor.access_known`): look them up, then decide again. The decisions that come before the command's own
    guards (an unknown command, a stale revision, a ticket in the wrong state) need only the login, so a claim
    of a task someone else already runs is refused without waiting to learn who the claimant is."""

    def __init__(self, login: str) -> None:
        super().__init__(f"@{login}'s access is not known yet")
        self.login = login


def decide(ticket: Ticket, command: Command, actor: Actor, situation: Situation) -> Decision:
    """The one entry point: the command's text, the revision and state guards, then the command's own guards
    (which need the actor's access: `AccessNeeded` when it is not known)."""
    before = _before_guards(ticket, command, actor)
    if before is not None:
        return before
    if not actor.access_known:
        raise AccessNeeded(actor.login)
    return RULES[command.name].guard(ticket, command, actor, situation)


def _before_guards(ticket: Ticket, command: Command, actor: Actor) -> Decision | None:
    """What `decide` answers from the command, the ticket and the actor's login alone; None: the command's own
    guards decide."""
    rule = RULES.get(command.name)
    if rule is None:
        return Refused("unknown_command", f"/{command.name} is not a command. Try /help.")
    refused = _control_character(command)
    if refused is not None:
        return refused
    again = _claim_again(ticket, command, actor)
    if again is not None:
        return again
    # rev=N guards a change; a command that changes nothing (/status, /help) has nothing to guard.
    if rule.target is not None and command.rev is not None and command.rev != ticket.revision:
        return stale_revision(ticket, command.rev)
    if rule.sources and ticket.state not in rule.sources:
        step = "Pick another issue." if rule.name == "claim" else next_step(ticket)
        return Refused(
            "wrong_state",
            f"{ticket.ref} is {describe(ticket)} (revision {ticket.revision}), not {_either(rule.sources)}. {step}",
        )
    return None


def _claim_again(ticket: Ticket, command: Command, actor: Actor) -> Decision | None:
    """The runner's `/claim` of the ticket it runs. Holding it is what the claim asks for: nothing changes, and
    so `rev=N`, stale or not, has nothing to guard. A delivered ticket waits for its review instead."""
    if command.name != "claim" or not actor.is_(ticket.runner):
        return None
    where = f"{ticket.ref} (attempt {ticket.attempt}, revision {ticket.revision})"
    if ticket.state is CLAIMED:
        return Noted("claim", "already_held", f"you already hold {where}.")
    if ticket.state is DELIVERED:
        return Refused(
            "already_delivered",
            f"you delivered {where}; it awaits review, so there is nothing to claim. "
            "A reviewer can /accept it, or /send-back it to you for a new attempt.",
        )
    return None


def stale_revision(ticket: Ticket, expected: int) -> Refused:
    return Refused(
        "stale_revision",
        f"{ticket.ref} is at revision {ticket.revision}, not {expected}: it is {describe(ticket)} now. "
        f"{next_step(ticket)} Send the command again with rev={ticket.revision} if it still applies.",
    )


def not_offered(number: int, repository: str, policy: Policy) -> Refused:
    """A command on an issue Baton does not track and may not start tracking."""
    return Refused(
        "not_offered",
        f"#{number} is not offered: {repository} offers only issues labelled `{policy.offer_label}`. "
        "Ask a maintainer to add the label.",
    )


def available(ticket: Ticket, actor: Actor, situation: Situation) -> list[Rule]:
    """The commands this actor may use on this ticket now, found by asking the guards themselves."""
    usable = []
    for rule in RULES.values():
        sample = Command(
            rule.name,
            user=actor.login if rule.name == "release" else "someone",
            text="…",
        )
        if rule.name == "deliver":
            sample = replace(sample, evidence=_ALL_EVIDENCE)
        decision = decide(ticket, sample, actor, situation)
        if not (isinstance(decision, Refused | Noted) and decision.code in _NOT_FOR_YOU):
            usable.append(rule)
    return usable
