"""`.github/baton.yml`: strict validation (loading it from GitHub: tests/system/test_settings_file.py)."""

from __future__ import annotations

import pytest
import yaml

from baton.domain import Policy
from baton.reading.config import ConfigError, duration, effective, parse, problem_key


def test_an_empty_file_gives_the_defaults() -> None:
    assert parse("") == Policy()
    assert parse("# nothing set yet\n") == Policy()


def test_every_setting() -> None:
    text = """
offer: labeled
offer_label: agents
max_active_claims: 2
stale_after: 12h
auto_release_after: 2d
allow_self_review: true
reviewers: [rita, "@octo/reviewers"]
runners: [agent-a, "helper[bot]"]
maintainers: [mona, "@octo/leads", "role:release-manager"]
required_evidence: {branch: 1, tests: 1, screenshot: 2}
require_reviewer: true
require_verified_evidence: true
"""
    assert parse(text) == Policy(
        offer="labeled",
        offer_label="agents",
        max_active_claims=2,
        stale_after=12 * 3600,
        auto_release_after=2 * 86400,
        allow_self_review=True,
        reviewers=frozenset({"rita", "@octo/reviewers"}),
        runners=frozenset({"agent-a", "helper[bot]"}),
        maintainers=frozenset({"mona", "@octo/leads", "role:release-manager"}),
        required_evidence=("branch", "tests", "screenshot", "screenshot"),
        require_reviewer=True,
        require_verified_evidence=True,
    )


def test_runners_may_list_workflows_beside_people() -> None:
    policy = parse("runners:\n  - workflow:octo/shop/.github/workflows/agent.yml\n  - agent-a\n  - '@octo/bots'\n")
    assert policy.workflows() == {"octo/shop/.github/workflows/agent.yml"}
    assert policy.teams() == {"octo/bots"}  # a workflow is nobody's team


@pytest.mark.parametrize(
    ("text", "access"),
    [
        ("runners: anyone\n", "anyone"),
        ("runners: collaborators\n", "collaborators"),
        ("runners: readers\n", "readers"),
        ("runners: []\n", "collaborators"),
    ],
)
def test_runners_may_be_a_kind_of_access_instead_of_a_list(text: str, access: str) -> None:
    assert parse(text) == Policy(runner_access=access)


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("- a\n- b\n", ["the file must be a mapping of settings, like `max_active_claims: 2`"]),
        ("offer: [unclosed\n", ["the file is not valid YAML at line 2"]),
        ("max_claims: 2\n", ["`max_claims` is not a setting (known: offer, offer_label, max_active_claims, "
                             "stale_after, auto_release_after, allow_self_review, reviewers, runners, "
                             "maintainers, required_evidence, require_reviewer, require_verified_evidence, "
                             "priority_labels)"]),
        ("offer: some\n", ["`offer` must be `all` or `labeled`, not 'some'"]),
        ("max_active_claims: 0\n", ["`max_active_claims` must be a whole number from 1 to 100, not 0"]),
        ("max_active_claims: true\n", ["`max_active_claims` must be a whole number from 1 to 100, not True"]),
        ("max_active_claims: '3'\n", ["`max_active_claims` must be a whole number from 1 to 100, not '3'"]),
        ("stale_after: 3 days\n", ["`stale_after` must be a duration like `3d`, `12h`, `90m` or `30s`, not '3 days'"]),
        ("allow_self_review: yes please\n", ["`allow_self_review` must be true or false, not 'yes please'"]),
        ("reviewers: rita\n",
         ["`reviewers` must be a list of logins, org/team names or role:NAME entries, not 'rita'"]),
        ("runners: ['not a login!']\n",
         ["`runners` must be `collaborators`, `readers`, `anyone` or a list of logins, org/team names, role:NAME "
          "entries or `workflow:owner/repo/.github/workflows/agent.yml` entries, not ['not a login!']"]),
        ("runners: ['workflow:octo/shop/agent.yml']\n",
         ["`runners` must be `collaborators`, `readers`, `anyone` or a list of logins, org/team names, role:NAME "
          "entries or `workflow:owner/repo/.github/workflows/agent.yml` entries, not "
          "['workflow:octo/shop/agent.yml']"]),
        ("runners: everyone\nmaintainers: mona\n",
         ["`maintainers` must be a list of logins, org/team names or role:NAME entries, not 'mona'",
          "`runners` must be `collaborators`, `readers`, `anyone` or a list of logins, org/team names, role:NAME "
          "entries or `workflow:owner/repo/.github/workflows/agent.yml` entries, not 'everyone'"]),
        ("required_evidence: [tests, vibes]\n",
         ["`required_evidence` names 'vibes', which is not a kind of evidence (a list of branch, commit, pr, "
          "tests, screenshot, or a mapping of them to counts like `screenshot: 2`)"]),
        ("required_evidence: {screenshot: 11, branch: 2}\nrequire_reviewer: maybe\nrequire_verified_evidence: 1\n",
         ["`require_reviewer` must be true or false, not 'maybe'",
          "`require_verified_evidence` must be true or false, not 1",
          "`required_evidence.screenshot` must be a whole number from 1 to 10, not 11",
          "`required_evidence.branch` must be 1 (a delivery reports one), not 2"]),
        ("stale_after: 2d\nauto_release_after: 1d\n",
         ["`auto_release_after` must be longer than `stale_after`: a claim is marked stale first"]),
        ("stale_after: 90s\nauto_release_after: 90s\n",
         ["`auto_release_after` must be longer than `stale_after`: a claim is marked stale first"]),
        ("offer: some\nmax_active_claims: -1\nextra: 1\n",
         ["`extra` is not a setting (known: offer, offer_label, max_active_claims, stale_after, "
          "auto_release_after, allow_self_review, reviewers, runners, maintainers, required_evidence, "
          "require_reviewer, require_verified_evidence, priority_labels)",
          "`offer` must be `all` or `labeled`, not 'some'",
          "`max_active_claims` must be a whole number from 1 to 100, not -1"]),
    ],
    ids=["not-a-mapping", "bad-yaml", "unknown-key", "offer", "zero", "bool", "string-number", "duration",
         "bool-text", "not-a-list", "bad-login", "bad-workflow", "bad-runners", "evidence-kind", "evidence-count",
         "auto-before-stale", "auto-equal-stale", "all-at-once"],
)  # fmt: skip
def test_every_problem_is_named(text: str, problems: list[str]) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text)
    assert raised.value.problems == problems


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("90m", 5400), ("12h", 43200), ("3d", 259200), ("2w", 1209600)]
)
def test_durations(text: str, seconds: int) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["0d", "3", "3 weeks", "-1d", 3, None])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError):
        duration(text)


def test_priority_labels_map_label_names_to_priorities_and_the_highest_label_counts() -> None:
    policy = parse("priority_labels: {P0: 0, P1: p1, later: low}\n")
    assert policy.priority_labels == (("P0", 0), ("P1", 1), ("later", 3))
    assert policy.label_priority(["bug", "later", "p1"]) == 1  # any case; the highest priority among them
    assert policy.label_priority(["bug"]) is None and Policy().label_priority(["P0"]) is None
    assert parse(yaml.safe_dump(effective(policy))) == policy


@pytest.mark.parametrize("said", ["[P0]", "{P0: 5}", "{P0: urgent}", "{P0: 0, p0: 1}", "{1: 0}", "{P0: true}"])
def test_priority_labels_that_say_no_priority_are_a_problem_naming_the_key(said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(f"priority_labels: {said}\n")
    assert [problem_key(problem) for problem in raised.value.problems] == ["priority_labels"]
