"""The task brief through the app, against the stand-in GitHub: an issue body's brief makes the ticket (draft or
open, its owner, reviewer and required evidence), `/publish` is refused with what the brief lacks, an edited body
changes the brief as an event, `/deliver` needs a summary and the evidence the brief asks for, and a non-code
task has no evidence rails. People act on the stand-in; the test reads what GitHub shows and Baton's API."""

from __future__ import annotations

from baton.domain import Brief, WorkState, replay
from support.local_http import HTTP
from support.standin_scene import Scene, scene_with

TOKEN = "brief-read-token"

DRAFT_BRIEF = """\
Billing history needs an empty state.

```yaml
task: Add an empty state to the billing history view
scope:
  files: [src/BillingHistory.tsx, src/BillingHistory.test.tsx]
  excluded: [the billing API]
evidence: {tests: 1, screenshot: 1}
reviewer: rita
draft: true
```
"""

ACCEPTANCE = """\
acceptance:
  - no invoices shows the approved empty-state copy
  - invoices keep their list and pagination
"""


scene = scene_with(api_token=TOKEN)


def configure(scene: Scene, text: str) -> None:
    """`.github/baton.yml` pushed to the default branch."""
    scene.configure(text)


def open_issue(scene: Scene, body: str, by: str = "olivia") -> int:
    number = scene.person(by).open_issue(scene.full_name, "A task with a brief", body)
    scene.number = number
    scene.settle()
    return number


def edit(scene: Scene, body: str, by: str = "olivia") -> None:
    scene.person(by).edit_issue(scene.full_name, scene.number, body)
    scene.settle()


def api(scene: Scene, path: str) -> dict:  # type: ignore[type-arg]
    response = HTTP.get(
        f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}{path}",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def events(scene: Scene) -> list[str]:
    return [event["type"] for event in api(scene, "/events")["events"] if event.get("rail", "work") == "work"]


def explanations(scene: Scene) -> list[str]:
    """Baton's replies that explain a brief it cannot use, without their hidden marker."""
    return [reply.split("\n\n<!--")[0] for reply in scene.replies() if "cannot use the brief" in reply]


def reply_to(scene: Scene, login: str) -> str:
    return [reply for reply in scene.replies() if reply.startswith(f"@{login} ")][-1]


def test_a_briefs_life_from_draft_to_accepted(scene: Scene) -> None:
    open_issue(scene, DRAFT_BRIEF)
    scene.comment("olivia", "/publish")
    scene.drain()
    # the first command made the ticket a draft, from the brief; /publish says what the brief lacks
    assert scene.labels() == {"baton:draft"}
    assert "**Work:** Draft — the brief is being finished" in scene.status()
    assert reply_to(scene, "olivia").startswith(
        f"@olivia #{scene.number} cannot be published: its brief lacks acceptance criteria. "
        "Add them to the issue's brief and /publish again."
    )
    ticket = scene.app.state.work.ticket(scene.key)
    assert ticket.state is WorkState.DRAFT and ticket.owner == "olivia"
    assert ticket.brief.scope == ("src/BillingHistory.tsx", "src/BillingHistory.test.tsx")
    assert ticket.brief.excluded == ("the billing API",) and ticket.brief.reviewer == "rita"

    edit(scene, DRAFT_BRIEF.replace("reviewer: rita\n", "reviewer: rita\n" + ACCEPTANCE))
    history = scene.app.state.work.history(scene.key)
    changed = history[-1]
    assert changed.type == "brief_changed" and changed.actor == "olivia" and changed.revision == 2
    assert changed.data["changes"] == [
        "acceptance added “no invoices shows the approved empty-state copy”; “invoices keep their list and pagination”"
    ]
    assert replay(scene.key, scene.full_name, history).brief == scene.app.state.work.ticket(scene.key).brief

    scene.comment("agent-a", "/publish")  # neither the owner nor a maintainer
    scene.comment("olivia", "/publish")
    scene.comment("agent-a", "/claim")
    scene.drain()
    assert scene.labels() == {"baton:claimed"} and scene.assignees() == ["agent-a"]
    assert "@agent-a cannot /publish" in reply_to(scene, "agent-a")

    # the brief changes while agent-a works: two screenshots now; the status comment says so
    edit(scene, DRAFT_BRIEF.replace("reviewer: rita\n", "reviewer: rita\n" + ACCEPTANCE).replace(
        "screenshot: 1", "screenshot: 2"))  # fmt: skip
    scene.drain()
    assert (
        "**Brief:** changed during attempt 1 — revision 5: evidence now tests, 2 screenshots. "
        "Read the issue body again."
    ) in scene.status()

    scene.comment("agent-a", "/deliver")
    scene.drain()
    assert reply_to(scene, "agent-a").startswith(
        f"@agent-a #{scene.number} cannot be delivered: the delivery lacks a summary, tests, 2 screenshots (0 given)."
    )
    scene.comment(
        "agent-a", "/deliver Empty state added.\ntests: https://ci.example/1\nscreenshot: https://s.example/390.png"
    )
    scene.drain()
    assert reply_to(scene, "agent-a").startswith(
        f"@agent-a #{scene.number} cannot be delivered: the delivery lacks 2 screenshots (1 given)."
    )
    assert scene.labels() == {"baton:claimed"}
    scene.comment(
        "agent-a",
        "/deliver Empty state added.\ntests: https://ci.example/1\n"
        "screenshot: https://s.example/390.png\nscreenshot: https://s.example/1280.png",
    )
    scene.comment("rita", "/accept")  # the brief's reviewer, with read access only
    scene.drain()
    assert scene.labels() == {"baton:accepted"}
    assert "**Work:** Accepted by @rita — attempt 1 by @agent-a" in scene.status()
    assert "**Brief:**" not in scene.status()  # the attempt is over
    assert events(scene) == [
        "created", "brief_changed", "published", "claimed", "brief_changed", "delivered", "accepted"
    ]  # fmt: skip
    detail = api(scene, "")
    assert detail["reviews"][-1]["role"] == "reviewer"


def test_the_briefs_owner_owns_the_task(scene: Scene) -> None:
    open_issue(scene, DRAFT_BRIEF.replace("draft: true", "owner: '@paula'\ndraft: true"))
    scene.comment("olivia", "/withdraw not needed")  # the author, no longer the task owner
    scene.drain()
    assert "needs its task owner (@paula)" in reply_to(scene, "olivia")
    edit(scene, DRAFT_BRIEF.replace("reviewer: rita\n", "reviewer: rita\n" + ACCEPTANCE + "owner: paula\n"))
    scene.comment("paula", "/publish")
    scene.drain()
    assert scene.labels() == {"baton:open"}
    assert scene.app.state.work.history(scene.key)[-1].role.value == "task_owner"


def test_a_non_code_task_has_no_evidence_rails(scene: Scene) -> None:
    body = (
        "```yaml\ntask: Write the release notes\nacceptance: [every change of the release is named]\ncode: false\n```"
    )
    open_issue(scene, body + "\n\n/claim\n", by="agent-a")  # create-and-claim, from the issue's own body
    scene.comment("agent-a", "/deliver Release notes written in the wiki.")
    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.labels() == {"baton:accepted"}
    status = scene.status()
    assert "**Repository:** Not applicable" in status and "**Deployment:** Not applicable" in status
    evidence = api(scene, "")["evidence"]
    assert evidence["repository"]["state"] == "not_applicable"
    assert evidence["deployment"]["state"] == "not_applicable"


def test_code_evidence_the_repository_requires_is_not_asked_of_a_non_code_task(scene: Scene) -> None:
    configure(scene, "required_evidence: [branch, tests]\n")
    body = "```yaml\ntask: Triage the bug reports\nacceptance: [each one labelled]\ncode: false\n```\n/claim"
    open_issue(scene, body, by="agent-a")
    scene.comment("agent-a", "/deliver Labelled all twelve.")
    scene.drain()
    assert reply_to(scene, "agent-a").startswith(
        f"@agent-a #{scene.number} cannot be delivered: the delivery lacks tests."
    )
    scene.comment("agent-a", "/deliver Labelled all twelve.\ntests: https://ci.example/triage")
    scene.drain()
    assert scene.labels() == {"baton:delivered"}


def test_an_invalid_brief_is_explained_once_and_the_last_good_brief_stays(scene: Scene) -> None:
    bad = "```yaml\ntask: Tidy the cart\nacceptance: [tidy]\nevidence: {screenshot: 0, video: 1}\nreviewer: [rita]\n```"
    open_issue(scene, bad)
    scene.comment("maria", "/status")
    scene.drain()
    [explained] = explanations(scene)
    assert explained.startswith(
        f"@olivia Baton cannot use the brief in #{scene.number}: `evidence.screenshot` must be a whole number from "
        "1 to 10, not 0; `evidence` names 'video', which is not a kind of evidence"
    )
    assert "`reviewer` must be a login, an org/team name or text (like `@mona`), not ['rita']" in explained
    assert explained.endswith("Until the issue body is fixed, the task has no brief.")
    # a brief nobody can read is not offered
    assert scene.labels() == {"baton:draft"}

    edit(scene, "Some context first.\n\n" + bad)  # the same problems: no second reply
    scene.drain()
    assert len(explanations(scene)) == 1

    good = bad.replace("{screenshot: 0, video: 1}", "[tests]").replace("[rita]", "rita")
    edit(scene, good)
    assert scene.app.state.work.ticket(scene.key).brief.required_evidence == ("tests",)
    edit(scene, good.replace("[tests]", "[tests, vibes]"), by="maria")
    scene.drain()
    latest = explanations(scene)
    assert len(latest) == 2 and latest[-1].startswith("@maria ")
    assert latest[-1].endswith("Until the issue body is fixed, the last good brief stays in force.")
    assert scene.app.state.work.ticket(scene.key).brief.required_evidence == ("tests",)
    assert events(scene) == ["created", "brief_changed"]


FORM = """\
### Task

Add an empty state to the billing history view

### Scope

- src/BillingHistory.tsx

### Acceptance

- [x] no invoices shows the approved copy
- [x] the list is unchanged

### Evidence

tests, screenshot: 2

### Reviewer

@rita

### Code

Yes

### Draft

_No response_
"""


def test_an_issue_form_body_is_read_as_a_brief(scene: Scene) -> None:
    open_issue(scene, FORM)
    scene.comment("agent-a", "/claim")
    scene.drain()
    assert scene.labels() == {"baton:claimed"}
    assert scene.app.state.work.ticket(scene.key).brief == Brief(
        task="Add an empty state to the billing history view",
        scope=("src/BillingHistory.tsx",),
        acceptance=("no invoices shows the approved copy", "the list is unchanged"),
        required_evidence=("tests", "screenshot", "screenshot"),
        reviewer="rita",
    )


def test_a_team_named_as_reviewer_reviews(scene: Scene) -> None:
    scene.stage.hub.join_team("octo/design", "rita")
    body = "```yaml\ntask: Tidy the cart\nacceptance: [tidy]\nreviewer: '@octo/design'\n```\n/claim"
    open_issue(scene, body, by="agent-a")
    scene.comment("agent-a", "/deliver Tidied.")
    scene.comment("paula", "/accept")  # not in the team
    scene.comment("rita", "/accept")
    scene.drain()
    assert "@paula cannot /accept" in reply_to(scene, "paula")
    assert scene.labels() == {"baton:accepted"}
    assert "**Work:** Accepted by @rita" in scene.status()


def test_require_reviewer_makes_publish_ask_for_one(scene: Scene) -> None:
    configure(scene, "require_reviewer: true\n")
    open_issue(scene, "```yaml\ntask: Tidy the cart\nacceptance: [tidy]\ndraft: true\n```")
    scene.comment("olivia", "/publish")
    scene.drain()
    assert "its brief lacks a reviewer" in reply_to(scene, "olivia")
    edit(scene, "```yaml\ntask: Tidy the cart\nacceptance: [tidy]\nreviewer: rita\ndraft: true\n```")
    scene.comment("olivia", "/publish")
    scene.drain()
    assert scene.labels() == {"baton:open"}


def test_an_edit_that_changes_nothing_of_the_brief_records_nothing(scene: Scene) -> None:
    body = "```yaml\ntask: Tidy the cart\nacceptance: [tidy]\n```"
    open_issue(scene, body)
    scene.comment("agent-a", "/claim")
    edit(scene, "Please be quick.\n\n" + body)
    edit(scene, "Please be quick.\n\n" + body + "\n/release")  # an edit runs no commands
    scene.drain()
    assert events(scene) == ["created", "claimed"]
    assert scene.labels() == {"baton:claimed"}


def test_an_edit_that_makes_a_task_a_code_task_makes_its_evidence_rails_apply(scene: Scene) -> None:
    body = "```yaml\ntask: Write the notes\nacceptance: [written]\ncode: false\n```\n/claim"
    open_issue(scene, body, by="agent-a")
    scene.drain()
    assert api(scene, "")["evidence"]["repository"]["state"] == "not_applicable"
    edit(scene, body.replace("code: false", "code: true"), by="maria")
    scene.drain()
    assert api(scene, "")["evidence"]["repository"]["state"] == "unreported"
    assert "**Brief:** changed during attempt 1 — revision 3: now a code task." in scene.status()


TEMPLATE = """\
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
"""
LINES = ["diff or branch", "commands and actual test output", "real screenshots at 390px and 1280px"]


def test_the_articles_template_opens_a_ticket_that_shows_its_words_and_holds_its_evidence(scene: Scene) -> None:
    from baton.demo.story import BRIEF

    assert f"```yaml\n{TEMPLATE}```" in BRIEF  # `baton demo` files this very brief
    open_issue(scene, f"Customers with no invoices see an empty table.\n\n```yaml\n{TEMPLATE}```\n")
    scene.comment("maria", "/status")
    scene.drain()
    assert scene.labels() == {"baton:open"} and explanations(scene) == []
    status = scene.status()
    assert "**Access:** runner has repository access through their own account" in status
    assert (
        "**Evidence asked:** “diff or branch” (branch); “commands and actual test output” (tests); “real screenshots "
        "at 390px and 1280px” (2 screenshots)"
    ) in status
    assert "**Reviewer:** named frontend maintainer (as the brief says it; not a GitHub login or team)" in status
    brief = api(scene, "")["brief"]
    assert brief == {
        "task": "Add an empty state to the billing history view",
        "scope": ["src/BillingHistory.tsx", "src/BillingHistory.test.tsx"],
        "excluded": ["billing API", "payment settings"],
        "access": "runner has repository access through their own account",
        "acceptance": [
            "No invoices: show the approved empty-state copy",
            "Invoices present: preserve current list and pagination",
            "Keyboard focus remains in a sensible order",
        ],
        "required_evidence": ["branch", "tests", "screenshot", "screenshot"],
        "evidence_lines": [
            {"text": LINES[0], "kinds": ["branch"]},
            {"text": LINES[1], "kinds": ["tests"]},
            {"text": LINES[2], "kinds": ["screenshot", "screenshot"]},
        ],
        "reviewer": None,
        "reviewer_as_written": "named frontend maintainer",
        "owner": None,
        "code": True,
    }

    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver Empty state added.\nbranch: 1-empty-state\ntests: 31 passed in 2.0s")
    scene.drain()
    assert reply_to(scene, "agent-a").startswith(
        f"@agent-a #{scene.number} cannot be delivered: the delivery lacks 2 screenshots (0 given). The brief asks "
        "for “real screenshots at 390px and 1280px”."
    )
    assert scene.labels() == {"baton:claimed"}
    scene.comment(
        "agent-a",
        "/deliver Empty state added.\nbranch: 1-empty-state\ntests: 31 passed in 2.0s\n"
        "screenshot: https://s.example/390.png\nscreenshot: https://s.example/1280.png",
    )
    scene.drain()
    assert scene.labels() == {"baton:delivered"}
    assert "**Evidence asked:** “diff or branch” (branch)" in scene.status()  # the reviewer reads it beside the work
    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.labels() == {"baton:accepted"}
    assert "**Access:**" not in scene.status() and "**Evidence asked:**" not in scene.status()  # finished


def test_the_template_as_a_draft_publishes_unless_the_repository_requires_a_named_reviewer(scene: Scene) -> None:
    open_issue(scene, f"```yaml\n{TEMPLATE}draft: true\n```")
    scene.comment("olivia", "/publish")
    scene.drain()
    assert scene.labels() == {"baton:open"} and explanations(scene) == []

    configure(scene, "require_reviewer: true\n")
    open_issue(scene, f"```yaml\n{TEMPLATE}draft: true\n```")
    scene.comment("olivia", "/publish")
    scene.drain()
    assert scene.labels() == {"baton:draft"} and explanations(scene) == []
    assert reply_to(scene, "olivia").startswith(
        f"@olivia #{scene.number} cannot be published: its brief lacks a reviewer named as a login or org/team "
        "(like `@mona` or `@octo/design`), not “named frontend maintainer”."
    )
    edit(scene, f"```yaml\n{TEMPLATE.replace('named frontend maintainer', '@octo/frontend')}draft: true\n```")
    scene.comment("olivia", "/publish")
    scene.drain()
    assert scene.labels() == {"baton:open"}
    assert api(scene, "")["brief"]["reviewer"] == "octo/frontend"
