"""The work rail's use cases. Each call is one unit of work: read, decide (pure), compare-and-swap, record.

`apply()` returns an `Outcome`: applied (the new revision and the event), refused (a code, a message
and the state as it actually is), or noted (a command that changes nothing). When the operation id was
seen before, the first outcome comes back with `duplicate=True` and nothing is done again.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from baton.domain import (
    RULES,
    Actor,
    Applied,
    Brief,
    Command,
    Event,
    Policy,
    Refused,
    RepositoryKey,
    Role,
    Run,
    Situation,
    Ticket,
    TicketKey,
    WorkState,
    available,
    create,
    decide,
    not_offered,
)
from baton.domain.answers import Result, Source, answer_all
from baton.domain.evidence import NOT_FOUND, UNVERIFIED, verification
from baton.domain.issue import LinkCounts, Linked
from baton.domain.misspelt import misspelt_text
from baton.domain.offering import offered
from baton.domain.status import BLOCKED_LABEL, LABELS, STALE_LABEL, state_label
from baton.reading.briefs import BriefReading, read_brief
from baton.reading.commands import help_text, ignored_text
from baton.service.activity import Activity, record_activity
from baton.service.evidence import EvidenceService
from baton.store import Conflict, StoredTicket, dependencies, ready
from baton.store.work import Found, WorkTx

from . import briefs, readiness
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
    # Where known: what GitHub's issue object says of its links; Baton reads them when it keeps other counts.
    links: LinkCounts | None = None


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
    run: Run | None = None  # the GitHub Actions run that called, recorded on the event (`Run.recorded`)
    hook: str | None = None  # the hook it came in, for the decision's log line
    notices: tuple[Notice, ...] = ()  # what resolving its caller met (`Resolver`), told in its unit of work
    # False: the operation id is made for this request and never comes again (an agent API call without an
    # Idempotency-Key), so no retry looks for its result, and none is kept.
    kept: bool = True


Decided = Callable[[Sequence[Request], Sequence[Outcome]], None]


@dataclass(frozen=True)
class Place:
    """A repository claim-next may hand a task out of, with the caller as the guards see them there."""

    key: RepositoryKey
    repository: str  # "owner/name"
    actor: Actor
    policy: Policy


@dataclass(frozen=True)
class NextAsk:
    """One claim-next: the first ready task of `places` carrying every one of `labels` (lower-case)."""

    places: tuple[Place, ...]
    labels: tuple[str, ...]
    operation_id: str
    run: Run | None = None  # the GitHub Actions run that asked, recorded on the claim's event


@dataclass(frozen=True)
class Handed:
    """What claim-next gave one ask: the claim decided on the task it picked (applied, or refused as that claim
    is), with that task as it is now and its issue's title; or, with no `outcome`, that none was ready, and the
    `counts`."""

    outcome: Outcome | None
    ticket: Ticket | None = None
    title: str | None = None
    counts: dict[str, int] | None = None
    request: Request | None = None  # the claim decided (None: none was, or a first answer is given again)
    priority: int | None = None  # the task's, the brief's else its labels' (None: a first answer given again)


# Refusals of a claim that are about the task, not the caller: claim-next passes on to the next task.
TASK_REFUSALS = frozenset({"blocked", "wrong_state", "stale_revision"})


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
        # Asks GitHub whether an issue a brief depends on, and Baton knows nothing of, is open (None: never asked).
        self.issue_open: readiness.IssueOpen | None = None
        # Lists an issue's blockers and sub-issues on GitHub (None: never asked; `learn_links`).
        self.issue_links: readiness.IssueLinks | None = None

    @property
    def claims_overlap(self) -> bool:
        """Whether claim-next batches may be decided at the same time in one process: on PostgreSQL, where each
        takes tasks no other transaction holds and none waits for another (`store/ready.py`); not on SQLite, which
        has one writer at a time."""
        return self.units.engine.dialect.name == "postgresql"

    def learn_links(self, issues: Sequence[Issue], *, always: bool = False) -> int:
        """Learn the links (blockers, sub-issues) of those `issues` whose GitHub summary (`Issue.links`) disagrees
        with the links Baton keeps, links made before Baton was installed or while it was down: listed by GitHub,
        outside any decision's transaction, and kept (`readiness.relink`), each issue in a transaction of its own
        before anything is decided on it. Only issues whose summary shows links are looked at, unless `always`
        (an issue whose links may all be gone). GitHub failing to list them is logged, and they are learned at the
        issue's next sight. How many issues' links were read."""
        wanted = {issue.key: issue for issue in issues if issue.links is not None and (always or issue.links.any)}
        if not wanted or self.issue_links is None:
            return 0
        with self.units.read() as uow:
            differ = [issue for key, issue in wanted.items() if dependencies.counts(uow.connection, key) != issue.links]
        for issue in differ:
            key = issue.key
            try:
                found = self.issue_links(key.installation_id, issue.repository, key.number)
            except Exception as error:  # the ticket is made all the same; the next sight of the issue tries again
                readiness.log.warning("links of %s#%d not read from GitHub: %s", issue.repository, key.number, error)
                continue

            def attempt(uow: UnitOfWork, key: TicketKey = key, found: Linked = found) -> None:
                before = readiness.waiting(uow, [key])
                changed = readiness.relink(uow, key, found)
                if changed is not None:
                    readiness.moved(uow, before, [key], changed, readiness.BATON)

            self.units.settle(f"links of {key}", attempt)
        return len(differ)

    def blocker_states(self, issues: Sequence[Issue]) -> dict[str, bool]:
        """Whether the issues the briefs in these issues' bodies depend on are open, for those Baton knows nothing
        of (`readiness.states`): asked of GitHub before any decision's transaction."""
        bodies = [(issue.key, issue.repository, issue.body) for issue in issues if issue.read and issue.body]
        return readiness.body_states(self.units, self.issue_open, bodies)

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
            reading = BriefReading(draft, brief, tuple(problems))
            ticket_id, ticket = self.new_ticket(uow, issue, operation_id, reading, known)
            outcome = _outcome("open", ticket, kind="applied", event="created")
            uow.work.record_operation(operation_id, ticket_id, outcome.to_json())
            return outcome

        known = readiness.states(self.units, self.issue_open, [(issue.key.installation_id, issue.repository, brief)])
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

    def apply_all(self, requests: Sequence[Request], *, done: Sequence[str] = ()) -> list[Outcome]:
        """Decide many commands in one transaction, in the order they came, each exactly as if it had been
        decided alone: its own event, operation id and answer, and the claim counts every earlier command
        left (a property test holds batch and one-by-one deciding to the same rows and answers). Only the
        commands of one comment share answers: one 👍 at most, and one note of the commands it ignored. Each
        ticket's final state is written with one compare-and-swap. Tickets are locked first, in the order
        of their keys, so two processes deciding overlapping batches never wait on each other in a circle.
        The hooks `done` (those the commands came in) are finished in the same transaction."""
        # A lost claim-limit increment, or a concurrent first write of the same ticket or operation id, rolls
        # everything back; the next round reads what won.
        what = f"operation {requests[0].operation_id}" if requests else "nothing"
        self.learn_links([request.issue for request in requests])  # an issue first seen, before its claim is decided
        known = self.blocker_states([request.issue for request in requests])  # for a ticket a command creates

        def attempt(uow: UnitOfWork) -> list[Outcome]:
            self._notify(uow, requests)
            outcomes = self._decide_all(uow, requests, known)
            uow.inbox.finish(done)
            return outcomes

        outcomes = self.units.settle(what, attempt)
        decided = [(r, o) for r, o in zip(requests, outcomes, strict=True) if o.kind != UNREAD]
        if self.decided is not None:
            self.decided([r for r, _ in decided], [o for _, o in decided])
        if log.isEnabledFor(logging.INFO):
            _log_decisions(decided)
        return outcomes

    def _decide_all(self, uow: UnitOfWork, requests: Sequence[Request], known: dict[str, bool]) -> list[Outcome]:
        """Read (the tickets, locked; the first results; the claims held), decide each request, swap each ticket
        that changed, record the operations, and queue the answers with their issues' due times."""
        if not requests:
            return []
        batch = _Batch.read(uow, requests)
        batch.known = known
        decided = [self._decide(uow, batch, request) for request in requests]
        self._close(uow, batch, [result for _, result in decided])
        return [outcome for outcome, _ in decided]

    def _close(self, uow: UnitOfWork, batch: _Batch, results: Sequence[Result]) -> None:
        """After a batch's decisions: the runners' activity, each changed ticket's compare-and-swap, the operations,
        and the answers queued with their issues' due times."""
        with uow.work.together():  # what follows reads nothing back, but a touch that is not quiet
            counted: Callable[[], bool] = _always
            if batch.appends is not None:  # claim-next's counts, together; its writes follow without waiting
                counted = uow.work.count_all(batch.counts)
                uow.work.append_all(batch.appends)
            quiet = {touch.stored.id: touch.source for touch in batch.touches if touch.quiet} if batch.appends else {}
            uow.activity.restart_all(quiet)
            for touch in batch.touches:  # runner activity, after the decisions: activity rows are locked last
                if not (touch.quiet and touch.stored.id in quiet):
                    touch.record(uow)
            swapped = batch.swap(uow.work)
            uow.work.record_operations(batch.operations)
            said = answer_all(results, self.answer_delay)
            uow.outbox.queue_all(said.queued, self.answer_delay)
            uow.outbox.due_all(said.due)
        if not counted():  # a claim limit held: what was sent after it is rolled back with it
            raise Conflict("a claim count moved")
        if not swapped():
            raise Conflict("lost")  # not reached while the rows are locked; a lost swap never passes silently

    def claim_next(self, asks: Sequence[NextAsk]) -> list[Handed]:
        """Claim-next: for each ask, in the order they came, the first ready task of its places it may claim
        (highest priority first, then oldest; `store/ready.py`), claimed as a `/claim` of it would be (the same
        guards, event, claim limit and answers on GitHub), all in one transaction. Each ask takes a task no
        earlier one took, and on PostgreSQL none that another transaction holds, so concurrent asks never meet.

        A refusal that is about the task (a blocker added meanwhile) passes on to the next task; one that is about
        the caller in that repository (`not_permitted`, `claim_limit`) passes on to the ask's other places, and is
        the answer when no place gives a task. With none ready: no outcome, and the counts (`ready.counts`). An
        operation id seen before gets its first answer."""
        what = f"operation {asks[0].operation_id}" if asks else "nothing"
        handed = self.units.settle(what, lambda uow: self._hand_out(uow, asks))
        decided = [(h.request, h.outcome) for h in handed if h.request is not None and h.outcome is not None
                   and not h.outcome.duplicate]  # fmt: skip
        if self.decided is not None and decided:
            self.decided([r for r, _ in decided], [o for _, o in decided])
        if log.isEnabledFor(logging.INFO):
            _log_decisions(decided)
        return handed

    def _hand_out(self, uow: UnitOfWork, asks: Sequence[NextAsk]) -> list[Handed]:
        logins: dict[RepositoryKey, set[str]] = {}
        for ask in asks:
            for place in ask.places:
                logins.setdefault(place.key, set()).add(place.actor.login.lower())
        upcoming = _Upcoming(Counter((tuple(place.key for place in ask.places), ask.labels) for ask in asks))
        wanted = [(places, labels, max(1, n)) for (places, labels), n in upcoming.asks.items()]
        opened = uow.work.opening([ask.operation_id for ask in asks], logins, wanted)  # one round trip
        firsts = opened.firsts
        upcoming.read = {where: (found, len(found) == upcoming.asks[where]) for where, found in opened.tasks.items()}
        batch = _Batch({}, {}, {}, opened.held, {}, appends=[])
        taken: set[int] = set()  # the tickets this transaction claimed
        handed: dict[str, Handed] = {}  # by operation id: the same id twice in one call is a retry
        results: list[Result] = []
        out: list[Handed] = []
        for ask in asks:
            first = handed.get(ask.operation_id)
            if first is not None and first.outcome is not None:
                out.append(Handed(replace(first.outcome, duplicate=True), first.ticket, first.title))
                continue
            if ask.operation_id in firsts:
                result, was = firsts[ask.operation_id]
                out.append(Handed(Outcome.from_json(result), was.ticket if was is not None else None))
                continue
            one, said = self._hand_one(uow, batch, upcoming, ask, taken)
            if said is not None:
                results.append(said)
            if one.outcome is not None:
                handed[ask.operation_id] = one
            out.append(one)
        self._close(uow, batch, results)
        return out

    def _hand_one(
        self, uow: UnitOfWork, batch: _Batch, upcoming: _Upcoming, ask: NextAsk, taken: set[int]
    ) -> tuple[Handed, Result | None]:
        places = {place.key: place for place in ask.places}
        passed = set(taken)
        refused: tuple[Request, StoredTicket, Outcome, str | None] | None = None
        while places:
            found = upcoming.next(uow.work, tuple(places), ask.labels, passed)
            if found is None:
                break
            key, title, priority = found[0].ticket.key, found[1], found[2]
            if key not in batch.locked:
                batch.locked[key] = batch.current[key] = found[0]
            stored = batch.current[key]
            assert stored is not None
            place = places[key.repository_key]
            issue = Issue(key, stored.ticket.repository, stored.ticket.owner)
            request = Request(issue, Command("claim"), place.actor, ask.operation_id, place.policy, via="api",
                              run=ask.run)  # fmt: skip
            # nothing open blocks it: the statement that found it said so, in this transaction
            outcome, reply, thumb = self._judge(uow, batch, request, stored, blockers=())
            said = _answered(Result(key, issue.repository, place.actor.login), None, outcome, reply, thumb)
            if outcome.applied:
                taken.add(stored.id)
                batch.record(request, stored, outcome)
                after = batch.current[key]
                return Handed(outcome, after.ticket if after else None, title, request=request, priority=priority), said
            passed.add(stored.id)
            if outcome.code in TASK_REFUSALS:
                continue
            refused = refused or (request, stored, outcome, reply)  # the caller may not claim here: other places
            del places[key.repository_key]
        if refused is not None:
            request, stored, outcome, reply = refused
            batch.record(request, stored, outcome)
            said = _answered(Result(stored.ticket.key, stored.ticket.repository, request.actor.login), None,
                             outcome, reply, False)  # fmt: skip
            return Handed(outcome, stored.ticket, request=request), said
        counted = ready.counts(uow.connection, [place.key for place in ask.places], ask.labels)
        return Handed(None, counts=counted), None

    def _decide(self, uow: UnitOfWork, batch: _Batch, request: Request) -> tuple[Outcome, Result]:
        """One request of a batch: its outcome, and what its answer needs."""
        issue, command = request.issue, request.command
        said = Result(issue.key, issue.repository, request.actor.login)  # nothing to answer, yet
        first = batch.firsts.get(request.operation_id)
        if first is not None:
            return Outcome.from_json(first), said
        stored = batch.current[issue.key]
        if command.name not in RULES:
            outcome, said = _misspelt(request, stored)
            batch.commented(request, stored)
            batch.record(request, stored, outcome)
            return outcome, said
        if stored is None and not issue.read:
            return Outcome(UNREAD, command.name, None, 0, None), said
        if stored is None:  # a new ticket is shown, whatever its first command's answer
            stored = batch.current[issue.key] = self._first_sight(uow, issue, request.policy, request.operation_id,
                                                                  batch.known)  # fmt: skip
            said = replace(said, shown=stored is not None)
        reply: str | None
        if stored is None:
            refusal = not_offered(issue.key.number, issue.repository, request.policy)
            outcome, reply, thumb = _refusal(command.name, None, refusal), refusal.message, False
        else:
            outcome, reply, thumb = self._judge(uow, batch, request, stored)
        batch.record(request, stored, outcome)  # the same id twice in one call: a retry
        return outcome, _answered(said, request.source, outcome, reply, thumb)

    def _judge(
        self, uow: UnitOfWork, batch: _Batch, request: Request, stored: StoredTicket,
        blockers: Sequence[str] | None = None,
    ) -> tuple[Outcome, str | None, bool]:  # fmt: skip
        """Decide a command on a tracked ticket: its outcome, its reply if any, and whether a 👍 comes with it.
        `blockers`: what keeps the task from being ready, where the caller read it already."""
        command, actor, key = request.command, request.actor, request.issue.key
        claims = batch.held.get((key.repository_key, actor.login.lower()), 0)
        if blockers is None:  # read for a claim only, with the batch
            blockers = batch.blockers.get(key, []) if command.name == "claim" else []
        situation = Situation(request.policy, claims, assignee=request.assignee, blockers=tuple(blockers),
                              **_evidence(uow, stored, command))  # fmt: skip
        decision = decide(stored.ticket, command, actor, situation)
        if isinstance(decision, Applied):
            if request.via is not None:
                event = decision.event
                recorded = {"source": request.via, **(request.run.recorded() if request.run is not None else {})}
                decision = replace(decision, event=replace(event, data={**event.data, **recorded}))
            outcome = self._record(uow, batch, stored, decision, command, request.operation_id, request.policy)
            batch.moved(request, stored, decision.ticket)
            if decision.message is None:
                return outcome, None, False
            return replace(outcome, message=decision.message), decision.message, True
        batch.commented(request, stored)
        if isinstance(decision, Refused):
            return _refusal(command.name, stored.ticket, decision), decision.message, False
        outcome = _outcome(command.name, stored.ticket, kind="noted", code=decision.code, message=decision.message)
        if command.name == "help":
            usable = available(stored.ticket, actor, situation)
            return outcome, f"commands you may use on #{key.number} now:\n{help_text(usable)}", False
        return outcome, decision.message, decision.message is not None  # the 👍 of a claim, and what it found

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

    def _first_sight(
        self, uow: UnitOfWork, issue: Issue, policy: Policy, operation_id: str, known: dict[str, bool]
    ) -> StoredTicket | None:
        """The first command on an offered issue (every issue with `offer: all`, one carrying the offer label
        with `offer: labeled`) creates its ticket, as offering would have: `open`, or `draft` when the brief
        in the issue's body says so (or cannot be used)."""
        if not offered(policy, issue.labels):
            return None
        return StoredTicket(*self.new_ticket(uow, issue, operation_id, read_brief(issue.body), known, policy))

    def new_ticket(
        self, uow: UnitOfWork, issue: Issue, operation_id: str, reading: BriefReading, known: dict[str, bool],
        policy: Policy | None = None,
    ) -> tuple[int, Ticket]:  # fmt: skip
        """Insert a ticket with the brief an issue body gave: the brief's owner is the task owner (else the
        issue's author), the issues its `depends_on` names are linked (open as `known`, `blocker_states`), the
        priority its labels give under `policy` is kept (`priority_labels`), a
        non-code task's evidence rails are not applicable, its evidence rail catches up on the pull requests and
        branches already logged that link the issue, and problems are explained. The caller marks the issue
        due."""
        brief = reading.brief
        owner = brief.owner if brief is not None and brief.owner else issue.author
        ticket, event = create(issue.key, issue.repository, owner, draft=reading.draft, brief=brief)
        ticket_id = uow.work.insert_ticket(ticket, event, operation_id, issue.title, ready.labels_text(issue.labels))
        readiness.declare(uow, issue.key, issue.repository, brief, known)
        if policy is not None and policy.priority_labels:
            uow.work.label_priority(issue.key, policy.label_priority(issue.labels))
        if brief is not None and not brief.code:
            briefs.non_code(uow, self.evidence, ticket, operation_id)
        self.evidence.started(uow, ticket.key, operation_id)  # work done before the issue became a ticket
        briefs.explain(uow, issue.key, issue.repository, issue.author, reading.problems, None, self.answer_delay)
        return ticket_id, ticket

    def reprioritised(self, place: RepositoryKey, labels: Mapping[int, Sequence[str]], policy: Policy) -> None:
        """The repository's settings changed: each of its tickets takes the priority its issue's labels (`labels`,
        by issue number; an issue left out has none that count) give under `policy`."""
        with self.units.begin() as uow:
            uow.work.clear_label_priorities(place)
            for number, names in labels.items():
                priority = policy.label_priority(names)
                if priority is not None:
                    uow.work.label_priority(place.ticket(number), priority)

    def retitled(self, key: TicketKey, title: str) -> None:
        """The issue's title changed on GitHub: the ticket keeps the new one (no event: it is not work)."""
        with self.units.begin() as uow:
            uow.work.retitle(key, title)

    def relabeled(
        self,
        key: TicketKey,
        labels: Sequence[str],
        change: tuple[str, bool] | None = None,
        policy: Policy | None = None,
        at: datetime | None = None,
    ) -> None:
        """The issue's labels changed on GitHub: the ticket keeps them, for claim-next's `labels`, and with `policy`
        the priority they give under its `priority_labels`, kept beside the brief's (no event: a label is not
        work). `change`: the one label added (True) or removed (False), by a hook that arrived `at` (default:
        now): only it is changed where the labels are known already, since GitHub's hooks about two labels may be
        decided in either order, each listing the labels of its own moment, and only if no change of it that
        arrived later was applied already (one label added, then removed); the priority is then the one the
        labels kept give."""
        name = ready.label_name(change[0]) if change is not None else None
        with self.units.begin() as uow:
            uow.work.relabel(key, ready.labels_text(labels), only_unknown=name is not None)
            kept = None
            if change is not None and name is not None:
                kept = uow.work.relabel_one(key, name, change[1], at or self.units.clock.now())
            if policy is not None:  # the priority the labels kept give, whichever hook came first
                uow.work.label_priority(key, policy.label_priority(labels if kept is None else kept))

    def brief_edited(self, issue: Issue, editor: str, operation_id: str) -> bool:
        """The issue's body was edited: its brief, when it changed, becomes the ticket's (an event, one
        revision on); an invalid one is explained once. True when the ticket changed."""
        body = issue.body
        known = self.blocker_states([issue])

        def attempt(uow: UnitOfWork) -> bool:
            return briefs.edited(
                uow, self.evidence, issue.key, issue.repository, issue.author, body, editor, operation_id,
                self.answer_delay, known,
            )  # fmt: skip

        return self.units.settle(f"operation {operation_id}", attempt)

    def _record(
        self,
        uow: UnitOfWork,
        batch: _Batch,
        stored: StoredTicket,
        decision: Applied,
        command: Command,
        operation_id: str,
        policy: Policy,
    ) -> Outcome:
        before, after, event = stored.ticket, decision.ticket, decision.event
        limit = policy.max_active_claims if event.type == "claimed" else None
        if batch.appends is not None:  # written when the batch closes
            batch.counts.append((before, after, limit))
            batch.appends.append((stored.id, event, operation_id))
        else:
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
        if label not in LABELS or label in (STALE_LABEL, BLOCKED_LABEL):  # flags beside the state label, not states
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

    def depends(
        self, key: TicketKey, source: str, blocker: str, is_open: bool | None, actor: str = readiness.BATON
    ) -> None:
        """GitHub told of a dependency of the issue at `key` on `blocker` (`owner/repo#N`): added, with the
        blocker's state (`is_open`), or removed (None). The ticket shows what it waits for (`readiness.moved`)."""

        def attempt(uow: UnitOfWork) -> None:  # made again when a concurrent hook of the same link wins
            before = readiness.waiting(uow, [key])
            if is_open is None:
                dependencies.unlink(uow.connection, key, source, blocker)
            else:
                dependencies.link(uow.connection, key, source, blocker, is_open, self.units.clock.now())
            readiness.moved(uow, before, [key], blocker, actor)

        self.units.settle(f"dependency of {key} on {blocker}", attempt)

    def blocker_seen(self, blocker: str, is_open: bool, actor: str = readiness.BATON) -> int:
        """An issue closed, reopened or deleted: the issues it blocks learn it, and show it (`readiness.moved`).
        How many did."""

        def attempt(uow: UnitOfWork) -> int:
            keys = dependencies.blocked_by(uow.connection, blocker, is_open)
            before = readiness.waiting(uow, keys)
            count = dependencies.seen(uow.connection, blocker, is_open, self.units.clock.now())
            readiness.moved(uow, before, keys, blocker, actor)
            return count

        return self.units.settle(f"blocker {blocker}", attempt)

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

    @property
    def quiet(self) -> bool:
        """An applied command that starts a new quiet period (`record` is then one statement, `restart_all`'s)."""
        if self.after is None:
            return False
        return not (self.after.state is WorkState.CLAIMED and self.after.attempt == self.stored.ticket.attempt)

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


@dataclass
class _Upcoming:
    """Claim-next's tasks read ahead: for each set of places and labels a batch asks about, the tasks `next_ready`
    would give one after the other, read with one statement for all the asks of that set (as many as there are
    asks; first with the batch's other opening reads, `WorkTx.opening`), and read again only when they run out
    (`ready_tasks`)."""

    asks: Counter[tuple[tuple[RepositoryKey, ...], tuple[str, ...]]]  # how many asks of each
    read: dict[tuple[tuple[RepositoryKey, ...], tuple[str, ...]], tuple[list[Found], bool]] = field(
        default_factory=dict
    )  # the tasks read, in order, and whether more may be ready

    def next(
        self, tx: WorkTx, places: tuple[RepositoryKey, ...], labels: tuple[str, ...], passed: set[int]
    ) -> Found | None:
        """What `tx.next_ready(places, labels, passed)` gives."""
        tasks, more = self.read.get((places, labels), ([], True))
        for one in tasks:
            if one[0].id not in passed:
                return one
        if not more:
            return None
        most = max(1, self.asks[places, labels])
        found = tx.ready_tasks(places, labels, passed | {one[0].id for one in tasks}, most)
        self.read[places, labels] = (tasks + found, len(found) == most)
        return found[0] if found else None


@dataclass
class _Batch:
    """What one `apply_all` read, and what its decisions left so far: the tickets, locked, as read and as decided;
    the first results of operation ids seen before; the claims each login holds, by repository; what keeps each
    claimed issue from being ready (its open blockers: no decision changes them); and the operations and runner
    activity to record."""

    locked: dict[TicketKey, StoredTicket | None]  # as read, in the order of their keys
    current: dict[TicketKey, StoredTicket | None]
    firsts: dict[str, dict[str, Any]]
    held: dict[tuple[RepositoryKey, str], int]
    blockers: dict[TicketKey, list[str]]
    operations: list[tuple[str, int | None, dict[str, Any]]] = field(default_factory=list)
    touches: list[_Touch] = field(default_factory=list)
    known: dict[str, bool] = field(default_factory=dict)  # the blockers a new ticket's brief names, asked first
    # With a list (claim-next's batches): the events applied, and the claim counts they move, are written when the
    # batch closes, a statement or two for all of them (`WorkTx.count_all`, `append_all`); else as each is decided.
    appends: list[tuple[int, Event, str | None]] | None = None
    counts: list[tuple[Ticket, Ticket, int | None]] = field(default_factory=list)

    @classmethod
    def read(cls, uow: UnitOfWork, requests: Sequence[Request]) -> _Batch:
        """Lock the tickets in the order of their keys, so two processes deciding overlapping batches never wait
        on each other in a circle; then read the first results, the claims held and the blockers of the issues
        claimed: a few statements for the batch, however many requests it holds, sent together on PostgreSQL."""
        keys = sorted({r.issue.key for r in requests}, key=lambda k: (k.installation_id, k.repository_id, k.number))
        logins: dict[RepositoryKey, set[str]] = {}
        for request in requests:
            logins.setdefault(request.issue.key.repository_key, set()).add(request.actor.login.lower())
        claimed = {request.issue.key for request in requests if request.command.name == "claim"}
        read = uow.work.deciding(keys, [request.operation_id for request in requests if request.kept], logins, claimed)
        return cls(read.tickets, dict(read.tickets), read.firsts, read.held, read.blockers)

    def record(self, request: Request, stored: StoredTicket | None, outcome: Outcome) -> None:
        if request.kept:
            result = outcome.to_json()
            self.firsts[request.operation_id] = result
            self.operations.append((request.operation_id, stored.id if stored else None, result))

    def moved(self, request: Request, stored: StoredTicket, after: Ticket) -> None:
        """An applied command: the ticket it left, the claims it moved, and the runner's activity."""
        self.touches.append(_Touch(stored, f"/{request.command.name}", request.actor.login, after))
        _count(self.held, request.issue.key.repository_key, stored.ticket, after)
        self.current[request.issue.key] = StoredTicket(stored.id, after)

    def commented(self, request: Request, stored: StoredTicket | None) -> None:
        """A comment of the runner's that changed nothing is activity on the claim all the same."""
        if stored is not None and request.source is not None and request.actor.is_(stored.ticket.runner):
            self.touches.append(_Touch(stored, "comment", request.actor.login))

    def swap(self, tx: WorkTx) -> Callable[[], bool]:
        """Write each ticket that changed with one compare-and-swap from the revision read, all sent together;
        what it gives says whether every one moved the ticket (`WorkTx.swap_all`)."""
        swaps = []
        for key, before in self.locked.items():
            after = self.current[key]
            if after is None:
                continue
            expected = before.ticket.revision if before is not None else 1  # 1: created in this transaction
            if after.ticket.revision != expected:
                swaps.append((after.id, expected, after.ticket))
        return tx.swap_all(swaps)


def _always() -> bool:
    return True


def _misspelt(request: Request, stored: StoredTicket | None) -> tuple[Outcome, Result]:
    """A misspelt command changes nothing and starts tracking nothing. It is answered, with the comment's other
    misspelt commands, where the issue is tracked or offered (`offer: all`); on other issues, prose is left alone."""
    word, issue = request.command.name, request.issue
    ticket = stored.ticket if stored is not None else None
    outcome = _outcome(word, ticket, kind="refused", code="unknown_command", message=misspelt_text([word]))
    source = request.source if ticket is not None or request.policy.offer == "all" else None
    return outcome, Result(issue.key, issue.repository, request.actor.login, source, misspelt=word)


def _answered(said: Result, source: Source | None, outcome: Outcome, reply: str | None, thumb: bool) -> Result:
    """What a decided command's answer needs: where it was written, its reply (`thumb`: with a 👍), the comment's
    note of the commands it held past the limit, and whether the ticket's view changes."""
    shown = said.shown or (outcome.state is not None and outcome.kind != "refused" and outcome.code is None)
    note = ignored_text(source.ignored) if source is not None and source.ignored else None
    # Made directly: `dataclasses.replace` looks up the fields on every call, a good part of a loser's decision.
    return Result(said.key, said.repository, said.author, source, reply, thumb, said.misspelt, note, shown)


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


def _log_decisions(decided: Sequence[tuple[Request, Outcome]]) -> None:
    """One line per command decided: which hook (or the agent API) brought it, on which issue, by whom, what became
    of it, and the ticket's revision after it. Commands decided together with the same result on the same ticket,
    coming the same way (a race's losers, refused alike), share one line that names each caller, in the order they
    came, and for commands from comments each delivery."""
    alike: dict[tuple[Any, ...], list[tuple[Request, Outcome]]] = {}
    for request, outcome in decided:
        same = (request.issue.key, outcome.command, outcome.duplicate, outcome.kind, outcome.event, outcome.code,
                outcome.revision, request.via, request.hook is None)  # fmt: skip
        alike.setdefault(same, []).append((request, outcome))
    for group in alike.values():
        _log_decision(group)


def _log_decision(group: Sequence[tuple[Request, Outcome]]) -> None:
    request, outcome = group[0]
    repository, number = request.issue.repository, request.issue.key.number
    result = "duplicate" if outcome.duplicate else outcome.kind
    detail = outcome.event or outcome.code
    where = f"delivery {request.hook}" if request.hook else (request.via or "a call")
    fields: dict[str, Any] = {
        "delivery": request.hook, "repository": repository, "number": number, "command": outcome.command,
        "actor": request.actor.login, "outcome": result, "code": outcome.code, "event": outcome.event,
        "revision": outcome.revision, "source": request.via or "webhook",
    }  # fmt: skip
    by = request.actor.login
    if len(group) > 1:
        actors = [one.actor.login for one, _ in group]
        by, where = ", ".join(actors), f"{where}, {len(group)} {'calls' if request.hook is None else 'commands'}"
        fields["actor"], fields["actors"] = None, actors
        hooks = list(dict.fromkeys(one.hook for one, _ in group if one.hook is not None))
        if len(hooks) > 1:  # from comments: each delivery named, once
            where = f"deliveries {', '.join(hooks)}"
            fields["delivery"], fields["deliveries"] = None, hooks
    log.info("decided /%s by %s on %s#%d: %s%s, revision %d (%s)", outcome.command, by, repository, number, result,
             f" ({detail})" if detail else "", outcome.revision, where, extra=fields)  # fmt: skip


def _refusal(command: str, ticket: Ticket | None, refusal: Refused) -> Outcome:
    return _outcome(command, ticket, kind="refused", code=refusal.code, message=refusal.message)


__all__ = ["Handed", "Issue", "NextAsk", "Outcome", "Place", "Request", "Source", "WorkService"]
