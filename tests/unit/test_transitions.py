"""Every transition and every refusal of the work rail, with the exact messages."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from baton.domain import (
    RULES,
    AccessNeeded,
    Actor,
    Applied,
    Brief,
    Command,
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
    available,
    create,
    decide,
    evolve,
    not_offered,
    replay,
)

KEY = TicketKey(installation_id=7, repository_id=1001, number=42)
REPO = "octo/shop"

RUNNER = Actor("agent-a", Permission.READ, collaborator=True)
OTHER = Actor("agent-b", Permission.READ, collaborator=True)
OWNER = Actor("olivia", Permission.READ, collaborator=True)
OUTSIDER = Actor("otto", Permission.READ)  # reads a public repository, as everybody does: no collaborator
MAINTAINER = Actor("maria", Permission.MAINTAIN)
ADMIN_RUNNER = Actor("agent-a", Permission.ADMIN)
STRANGER = Actor("stranger", Permission.NONE)
TEAM_MEMBER = Actor("tess", Permission.READ, teams=frozenset({"octo/reviewers"}))
WRITER = Actor("agent-b", Permission.WRITE)  # an agent with write access, to push its branches
ADMIN_BOT = Actor("helper[bot]", Permission.ADMIN)
AGENT_WORKFLOW = "octo/shop/.github/workflows/agent.yml"
WORKFLOW_RUN = Actor("otto", Permission.READ, workflow=AGENT_WORKFLOW)  # a run that otto started
CUSTOM = Actor("cora", Permission.MAINTAIN, role_name="release-manager")

AGAIN = (
    "Send /deliver again with a line saying what was done and an evidence line for each item (`branch:`, "
    "`commit:`, `pr:`, `tests:`, `screenshot:`)."
)
COMPLETE_BRIEF = Brief(scope=("src/BillingHistory.tsx",), acceptance=("no invoices: empty state",))


def ticket(state: WorkState, revision: int = 19, **changes: Any) -> Ticket:
    runner = "agent-a" if state in (WorkState.CLAIMED, WorkState.DELIVERED, WorkState.ACCEPTED) else None
    base = Ticket(KEY, REPO, state, revision, "olivia", runner=runner, attempt=1 if runner else 0)
    if state in (WorkState.DELIVERED, WorkState.ACCEPTED):
        base = replace(base, deliveries=1)
    return replace(base, **changes)


@dataclass
class Case:
    id: str
    ticket: Ticket
    command: Command
    actor: Actor
    policy: Policy = field(default_factory=Policy)
    held: int = 0
    # applied: the new state, runner, attempt, event type, role and extra event data keys/values
    state: WorkState | None = None
    runner: Any = ...  # ... = not checked
    attempt: int | None = None
    event: str | None = None
    role: Role | None = None
    data: dict[str, Any] = field(default_factory=dict)
    # refused: the code and the exact message
    code: str | None = None
    message: str | None = None


O, C, V, A, W, D = (
    WorkState.OPEN,
    WorkState.CLAIMED,
    WorkState.DELIVERED,
    WorkState.ACCEPTED,
    WorkState.WITHDRAWN,
    WorkState.DRAFT,
)
FULL = Evidence("42-empty-state", "1a2b3c4", 57, ("https://ci/run/1",), ("https://img/390.png",))

APPLIED = [
    Case("publish by owner", ticket(D, brief=COMPLETE_BRIEF), Command("publish"), OWNER,
         state=O, event="published", role=Role.TASK_OWNER, attempt=0),
    Case("publish by maintainer", ticket(D, brief=COMPLETE_BRIEF), Command("publish"), MAINTAINER,
         state=O, event="published", role=Role.REPOSITORY_MAINTAINER, attempt=0),
    Case("claim", ticket(O), Command("claim"), RUNNER,
         state=C, runner="agent-a", attempt=1, event="claimed", role=Role.RUNNER, data={"runner": "agent-a"}),
    Case("claim at the current revision", ticket(O), Command("claim", rev=19), RUNNER,
         state=C, runner="agent-a", attempt=1, event="claimed", role=Role.RUNNER),
    Case("claim again after a release starts attempt 3", ticket(O, attempt=2), Command("claim"), OTHER,
         state=C, runner="agent-b", attempt=3, event="claimed", role=Role.RUNNER),
    Case("claim below the limit", ticket(O), Command("claim"), RUNNER, held=2,
         state=C, runner="agent-a", event="claimed"),
    Case("claim by a listed runner", ticket(O), Command("claim"), RUNNER,
         policy=Policy(runners=frozenset({"agent-a"})), state=C, event="claimed"),
    Case("claim by a member of a listed team", ticket(O), Command("claim"), TEAM_MEMBER,
         policy=Policy(runners=frozenset({"@octo/reviewers"})), state=C, runner="tess", event="claimed"),
    Case("claim by a run of a listed workflow, whoever started it", ticket(O), Command("claim"), WORKFLOW_RUN,
         policy=Policy(runners=frozenset({f"workflow:{AGENT_WORKFLOW}"})), state=C, runner="otto", event="claimed"),
    Case("claim by a run as its actor where runners lists no workflow", ticket(O), Command("claim"),
         replace(RUNNER, workflow=AGENT_WORKFLOW), policy=Policy(runners=frozenset({"agent-a"})), state=C,
         event="claimed"),
    Case("release by the runner", ticket(C), Command("release"), RUNNER,
         state=O, runner=None, attempt=1, event="released", role=Role.RUNNER,
         data={"ended": {"attempt": 1, "reason": "released"}}),
    Case("release @self by the runner", ticket(C), Command("release", user="agent-a"), RUNNER,
         state=O, event="released", role=Role.RUNNER, data={"ended": {"attempt": 1, "reason": "released"}}),
    Case("release @x by a maintainer", ticket(C), Command("release", user="agent-a"), MAINTAINER,
         state=O, runner=None, event="released", role=Role.REPOSITORY_MAINTAINER,
         data={"ended": {"attempt": 1, "reason": "released_by_maintainer"}}),
    Case("assign on open", ticket(O), Command("assign", user="agent-b"), MAINTAINER,
         state=C, runner="agent-b", attempt=1, event="assigned", role=Role.REPOSITORY_MAINTAINER,
         data={"runner": "agent-b", "ended": None}),
    Case("assign on claimed ends the attempt as reassigned", ticket(C), Command("assign", user="agent-b"),
         MAINTAINER, state=C, runner="agent-b", attempt=2, event="assigned",
         data={"ended": {"attempt": 1, "reason": "reassigned"}}),
    Case("deliver", ticket(C), Command("deliver", text="done", evidence=FULL), RUNNER,
         state=V, runner="agent-a", attempt=1, event="delivered", role=Role.RUNNER,
         data={"delivery": 1, "text": "done", "ended": {"attempt": 1, "reason": "delivered"}}),
    Case("deliver with the required evidence", ticket(C), Command("deliver", text="done", evidence=FULL), RUNNER,
         policy=Policy(required_evidence=("tests", "screenshot")), state=V, event="delivered"),
    Case("accept by a maintainer", ticket(V), Command("accept", text="lgtm"), MAINTAINER,
         state=A, runner="agent-a", attempt=1, event="accepted", role=Role.REVIEWER,
         data={"review": {"verdict": "accepted", "attempt": 1, "delivery": 1, "independent": True,
                          "note": "lgtm"}}),
    Case("accept by a configured reviewer without write access", ticket(V), Command("accept"), OTHER,
         policy=Policy(reviewers=frozenset({"agent-b"})), state=A, event="accepted", role=Role.REVIEWER),
    Case("accept by a configured team", ticket(V), Command("accept"), TEAM_MEMBER,
         policy=Policy(reviewers=frozenset({"octo/reviewers"})), state=A, role=Role.REVIEWER),
    Case("accept by a maintainer outside the configured reviewers is an override", ticket(V),
         Command("accept"), MAINTAINER, policy=Policy(reviewers=frozenset({"agent-b"})),
         state=A, event="accepted", role=Role.REPOSITORY_MAINTAINER),
    Case("publish without scope", ticket(D, brief=Brief(acceptance=("shown",), reviewer="rita")), Command("publish"),
         OWNER, policy=Policy(require_reviewer=True), state=O, event="published", role=Role.TASK_OWNER, attempt=0),
    Case("publish with a reviewer named in words", ticket(D, brief=Brief(acceptance=("shown",),
         reviewer_as_written="named frontend maintainer")), Command("publish"), OWNER, state=O, event="published",
         role=Role.TASK_OWNER, attempt=0),
    Case("deliver a non-code task without the code evidence the repository requires",
         ticket(C, brief=Brief(code=False, required_evidence=("screenshot",))),
         Command("deliver", text="written", evidence=Evidence(screenshots=("https://s/1.png",))), RUNNER,
         policy=Policy(required_evidence=("branch", "pr")), state=V, event="delivered"),
    Case("accept by a member of the brief's reviewer team", ticket(V, brief=Brief(reviewer="octo/design")),
         Command("accept"), replace(OTHER, teams=frozenset({"octo/design"})), state=A, event="accepted",
         role=Role.REVIEWER),
    Case("accept by the brief's named reviewer", ticket(V, brief=Brief(reviewer="Agent-B")), Command("accept"),
         OTHER, state=A, event="accepted", role=Role.REVIEWER),
    Case("self-acceptance where allowed is recorded as not independent", ticket(V), Command("accept"),
         ADMIN_RUNNER, policy=Policy(allow_self_review=True), state=A, event="accepted", role=Role.REVIEWER,
         data={"review": {"verdict": "accepted", "attempt": 1, "delivery": 1, "independent": False,
                          "note": ""}}),
    Case("send back keeps the runner and starts a new attempt", ticket(V), Command("send-back", text="fails"),
         MAINTAINER, state=C, runner="agent-a", attempt=2, event="sent_back", role=Role.REVIEWER,
         data={"runner": "agent-a", "review": {"verdict": "sent_back", "attempt": 1, "delivery": 1,
                                               "independent": True, "note": "fails"}}),
    Case("reopen claimed", ticket(C), Command("reopen", text="stuck"), MAINTAINER,
         state=O, runner=None, attempt=1, event="reopened", role=Role.REPOSITORY_MAINTAINER,
         data={"reason": "stuck", "ended": {"attempt": 1, "reason": "reopened"}}),
    Case("reopen delivered", ticket(V), Command("reopen", text="wrong task"), MAINTAINER,
         state=O, runner=None, event="reopened", data={"ended": None}),
    Case("reopen accepted", ticket(A), Command("reopen", text="regressed"), MAINTAINER,
         state=O, runner=None, event="reopened"),
    Case("withdraw by the owner", ticket(O), Command("withdraw", text="obsolete"), OWNER,
         state=W, event="withdrawn", role=Role.TASK_OWNER, data={"reason": "obsolete", "ended": None}),
    Case("withdraw delivered", ticket(V), Command("withdraw", text="obsolete"), OWNER, state=W, runner=None,
         data={"ended": None}),
    Case("withdraw a draft", ticket(D), Command("withdraw", text="obsolete"), OWNER, state=W),
    Case("accept by a maintainer listed in maintainers", ticket(V), Command("accept"), WRITER,
         policy=Policy(maintainers=frozenset({"agent-b"})), state=A, role=Role.REVIEWER),
    Case("accept by a listed bot", ticket(V), Command("accept"), ADMIN_BOT,
         policy=Policy(reviewers=frozenset({"helper[bot]"})), state=A, role=Role.REVIEWER),
    Case("a custom role counts as its base level", ticket(C), Command("assign", user="agent-b"), CUSTOM,
         state=C, role=Role.REPOSITORY_MAINTAINER),
    Case("a custom role can be listed by name", ticket(V), Command("accept"), CUSTOM,
         policy=Policy(reviewers=frozenset({"role:Release-Manager"})), state=A, role=Role.REVIEWER),
    Case("claim by a reader under runners: readers", ticket(O), Command("claim"), OUTSIDER,
         policy=Policy(runner_access="readers"), state=C, role=Role.RUNNER),
    Case("claim by anyone where runners: anyone", ticket(O), Command("claim"), STRANGER,
         policy=Policy(runner_access="anyone"), state=C, role=Role.RUNNER),
    Case("withdraw claimed by a maintainer", ticket(C), Command("withdraw", text="obsolete"), MAINTAINER,
         state=W, runner=None, role=Role.REPOSITORY_MAINTAINER,
         data={"ended": {"attempt": 1, "reason": "withdrawn"}}),
]  # fmt: skip

REFUSED = [
    Case("the holder claims a delivered ticket", ticket(V, attempt=2), Command("claim"), RUNNER,
         code="already_delivered",
         message="you delivered #42 (attempt 2, revision 19); it awaits review, so there is nothing to claim. "
                 "A reviewer can /accept it, or /send-back it to you for a new attempt."),
    Case("the holder claims a delivered ticket at a stale revision", ticket(V), Command("claim", rev=3), RUNNER,
         code="already_delivered",
         message="you delivered #42 (attempt 1, revision 19); it awaits review, so there is nothing to claim. "
                 "A reviewer can /accept it, or /send-back it to you for a new attempt."),
    Case("a former runner claims an accepted ticket", ticket(A), Command("claim"), RUNNER, code="wrong_state",
         message="#42 is accepted (revision 19), not open. Pick another issue."),
    Case("claim when claimed", ticket(C), Command("claim"), OTHER, code="wrong_state",
         message="#42 is claimed by @agent-a (revision 19), not open. Pick another issue."),
    Case("claim when delivered", ticket(V), Command("claim"), OTHER, code="wrong_state",
         message="#42 is delivered by @agent-a (revision 19), not open. Pick another issue."),
    Case("claim a draft", ticket(D), Command("claim"), OTHER, code="wrong_state",
         message="#42 is a draft (revision 19), not open. Pick another issue."),
    Case("claim at a stale revision", ticket(O), Command("claim", rev=18), RUNNER, code="stale_revision",
         message="#42 is at revision 19, not 18: it is open now. An agent can /claim it. "
                 "Send the command again with rev=19 if it still applies."),
    Case("stale revision wins over wrong state", ticket(C), Command("claim", rev=18), OTHER,
         code="stale_revision",
         message="#42 is at revision 19, not 18: it is claimed by @agent-a now. @agent-a works on it; "
                 "/deliver comes next. Send the command again with rev=19 if it still applies."),
    Case("claim at the limit", ticket(O), Command("claim"), RUNNER, held=3, code="claim_limit",
         message="@agent-a already holds 3 claims in octo/shop (the limit is 3). "
                 "Deliver or /release one before claiming #42."),
    Case("claim at a configured limit", ticket(O), Command("claim"), RUNNER, held=1,
         policy=Policy(max_active_claims=1), code="claim_limit",
         message="@agent-a already holds 1 claim in octo/shop (the limit is 1). "
                 "Deliver or /release one before claiming #42."),
    Case("claim by an unlisted runner", ticket(O), Command("claim"), OTHER,
         policy=Policy(runners=frozenset({"agent-a", "@octo/bots"})), code="not_permitted",
         message="@agent-b cannot /claim #42: that needs a runner, and octo/shop lists its runners in `runners:` "
                 "of `.github/baton.yml` (@agent-a, @octo/bots). Ask to be added to that list, or ask a "
                 "maintainer to /assign it."),
    Case("claim by a run of an unlisted workflow, its actor listed", ticket(O), Command("claim"),
         replace(RUNNER, workflow="octo/shop/.github/workflows/other.yml"),
         policy=Policy(runners=frozenset({"agent-a", f"workflow:{AGENT_WORKFLOW}"})), code="not_permitted",
         message="@agent-a cannot /claim #42: that needs a runner, and octo/shop lists the workflows whose runs may "
                 "run tasks in `runners:` of `.github/baton.yml` (@agent-a, workflow:octo/shop/.github/workflows/"
                 "agent.yml), and workflow:octo/shop/.github/workflows/other.yml is not one of them. Ask to have it "
                 "added to that list, or ask a maintainer to /assign it."),
    Case("claim by a person where runners lists only a workflow", ticket(O), Command("claim"), RUNNER,
         policy=Policy(runners=frozenset({f"workflow:{AGENT_WORKFLOW}"})), code="not_permitted",
         message="@agent-a cannot /claim #42: that needs a runner, and octo/shop lists its runners in `runners:` of "
                 "`.github/baton.yml` (workflow:octo/shop/.github/workflows/agent.yml). Ask to be added to that "
                 "list, or ask a maintainer to /assign it."),
    Case("release by someone else", ticket(C), Command("release"), OTHER, code="not_runner",
         message="#42 is claimed by @agent-a (revision 19); only @agent-a can /release it, or a repository "
                 "maintainer with /release @agent-a, someone with the maintain or admin role on octo/shop "
                 "(@agent-b has read). Ask a maintainer, or ask an admin for the maintain role."),
    Case("release @runner by a non-maintainer", ticket(C), Command("release", user="agent-a"), OTHER,
         code="not_runner",
         message="#42 is claimed by @agent-a (revision 19); only @agent-a can /release it, or a repository "
                 "maintainer with /release @agent-a, someone with the maintain or admin role on octo/shop "
                 "(@agent-b has read). Ask a maintainer, or ask an admin for the maintain role."),
    Case("release @someone who does not hold it", ticket(C), Command("release", user="agent-b"), MAINTAINER,
         code="not_runner", message="@agent-b does not hold #42; it is claimed by @agent-a (revision 19)."),
    Case("release when open", ticket(O), Command("release"), RUNNER, code="wrong_state",
         message="#42 is open (revision 19), not claimed. An agent can /claim it."),
    Case("assign by a non-maintainer", ticket(O), Command("assign", user="agent-b"), RUNNER,
         code="not_permitted",
         message="@agent-a cannot /assign #42: that needs a repository maintainer, someone with the maintain or "
                 "admin role on octo/shop (@agent-a has read). Ask a maintainer, or ask an admin for the maintain"
                 " role."),
    Case("assign without a user", ticket(O), Command("assign"), MAINTAINER, code="missing_argument",
         message="/assign needs the person to assign, as in `/assign @user`."),
    Case("assign when delivered", ticket(V), Command("assign", user="agent-b"), MAINTAINER,
         code="wrong_state",
         message="#42 is delivered by @agent-a (revision 19), not open or claimed. "
                 "It awaits review: a reviewer can /accept or /send-back."),
    Case("deliver by someone else", ticket(C), Command("deliver", text="done"), OTHER, code="not_runner",
         message="#42 is claimed by @agent-a (revision 19); only @agent-a can /deliver it."),
    Case("deliver by a maintainer who is not the runner", ticket(C), Command("deliver"), MAINTAINER,
         code="not_runner", message="#42 is claimed by @agent-a (revision 19); only @agent-a can /deliver it."),
    Case("deliver when open", ticket(O), Command("deliver"), RUNNER, code="wrong_state",
         message="#42 is open (revision 19), not claimed. An agent can /claim it."),
    Case("deliver twice", ticket(V), Command("deliver"), RUNNER, code="wrong_state",
         message="#42 is delivered by @agent-a (revision 19), not claimed. "
                 "It awaits review: a reviewer can /accept or /send-back."),
    Case("deliver without required evidence", ticket(C), Command("deliver", evidence=Evidence(branch="b")),
         RUNNER, policy=Policy(required_evidence=("branch", "tests")),
         code="missing_evidence",
         message="#42 cannot be delivered: the delivery lacks a summary, tests. " + AGAIN),
    Case("deliver without the brief's evidence", ticket(C, brief=Brief(required_evidence=("screenshot", "tests"))),
         Command("deliver"), RUNNER, code="missing_evidence",
         message="#42 cannot be delivered: the delivery lacks a summary, tests, screenshot. " + AGAIN),
    Case("deliver without the screenshots a sentence of the brief asks for",
         ticket(C, brief=Brief(required_evidence=("branch", "screenshot", "screenshot"),
                               evidence_lines=("diff or branch", "real screenshots at 390px and 1280px"))),
         Command("deliver", text="done", evidence=Evidence(branch="b")), RUNNER, code="missing_evidence",
         message="#42 cannot be delivered: the delivery lacks 2 screenshots (0 given). The brief asks for “real "
                 "screenshots at 390px and 1280px”. " + AGAIN),
    Case("deliver with too few screenshots", ticket(C, brief=Brief(required_evidence=("screenshot", "screenshot"))),
         Command("deliver", text="done", evidence=Evidence(screenshots=("https://s/1.png",))), RUNNER,
         code="missing_evidence",
         message="#42 cannot be delivered: the delivery lacks 2 screenshots (1 given). " + AGAIN),
    Case("deliver nothing", ticket(C), Command("deliver"), RUNNER, code="missing_evidence",
         message="#42 cannot be delivered: the delivery lacks a summary. " + AGAIN),
    Case("accept by a non-maintainer", ticket(V), Command("accept"), OTHER, code="not_reviewer",
         message="@agent-b cannot /accept #42: that needs a reviewer, and octo/shop lists no `reviewers:`, so its"
                 " repository maintainers review: someone with the maintain or admin role on octo/shop (@agent-b "
                 "has read). Ask a maintainer, or ask an admin for the maintain role."),
    Case("accept by someone outside the configured reviewers", ticket(V), Command("accept"), OTHER,
         policy=Policy(reviewers=frozenset({"rita", "@octo/reviewers"})), code="not_reviewer",
         message="@agent-b cannot /accept #42: that needs a reviewer, someone listed in `reviewers:` of "
                 "`.github/baton.yml` (@octo/reviewers, @rita), or a repository maintainer as an override. Ask a "
                 "reviewer to look at it, or ask to be added to that list."),
    Case("self-acceptance", ticket(V), Command("accept"), ADMIN_RUNNER, code="self_review",
         message="@agent-a cannot /accept #42: @agent-a is its runner, and octo/shop requires an independent "
                 "reviewer. Ask another reviewer."),
    Case("self-acceptance by a runner without write access, even where allowed", ticket(V), Command("accept"),
         RUNNER, policy=Policy(allow_self_review=True), code="not_reviewer",
         message="@agent-a cannot /accept #42: that needs a reviewer, and octo/shop lists no `reviewers:`, so its"
                 " repository maintainers review: someone with the maintain or admin role on octo/shop (@agent-a "
                 "has read). Ask a maintainer, or ask an admin for the maintain role."),
    Case("accept when claimed", ticket(C), Command("accept"), MAINTAINER, code="wrong_state",
         message="#42 is claimed by @agent-a (revision 19), not delivered. @agent-a works on it; "
                 "/deliver comes next."),
    Case("accept when accepted", ticket(A), Command("accept"), MAINTAINER, code="wrong_state",
         message="#42 is accepted (revision 19), not delivered. It is finished; a maintainer can /reopen it."),
    Case("send back without feedback", ticket(V), Command("send-back"), MAINTAINER, code="missing_argument",
         message="/send-back needs feedback saying what to change, as in `/send-back <feedback>`."),
    Case("send back by a non-reviewer", ticket(V), Command("send-back", text="x"), OTHER, code="not_reviewer",
         message="@agent-b cannot /send-back #42: that needs a reviewer, and octo/shop lists no `reviewers:`, so "
                 "its repository maintainers review: someone with the maintain or admin role on octo/shop "
                 "(@agent-b has read). Ask a maintainer, or ask an admin for the maintain role."),
    Case("send back one's own work", ticket(V), Command("send-back", text="x"), ADMIN_RUNNER,
         code="self_review",
         message="@agent-a cannot /send-back #42: @agent-a is its runner, and octo/shop requires an "
                 "independent reviewer. Ask another reviewer."),
    Case("reopen when open", ticket(O), Command("reopen", text="x"), MAINTAINER, code="wrong_state",
         message="#42 is open (revision 19), not claimed, delivered or accepted. An agent can /claim it."),
    Case("reopen without a reason", ticket(A), Command("reopen"), MAINTAINER, code="missing_argument",
         message="/reopen needs a reason, as in `/reopen <reason>`."),
    Case("reopen by a non-maintainer", ticket(A), Command("reopen", text="x"), OWNER, code="not_permitted",
         message="@olivia cannot /reopen #42: that needs a repository maintainer, someone with the maintain or "
                 "admin role on octo/shop (@olivia has read). Ask a maintainer, or ask an admin for the maintain "
                 "role."),
    Case("withdraw accepted", ticket(A), Command("withdraw", text="x"), MAINTAINER, code="wrong_state",
         message="#42 is accepted (revision 19), not draft, open, claimed or delivered. It is finished; a "
                 "maintainer can /reopen it."),
    Case("withdraw withdrawn", ticket(W), Command("withdraw", text="x"), MAINTAINER, code="wrong_state",
         message="#42 is withdrawn (revision 19), not draft, open, claimed or delivered. "
                 "It was withdrawn: nobody is offered it now (reopening a closed issue offers it again)."),
    Case("withdraw by the runner", ticket(C), Command("withdraw", text="x"), RUNNER, code="not_permitted",
         message="@agent-a cannot /withdraw #42: that needs its task owner (@olivia) or a repository maintainer, "
                 "someone with the maintain or admin role on octo/shop (@agent-a has read). Ask a maintainer, or "
                 "ask an admin for the maintain role."),
    Case("withdraw without a reason", ticket(O), Command("withdraw"), OWNER, code="missing_argument",
         message="/withdraw needs a reason, as in `/withdraw <reason>`."),
    Case("publish an open ticket", ticket(O), Command("publish"), OWNER, code="wrong_state",
         message="#42 is open (revision 19), not draft. An agent can /claim it."),
    Case("publish without a brief", ticket(D), Command("publish"), OWNER, code="incomplete_brief",
         message="#42 cannot be published: its brief lacks acceptance criteria. "
                 "Add them to the issue's brief and /publish again."),
    Case("publish without the reviewer the repository requires", ticket(D, brief=COMPLETE_BRIEF),
         Command("publish"), OWNER, policy=Policy(require_reviewer=True), code="incomplete_brief",
         message="#42 cannot be published: its brief lacks a reviewer. "
                 "Add them to the issue's brief and /publish again."),
    Case("publish with a reviewer named in words where the repository requires one",
         ticket(D, brief=Brief(acceptance=("shown",), reviewer_as_written="named frontend maintainer")),
         Command("publish"), OWNER, policy=Policy(require_reviewer=True), code="incomplete_brief",
         message="#42 cannot be published: its brief lacks a reviewer named as a login or org/team (like `@mona` "
                 "or `@octo/design`), not “named frontend maintainer”. Add them to the issue's brief and /publish "
                 "again."),
    Case("publish a brief without acceptance criteria", ticket(D, brief=Brief(scope=("a.py",))),
         Command("publish"), MAINTAINER, code="incomplete_brief",
         message="#42 cannot be published: its brief lacks acceptance criteria. "
                 "Add them to the issue's brief and /publish again."),
    Case("publish by a stranger", ticket(D, brief=COMPLETE_BRIEF), Command("publish"), STRANGER,
         code="not_permitted",
         message="@stranger cannot /publish #42: that needs its task owner (@olivia) or a repository maintainer, "
                 "someone with the maintain or admin role on octo/shop (@stranger has none). Ask a maintainer, or"
                 " ask an admin for the maintain role."),
    Case("accept by an agent with write access", ticket(V), Command("accept"), WRITER, code="not_reviewer",
         message="@agent-b cannot /accept #42: that needs a reviewer, and octo/shop lists no `reviewers:`, so its "
                 "repository maintainers review: someone with the maintain or admin role on octo/shop (@agent-b "
                 "has write). Ask a maintainer, or ask an admin for the maintain role."),
    Case("assign by an admin bot", ticket(O), Command("assign", user="agent-b"), ADMIN_BOT, code="not_permitted",
         message="@helper[bot] cannot /assign #42: that needs a repository maintainer, someone with the maintain "
                 "or admin role on octo/shop (@helper[bot] has admin) (bots count only when listed by name). "
                 "Ask a maintainer, or ask an admin for the maintain role."),
    Case("assign by an admin outside maintainers", ticket(O), Command("assign", user="agent-b"), ADMIN_RUNNER,
         policy=Policy(maintainers=frozenset({"maria", "@octo/leads"})), code="not_permitted",
         message="@agent-a cannot /assign #42: that needs a repository maintainer, someone listed in "
                 "`maintainers:` of `.github/baton.yml` (@maria, @octo/leads). Ask one of them, or ask to be "
                 "added to that list."),
    Case("claim without access to the repository", ticket(O), Command("claim"), STRANGER, code="not_permitted",
         message="@stranger cannot /claim #42: that needs a runner, and only collaborators may run tasks here "
                 "(`runners: collaborators` in `.github/baton.yml`, the default; `runners: readers` or `runners: "
                 "anyone` widens it), and @stranger is not a collaborator on octo/shop. Ask a maintainer to add "
                 "you as a collaborator, or ask a maintainer to /assign it."),
    Case("claim by a reader who is no collaborator", ticket(O), Command("claim"), OUTSIDER, code="not_permitted",
         message="@otto cannot /claim #42: that needs a runner, and only collaborators may run tasks here "
                 "(`runners: collaborators` in `.github/baton.yml`, the default; `runners: readers` or `runners: "
                 "anyone` widens it), and @otto is not a collaborator on octo/shop. Ask a maintainer to add "
                 "you as a collaborator, or ask a maintainer to /assign it."),
    Case("claim without access under runners: readers", ticket(O), Command("claim"), STRANGER,
         policy=Policy(runner_access="readers"), code="not_permitted",
         message="@stranger cannot /claim #42: that needs a runner, and only people with read access may run "
                 "tasks here (`runners: readers` in `.github/baton.yml`; `runners: anyone` widens it), and "
                 "@stranger has none. Ask a maintainer for access, or ask a maintainer to /assign it."),
    Case("unknown command", ticket(O), Command("frobnicate"), RUNNER, code="unknown_command",
         message="/frobnicate is not a command. Try /help."),
]  # fmt: skip


def run(case: Case) -> Any:
    return decide(case.ticket, case.command, case.actor, Situation(case.policy, case.held))


@pytest.mark.parametrize("case", APPLIED, ids=[c.id for c in APPLIED])
def test_applied(case: Case) -> None:
    decision = run(case)
    assert isinstance(decision, Applied), decision
    after, event = decision.ticket, decision.event
    assert after.revision == case.ticket.revision + 1
    assert event.revision == after.revision
    assert event.actor == case.actor.login
    assert after.state == case.state
    if case.event:
        assert event.type == case.event
    if case.role:
        assert event.role == case.role
    if case.runner is not ...:
        assert after.runner == case.runner
    if case.attempt is not None:
        assert after.attempt == case.attempt
        assert event.attempt == case.attempt
    for key, value in case.data.items():
        assert event.data[key] == value, key
    assert evolve(case.ticket, event) == after


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_refused(case: Case) -> None:
    decision = run(case)
    assert decision == Refused(case.code or "", case.message or "")


def test_every_command_has_an_applied_case_from_each_source_state() -> None:
    covered = {(c.command.name, c.ticket.state) for c in APPLIED}
    for rule in RULES.values():
        for source in rule.sources:
            assert (rule.name, source) in covered, (rule.name, source)


def test_every_refusal_code_is_covered() -> None:
    codes = {c.code for c in REFUSED}
    assert codes >= {
        "stale_revision", "wrong_state", "not_runner", "not_reviewer", "self_review", "claim_limit",
        "missing_evidence", "not_permitted", "missing_argument", "incomplete_brief", "unknown_command",
        "already_delivered",
    }  # fmt: skip


@pytest.mark.parametrize("name", ["status", "help"])
@pytest.mark.parametrize("state", list(WorkState))
def test_status_and_help_note_without_change(name: str, state: WorkState) -> None:
    assert decide(ticket(state), Command(name), STRANGER, Situation()) == Noted(name)
    # rev=N guards changes; a stale one on a command that changes nothing is no reason to refuse
    assert decide(ticket(state), Command(name, rev=3), STRANGER, Situation()) == Noted(name)


@pytest.mark.parametrize("rev", [None, 19, 3], ids=["no-rev", "current-rev", "stale-rev"])
def test_the_holder_claiming_again_is_noted_with_what_it_holds(rev: int | None) -> None:
    held = ticket(C, attempt=2)
    for actor in (RUNNER, Actor("AGENT-A", Permission.READ, collaborator=True)):
        decision = decide(held, Command("claim", rev=rev), actor, Situation())
        assert decision == Noted("claim", "already_held", "you already hold #42 (attempt 2, revision 19).")
    # at its claim limit it still holds this one: nothing is counted, nothing refused
    assert isinstance(decide(held, Command("claim"), RUNNER, Situation(active_claims=3)), Noted)
    # someone else's claim is refused as before
    refused = decide(held, Command("claim", rev=rev), OTHER, Situation())
    assert isinstance(refused, Refused) and refused.code in ("wrong_state", "stale_revision")


def test_an_actor_known_by_login_alone_is_decided_until_a_guard_needs_their_access() -> None:
    unknown = Actor("agent-b", access_known=False)
    # the ticket's state, its revision, the holder's own claim: the login is enough
    taken = decide(ticket(C), Command("claim"), unknown, Situation())
    assert isinstance(taken, Refused) and taken.code == "wrong_state"
    stale = decide(ticket(O), Command("claim", rev=3), unknown, Situation())
    assert isinstance(stale, Refused) and stale.code == "stale_revision"
    assert isinstance(decide(ticket(C), Command("claim"), Actor("agent-a", access_known=False), Situation()), Noted)
    typo = decide(ticket(O), Command("claimm"), unknown, Situation())
    assert isinstance(typo, Refused) and typo.code == "unknown_command"
    # who may claim an open task, who may release another's claim: the guards ask who they are
    for t, command in ((ticket(O), Command("claim")), (ticket(C), Command("release", user="agent-a"))):
        with pytest.raises(AccessNeeded) as needed:
            decide(t, command, unknown, Situation())
        assert needed.value.login == "agent-b"


def test_help_leaves_out_claiming_what_one_holds() -> None:
    assert "claim" not in names(available(ticket(C), RUNNER, Situation()))
    assert "claim" not in names(available(ticket(V), RUNNER, Situation()))


def test_not_offered_message() -> None:
    refusal = not_offered(42, REPO, Policy(offer="labeled", offer_label="agents"))
    assert refusal == Refused(
        "not_offered",
        "#42 is not offered: octo/shop offers only issues labelled `agents`. Ask a maintainer to add the label.",
    )


def test_logins_compare_case_insensitively() -> None:
    decision = decide(ticket(C), Command("deliver", text="done"), Actor("AGENT-A"), Situation())
    assert isinstance(decision, Applied)


def test_send_back_keeps_deliveries_and_the_next_delivery_is_numbered_after_them() -> None:
    t = ticket(V)
    sent = decide(t, Command("send-back", text="the empty state vanishes on error"), MAINTAINER, Situation())
    assert isinstance(sent, Applied)
    again = decide(sent.ticket, Command("deliver", text="fixed"), RUNNER, Situation())
    assert isinstance(again, Applied)
    assert again.event.data["delivery"] == 2
    assert again.event.attempt == 2
    assert again.ticket.deliveries == 2


def test_reopen_then_claim_starts_a_new_attempt_for_a_new_runner() -> None:
    reopened = decide(ticket(V), Command("reopen", text="x"), MAINTAINER, Situation())
    assert isinstance(reopened, Applied)
    claimed = decide(reopened.ticket, Command("claim"), OTHER, Situation())
    assert isinstance(claimed, Applied)
    assert (claimed.ticket.runner, claimed.ticket.attempt, claimed.ticket.deliveries) == ("agent-b", 2, 1)


def test_create_and_replay() -> None:
    t, created = create(KEY, REPO, "olivia", brief=COMPLETE_BRIEF)
    assert (t.state, t.revision, t.owner) == (O, 1, "olivia")
    history = [created]
    for command, actor in [
        (Command("claim"), RUNNER),
        (Command("deliver", text="one"), RUNNER),
        (Command("send-back", text="again"), MAINTAINER),
        (Command("deliver", text="two"), RUNNER),
        (Command("accept"), MAINTAINER),
    ]:
        decision = decide(t, command, actor, Situation())
        assert isinstance(decision, Applied)
        t = decision.ticket
        history.append(decision.event)
    assert replay(KEY, REPO, history) == t
    draft, _ = create(KEY, REPO, "olivia", draft=True)
    assert draft.state == D


def test_replay_needs_a_created_event() -> None:
    with pytest.raises(ValueError):
        replay(KEY, REPO, [])


def names(rules: list[Any]) -> list[str]:
    return [rule.name for rule in rules]


def test_help_lists_what_this_person_may_use_here() -> None:
    assert names(available(ticket(O), OTHER, Situation())) == ["claim", "status", "help"]
    assert names(available(ticket(C), RUNNER, Situation())) == ["release", "deliver", "status", "help"]
    assert names(available(ticket(C), OTHER, Situation())) == ["status", "help"]
    assert names(available(ticket(V), MAINTAINER, Situation())) == [
        "accept", "send-back", "reopen", "withdraw", "status", "help",
    ]  # fmt: skip
    assert names(available(ticket(V), ADMIN_RUNNER, Situation())) == ["reopen", "withdraw", "status", "help"]
    assert names(available(ticket(D), OWNER, Situation())) == ["publish", "withdraw", "status", "help"]
