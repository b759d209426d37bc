"""The work rail's use cases. Each call is one unit of work: read, decide (pure), compare-and-swap, record.

`apply()` returns an `Outcome`: applied (the new revision and the event), refused (a code, a message
and the state as it actually is), or noted (a command that changes nothing). When the operation id was
seen before, the first outcome comes back with `duplicate=True` and nothing is done again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from baton.domain import (
    RULES,
    Actor,
    Applied,
    Brief,
    Command,
    Event,
    Noted,
    Policy,
    Refused,
    RepositoryKey,
    Role,
    Situation,
    Ticket,
    TicketKey,
    WorkState,
    available,
    create,
    decide,
    not_offered,
)
from baton.domain.evidence import NOT_FOUND, UNVERIFIED, verification
from baton.domain.misspelt import misspelt_text
from baton.domain.offering import offered
from baton.domain.status import LABELS, state_label
from baton.reading.briefs import BriefReading, read_brief
from baton.reading.commands import help_text, ignored_text
from baton.service.activity import Activity, record_activity
from baton.service.evidence import EvidenceService
from baton.store import Conflict, StoredTicket
from baton.store.outbox.marking import Answer

from . import briefs
from .resolver import Notice
from .unit import UnitOfWork, Units

log = logging.getLogger("baton.decisions")
UNREAD = "unread"  # an `Outcome.kind`: see `Issue.read`


@dataclass(frozen=True)
class Issue:
    """The issue a command is about, as the webhook or API request describes it."""

    key: TicketKey
    repository: str  # "owner/name"
    author: str
    body: str = ""  # where known: the brief a new ticket is made with is read from it (`read_brief`)
    labels: tuple[str, ...] = ()  # where known: under `offer: labeled` they say whether it is offered
    title: str | None = None  # where known: kept on a new ticket, for the tasks an agent lists
    # False: GitHub has not been asked about the issue yet (an agent API call). Where it has no ticket, its
    # command is not decided: it comes back `unread`, and the caller reads the issue and asks again.
    read: bool = True


@dataclass(frozen=True)
class Outcome:
    kind: str  # "applied" | "refused" | "noted" | "unread" (nothing decided: see `Issue.read`)
    command: str
    state: WorkState | None  # None: the issue has no ticket
    revision: int
    runner: str | None
    code: str | None = None
    message: str | None = None
    event: str | None = None
    duplicate: bool = False
    # The ticket's attempt after the decision, for an answer that tells it (the agent API's). Like `duplicate` it
    # describes this answer, not the result: never stored (a replayed outcome has None) and never compared.
    attempt: int | None = field(default=None, compare=False)

    @property
    def applied(self) -> bool:
        return self.kind == "applied"

    def to_json(self) -> dict[str, Any]:
        # `duplicate` describes a reply, not the result: it is never stored.
        data = {name: getattr(self, name) for name in _STORED_FIELDS}
        data["state"] = self.state.value if self.state else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        state = WorkState(data["state"]) if data["state"] else None
        return cls(**{**data, "state": state, "duplicate": True})


_STORED_FIELDS = tuple(field.name for field in fields(Outcome) if field.name not in ("duplicate", "attempt"))


def _outcome(command: str, ticket: Ticket | None, **fields: Any) -> Outcome:
    return Outcome(
        command=command,
        state=ticket.state if ticket else None,
        revision=ticket.revision if ticket else 0,
        runner=ticket.runner if ticket else None,
        attempt=ticket.attempt if ticket else None,
        **fields,
    )


@dataclass(frozen=True)
class Request:
    """One command to decide: on which issue, by whom, under which settings, and where it was written."""

    issue: Issue
    command: Command
    actor: Actor
    operation_id: str
    policy: Policy
    source: Source | None = None
    assignee: Actor | None = None  # for /assign @user: that user, with their access, as the guard needs
    via: str | None = None  # "api": the agent API, recorded on the event as its `source` (None: a comment)
    delivery: str | None = None  # the webhook delivery it came in, for the decision's log line
    notices: tuple[Notice, ...] = ()  # what resolving its caller met (`Resolver`), told in its unit of work


@dataclass(frozen=True)
class Source:
    """Where a command was written, so its answer goes there.

    `comment_id` is the comment to react to (None: the issue's or pull request's own body); `number`
    is the issue or pull request the answer goes on, when it is not the ticket's issue (a command on a
    pull request); `reactable` is False where GitHub has no reactions (a review's body); `ignored` counts
    the comment's commands past `MAX_COMMANDS`, not read, of which one note tells.
    """

    comment_id: int | None
    number: int | None = None
    reactable: bool = True
    ignored: int = 0


Decided = Callable[[Sequence[Request], Sequence[Outcome]], None]


class WorkService:
    def __init__(
        self, units: Units, evidence: EvidenceService, answer_delay: float = 2.0, decided: Decided | None = None
    ) -> None:
        """`answer_delay`: how long answers on one issue wait to be coalesced (a race's refusals); `decided`
        hears of every command decided, once its transaction committed (the metrics count them).

        The work service may write evidence (a delivery's report is a claim on the evidence rail, recorded
        in the delivery's unit of work); evidence code never calls the work service."""
        self.units = units
        self.evidence = evidence
        self.answer_delay = answer_delay
        self.decided = decided
        self.activity = Activity(units)

    def open_ticket(
        self,
        issue: Issue,
        operation_id: str,
        *,
        draft: bool = False,
        brief: Brief | None = None,
        problems: Sequence[str] = (),
    ) -> Outcome:
        """Start tracking an issue (as `open`, or `draft` when it waits for `/publish`), with the brief its
        body carries (`baton.reading.briefs.read_brief(body)` gives all three: `draft`, `brief` and `problems`, which
        are explained once in a reply)."""

        def attempt(uow: UnitOfWork) -> Outcome:
            read = uow.work.read(issue.key, operation_id, issue.author)
            if read.first is not None:
                return Outcome.from_json(read.first)
            stored = read.stored
            if stored is not None:
                outcome = _outcome(
                    "open",
                    stored.ticket,
                    kind="refused",
                    code="already_tracked",
                    message=f"#{issue.key.number} is already tracked, at revision {stored.ticket.revision}.",
                )
                uow.work.record_operation(operation_id, stored.id, outcome.to_json())
                return outcome
            ticket_id, ticket = self.new_ticket(uow, issue, operation_id, BriefReading(draft, brief, tuple(problems)))
            outcome = _outcome("open", ticket, kind="applied", event="created")
            uow.work.record_operation(operation_id, ticket_id, outcome.to_json())
            return outcome

        return self.units.settle(f"operation {operation_id}", attempt)

    def apply(
        self,
        issue: Issue,
        command: Command,
        actor: Actor,
        operation_id: str,
        policy: Policy | None = None,
        source: Source | None = None,
    ) -> Outcome:
        """Decide and record one command, in one transaction (retried only after a lost swap).

        With a `source` (the comment the command came in), the same transaction queues its answer on
        GitHub: a 👍 when applied (one per comment), a reply when refused or asked for /help.
        """
        return self.apply_all([Request(issue, command, actor, operation_id, policy or Policy(), source)])[0]

    def apply_all(self, requests: Sequence[Request]) -> list[Outcome]:
        """Decide many commands in one transaction, in the order they came, each exactly as if it had been
        decided alone: its own event, operation id and answer, and the claim counts every earlier command
        left (a property test holds batch and one-by-one deciding to the same rows and answers). Only the
        commands of one comment share answers: one 👍 at most, and one note of the commands it ignored. Each
        ticket's final state is written with one compare-and-swap. Tickets are locked first, in the order
        of their keys, so two processes deciding overlapping batches never wait on each other in a circle."""
        # A lost claim-limit increment, or a concurrent first write of the same ticket or operation id, rolls
        # everything back; the next round reads what won.
        what = f"operation {requests[0].operation_id}" if requests else "nothing"

        def attempt(uow: UnitOfWork) -> list[Outcome]:
            self._notify(uow, requests)
            return self._decide_all(uow, requests)

        outcomes = self.units.settle(what, attempt)
        decided = [(r, o) for r, o in zip(requests, outcomes, strict=True) if o.kind != UNREAD]
        if self.decided is not None:
            self.decided([r for r, _ in decided], [o for _, o in decided])
        if log.isEnabledFor(logging.INFO):
            for request, outcome in decided:
                _log_decision(request, outcome)
        return outcomes

    def _decide_all(self, uow: UnitOfWork, requests: Sequence[Request]) -> list[Outcome]:
        if not requests:
            return []
        keys = sorted({r.issue.key for r in requests}, key=lambda k: (k.installation_id, k.repository_id, k.number))
        tx = uow.work
        read = tx.tickets(keys, lock=True)
        current: dict[TicketKey, StoredTicket | None] = dict(read)
        firsts = tx.results([request.operation_id for request in requests])
        held: dict[tuple[RepositoryKey, str], int] = {}  # claims each login holds, by repository
        logins: dict[RepositoryKey, set[str]] = {}
        for request in requests:
            logins.setdefault(request.issue.key.repository_key, set()).add(request.actor.login.lower())
        for repository, names in logins.items():
            held.update({(repository, name): count for name, count in tx.held(repository, names).items()})
        outcomes: list[Outcome] = []
        operations: list[tuple[str, int | None, dict[str, Any]]] = []
        answers: dict[TicketKey, list[Answer]] = {}
        # A comment gets one 👍 if any of its commands is applied, and one note if it held too many to read.
        reacted: set[tuple[TicketKey, int | None]] = set()
        notes: dict[tuple[TicketKey, int | None], Answer] = {}
        misspelt: dict[tuple[TicketKey, int | None], tuple[str, list[str]]] = {}  # one answer per comment
        shown: dict[TicketKey, str] = {}  # tickets whose view on GitHub changes (or /status asked to refresh it)
        touches: list[_Touch] = []  # runner activity, recorded after the decisions (activity rows are locked last)
        for request in requests:
            issue, command, actor, policy = request.issue, request.command, request.actor, request.policy
            key = issue.key
            first = firsts.get(request.operation_id)
            if first is not None:
                outcomes.append(Outcome.from_json(first))
                continue
            reply: str | None = None
            thumb = False  # a reply that comes with a 👍
            if command.name not in RULES:  # misspelt: answered with the comment's others, after its own answers
                tracked = current[key]
                outcome = self._misspelt(request, tracked, misspelt)
                if tracked is not None and request.source is not None and actor.is_(tracked.ticket.runner):
                    touches.append(_Touch(tracked, "comment", actor.login))
                firsts[request.operation_id] = outcome.to_json()
                operations.append((request.operation_id, tracked.id if tracked else None, outcome.to_json()))
                outcomes.append(outcome)
                continue
            stored = current[key]
            if stored is None and not issue.read:
                outcomes.append(Outcome(UNREAD, command.name, None, 0, None))
                continue
            if stored is None:
                stored = self._first_sight(uow, issue, policy, request.operation_id)
                if stored is not None:  # a new ticket is shown, whatever its first command's answer
                    shown[key] = issue.repository
            current[key] = stored
            if stored is None:
                refusal = not_offered(key.number, issue.repository, policy)
                outcome = _outcome(command.name, None, kind="refused", code=refusal.code, message=refusal.message)
                reply = refusal.message
            else:
                claims = held.get((key.repository_key, actor.login.lower()), 0)
                situation = Situation(policy, claims, assignee=request.assignee, **_evidence(uow, stored, command))
                decision = decide(stored.ticket, command, actor, situation)
                if isinstance(decision, Applied):
                    if request.via is not None:
                        event = decision.event
                        decision = replace(decision, event=replace(event, data={**event.data, "source": request.via}))
                    outcome = self._record(uow, stored, decision, command, request.operation_id, policy)
                    if decision.message is not None:
                        outcome = replace(outcome, message=decision.message)
                        reply, thumb = decision.message, True
                    touches.append(_Touch(stored, f"/{command.name}", actor.login, decision.ticket))
                    _count(held, key.repository_key, stored.ticket, decision.ticket)
                    current[key] = StoredTicket(stored.id, decision.ticket)
                elif isinstance(decision, Noted):
                    outcome = _outcome(
                        command.name, stored.ticket, kind="noted", code=decision.code, message=decision.message
                    )
                    if command.name == "help":
                        usable = available(stored.ticket, actor, situation)
                        reply = f"commands you may use on #{key.number} now:\n{help_text(usable)}"
                    elif decision.message is not None:
                        reply, thumb = decision.message, True  # the 👍 of a claim, and what it found
                else:
                    outcome = _refusal(command.name, stored.ticket, decision)
                    reply = decision.message
                if not isinstance(decision, Applied) and request.source is not None and actor.is_(stored.ticket.runner):
                    touches.append(_Touch(stored, "comment", actor.login))
            if outcome.state is not None and outcome.kind != "refused" and outcome.code is None:
                shown[key] = issue.repository
            firsts[request.operation_id] = outcome.to_json()  # the same id twice in one call: a retry
            operations.append((request.operation_id, stored.id if stored else None, outcome.to_json()))
            source = request.source
            if source is not None:
                where, items = _answer(issue, actor, source, reply, thumb)
                comment = (where, source.comment_id)
                for item in items:
                    if not (item[0] == "reaction" and comment in reacted):
                        answers.setdefault(where, []).append(item)
                        if item[0] == "reaction":
                            reacted.add(comment)
                if source.ignored:
                    notes[comment] = ("reply", source.comment_id, actor.login, ignored_text(source.ignored))
            outcomes.append(outcome)
        for touch in touches:
            touch.record(uow)
        for (where, comment_id), (author, words) in misspelt.items():
            answers.setdefault(where, []).append(("reply", comment_id, author, misspelt_text(words)))
        for (where, _), note in notes.items():  # after the comment's own answers
            answers.setdefault(where, []).append(note)
        for key in keys:
            before, after = read[key], current[key]
            if after is None:
                continue
            expected = before.ticket.revision if before is not None else 1  # 1: created in this transaction
            if after.ticket.revision != expected and not tx.swap(after.id, expected, after.ticket):
                raise Conflict("lost")  # not reached while the row is locked; a lost swap never passes silently
        tx.record_operations(operations)
        uow.outbox.queue_all(answers, self.answer_delay)
        # Due now where the ticket's view changed or a 👍 waits; after the coalescing delay where only a reply does.
        due: dict[TicketKey, tuple[str, float, bool]] = {key: (name, 0.0, False) for key, name in shown.items()}
        for where, items in answers.items():
            urgent = any(kind == "reaction" for kind, *_ in items)
            delay = 0.0 if urgent or where in due else self.answer_delay
            due[where] = (due[where][0] if where in due else _repository_of(requests, where), delay, urgent)
        uow.outbox.due_all(due)
        return outcomes

    @staticmethod
    def _misspelt(
        request: Request,
        stored: StoredTicket | None,
        misspelt: dict[tuple[TicketKey, int | None], tuple[str, list[str]]],
    ) -> Outcome:
        """A misspelt command changes nothing and starts tracking nothing. It is answered where the issue is
        tracked or offered (`offer: all`); on other issues, prose is left alone."""
        word = request.command.name
        ticket = stored.ticket if stored is not None else None
        outcome = _outcome(word, ticket, kind="refused", code="unknown_command", message=misspelt_text([word]))
        source = request.source
        if source is not None and (ticket is not None or request.policy.offer == "all"):
            where, _ = _answer(request.issue, request.actor, source, None)
            _, words = misspelt.setdefault((where, source.comment_id), (request.actor.login, []))
            words.append(word)
        return outcome

    def reply(self, where: TicketKey, repository: str, author: str, message: str, operation_id: str) -> bool:
        """Answer a command that reached no ticket (a pull request that links none, or several), once."""
        notice = Notice(where, repository, author, message, operation_id)
        return self.units.settle(f"operation {operation_id}", lambda uow: self._reply(uow, notice))

    def _reply(self, uow: UnitOfWork, notice: Notice) -> bool:
        """Queue `notice` in `uow`, unless its operation id was recorded before."""
        where, message = notice.where, notice.message
        if uow.work.read(where, notice.operation_id, notice.author).first is not None:
            return False
        outcome = Outcome("refused", "", None, 0, None, code="not_linked", message=message)
        uow.work.record_operation(notice.operation_id, None, outcome.to_json())
        uow.outbox.queue_all({where: [("reply", None, notice.author, message)]}, self.answer_delay)
        uow.outbox.due(where, notice.repository, self.answer_delay)
        return True

    def _notify(self, uow: UnitOfWork, requests: Sequence[Request]) -> None:
        """The requests' notices, each once (`_reply`), before they are decided: their tickets are locked
        first, in the order `_decide_all` locks them, so the outbox rows are taken after the tickets as always."""
        notices: dict[str, Notice] = {}
        for request in requests:
            for notice in request.notices:
                notices.setdefault(notice.operation_id, notice)
        if notices:  # the statement locks them in the order of their keys
            uow.work.tickets(list(dict.fromkeys(request.issue.key for request in requests)), lock=True)
        for notice in notices.values():
            self._reply(uow, notice)

    def _first_sight(self, uow: UnitOfWork, issue: Issue, policy: Policy, operation_id: str) -> StoredTicket | None:
        """The first command on an offered issue (every issue with `offer: all`, one carrying the offer label
        with `offer: labeled`) creates its ticket, as offering would have: `open`, or `draft` when the brief
        in the issue's body says so (or cannot be used)."""
        if not offered(policy, issue.labels):
            return None
        return StoredTicket(*self.new_ticket(uow, issue, operation_id, read_brief(issue.body)))

    def new_ticket(self, uow: UnitOfWork, issue: Issue, operation_id: str, reading: BriefReading) -> tuple[int, Ticket]:
        """Insert a ticket with the brief an issue body gave: the brief's owner is the task owner (else the
        issue's author), a non-code task's evidence rails are not applicable, and problems are explained."""
        brief = reading.brief
        owner = brief.owner if brief is not None and brief.owner else issue.author
        ticket, event = create(issue.key, issue.repository, owner, draft=reading.draft, brief=brief)
        ticket_id = uow.work.insert_ticket(ticket, event, operation_id, issue.title)
        if brief is not None and not brief.code:
            briefs.non_code(uow, self.evidence, ticket, operation_id)
        briefs.explain(uow, issue.key, issue.repository, issue.author, reading.problems, None, self.answer_delay)
        return ticket_id, ticket

    def retitled(self, key: TicketKey, title: str) -> None:
        """The issue's title changed on GitHub: the ticket keeps the new one (no event: it is not work)."""
        with self.units.begin() as uow:
            uow.work.retitle(key, title)

    def brief_edited(self, issue: Issue, editor: str, operation_id: str) -> bool:
        """The issue's body was edited: its brief, when it changed, becomes the ticket's (an event, one
        revision on); an invalid one is explained once. True when the ticket changed."""
        body = issue.body

        def attempt(uow: UnitOfWork) -> bool:
            return briefs.edited(
                uow, self.evidence, issue.key, issue.repository, issue.author, body, editor, operation_id,
                self.answer_delay,
            )  # fmt: skip

        return self.units.settle(f"operation {operation_id}", attempt)

    def _record(
        self,
        uow: UnitOfWork,
        stored: StoredTicket,
        decision: Applied,
        command: Command,
        operation_id: str,
        policy: Policy,
    ) -> Outcome:
        before, after, event = stored.ticket, decision.ticket, decision.event
        limit = policy.max_active_claims if event.type == "claimed" else None
        if not uow.work.count_claims(before, after, limit):
            raise Conflict("a claim count moved")
        uow.work.append(stored.id, event, operation_id)
        if event.type == "delivered":
            self.evidence.report(uow, after.key, command.evidence, self.units.clock.now(), operation_id)
        if event.type == "accepted":
            # what was accepted, so the acceptance check can tell when a pull request's head moves after it
            self.evidence.accepted(uow, after.key, after.revision, operation_id)
        return _outcome(command.name, after, kind="applied", event=event.type)

    def label_changed(self, issue: Issue, label: str, added: bool, actor: str) -> bool:
        """A `baton:` state label was added or removed on GitHub. The database is never changed from a
        label: when GitHub now disagrees with the ticket, the labels are put back (the outbox does it)
        and an event records who changed them. True when a restoration was queued."""
        if label not in LABELS or label == "baton:stale":
            return False
        with self.units.begin() as uow:
            stored = uow.work.ticket(issue.key)
            if stored is None:
                return False
            ticket = stored.ticket
            wanted = state_label(ticket.state)
            if (label == wanted) == added:
                return False  # GitHub agrees with the database (Baton's own writes arrive here too)
            data = {"label": label, "action": "added" if added else "removed", "restored": wanted}
            event = Event("label_restored", actor, Role.ANYONE, ticket.revision, ticket.attempt, data)
            uow.work.append(stored.id, event, None)
            uow.outbox.due(issue.key, issue.repository)
        return True

    def ticket(self, key: TicketKey) -> Ticket | None:
        with self.units.read() as uow:
            stored = uow.work.ticket(key)
            return stored.ticket if stored else None

    def history(self, key: TicketKey) -> list[Any]:
        with self.units.read() as uow:
            stored = uow.work.ticket(key)
            return [] if stored is None else uow.work.events(stored.id)


@dataclass(frozen=True)
class _Touch:
    """Runner activity a decision makes: every applied command (`after`: the ticket it left), and a command of
    the runner that changed nothing (`/status`, a refusal), which is activity on the claim all the same."""

    stored: StoredTicket
    source: str
    by: str
    after: Ticket | None = None

    def record(self, uow: UnitOfWork) -> None:
        before, known = self.stored.ticket, (self.stored.id, self.stored.ticket.repository)
        if self.after is None:
            if before.state is WorkState.CLAIMED:
                record_activity(uow, before.key, self.source, by=self.by, known=known)
            return
        # A new attempt's quiet period starts; a claim that ends or moves to someone else is stale no longer,
        # without an `activity_resumed` (its own event says enough).
        same_claim = self.after.state is WorkState.CLAIMED and self.after.attempt == before.attempt
        record_activity(uow, before.key, self.source, by=self.by, quietly=not same_claim, known=known)


def _evidence(uow: UnitOfWork, stored: StoredTicket, command: Command) -> dict[str, tuple[str, ...]]:
    """For an /accept of delivered work: the reported items GitHub has not verified, read from the rail in the
    decision's transaction (the guard refuses them under `require_verified_evidence`, else the answer names
    those not found)."""
    if command.name != "accept" or stored.ticket.state is not WorkState.DELIVERED:
        return {}
    items = verification(uow.evidence.rail(stored.id, stored.ticket.key.number).rail)
    return {
        "not_found": tuple(item.words for item in items if item.state == NOT_FOUND),
        "unverified": tuple(item.words for item in items if item.state == UNVERIFIED),
    }


def _count(held: dict[tuple[RepositoryKey, str], int], place: RepositoryKey, before: Ticket, after: Ticket) -> None:
    """Keep the call's claim counts in step with a transition, as the database's are (`count_claims`)."""
    lost = before.runner.lower() if before.state is WorkState.CLAIMED and before.runner else None
    gained = after.runner.lower() if after.state is WorkState.CLAIMED and after.runner else None
    if lost == gained:
        return
    if lost is not None:
        held[(place, lost)] = max(0, held.get((place, lost), 0) - 1)
    if gained is not None:
        held[(place, gained)] = held.get((place, gained), 0) + 1


def _repository_of(requests: Sequence[Request], where: TicketKey) -> str:
    """The repository's name for an issue answered on (the ticket's, or its pull request's)."""
    for request in requests:
        key = request.issue.key
        if key.repository_key == where.repository_key:
            return request.issue.repository
    raise LookupError(where)


def _answer(
    issue: Issue, actor: Actor, source: Source, reply: str | None, thumb: bool = False
) -> tuple[TicketKey, list[Answer]]:
    """Where a command's answer goes, and what it is: a 👍 where GitHub has reactions unless only a reply
    answers it (a refusal, /help), then its reply (`thumb`: a reply that comes with the 👍)."""
    where = issue.key if source.number is None else replace(issue.key, number=source.number)
    items: list[Answer] = []
    if (reply is None or thumb) and source.reactable:
        items.append(("reaction", source.comment_id, actor.login, "+1"))
    if reply is not None:
        items.append(("reply", source.comment_id, actor.login, reply))
    return where, items


def _log_decision(request: Request, outcome: Outcome) -> None:
    """One line per command decided: which delivery (or the agent API) brought it, on which issue, by whom,
    what became of it, and the ticket's revision after it."""
    repository, number = request.issue.repository, request.issue.key.number
    result = "duplicate" if outcome.duplicate else outcome.kind
    detail = outcome.event or outcome.code
    where = f"delivery {request.delivery}" if request.delivery else (request.via or "a call")
    log.info(
        "decided /%s by %s on %s#%d: %s%s, revision %d (%s)", outcome.command, request.actor.login, repository, number,
        result, f" ({detail})" if detail else "", outcome.revision, where,
        extra={"delivery": request.delivery, "repository": repository, "number": number, "command": outcome.command,
               "actor": request.actor.login, "outcome": result, "code": outcome.code, "event": outcome.event,
               "revision": outcome.revision, "source": request.via or "webhook"},
    )  # fmt: skip


def _refusal(command: str, ticket: Ticket, refusal: Refused) -> Outcome:
    return _outcome(command, ticket, kind="refused", code=refusal.code, message=refusal.message)


__all__ = ["Issue", "Outcome", "Request", "Source", "WorkService"]
