"""Reading a brief from an issue body: the yaml block and the issue form, checked strictly; what a delivery must
show for it; and how two briefs differ. Pure, apart from the YAML parser."""

from __future__ import annotations

from dataclasses import replace

import pytest

from baton.domain import Brief, Evidence
from baton.domain.brief import changes, evidence_line, required, shortfall
from baton.reading.briefs import NO_BRIEF, BriefReading, read_brief


def block(text: str) -> str:
    return f"Some words first.\n\n```yaml\n{text}```\n\nAnd after."


FULL = """\
task: Add an empty state
scope:
  files: [src/BillingHistory.tsx]
  excluded: [billing API]
acceptance:
  - no invoices shows the copy
  - keyboard focus order sensible
evidence: {branch: 1, tests: 1, screenshot: 2}
reviewer: "@octo/reviewers"
owner: olivia
code: true
draft: true
"""


@pytest.mark.parametrize(
    ("body", "reading"),
    [
        (block(FULL), BriefReading(True, Brief(
            task="Add an empty state", scope=("src/BillingHistory.tsx",), excluded=("billing API",),
            acceptance=("no invoices shows the copy", "keyboard focus order sensible"),
            required_evidence=("branch", "tests", "screenshot", "screenshot"), reviewer="octo/reviewers",
            owner="olivia"), ())),
        (block("task: Tidy\nevidence: [tests, pr]\nreviewer: rita\n"),
         BriefReading(False, Brief(task="Tidy", required_evidence=("pr", "tests"), reviewer="rita"), ())),
        (block("# a comment first\ntask: Docs\ncode: false\n"),
         BriefReading(False, Brief(task="Docs", code=False), ())),
        (block("task:\n"), BriefReading(False, Brief(), ())),
        ("~~~yml\ntask: Tilde fences\nacceptance: one line\n~~~", BriefReading(False, Brief(
            task="Tilde fences", acceptance=("one line",)), ())),
        ("no brief here", NO_BRIEF),
        ("", NO_BRIEF),
        (None, NO_BRIEF),
        (block("name: not a brief\ntask: second key\n"), NO_BRIEF),  # the first key must be task
        ("```python\ntask: not yaml\n```", NO_BRIEF),
        ("    ```yaml\n    task: indented code\n    ```", NO_BRIEF),
    ],
    ids=["full", "evidence-list", "comment-first", "empty-task", "tilde-yml", "none", "empty", "null", "other-first",
         "python-block", "indented"],
)  # fmt: skip
def test_valid_briefs(body: str | None, reading: BriefReading) -> None:
    assert read_brief(body) == reading


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("task: x\ncolour: blue\n",
         ["`colour` is not a field of a brief (known: task, scope, access, acceptance, evidence, reviewer, owner, "
          "code, draft, priority, depends_on)"]),
        ("task: [a, b]\n", ["`task` must be text of at most 2000 characters, not ['a', 'b']"]),
        ("task: x\nscope: [a.py]\n", ["`scope` must be a mapping with `files` and `excluded` lists, not ['a.py']"]),
        ("task: x\nscope: {files: [a.py], only: [b.py]}\n",
         ["`scope.only` is not a field of a brief's scope (known: files, excluded)"]),
        ("task: x\nscope: {files: [1]}\n", ["`scope.files` must be a list of at most 50 lines of text, not [1]"]),
        ("task: x\nacceptance: {a: b}\n", ["`acceptance` must be a list of at most 50 lines of text, not {'a': 'b'}"]),
        ("task: x\nacceptance: ['']\n", ["`acceptance` must be a list of at most 50 lines of text, not ['']"]),
        ("task: x\nevidence: [video]\n",
         ["`evidence` names 'video', which is not a kind of evidence (a list of branch, commit, pr, tests, screenshot "
          "or sentences naming them, or a mapping of the kinds to counts like `screenshot: 2`)"]),
        ("task: x\nevidence: tests\n",
         ["`evidence` must be a list of branch, commit, pr, tests, screenshot or sentences naming them, or a mapping "
          "of the kinds to counts like `screenshot: 2`, not 'tests'"]),
        ("task: x\nevidence: ['screenshots at 320px, 360px, 375px, 390px, 414px, 768px, 1024px, 1280px, 1440px, "
         "1920px and 2560px']\n",
         ["`evidence.screenshot` must be a whole number from 1 to 10, not 11"]),
        ("task: x\nevidence: {screenshot: 0}\n", ["`evidence.screenshot` must be a whole number from 1 to 10, not 0"]),
        ("task: x\nevidence: {screenshot: 11}\n",
         ["`evidence.screenshot` must be a whole number from 1 to 10, not 11"]),
        ("task: x\nevidence: {tests: two}\n", ["`evidence.tests` must be a whole number from 1 to 10, not 'two'"]),
        ("task: x\nevidence: {tests: true}\n", ["`evidence.tests` must be a whole number from 1 to 10, not True"]),
        ("task: x\nevidence: {branch: 2}\n", ["`evidence.branch` must be 1 (a delivery reports one), not 2"]),
        ("task: x\nreviewer: [rita]\n",
         ["`reviewer` must be a login, an org/team name or text (like `@mona`), not ['rita']"]),
        ("task: x\naccess: [ssh]\n", ["`access` must be text of at most 2000 characters, not ['ssh']"]),
        ("task: x\nowner: octo/team\n", ["`owner` must be a login (like `@mona`), not 'octo/team'"]),
        ("task: x\nowner: -dash\n", ["`owner` must be a login (like `@mona`), not '-dash'"]),
        ("task: x\ncode: no thanks\n", ["`code` must be true or false, not 'no thanks'"]),
        ("task: x\ndraft: 1\n", ["`draft` must be true or false, not 1"]),
        ("task: [unclosed\n", ["the brief is not valid YAML at line 1 of the block"]),
    ],
    ids=["unknown-key", "task-list", "scope-list", "scope-key", "scope-files", "acceptance-map", "acceptance-blank",
         "evidence-kind", "evidence-text", "eleven-widths", "count-zero", "count-high", "count-text", "count-bool",
         "single-kind", "reviewer-list", "access-list", "owner-team", "owner-dash", "code", "draft", "yaml"],
)  # fmt: skip
def test_invalid_briefs_list_every_problem_and_give_no_brief(text: str, problems: list[str]) -> None:
    reading = read_brief(block(text))
    assert reading == BriefReading(True, None, tuple(problems))  # a brief nobody can read waits as a draft


def test_every_problem_is_listed_at_once() -> None:
    reading = read_brief(block("task: x\ncolour: blue\nevidence: {pr: 3}\ndraft: maybe\n"))
    assert len(reading.problems) == 3


FORM = """\
### Task

Tidy the cart

### Scope

- src/cart.tsx
- src/cart.test.tsx

### Out of scope

* the API

### Acceptance criteria

- [x] tidy
- [ ] quick

### Required evidence

- tests
- screenshot: 2

### Reviewer

@octo/design

### Task owner

paula

### Code

no

### Draft

Yes
"""


def test_an_issue_form_reads_as_the_same_fields() -> None:
    assert read_brief(FORM) == BriefReading(True, Brief(
        task="Tidy the cart", scope=("src/cart.tsx", "src/cart.test.tsx"), excluded=("the API",),
        acceptance=("tidy", "quick"), required_evidence=("tests", "screenshot", "screenshot"),
        reviewer="octo/design", owner="paula", code=False), ())  # fmt: skip


@pytest.mark.parametrize(
    ("body", "reading"),
    [
        ("### Task\n\nx\n\n### Acceptance\n\n_No response_\n", BriefReading(False, Brief(task="x"), ())),
        ("### Task\n\nx\n\n### Colour\n\nred\n",
         BriefReading(True, None, ("`Colour` is not a field of a brief (known: task, scope, access, acceptance, "
                                   "evidence, reviewer, owner, code, draft, priority, depends_on)",))),
        ("### Task\n\nx\n\n### Code\n\nperhaps\n",
         BriefReading(True, None, ("`code` must be true or false, not 'perhaps'",))),
        ("### Task\n\nx\n\n### Evidence\n\nscreenshot: lots\n",
         BriefReading(True, None, ("`evidence.screenshot` must be a whole number from 1 to 10, not 'lots'",))),
        ("Intro\n\n### Task\n\nx\n", NO_BRIEF),  # the form's first field is Task
        ("### Scope\n\nx\n", NO_BRIEF),
    ],
    ids=["no-response", "unknown-label", "code", "count", "not-first", "no-task"],
)  # fmt: skip
def test_issue_forms(body: str, reading: BriefReading) -> None:
    assert read_brief(body) == reading


def test_required_evidence_takes_the_larger_count_and_a_non_code_task_needs_no_code_evidence() -> None:
    brief = Brief(required_evidence=("screenshot", "screenshot", "tests"))
    assert required(brief, ("screenshot", "branch")) == {"screenshot": 2, "tests": 1, "branch": 1}
    assert required(Brief(code=False), ("branch", "commit", "pr", "tests")) == {"tests": 1}
    assert required(None, ()) == {}
    needed = required(brief, ("branch",))
    assert shortfall(needed, Evidence(screenshots=("a",))) == ["branch", "tests", "2 screenshots (1 given)"]
    assert shortfall(needed, Evidence("b", tests=("ok",), screenshots=("a", "b"))) == []


def test_changes_name_what_changed() -> None:
    before = Brief(task="x", acceptance=("a", "b"), required_evidence=("tests",), reviewer="rita")
    after = Brief(task="y", acceptance=("b", "c"), required_evidence=("screenshot", "screenshot"), owner="paula",
                  code=False)  # fmt: skip
    assert changes(before, after) == [
        "task reworded", "acceptance added “c”", "acceptance removed “a”", "evidence now 2 screenshots",
        "reviewer now none", "owner now @paula", "now a non-code task",
    ]  # fmt: skip
    assert changes(before, before) == []
    assert changes(None, before) == ["a brief was added"]
    assert changes(before, None) == ["the brief was removed"]


# The template from "the article the project started from", pasted as it is.
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

TEMPLATE_BRIEF = Brief(
    task="Add an empty state to the billing history view",
    scope=("src/BillingHistory.tsx", "src/BillingHistory.test.tsx"),
    excluded=("billing API", "payment settings"),
    access="runner has repository access through their own account",
    acceptance=(
        "No invoices: show the approved empty-state copy",
        "Invoices present: preserve current list and pagination",
        "Keyboard focus remains in a sensible order",
    ),
    required_evidence=("branch", "tests", "screenshot", "screenshot"),
    evidence_lines=("diff or branch", "commands and actual test output", "real screenshots at 390px and 1280px"),
    reviewer_as_written="named frontend maintainer",
)


def test_the_template_is_a_brief_of_an_open_ticket() -> None:
    assert read_brief(block(TEMPLATE)) == BriefReading(False, TEMPLATE_BRIEF, ())


def test_the_template_with_draft_true_is_a_draft_with_no_problems() -> None:
    assert read_brief(block(TEMPLATE + "draft: true\n")) == BriefReading(True, TEMPLATE_BRIEF, ())


def test_the_templates_brief_survives_storage_and_publishes_without_a_named_reviewer() -> None:
    assert Brief.from_dict(TEMPLATE_BRIEF.to_dict()) == TEMPLATE_BRIEF
    assert TEMPLATE_BRIEF.missing() == ()
    assert TEMPLATE_BRIEF.missing(require_reviewer=True) == (
        "a reviewer named as a login or org/team (like `@mona` or `@octo/design`), not “named frontend maintainer”",
    )
    # a brief without the new fields is stored as before they existed
    assert set(Brief(task="x").to_dict()) == {
        "task", "scope", "excluded", "acceptance", "required_evidence", "reviewer", "owner", "code"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        ("diff or branch", {"branch": 1}),
        ("commands and actual test output", {"tests": 1}),
        ("real screenshots at 390px and 1280px", {"screenshot": 2}),
        ("a diff", {"branch": 1}),
        ("the branch you pushed", {"branch": 1}),
        ("the commit SHA", {"commit": 1}),
        ("a link to the pull request", {"pr": 1}),
        ("PR URL", {"pr": 1}),
        ("passing tests", {"tests": 1}),
        ("a screenshot of the empty state", {"screenshot": 1}),
        ("two screenshots of the dialog", {"screenshot": 2}),
        ("3 mobile screenshots", {"screenshot": 3}),
        ("screenshots at 390, 768 and 1280 px", {"screenshot": 3}),
        ("screen shots at 390/1280px", {"screenshot": 2}),
        ("screenshots at 390px and 390px", {"screenshot": 1}),  # a width named twice is one screenshot
        ("screenshot and test output", {"screenshot": 1, "tests": 1}),
        ("branch or pull request", {}),  # a choice: nothing required, for the reviewer to judge
        ("a video of the flow", {}),
        ("latest attestation of the contest", {}),  # words that merely contain a kind
    ],
)
def test_each_sentence_of_evidence_is_read_into_the_kinds_it_names(line: str, kinds: dict[str, int]) -> None:
    assert evidence_line(line) == kinds


def test_sentences_mix_with_kinds_and_a_sentence_naming_no_kind_is_kept_for_the_reviewer() -> None:
    text = 'task: x\nevidence: [tests, "screenshots at 390px", "a short video of the flow", "diff"]\n'
    reading = read_brief(block(text))
    assert reading.problems == () and reading.brief is not None
    assert reading.brief.required_evidence == ("branch", "tests", "screenshot")
    assert reading.brief.evidence_lines == ("screenshots at 390px", "a short video of the flow", "diff")
    # a branch asked twice is still the one branch a delivery reports
    twice = read_brief(block("task: x\nevidence: [branch, diff or branch]\n")).brief
    assert twice is not None and twice.required_evidence == ("branch",)


@pytest.mark.parametrize(
    ("written", "reviewer", "as_written"),
    [
        ("rita", "rita", None),
        ("'@rita'", "rita", None),
        ("'@octo/design'", "octo/design", None),
        ("octo/design", "octo/design", None),
        ("helper[bot]", "helper[bot]", None),
        ("named frontend maintainer", None, "named frontend maintainer"),
        ("'the @octo/design team'", None, "the @octo/design team"),
        ("''", None, None),
    ],
)
def test_a_reviewer_is_a_login_a_team_or_words_shown_as_written(
    written: str, reviewer: str | None, as_written: str | None
) -> None:
    reading = read_brief(block(f"task: x\nreviewer: {written}\n"))
    assert reading.problems == () and reading.brief is not None
    assert (reading.brief.reviewer, reading.brief.reviewer_as_written) == (reviewer, as_written)


def test_changes_name_access_evidence_sentences_and_a_reviewer_in_words() -> None:
    before = TEMPLATE_BRIEF
    after = replace(
        before,
        access="a token from the runbook",
        evidence_lines=("branch", "commands and actual test output", "real screenshots at 390px and 1280px"),
        reviewer="rita",
        reviewer_as_written=None,
    )
    assert changes(before, after) == [
        "access now “a token from the runbook”",
        "evidence reworded: “branch”; “commands and actual test output”; “real screenshots at 390px and 1280px”",
        "reviewer now @rita",
    ]
    assert changes(after, before) == [
        "access now “runner has repository access through their own account”",
        "evidence reworded: “diff or branch”; “commands and actual test output”; “real screenshots at 390px and "
        "1280px”",
        "reviewer now “named frontend maintainer” (as written)",
    ]


def test_an_issue_forms_evidence_may_be_sentences_beside_counted_kinds() -> None:
    body = (
        "### Task\n\nx\n\n### Access\n\nrunner has repository access through their own account\n\n"
        "### Evidence\n\n- diff or branch\n- commands and actual test output\n"
        "- real screenshots at 390px, 1280px\n- commit, pr: 1\n"
    )
    assert read_brief(body) == BriefReading(False, Brief(
        task="x", access="runner has repository access through their own account",
        required_evidence=("branch", "commit", "pr", "tests", "screenshot", "screenshot"),
        evidence_lines=("diff or branch", "commands and actual test output", "real screenshots at 390px, 1280px"),
    ), ())  # fmt: skip


def test_a_yaml_list_may_give_a_kind_its_count_beside_sentences() -> None:
    reading = read_brief(block("task: x\nevidence: [{screenshot: 2}, commands and actual test output]\n"))
    assert reading.brief is not None and reading.brief.required_evidence == ("tests", "screenshot", "screenshot")
    # a count written wrong is reported as written, whatever sentences name the same kind
    wrong = read_brief(block("task: x\nevidence: [{branch: 2}, diff or branch]\n"))
    assert wrong.problems == ("`evidence.branch` must be 1 (a delivery reports one), not 2",)


@pytest.mark.parametrize(
    ("said", "priority"),
    [("p0", 0), ("P4", 4), ("3", 3), ("0", 0), ("high", 1), ("Medium", 2), ("LOW", 3), ("' p1 '", 1)],
)
def test_a_priority_is_p0_to_p4_or_a_word_for_one(said: str, priority: int) -> None:
    reading = read_brief(f"```yaml\ntask: T\npriority: {said}\n```")
    assert reading.brief is not None and reading.brief.priority == priority
    assert Brief.from_dict(reading.brief.to_dict()) == reading.brief  # kept as stored


@pytest.mark.parametrize("said", ["p5", "urgent", "-1", "true", "[p1]", "1.5"])
def test_anything_else_is_no_priority_and_the_problem_says_what_is(said: str) -> None:
    reading = read_brief(f"```yaml\ntask: T\npriority: {said}\n```")
    assert reading.brief is None
    assert any(p.startswith("`priority` must be one of p0 (first) to p4, or high, medium or low, not ")
               for p in reading.problems)  # fmt: skip


def test_a_brief_without_a_priority_stores_none_and_a_form_names_it() -> None:
    reading = read_brief("```yaml\ntask: T\n```")
    assert reading.brief is not None and reading.brief.priority is None
    assert "priority" not in reading.brief.to_dict()  # stored as before priorities existed
    form = read_brief("### Task\n\nT\n\n### Priority\n\nhigh\n")
    assert form.brief is not None and form.brief.priority == 1
    assert changes(reading.brief, form.brief) == ["priority now p1"]
    assert changes(form.brief, reading.brief) == ["priority removed"]


@pytest.mark.parametrize(
    ("said", "named"),
    [("[12, '#3', Octo/Lib#7]", ("#12", "#3", "octo/lib#7")), ("12", ("#12",)), ("[4, '#4']", ("#4",)), ("[]", ())],
)
def test_depends_on_names_issues_here_or_in_another_repository(said: str, named: tuple[str, ...]) -> None:
    reading = read_brief(block(f"task: T\ndepends_on: {said}\n"))
    assert reading.brief is not None and reading.brief.depends_on == named
    assert Brief.from_dict(reading.brief.to_dict()) == reading.brief  # kept as stored


@pytest.mark.parametrize("said", ["[banana]", "[0]", "[octo#3]", "{a: 1}", "[true]", "'#'"])
def test_a_depends_on_that_names_no_issue_is_a_problem_naming_the_key(said: str) -> None:
    reading = read_brief(block(f"task: T\ndepends_on: {said}\n"))
    assert reading.brief is None
    assert any(p.startswith("`depends_on` must be a list of at most 50 issues, each `12`, `#12` or `owner/repo#12`")
               for p in reading.problems)  # fmt: skip


def test_a_form_names_dependencies_and_a_change_says_so() -> None:
    form = read_brief("### Task\n\nT\n\n### Depends on\n\n- #12\n- octo/lib#3\n")
    assert form.brief is not None and form.brief.depends_on == ("#12", "octo/lib#3")
    plain = read_brief(block("task: T\n"))
    assert changes(plain.brief, form.brief) == ["depends on #12, octo/lib#3"]
    assert changes(form.brief, plain.brief) == ["depends on nothing now"]
