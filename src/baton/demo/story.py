"""The reference story (docs/design.md §10), played on a stage: what `baton demo` shows and the end-to-end
tests check.

Each step is something people do on GitHub, then a wait until Baton has shown its answer there (a
label, a reply, the status comment). `play()` returns what a person saw on the issue after each step.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from github_standin.world import Repository

from .stage import Stage

STATUS_MARKER = "<!-- baton:status -->"

BRIEF = """Customers with no invoices see an empty table. Show the approved empty state instead.

```yaml
task: "Add an empty state to the billing history view"
scope:
  files: ["src/BillingHistory.tsx", "src/BillingHistory.test.tsx"]
  excluded: ["billing API", "payment settings"]
access: "runner has repository access through their own account"
acceptance:
  - "No invoices: show the approved empty-state copy"
  - "Invoices present: preserve current list and pagination"
  - "Keyboard focus remains in a sensible order"
evidence:
  - "diff or branch"
  - "commands and actual test output"
  - "real screenshots at 390px and 1280px"
reviewer: "named frontend maintainer"
```"""


@dataclass(frozen=True)
class Seen:
    """What anyone sees on one issue: its labels, assignees, open or closed, the status comment, the
    App's other comments (replies), and the App's reactions per comment."""

    state: str
    labels: tuple[str, ...]
    assignees: tuple[str, ...]
    status: str | None
    replies: tuple[str, ...]
    reactions: dict[int, tuple[str, ...]] = field(default_factory=dict)
    checks: tuple[tuple[str, str, str | None], ...] = ()  # the repository's check runs: (head, status, conclusion)


def seen(repository: Repository, number: int, lock: threading.RLock) -> Seen:
    with lock:
        issue = repository.issues[number]
        ours = [c for c in sorted(repository.comments.values(), key=lambda c: c.id)
                if c.issue == number and c.user.type == "Bot"]  # fmt: skip
        status = next((c.body for c in ours if c.body.startswith(STATUS_MARKER)), None)
        reactions: dict[int, tuple[str, ...]] = {}
        for reaction in repository.reactions.get(number, []):
            key = reaction.comment if reaction.comment is not None else 0
            reactions[key] = (*reactions.get(key, ()), reaction.content)
        checks = tuple((run.head_sha, run.status, run.conclusion) for run in repository.check_runs.values())
        return Seen(
            issue.state, tuple(issue.labels), tuple(issue.assignees), status,
            tuple(c.body for c in ours if not c.body.startswith(STATUS_MARKER)), reactions, checks,
        )  # fmt: skip


class Timeout(AssertionError):
    pass


def wait_for(stage: Stage, number: int, check: Callable[[Seen], bool], what: str, timeout: float = 30.0) -> Seen:
    """Poll what the issue shows until `check` holds; Timeout (with what was seen) otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        now_seen = seen(stage.repository, number, stage.hub.world.lock)
        if check(now_seen):
            return now_seen
        if time.monotonic() > deadline:
            raise Timeout(f"waited {timeout:.0f} s for {what} on #{number}; saw {now_seen}")
        time.sleep(0.05)


def work_line(status: str | None) -> str:
    """The status comment's first line after the marker: the work rail in words."""
    lines = (status or "").splitlines()
    return lines[1] if len(lines) > 1 else ""


RAILS = ("**Repository:**", "**Mismatch:**", "**Deployment:**")


def rail_lines(status: str | None) -> str:
    """The status comment's evidence lines (repository, deployment, any mismatch), on one line."""
    lines = (status or "").splitlines()[2:]
    return " · ".join(line for line in lines if line.startswith(RAILS))


def showing(state: str, *also: str) -> Callable[[Seen], bool]:
    """The issue shows work state `state` (e.g. "claimed") in its label and in its status comment, and
    the status comment holds each of `also`."""
    words = state.capitalize()

    def check(s: Seen) -> bool:
        status = s.status or ""
        return f"baton:{state}" in s.labels and words in work_line(status) and all(part in status for part in also)

    return check


def offered(s: Seen) -> bool:
    """The issue shows `baton:open`: an offered issue that nobody acted on yet shows its label only."""
    return "baton:open" in s.labels


def at_once(act: Callable[[str], None], people: tuple[str, str]) -> None:
    """Each person acts on a thread of their own; their comments reach GitHub together (a barrier)."""
    threads = [threading.Thread(target=act, args=(who,)) for who in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def play(stage: Stage, say: Callable[[str], None] = print) -> dict[str, Seen]:
    """Play the reference story; returns what the task's issue showed after each step, by step name."""
    name = stage.full_name
    maria = stage.person("maria", "maintain")
    agent_a, agent_b = stage.person("agent-a", "write"), stage.person("agent-b", "write")
    visitor = stage.person("visitor", "read")
    after: dict[str, Seen] = {}

    say("1. @maria files the task, and another one.")
    task = maria.open_issue(name, "Add an empty state to the billing history view", BRIEF)
    other = maria.open_issue(name, "Fix the date format on invoices")
    maria.comment(name, task, "Ready for an agent.\n/status")
    after["filed"] = wait_for(stage, task, showing("open"), "open")
    say(f"   #{task} is open: {work_line(after['filed'].status)}")
    asked = [line for line in (after["filed"].status or "").splitlines() if line.startswith("**Evidence asked:**")]
    for line in asked:
        say(f"   {line}")

    say(f"2. @agent-a and @agent-b both comment /claim on #{task} at the same moment.")
    barrier = threading.Barrier(2)

    def claim(person_name: str) -> None:
        (agent_a if person_name == "agent-a" else agent_b).comment(name, task, "/claim", together=barrier)

    at_once(claim, ("agent-a", "agent-b"))
    after["raced"] = wait_for(stage, task, lambda s: showing("claimed")(s) and len(s.replies) >= 1,
                              "one claim applied and the other answered")  # fmt: skip
    winner = after["raced"].assignees[0]
    loser = "agent-b" if winner == "agent-a" else "agent-a"
    runner = agent_a if winner == "agent-a" else agent_b
    say(f"   @{winner} won: {work_line(after['raced'].status)}")
    say(f"   Baton told @{loser}: {after['raced'].replies[-1].splitlines()[0]}")
    (agent_b if loser == "agent-b" else agent_a).comment(name, other, "/claim")
    wait_for(stage, other, showing("claimed"), f"@{loser} claiming #{other}")
    say(f"   @{loser} claimed #{other} instead.")

    branch = f"{task}-empty-state"
    say(f"3. @{winner} pushes {branch} and delivers with test output and two screenshots.")
    first = runner.push(name, branch, "Show the empty state when there are no invoices")
    runner.comment(name, task, DELIVERY.format(summary="Empty state added.", branch=branch, commit=first, passed=12))
    after["delivered"] = wait_for(stage, task, showing("delivered"), "delivered")
    say(f"   {work_line(after['delivered'].status)}")

    say("4. @maria finds the empty state vanishing when the request fails, and sends it back.")
    maria.comment(name, task, "/send-back The empty state vanishes when the invoices request fails; keep it shown.")
    after["sent back"] = wait_for(stage, task, showing("claimed", "attempt 2"), "attempt 2")
    say(f"   {work_line(after['sent back'].status)}")

    say(f"5. @{winner} fixes it, delivers again and opens a pull request that fixes #{task}.")
    second = runner.push(name, branch, "Keep the empty state when the request fails")
    runner.comment(name, task, DELIVERY.format(summary="Kept on failure.", branch=branch, commit=second, passed=14))
    after["delivered again"] = wait_for(stage, task, showing("delivered", "attempt 2"), "delivered again")
    pull = runner.open_pull_request(name, branch, "Empty state for billing history", f"Fixes #{task}")
    after["pull request"] = wait_for(stage, task, showing("delivered", f"Pull request #{pull} open"), "the PR shown")
    say(f"   {work_line(after['delivered again'].status)}; pull request #{pull} opened.")
    say(f"   {rail_lines(after['pull request'].status)}")

    say(f"6. @{winner} and @visitor both comment /accept on #{pull} at the same moment. Both are refused.")
    accepting = threading.Barrier(2)

    def accept(person_name: str) -> None:
        (visitor if person_name == "visitor" else runner).comment(name, pull, "/accept", together=accepting)

    at_once(accept, (winner, "visitor"))  # decided together, they share one reply
    after["refused"] = wait_for(stage, pull, lambda s: "@visitor" in "".join(s.replies) and f"@{winner}" in "".join(
        s.replies), "both refusals")  # fmt: skip
    for reply in after["refused"].replies:
        for line in reply.splitlines():
            if line.startswith("@"):
                say(f"   Baton: {line}")

    say(f"7. @maria merges #{pull}: GitHub closes #{task}; the work stays delivered. Then it is deployed.")
    merge = maria.merge(name, pull)
    after["merged"] = wait_for(stage, task, lambda s: s.state == "closed" and showing("delivered", "merged")(s),
                               "the issue closed by the merge, and the merge shown")  # fmt: skip
    say(f"   #{task} is {after['merged'].state} on GitHub; {work_line(after['merged'].status)}")
    maria.deploy(name, merge, "production")
    after["deployed"] = wait_for(stage, task, showing("delivered", "Deployed to production"), "the deployment shown")
    say(f"   {rail_lines(after['deployed'].status)}")

    say("8. @maria accepts on the pull request with /accept.")
    maria.comment(name, pull, "/accept Looks right, thanks.")
    after["accepted"] = wait_for(stage, task, showing("accepted"), "accepted")
    say(f"   {work_line(after['accepted'].status)}")
    return after


DELIVERY = """/deliver {summary}
branch: {branch}
commit: {commit}
tests:
```
{passed} passed in 1.2s
```
screenshot: https://example.test/billing-390.png
screenshot: https://example.test/billing-1280.png
"""


# Left open after the story, for whoever tries Baton as an agent: (title, priority, the file in scope).
LEFT_OPEN = (
    ("Show the invoice total in the footer", "p1", "src/InvoiceFooter.tsx"),
    ("Sort invoices newest first", "p2", "src/BillingHistory.tsx"),
    ("Name the currency beside each amount", "p3", "src/Amount.tsx"),
)

LEFT_BRIEF = """A small task left open by the demo.

```yaml
task: "{title}"
scope:
  files: ["{file}"]
acceptance:
  - "{title}, as the design shows"
evidence: [branch, tests]
priority: {priority}
```"""


def leave_open(stage: Stage) -> list[int]:
    """@maria files the tasks of LEFT_OPEN, each with a brief; returns their numbers once each is offered."""
    maria = stage.person("maria", "maintain")
    numbers = [maria.open_issue(stage.full_name, title, LEFT_BRIEF.format(title=title, file=file, priority=priority))
               for title, priority, file in LEFT_OPEN]  # fmt: skip
    for number in numbers:
        wait_for(stage, number, offered, "offered")
    return numbers
