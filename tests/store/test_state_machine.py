"""Random command sequences: against the pure work rail, and against `WorkService` on SQLite.

Both machines drive several tickets of one repository with every command of `RULES` (and an unknown
one), issued by agents, a maintainer and the task owner, with right and stale revisions, random
@user targets, text or none and evidence or none, under a random policy. An oracle written from the
command table (who may do what, from which state, to which state) says what each command must do;
invariants check the tickets, the claim counts kept from the events, and replay.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
)
from sqlalchemy import select

from baton.domain import (
    RULES,
    Actor,
    Applied,
    Brief,
    Command,
    Decision,
    Event,
    Evidence,
    Noted,
    Permission,
    Policy,
    Refused,
    Role,
    Situation,
    Ticket,
    TicketKey,
    WorkState,
    create,
    decide,
    evolve,
    replay,
)
from baton.domain.misspelt import misspelt_text
from baton.domain.model import EVIDENCE_KINDS
from baton.process.wiring import work_service
from baton.service.work import Issue, Outcome
from baton.store import make_engine, tables, upgrade
from support.row_counts import counts

REPO = "octo/shop"
OWNER = "olivia"
NUMBERS = (1, 2, 3)
UNTRACKED = 4  # never opened: the first command on it meets the policy's `offer`

DRAFT, OPEN, CLAIMED, DELIVERED, ACCEPTED, WITHDRAWN = (
    WorkState.DRAFT,
    WorkState.OPEN,
    WorkState.CLAIMED,
    WorkState.DELIVERED,
    WorkState.ACCEPTED,
    WorkState.WITHDRAWN,
)
WITH_RUNNER = frozenset({CLAIMED, DELIVERED, ACCEPTED})
# Write access makes no one a maintainer: agents need it to push their branches.
MAINTAINING = frozenset({Permission.MAINTAIN, Permission.ADMIN})
STARTS_ATTEMPT = frozenset({"claimed", "assigned", "sent_back"})

AGENT_C = (Permission.NONE, Permission.READ, Permission.ADMIN)  # no access, an agent, an administrator
LOGINS = ("agent-a", "agent-b", "agent-c", "maria", OWNER)
USERS = (None, "agent-a", "Agent-B", "agent-c", "maria", "nobody")
NAMES = (*RULES, "frobnicate")
TEXTS = ("", "because of the failing test")
EVIDENCES = (
    Evidence(),
    Evidence(branch="42-empty-state"),
    Evidence(tests=("https://ci/run/1",)),
    Evidence(tests=("https://ci/run/1",), screenshots=("https://img/1.png",)),
    Evidence("42-empty-state", "1a2b3c4", 57, ("https://ci/run/1",), ("https://img/1.png",)),
)
CASINGS = ("lower", "upper", "title")

policies = st.builds(
    Policy,
    max_active_claims=st.integers(1, 3),
    allow_self_review=st.booleans(),
    required_evidence=st.lists(st.sampled_from(EVIDENCE_KINDS), unique=True, max_size=2).map(tuple),
    reviewers=st.sampled_from([frozenset(), frozenset({"agent-b"}), frozenset({"@Agent-C"})]),
    runners=st.sampled_from([frozenset(), frozenset({"agent-a", "Agent-B"})]),
    maintainers=st.sampled_from([frozenset(), frozenset({"@Agent-C"})]),
    runner_access=st.sampled_from(["collaborators", "readers", "anyone"]),
)
briefs = st.one_of(
    st.none(),
    st.builds(
        Brief,
        scope=st.sampled_from([(), ("src/Billing.tsx",), ("src/Billing.tsx",)]),
        acceptance=st.sampled_from([(), ("an empty state",), ("an empty state",)]),
        required_evidence=st.sampled_from([(), ("branch",), ("screenshot",)]),
        reviewer=st.sampled_from([None, "agent-a", "AGENT-B"]),
    ),
)
openings = st.lists(
    st.tuples(st.sampled_from([False, False, True]), briefs), min_size=len(NUMBERS), max_size=len(NUMBERS)
)


def key(number: int) -> TicketKey:
    return TicketKey(7, 1001, number)


def same(login: str | None, other: str | None) -> bool:
    return login is not None and other is not None and login.lower() == other.lower()


def listed(names: frozenset[str], login: str) -> bool:
    return login.lower() in {name.lower().lstrip("@") for name in names}


# ---------------------------------------------------------------------------------------------- the oracle


@dataclass(frozen=True)
class Expected:
    """What a command must do: a refusal code, a note, or the ticket and event it must produce."""

    code: str | None = None
    noted: bool = False
    note: str | None = None  # the code a note carries (the holder claiming again)
    ticket: Ticket | None = None
    role: Role | None = None
    data: dict[str, Any] = field(default_factory=dict)


def _maintainer(actor: Actor, policy: Policy) -> bool:
    """`maintainers:` when set, else the maintain and admin permissions."""
    return listed(policy.maintainers, actor.login) if policy.maintainers else actor.permission in MAINTAINING


def _review_role(ticket: Ticket, actor: Actor, policy: Policy) -> Role | None:
    if ticket.brief is not None and same(actor.login, ticket.brief.reviewer):
        return Role.REVIEWER
    if listed(policy.reviewers, actor.login):
        return Role.REVIEWER
    if _maintainer(actor, policy):
        return Role.REPOSITORY_MAINTAINER if policy.reviewers else Role.REVIEWER
    return None


def _ended(before: Ticket, reason: str) -> dict[str, Any] | None:
    return {"attempt": before.attempt, "reason": reason} if before.state is CLAIMED else None


def expect(before: Ticket, command: Command, actor: Actor, policy: Policy, held: int) -> Expected:
    """The command table (docs/design.md §2, docs/state-machine.md), written out independently of the guards."""
    name = command.name
    if name not in RULES:
        return Expected("unknown_command")
    if name in ("status", "help"):
        return Expected(noted=True)  # rev=N guards changes only
    if name == "claim" and same(actor.login, before.runner) and before.state in (CLAIMED, DELIVERED):
        # the holder's claim changes nothing, so rev=N has nothing to guard; a delivery awaits its review
        return Expected(noted=True, note="already_held") if before.state is CLAIMED else Expected("already_delivered")
    if command.rev is not None and command.rev != before.revision:
        return Expected("stale_revision")
    sources = {
        "publish": {DRAFT},
        "claim": {OPEN},
        "release": {CLAIMED},
        "assign": {OPEN, CLAIMED},
        "deliver": {CLAIMED},
        "accept": {DELIVERED},
        "send-back": {DELIVERED},
        "reopen": {CLAIMED, DELIVERED, ACCEPTED},
        "withdraw": {DRAFT, OPEN, CLAIMED, DELIVERED},
    }
    if name in ("status", "help"):
        return Expected(noted=True)
    if before.state not in sources[name]:
        return Expected("wrong_state")

    maintainer = _maintainer(actor, policy)
    owner = same(actor.login, OWNER)
    after = replace(before, revision=before.revision + 1)
    started = replace(after, state=CLAIMED, attempt=before.attempt + 1)

    def applied(ticket: Ticket, role: Role, **data: Any) -> Expected:
        return Expected(ticket=ticket, role=role, data=data)

    match name:
        case "publish":
            if not (owner or maintainer):
                return Expected("not_permitted")
            brief = before.brief or Brief()
            if not brief.acceptance or (policy.require_reviewer and not brief.reviewer):  # scope is optional
                return Expected("incomplete_brief")
            return applied(replace(after, state=OPEN), Role.TASK_OWNER if owner else Role.REPOSITORY_MAINTAINER)
        case "claim":
            if policy.runners and not listed(policy.runners, actor.login):
                return Expected("not_permitted")
            reader = actor.permission is not Permission.NONE
            collaborator = actor.collaborator or actor.permission not in (Permission.NONE, Permission.READ)
            if not policy.runners and policy.runner_access == "readers" and not reader:
                return Expected("not_permitted")
            if not policy.runners and policy.runner_access == "collaborators" and not collaborator:
                return Expected("not_permitted")
            if held >= policy.max_active_claims:
                return Expected("claim_limit")
            return applied(replace(started, runner=actor.login), Role.RUNNER, runner=actor.login)
        case "release":
            if not same(command.user or before.runner, before.runner):
                return Expected("not_runner")
            released = replace(after, state=OPEN, runner=None)
            if same(actor.login, before.runner):
                return applied(released, Role.RUNNER, ended=_ended(before, "released"))
            if command.user is not None and maintainer:
                return applied(released, Role.REPOSITORY_MAINTAINER, ended=_ended(before, "released_by_maintainer"))
            return Expected("not_runner")
        case "assign":
            if command.user is None:
                return Expected("missing_argument")
            if not maintainer:
                return Expected("not_permitted")
            return applied(
                replace(started, runner=command.user),
                Role.REPOSITORY_MAINTAINER,
                runner=command.user,
                ended=_ended(before, "reassigned"),
            )
        case "deliver":
            if not same(actor.login, before.runner):
                return Expected("not_runner")
            required = set(policy.required_evidence) | set(before.brief.required_evidence if before.brief else ())
            if not required <= command.evidence.kinds() or not command.text:  # a delivery needs a summary
                return Expected("missing_evidence")
            return applied(
                replace(after, state=DELIVERED, deliveries=before.deliveries + 1),
                Role.RUNNER,
                delivery=before.deliveries + 1,
                text=command.text,
                evidence=command.evidence.to_dict(),
                ended={"attempt": before.attempt, "reason": "delivered"},
            )
        case "accept" | "send-back":
            role = _review_role(before, actor, policy)
            if role is None:
                return Expected("not_reviewer")
            independent = not same(actor.login, before.runner)
            if not independent and not policy.allow_self_review:
                return Expected("self_review")
            if name == "send-back" and not command.text:
                return Expected("missing_argument")
            review = {
                "verdict": "accepted" if name == "accept" else "sent_back",
                "attempt": before.attempt,
                "delivery": before.deliveries,
                "independent": independent,
                "note": command.text,
            }
            if name == "accept":
                return applied(replace(after, state=ACCEPTED), role, review=review)
            return applied(started, role, runner=before.runner, review=review)
        case "reopen":
            if not maintainer:
                return Expected("not_permitted")
            if not command.text:
                return Expected("missing_argument")
            return applied(
                replace(after, state=OPEN, runner=None),
                Role.REPOSITORY_MAINTAINER,
                reason=command.text,
                ended=_ended(before, "reopened"),
            )
        case "withdraw":
            if not (owner or maintainer):
                return Expected("not_permitted")
            if not command.text:
                return Expected("missing_argument")
            return applied(
                replace(after, state=WITHDRAWN, runner=None),
                Role.TASK_OWNER if owner else Role.REPOSITORY_MAINTAINER,
                reason=command.text,
                ended=_ended(before, "withdrawn"),
            )
    raise AssertionError(f"no oracle for /{name}")


def check_decision(before: Ticket, command: Command, actor: Actor, policy: Policy, held: int, decision: Any) -> None:
    """The decision is the one the oracle expects, down to the event it records."""
    expected = expect(before, command, actor, policy, held)
    if expected.code is not None:
        assert isinstance(decision, Refused), (expected, decision)
        assert decision.code == expected.code, (expected, decision)
        assert decision.message
        return
    if expected.noted:
        assert isinstance(decision, Noted), (expected, decision)
        assert (decision.command, decision.code) == (command.name, expected.note)
        assert (decision.message is not None) == (expected.note is not None)
        return
    assert isinstance(decision, Applied), (expected, decision)
    after, event = decision.ticket, decision.event
    assert after == expected.ticket
    assert after.revision == before.revision + 1
    assert event.type == RULES[command.name].event
    assert after.state == RULES[command.name].target
    assert isinstance(event.role, Role)
    assert event.role == expected.role
    assert event.actor == actor.login
    assert event.revision == after.revision
    assert event.attempt == after.attempt
    assert event.data == expected.data
    assert evolve(before, event) == after
    if event.type == "accepted":
        review = event.data["review"]
        if review["independent"]:
            assert not same(event.actor, before.runner)
        else:
            assert policy.allow_self_review
            assert same(event.actor, before.runner)


# ---------------------------------------------------------------------------------------------- the model


class Model:
    """The pure rail over several tickets of one repository, with claim counts kept from the events."""

    def __init__(self, policy: Policy, permissions: dict[str, Permission]) -> None:
        self.policy = policy
        self.permissions = permissions
        self.tickets: dict[int, Ticket] = {}
        self.histories: dict[int, list[Event]] = {}
        self.held: Counter[str] = Counter()  # lower-case login → tickets held as `claimed`
        self.attempt_runners: dict[tuple[int, int], str] = {}

    def actor(self, login: str) -> Actor:
        """agent-c reads the repository without being a collaborator (an outsider on a public repository) when
        GitHub gives it read; everyone else with access is a collaborator."""
        permission = self.permissions.get(login.lower(), Permission.NONE)
        collaborator = permission is not Permission.NONE and login.lower() != "agent-c"
        return Actor(login, permission, collaborator=collaborator)

    def open(self, number: int, draft: bool = False, brief: Brief | None = None) -> Ticket:
        ticket, event = create(key(number), REPO, OWNER, draft=draft, brief=brief)
        assert (ticket.revision, event.revision, event.type, event.role) == (1, 1, "created", Role.REQUESTER)
        self.tickets[number] = ticket
        self.histories[number] = [event]
        return ticket

    def step(self, number: int, command: Command, actor: Actor) -> Decision:
        before = self.tickets[number]
        held = self.held[actor.login.lower()]
        situation = Situation(self.policy, held)
        decision = decide(before, command, actor, situation)
        check_decision(before, command, actor, self.policy, held, decision)
        # The decision depends on the ticket's value only: the replayed ticket decides the same.
        assert decide(replay(key(number), REPO, self.histories[number]), command, actor, situation) == decision
        if isinstance(decision, Applied):
            self._count(number, decision.event)
            self.tickets[number] = decision.ticket
            self.histories[number].append(decision.event)
        return decision

    def _count(self, number: int, event: Event) -> None:
        """Claims counted from the events alone: an attempt starts with a runner and ends with `ended`."""
        ended = event.data.get("ended")
        if ended is not None:
            self.held[self.attempt_runners[(number, ended["attempt"])].lower()] -= 1
        if event.type in STARTS_ATTEMPT:
            runner = event.data["runner"]
            self.attempt_runners[(number, event.attempt)] = runner
            self.held[runner.lower()] += 1

    def check(self) -> None:
        claimed = Counter(t.runner.lower() for t in self.tickets.values() if t.state is CLAIMED and t.runner)
        assert +self.held == claimed, (self.held, claimed)
        assert all(count >= 0 for count in self.held.values()), self.held
        for number, ticket in self.tickets.items():
            history = self.histories[number]
            # `evolve` sets the runner on claimed/assigned/sent_back, keeps it through delivered and
            # accepted, and clears it on released/reopened/withdrawn.
            assert (ticket.runner is not None) == (ticket.state in WITH_RUNNER), ticket
            assert ticket.attempt == sum(e.type in STARTS_ATTEMPT for e in history)
            assert ticket.deliveries == sum(e.type == "delivered" for e in history)
            if ticket.state in (DELIVERED, ACCEPTED):
                assert ticket.deliveries >= 1
            assert [e.revision for e in history] == list(range(1, ticket.revision + 1))
            assert all(isinstance(e.role, Role) for e in history)
            assert replay(key(number), REPO, history) == ticket


def make_command(
    name: str, rev: int | None, ticket: Ticket | None, user: str | None, text: str, evidence: Evidence
) -> Command:
    revision = None if rev is None or ticket is None else max(ticket.revision + rev, 0)
    return Command(name, rev=revision, user=user, text=text, evidence=evidence)


def cased(login: str, casing: str) -> str:
    return getattr(login, casing)()


command_arguments = {
    "number": st.sampled_from(NUMBERS),
    "name": st.sampled_from(NAMES),
    "who": st.sampled_from(LOGINS),
    "casing": st.sampled_from(CASINGS),
    # an offset from the current revision: 0 is right, anything else stale; None sends no rev
    "rev": st.sampled_from([None, None, None, 0, 0, -1, 1]),
    "user": st.sampled_from(USERS),
    "text": st.sampled_from(TEXTS),
    "evidence": st.sampled_from(EVIDENCES),
}
# The commands that make sense in each state (the random rule above mostly meets refusals).
PLAUSIBLE = {
    DRAFT: ("publish", "publish", "publish", "withdraw"),
    OPEN: ("claim", "claim", "claim", "claim", "assign", "withdraw"),
    CLAIMED: ("deliver", "deliver", "deliver", "deliver", "deliver", "release", "assign", "reopen"),
    DELIVERED: ("accept", "accept", "accept", "send-back", "send-back", "reopen"),
    ACCEPTED: ("reopen", "status"),
    WITHDRAWN: ("status", "claim"),
}
progress_arguments = {
    "number": st.sampled_from(NUMBERS),
    "pick": st.integers(0, 419),
    "who": st.sampled_from((*LOGINS, "maria", "maria", "the runner", "the runner", "the runner")),
    "casing": st.sampled_from(CASINGS),
    "right_rev": st.booleans(),
    "user": st.sampled_from((None, "the runner", "agent-b", "AGENT-C")),
    "text": st.sampled_from(("", *TEXTS[1:] * 3)),
    "evidence": st.sampled_from((*EVIDENCES, EVIDENCES[-1], EVIDENCES[-1])),
}


def plausible(
    model: Model,
    number: int,
    pick: int,
    who: str,
    casing: str,
    right_rev: bool,
    user: str | None,
    text: str,
    evidence: Evidence,
) -> tuple[Command, Actor]:
    ticket = model.tickets[number]
    runner = ticket.runner or "agent-a"
    name = PLAUSIBLE[ticket.state][pick % len(PLAUSIBLE[ticket.state])]
    command = Command(
        name,
        rev=ticket.revision if right_rev else None,
        user=runner if user == "the runner" else user,
        text=text,
        evidence=evidence,
    )
    return command, model.actor(cased(runner if who == "the runner" else who, casing))


# ---------------------------------------------------------------------------------------------- pure machine


class PureRail(RuleBasedStateMachine):
    model: Model

    @initialize(policy=policies, agent_c=st.sampled_from(AGENT_C), tickets=openings)
    def start(self, policy: Policy, agent_c: Permission, tickets: list[tuple[bool, Brief | None]]) -> None:
        permissions = {
            "agent-a": Permission.READ,
            "agent-b": Permission.WRITE,  # an agent with write access, to push: neither maintainer nor reviewer
            "agent-c": agent_c,
            "maria": Permission.MAINTAIN,
            OWNER: Permission.READ,
        }
        self.model = Model(policy, permissions)
        for number, (draft, brief) in zip(NUMBERS, tickets, strict=True):
            self.model.open(number, draft, brief)

    @rule(**command_arguments)
    def command(
        self,
        number: int,
        name: str,
        who: str,
        casing: str,
        rev: int | None,
        user: str | None,
        text: str,
        evidence: Evidence,
    ) -> None:
        command = make_command(name, rev, self.model.tickets[number], user, text, evidence)
        self.model.step(number, command, self.model.actor(cased(who, casing)))

    @rule(**progress_arguments)
    def progress(self, number: int, **arguments: Any) -> None:
        command, actor = plausible(self.model, number, **arguments)
        self.model.step(number, command, actor)

    @invariant()
    def consistent(self) -> None:
        if hasattr(self, "model"):
            self.model.check()


PureRail.TestCase.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
test_pure_rail = pytest.mark.long(PureRail.TestCase)


# ---------------------------------------------------------------------------------------------- service machine


@functools.cache
def migrated_file() -> Path:
    """A SQLite file migrated once per process; each example starts from a copy of it (migrating costs more)."""
    directory = Path(tempfile.mkdtemp(prefix="baton-machine-template-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    engine = make_engine(f"sqlite:///{directory}/baton.db")
    upgrade(engine)
    engine.dispose()  # the last connection closed: the WAL is checked into the file and removed
    return directory / "baton.db"


class StoredRail(RuleBasedStateMachine):
    """The same commands through `WorkService` on a fresh SQLite file; the store must agree with the model."""

    operations = Bundle("operations")

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="baton-machine-")
        shutil.copyfile(migrated_file(), f"{self.directory}/baton.db")
        engine = make_engine(f"sqlite:///{self.directory}/baton.db")
        self.service = work_service(engine)
        self.store = self.service.units
        self.outcomes: dict[str, Outcome] = {}
        self.serial = 0

    def teardown(self) -> None:
        self.store.engine.dispose()
        shutil.rmtree(self.directory, ignore_errors=True)

    def issue(self, number: int) -> Issue:
        return Issue(key(number), REPO, OWNER)

    def operation_id(self) -> str:
        self.serial += 1
        return f"comment-{self.serial}"

    def counts(self) -> dict[str, int]:
        """Every table's row count, read in one statement."""
        with self.store.engine.connect() as connection:
            return counts(connection)

    @initialize(
        target=operations,
        policy=policies,
        labeled=st.booleans(),
        agent_c=st.sampled_from(AGENT_C),
        tickets=openings,
    )
    def start(
        self, policy: Policy, labeled: bool, agent_c: Permission, tickets: list[tuple[bool, Brief | None]]
    ) -> Any:
        policy = replace(policy, offer="labeled" if labeled else "all")
        permissions = {
            "agent-a": Permission.READ,
            "agent-b": Permission.WRITE,  # an agent with write access, to push: neither maintainer nor reviewer
            "agent-c": agent_c,
            "maria": Permission.MAINTAIN,
            OWNER: Permission.READ,
        }
        self.model = Model(policy, permissions)
        opened = []
        for number, (draft, brief) in zip(NUMBERS, tickets, strict=True):
            ticket = self.model.open(number, draft, brief)
            operation = f"open-{number}"
            outcome = self.service.open_ticket(self.issue(number), operation, draft=draft, brief=brief)
            assert outcome == Outcome("applied", "open", ticket.state, 1, None, event="created")
            self.outcomes[operation] = outcome
            opened.append(operation)
        return multiple(*opened)

    def expected_outcome(self, number: int, command: Command, actor: Actor) -> Outcome:
        """What the service must answer, from the pure model (which it then advances)."""
        if command.name not in RULES:  # changes nothing, and starts tracking nothing
            tracked = self.model.tickets.get(number)
            return Outcome(
                "refused", command.name, tracked.state if tracked else None, tracked.revision if tracked else 0,
                tracked.runner if tracked else None, code="unknown_command", message=misspelt_text([command.name]),
            )  # fmt: skip
        if number not in self.model.tickets:
            if self.model.policy.offer != "all":
                message = (
                    f"#{number} is not offered: {REPO} offers only issues labelled "
                    f"`{self.model.policy.offer_label}`. Ask a maintainer to add the label."
                )
                return Outcome("refused", command.name, None, 0, None, code="not_offered", message=message)
            self.model.open(number)
        decision = self.model.step(number, command, actor)
        ticket = self.model.tickets[number]
        if isinstance(decision, Applied):
            return Outcome(
                "applied", command.name, ticket.state, ticket.revision, ticket.runner, event=decision.event.type
            )
        if isinstance(decision, Noted):
            return Outcome(
                "noted", command.name, ticket.state, ticket.revision, ticket.runner,
                code=decision.code, message=decision.message,
            )  # fmt: skip
        assert isinstance(decision, Refused)
        return Outcome(
            "refused",
            command.name,
            ticket.state,
            ticket.revision,
            ticket.runner,
            code=decision.code,
            message=decision.message,
        )

    def send(self, number: int, command: Command, actor: Actor) -> str:
        operation = self.operation_id()
        before = self.counts()
        expected = self.expected_outcome(number, command, actor)
        outcome = self.service.apply(self.issue(number), command, actor, operation, self.model.policy)
        assert outcome == expected
        after = self.counts()
        assert after["operations"] == before["operations"] + 1
        created = int(number == UNTRACKED and before["tickets"] < after["tickets"])
        assert after["events"] == before["events"] + int(outcome.applied) + created
        self.outcomes[operation] = outcome
        return operation

    @rule(target=operations, **{**command_arguments, "number": st.sampled_from((*NUMBERS, UNTRACKED))})
    def command(
        self,
        number: int,
        name: str,
        who: str,
        casing: str,
        rev: int | None,
        user: str | None,
        text: str,
        evidence: Evidence,
    ) -> str:
        command = make_command(name, rev, self.model.tickets.get(number), user, text, evidence)
        return self.send(number, command, self.model.actor(cased(who, casing)))

    @rule(target=operations, **progress_arguments)
    def progress(self, number: int, **arguments: Any) -> str:
        command, actor = plausible(self.model, number, **arguments)
        return self.send(number, command, actor)

    @rule(
        operation=operations,
        number=st.sampled_from((*NUMBERS, UNTRACKED)),
        name=st.sampled_from(NAMES),
        who=st.sampled_from(LOGINS),
    )
    def retry(self, operation: str, number: int, name: str, who: str) -> None:
        """A redelivered webhook: whatever it carries, the first outcome comes back and nothing is written."""
        before = self.counts()
        first = self.outcomes[operation]
        if operation.startswith("open-"):
            again = self.service.open_ticket(self.issue(int(operation.removeprefix("open-"))), operation)
        else:
            again = self.service.apply(
                self.issue(number), Command(name, text="again"), self.model.actor(who), operation, self.model.policy
            )
        assert again == replace(first, duplicate=True)
        assert self.counts() == before

    @invariant()
    def store_agrees(self) -> None:
        if not hasattr(self, "model"):
            return
        self.model.check()
        for number in (*NUMBERS, UNTRACKED):
            stored = self.service.ticket(key(number))
            assert stored == self.model.tickets.get(number)
            history = self.service.history(key(number))
            assert history == self.model.histories.get(number, [])
            if stored is not None:
                assert replay(key(number), REPO, history) == stored
        with self.store.engine.connect() as connection:
            rows = connection.execute(select(tables.runner_claims)).all()
        assert {row.login: row.active for row in rows if row.active} == dict(+self.model.held)
        assert all(row.login == row.login.lower() for row in rows)


StoredRail.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_stored_rail = pytest.mark.long(StoredRail.TestCase)
