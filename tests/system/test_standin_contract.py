"""The stand-in GitHub's contract (github_standin.contract) and the objects it answers with (github_standin.shapes).

Every REST object the stand-in builds must pass GitHub's own description and githubkit's model, every
webhook payload `@octokit/webhooks-schemas`; the requests githubkit sends must pass the description; and
near misses must be caught, each with a sentence that names the operation and the field.

The descriptions are the npm packages pinned in tests/package.json: without them these tests skip with
the install command, and fail when BATON_REQUIRE_CORPUS=1 (as in CI). The tests of what happens without
them run everywhere.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from githubkit import GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy

from github_standin import shapes
from github_standin.contract import (
    API_VERSION,
    GITHUBKIT_MODELS,
    GITHUBKIT_MODELS_MODULE,
    INSTALL_COMMAND,
    OPERATIONS,
    Contract,
    ContractUnavailable,
    webhook_problems,
)
from github_standin.hooks import Entry
from support.corpus import missing, webhook_examples


def hook_problems(event: str, payload: dict[str, Any]) -> list[str]:
    try:
        return webhook_problems(event, payload)
    except ContractUnavailable as exc:
        missing(str(exc))
        raise


# -- one small world, built with shapes ----------------------------------------------------------------

API = "http://127.0.0.1:8123"
ORG = shapes.Account("octo-org", 10, "Organization")
ALICE = shapes.Account("alice", 11)
BOB = shapes.Account("bob", 13)
BOT = shapes.Account("baton[bot]", 12, "Bot")
APP = shapes.App(99, "baton", "Baton", ORG)
REPO = shapes.Repo(ORG, "widgets", 100, api_url=API, description="Things")
R = "/repos/octo-org/widgets"
BASE, HEAD, MERGED = "a" * 40, "b" * 40, "c" * 40
LATER = "2026-01-02T03:04:05Z"

LABEL = shapes.label(REPO, "baton:claimed", "0e8a16", "Claimed by someone", 500)
ISSUE = shapes.issue(REPO, 42, 4200, "Fix the widget", ALICE, body="/claim", labels=[LABEL], assignees=[ALICE])
CLOSED_ISSUE = shapes.issue(
    REPO, 42, 4200, "Fix the widget", ALICE, state="closed", state_reason="completed", closed_at=LATER, comments=2
)
PR_ISSUE = shapes.issue(REPO, 43, 4300, "Widget fix", ALICE, pull_request=True)
# issue 45 is blocked by 42 and is a sub-issue of 46, which has one more, closed
BLOCKED_ISSUE = shapes.issue(REPO, 45, 4500, "Ship the widget", ALICE, dependencies=(1, 0, 1, 0),
                             parent_issue_url=f"{REPO.api}/issues/46")  # fmt: skip
BLOCKING_ISSUE = shapes.issue(REPO, 42, 4200, "Fix the widget", ALICE, dependencies=(0, 1, 0, 1))
PARENT_ISSUE = shapes.issue(REPO, 46, 4600, "Widgets, all of them", ALICE, sub_issues=(2, 1))
MERGED_PR_ISSUE = shapes.issue(
    REPO, 43, 4300, "Widget fix", ALICE, pull_request=True, state="closed", closed_at=LATER, merged_at=LATER
)
COMMENT = shapes.issue_comment(REPO, 42, 7000, "/claim", ALICE, author_association="MEMBER")
STATUS_COMMENT = shapes.issue_comment(REPO, 42, 7001, "<!-- baton -->\nClaimed", BOT, app=APP, updated_at=LATER)
PR_COMMENT = shapes.issue_comment(REPO, 43, 7002, "/deliver", ALICE, on_pull_request=True)
FIRST = shapes.commit(REPO, BASE, "Start", ALICE)
SECOND = shapes.commit(REPO, HEAD, "Fix the widget", ALICE, parents=[BASE], at=LATER)
PR = shapes.pull_request(
    REPO, 43, 4301, "Widget fix", ALICE, "feature/widget", HEAD, BASE,
    body="Fixes #42", labels=[LABEL], assignees=[ALICE], requested_reviewers=[BOT],
)  # fmt: skip
MERGED_PR = shapes.pull_request(
    REPO, 43, 4301, "Widget fix", ALICE, "feature/widget", HEAD, BASE,
    state="closed", merged=True, merged_by=ALICE, merged_at=LATER, closed_at=LATER,
)  # fmt: skip
CLOSED_PR = shapes.pull_request(
    REPO, 43, 4301, "Widget fix", ALICE, "feature/widget", HEAD, BASE, state="closed", closed_at=LATER
)
DRAFT_PR = shapes.pull_request(REPO, 43, 4301, "Widget fix", ALICE, "feature/widget", HEAD, BASE, draft=True)
CHECK_RUN = shapes.check_run(REPO, 900, "baton", HEAD, APP, status="in_progress", title="Claimed", summary="…")
DONE_RUN = shapes.check_run(
    REPO, 900, "baton", HEAD, APP, status="completed", conclusion="success", completed_at=LATER, summary="Accepted"
)
CI = shapes.App(15368, "github-actions", "GitHub Actions", shapes.Account("github", 9919, "Organization"),
                permissions={"checks": "write", "metadata": "read"}, events=("check_run",))  # fmt: skip
CI_BOT = shapes.Account("github-actions[bot]", 41898282, "Bot")
AT_HEAD = [shapes.pull_request_minimal(REPO, 43, 4301, "feature/widget", HEAD, "main", BASE)]
CI_RUN = shapes.check_run(REPO, 901, "build", HEAD, CI, status="in_progress", check_suite_id=77, pull_requests=AT_HEAD)
CI_DONE = shapes.check_run(REPO, 901, "build", HEAD, CI, status="completed", conclusion="failure",
                           completed_at=LATER, check_suite_id=77, pull_requests=AT_HEAD)  # fmt: skip
DEPLOYMENT = shapes.deployment(REPO, 3, HEAD, "main", "production", ALICE)
TOKEN = shapes.installation_token("ghs_standin", datetime(2026, 1, 1, 1, 0, tzinfo=UTC))
HOOK_ENTRY = Entry(70_000_000_001, "58474f00-b361-11eb-836d-0e4f3503ccbe", datetime(2026, 1, 1, tzinfo=UTC), False,
                   0.01, "failed to connect", 0, "issue_comment", "created", 5, 42, b"{}").fields()  # fmt: skip
CONFIG_TEXT = "reviewers:\n  - alice\nclaim_limit: 2\n" * 5

# (method, concrete path, status, answer, the operation GitHub calls it)
REST_CASES: list[tuple[str, str, int, Any, str]] = [
    ("POST", "/app/installations/5/access_tokens", 201, TOKEN, "apps/create-installation-access-token"),
    ("POST", "/app-manifests/5e1c0de/conversions", 201, shapes.app_from_manifest(
        APP, description=None, external_url="https://baton.example.org/", created_at=shapes.EPOCH, credentials={
            "client_id": "Iv23liabc", "client_secret": "c" * 40, "webhook_secret": "w" * 40, "pem": "-----BEGIN…"}),
     "apps/create-from-manifest"),
    ("GET", "/app/hook/deliveries", 200, [HOOK_ENTRY, {**HOOK_ENTRY, "action": None, "status_code": 202}],
     "apps/list-webhook-deliveries"),
    ("POST", "/app/hook/deliveries/70000000001/attempts", 202, {}, "apps/redeliver-webhook-delivery"),
    ("GET", "/app/installations", 200, [shapes.installation_object(5, APP, ORG, api_url=API),
                                        shapes.installation_object(6, APP, ORG, api_url=API,
                                                                   suspended=(ORG, shapes.EPOCH))],
     "apps/list-installations"),
    ("GET", "/installation/repositories", 200, shapes.installation_repositories([REPO], 1),
     "apps/list-repos-accessible-to-installation"),
    ("GET", "/repos/octo-org/widgets/installation", 200, shapes.installation_object(5, APP, ORG, api_url=API),
     "apps/get-repo-installation"),

    ("GET", "/app", 200, shapes.app_object(APP), "apps/get-authenticated"),
    ("GET", f"{R}/collaborators/alice", 204, None, "repos/check-collaborator"),
    ("GET", f"{R}/collaborators", 200, [shapes.collaborator(REPO, ALICE, "write"),
                                        shapes.collaborator(REPO, BOB, "release-manager", base="maintain")],
     "repos/list-collaborators"),
    ("GET", f"{R}/collaborators/alice/permission", 200,
     shapes.collaborator_permission(REPO, ALICE, "write", "write"), "repos/get-collaborator-permission-level"),
    ("GET", f"{R}/collaborators/nobody/permission", 200,
     shapes.collaborator_permission(REPO, ALICE, "none", "none"), "repos/get-collaborator-permission-level"),
    ("GET", f"{R}/contents/.github/baton.yml", 200,
     shapes.content_file(REPO, ".github/baton.yml", CONFIG_TEXT, "d" * 40), "repos/get-content"),
    ("GET", f"{R}/issues/42", 200, ISSUE, "issues/get"),
    ("GET", f"{R}/issues", 200, [ISSUE, PR_ISSUE], "issues/list-for-repo"),
    ("GET", f"{R}/issues", 200, [], "issues/list-for-repo"),
    ("POST", f"{R}/issues", 201, shapes.issue(REPO, 44, 504, "Totals in the footer", BOT, body="task: totals", app=APP),
     "issues/create"),
    ("GET", f"{R}/issues/42", 200, CLOSED_ISSUE, "issues/get"),
    ("GET", f"{R}/issues/43", 200, PR_ISSUE, "issues/get"),
    ("GET", f"{R}/issues/43", 200, MERGED_PR_ISSUE, "issues/get"),
    ("POST", f"{R}/issues/42/labels", 200, [LABEL], "issues/add-labels"),
    ("DELETE", f"{R}/issues/42/labels/baton:claimed", 200, [], "issues/remove-label"),
    ("POST", f"{R}/issues/42/assignees", 201, ISSUE, "issues/add-assignees"),
    ("DELETE", f"{R}/issues/42/assignees", 200, CLOSED_ISSUE, "issues/remove-assignees"),
    ("GET", f"{R}/labels/baton:claimed", 200, LABEL, "issues/get-label"),
    ("POST", f"{R}/labels", 201, shapes.label(REPO, "baton:open", "ededed", None, 501), "issues/create-label"),
    ("GET", f"{R}/issues/42/comments", 200, [COMMENT, STATUS_COMMENT], "issues/list-comments"),
    ("GET", f"{R}/issues/42/comments", 200, [], "issues/list-comments"),
    ("GET", f"{R}/issues/42/timeline", 200, [
        shapes.state_change_event(REPO, 42, 1, "closed", BOT, shapes.EPOCH, None, "not_planned"),
        shapes.state_change_event(REPO, 42, 2, "reopened", BOT, shapes.EPOCH, None, None),
        shapes.state_change_event(REPO, 42, 3, "closed", BOT, shapes.EPOCH, "9f8e7d6" * 5 + "12345", "completed"),
    ], "issues/list-events-for-timeline"),
    ("GET", f"{R}/issues/comments/7000", 200, COMMENT, "issues/get-comment"),
    ("POST", f"{R}/issues/42/comments", 201, STATUS_COMMENT, "issues/create-comment"),
    ("PATCH", f"{R}/issues/comments/7001", 200, STATUS_COMMENT, "issues/update-comment"),
    ("POST", f"{R}/issues/42/reactions", 201, shapes.reaction(REPO, 1, "+1", BOT), "reactions/create-for-issue"),
    ("POST", f"{R}/issues/42/reactions", 200, shapes.reaction(REPO, 1, "+1", BOT), "reactions/create-for-issue"),
    ("POST", f"{R}/issues/comments/7000/reactions", 201,
     shapes.reaction(REPO, 2, "eyes", BOT, created_at=LATER), "reactions/create-for-issue-comment"),
    ("POST", f"{R}/check-runs", 201, CHECK_RUN, "checks/create"),
    ("PATCH", f"{R}/check-runs/900", 200, DONE_RUN, "checks/update"),
    ("GET", f"{R}/commits/{HEAD}/check-runs", 200, {"total_count": 2, "check_runs": [DONE_RUN, CHECK_RUN]},
     "checks/list-for-ref"),
    # another App's runs, on the head of an open pull request
    ("GET", f"{R}/commits/{HEAD}/check-runs", 200, {"total_count": 2, "check_runs": [CI_DONE, CI_RUN]},
     "checks/list-for-ref"),
    ("GET", f"{R}/pulls/43", 200, PR, "pulls/get"),
    ("GET", f"{R}/pulls/43", 200, MERGED_PR, "pulls/get"),
    ("GET", f"{R}/branches/feature/widget", 200, shapes.branch(REPO, "feature/widget", SECOND), "repos/get-branch"),
    # a protected branch whose protection requires status checks
    ("GET", f"{R}/branches/main", 200, shapes.branch(REPO, "main", FIRST, protected=True, required=["build", "lint"]),
     "repos/get-branch"),
    ("GET", f"{R}/compare/main...feature/widget", 200,
     shapes.compare(REPO, "main...feature/widget", FIRST, [SECOND]), "repos/compare-commits-with-basehead"),
    ("GET", f"{R}/commits/{HEAD}", 200, SECOND, "repos/get-commit"),
    ("GET", f"{R}/commits/{HEAD[:7]}", 200, SECOND, "repos/get-commit"),  # GitHub finds an abbreviated id
    ("GET", f"{R}/compare/main...main", 200, shapes.compare(REPO, "main...main", FIRST, []),
     "repos/compare-commits-with-basehead"),
    # GitHub shows no account for a commit whose e-mail matches none.
    ("GET", f"{R}/compare/main...feature/widget", 200, shapes.compare(
        REPO, "main...feature/widget", FIRST, [{**SECOND, "author": None, "committer": None}]
    ), "repos/compare-commits-with-basehead"),
    ("GET", R, 200, shapes.repository(REPO, open_issues=3), "repos/get"),
    ("GET", "/orgs/octo-org/teams/reviewers/memberships/alice", 200,
     shapes.team_membership(f"{API}/organizations/10/team/reviewers/memberships/alice"),
     "teams/get-membership-for-user-in-org"),
    ("GET", "/orgs/octo-org/teams/reviewers/memberships/alice", 200,
     shapes.team_membership(f"{API}/organizations/10/team/reviewers/memberships/alice", "maintainer", "pending"),
     "teams/get-membership-for-user-in-org"),
    ("GET", f"{R}/issues/45/dependencies/blocked_by", 200, [BLOCKING_ISSUE], "issues/list-dependencies-blocked-by"),
    ("POST", f"{R}/issues/45/dependencies/blocked_by", 201, BLOCKING_ISSUE, "issues/add-blocked-by-dependency"),
    ("DELETE", f"{R}/issues/45/dependencies/blocked_by/4200", 200, ISSUE, "issues/remove-dependency-blocked-by"),
    ("GET", f"{R}/issues/42/dependencies/blocking", 200, [BLOCKED_ISSUE], "issues/list-dependencies-blocking"),
    ("GET", f"{R}/issues/46/sub_issues", 200, [BLOCKED_ISSUE, CLOSED_ISSUE], "issues/list-sub-issues"),
    ("POST", f"{R}/issues/46/sub_issues", 201, PARENT_ISSUE, "issues/add-sub-issue"),
    ("DELETE", f"{R}/issues/46/sub_issue", 200, PARENT_ISSUE, "issues/remove-sub-issue"),
    ("GET", f"{R}/issues/45/parent", 200, PARENT_ISSUE, "issues/get-parent"),
    ("GET", "/user", 200, shapes.authenticated_user("agent-a", 7), "users/get-authenticated"),
    ("GET", "/user/installations", 200,
     shapes.user_installations([shapes.installation_object(5, APP, ORG, api_url=API)]),
     "apps/list-installations-for-authenticated-user"),
    ("GET", "/user/installations/5/repositories", 200,
     shapes.user_installation_repositories([(REPO, "write"), (REPO, "read")], 2),
     "apps/list-installation-repos-for-authenticated-user"),
]  # fmt: skip

# (event, payload): every payload the stand-in delivers
WEBHOOK_CASES: list[tuple[str, dict[str, Any]]] = [
    ("issue_comment", shapes.issue_comment_event(REPO, ISSUE, COMMENT, ALICE, installation_id=5)),
    ("issue_comment", shapes.issue_comment_event(REPO, PR_ISSUE, PR_COMMENT, ALICE, installation_id=5)),
    ("issue_comment", shapes.issue_comment_event(REPO, CLOSED_ISSUE, STATUS_COMMENT, BOT)),
    ("issues", shapes.issues_event("opened", REPO, ISSUE, ALICE, installation_id=5)),
    ("issues", shapes.issues_event("closed", REPO, CLOSED_ISSUE, ALICE, installation_id=5)),
    ("issues", shapes.issues_event("reopened", REPO, ISSUE, ALICE)),
    ("issues", shapes.issues_event("deleted", REPO, ISSUE, ALICE, installation_id=5)),
    ("issues", shapes.issues_event("transferred", REPO, ISSUE, ALICE, installation_id=5, moved_to=(REPO, ISSUE))),
    ("issues", shapes.issues_event("labeled", REPO, ISSUE, BOT, label=LABEL)),
    ("issues", shapes.issues_event("unlabeled", REPO, ISSUE, BOT, label=LABEL)),
    ("pull_request", shapes.pull_request_event("opened", REPO, PR, ALICE, installation_id=5)),
    ("pull_request", shapes.pull_request_event("edited", REPO, PR, ALICE, changes={"body": {"from": "Fixes"}})),
    ("pull_request", shapes.pull_request_event("synchronize", REPO, PR, ALICE, before=BASE, after=HEAD)),
    ("pull_request", shapes.pull_request_event("closed", REPO, MERGED_PR, ALICE, merge_commit_sha=MERGED)),
    ("pull_request", shapes.pull_request_event("closed", REPO, CLOSED_PR, ALICE)),
    ("pull_request", shapes.pull_request_event("reopened", REPO, PR, ALICE)),
    ("pull_request", shapes.pull_request_event("ready_for_review", REPO, PR, ALICE)),
    ("pull_request", shapes.pull_request_event("converted_to_draft", REPO, DRAFT_PR, ALICE)),
    ("pull_request_review", shapes.pull_request_review_event(REPO, PR, 77, BOT, "approved", body="Looks right")),
    ("pull_request_review", shapes.pull_request_review_event(REPO, PR, 78, ALICE, "changes_requested")),
    ("create", shapes.create_event(REPO, "feature/widget", ALICE, installation_id=5)),
    ("delete", shapes.delete_event(REPO, "feature/widget", ALICE)),
    ("push", shapes.push_event(
        REPO, "refs/heads/feature/widget", BASE, HEAD,
        [shapes.push_commit(REPO, HEAD, "Fix the widget", ALICE, modified=["widget.py"])], ALICE, installation_id=5,
    )),
    ("push", shapes.push_event(REPO, "refs/heads/gone", HEAD, "0" * 40, [], ALICE, deleted=True)),
    ("deployment", shapes.deployment_event(REPO, DEPLOYMENT, ALICE, installation_id=5)),
    ("deployment_status", shapes.deployment_status_event(REPO, DEPLOYMENT, 4, "success", ALICE)),
    ("deployment_status", shapes.deployment_status_event(
        REPO, DEPLOYMENT, 5, "failure", ALICE, environment_url="https://widgets.example.com"
    )),
    ("installation", shapes.installation_event(5, APP, ORG, ALICE, [REPO], api_url=API)),
    ("check_run", shapes.check_run_event(REPO, DONE_RUN, ALICE, installation_id=5)),
    ("check_run", shapes.check_run_event(REPO, CI_RUN, CI_BOT, action="created", head_branch="feature/widget",
                                         installation_id=5)),
    ("check_run", shapes.check_run_event(REPO, CI_DONE, CI_BOT, head_branch="feature/widget", installation_id=5)),
    ("check_suite", shapes.check_suite_event(REPO, 900, HEAD, "success", APP, ALICE, message="Fix the widget")),
    ("check_suite", shapes.check_suite_event(REPO, 77, HEAD, "failure", CI, CI_BOT, head_branch="feature/widget",
                                             pull_requests=AT_HEAD, installation_id=5)),
    *(("issue_dependencies", shapes.issue_dependencies_event(action, REPO, BLOCKED_ISSUE, BLOCKING_ISSUE,
                                                             shapes.repository(REPO), ALICE, installation_id=5))
      for action in ("blocked_by_added", "blocked_by_removed", "blocking_added", "blocking_removed")),
    *(("sub_issues", shapes.sub_issues_event(action, REPO, PARENT_ISSUE, BLOCKED_ISSUE, shapes.repository(REPO),
                                             BOT, installation_id=5))
      for action in ("sub_issue_added", "sub_issue_removed", "parent_issue_added", "parent_issue_removed")),
]  # fmt: skip

JSON_HEADERS = {"Content-Type": "application/json; charset=utf-8"}


def _body(value: Any) -> bytes:
    return b"" if value is None else json.dumps(value).encode()


def _case_id(case: tuple[str, str, int, Any, str]) -> str:
    return f"{case[4]}-{case[2]}"


# -- what the stand-in answers and delivers passes ----------------------------------------------------


@pytest.mark.parametrize("case", REST_CASES, ids=[_case_id(case) for case in REST_CASES])
def test_rest_shapes_pass_the_description_and_githubkit(
    contract: Contract, case: tuple[str, str, int, Any, str]
) -> None:
    method, path, status, answer, operation = case
    assert contract.operation(method, path) == operation
    assert contract.response_problems(method, path, status, JSON_HEADERS, _body(answer)) == []


def test_every_covered_operation_has_a_shape(contract: Contract) -> None:
    assert {case[4] for case in REST_CASES} == set(contract.covered)
    assert set(GITHUBKIT_MODELS) == set(contract.covered)
    assert len(contract.covered) == len(OPERATIONS)


@pytest.mark.parametrize(
    ("event", "payload"), WEBHOOK_CASES, ids=[f"{e}.{p.get('action', 'event')}" for e, p in WEBHOOK_CASES]
)
def test_webhook_shapes_pass_the_payload_schemas(event: str, payload: dict[str, Any]) -> None:
    assert hook_problems(event, payload) == []


def test_the_webhook_shapes_cover_the_events_the_stand_in_delivers() -> None:
    delivered = {(event, payload.get("action")) for event, payload in WEBHOOK_CASES}
    wanted = {
        ("issue_comment", "created"),
        *(("issues", a) for a in ("opened", "closed", "reopened", "labeled", "unlabeled", "deleted", "transferred")),
        *(
            ("pull_request", a)
            for a in ("opened", "edited", "synchronize", "closed", "reopened", "ready_for_review", "converted_to_draft")
        ),
        ("pull_request_review", "submitted"),
        ("create", None),
        ("delete", None),
        ("push", None),
        ("deployment", "created"),
        ("deployment_status", "created"),
        ("installation", "created"),
        ("check_run", "created"),
        ("check_run", "completed"),
        ("check_suite", "completed"),
        *(("issue_dependencies", f"{a}_{done}") for a in ("blocked_by", "blocking") for done in ("added", "removed")),
        *(("sub_issues", f"{a}_{done}") for a in ("sub_issue", "parent_issue") for done in ("added", "removed")),
    }
    assert wanted <= delivered


def test_shapes_carry_what_readers_rely_on() -> None:
    assert TOKEN["expires_at"] == "2026-01-01T01:00:00Z"
    assert shapes.timestamp(datetime(2026, 3, 10, 12, 0, 1)) == "2026-03-10T12:00:01Z"
    content = shapes.content_file(REPO, ".github/baton.yml", CONFIG_TEXT, "d" * 40)
    assert "\n" in content["content"]  # GitHub's base64 comes in lines
    assert base64.b64decode(content["content"]).decode() == CONFIG_TEXT
    assert content["size"] == len(CONFIG_TEXT.encode())
    assert ISSUE["url"] == f"{API}{R}/issues/42"
    assert ISSUE["html_url"] == "https://github.com/octo-org/widgets/issues/42"
    assert COMMENT["html_url"].endswith("/issues/42#issuecomment-7000")
    assert PR_COMMENT["html_url"].endswith("/pull/43#issuecomment-7002")
    assert LABEL["url"] == f"{API}{R}/labels/baton%3Aclaimed"
    assert STATUS_COMMENT["performed_via_github_app"]["slug"] == "baton"
    assert ISSUE["user"]["node_id"] == shapes.user("alice", 11)["node_id"] == "MDQ6VXNlcjEx"  # "04:User11"
    # API 2026-03-10 answers without the single `assignee`; payloads still carry it.
    assert "assignee" not in ISSUE
    assert WEBHOOK_CASES[0][1]["issue"]["assignee"]["login"] == "alice"


# -- near misses are caught ---------------------------------------------------------------------------


def test_a_comment_without_body_is_caught(contract: Contract) -> None:
    problems = contract.request_problems("POST", f"{R}/issues/42/comments", {}, JSON_HEADERS, _body({}))
    assert problems == ["issues/create-comment request: body.body is required"]
    comment = {k: v for k, v in COMMENT.items() if k != "body"}
    payload = shapes.issue_comment_event(REPO, ISSUE, comment, ALICE)
    assert hook_problems("issue_comment", payload) == [
        "issue_comment.created webhook: payload.comment.body is required"
    ]


def test_a_label_whose_color_is_a_number_is_caught(contract: Contract) -> None:
    wrong = {**LABEL, "color": 0x0E8A16}
    problems = contract.response_problems("GET", f"{R}/labels/baton:claimed", 200, JSON_HEADERS, _body(wrong))
    assert "issues/get-label response 200: body.color is integer, expected string" in problems
    assert any(p.startswith("issues/get-label response 200 (githubkit Label): body.color") for p in problems)


def test_a_label_without_archived_fields_fails_githubkit_only(contract: Contract) -> None:
    bare = {k: v for k, v in LABEL.items() if not k.startswith("archived")}
    problems = contract.response_problems("GET", f"{R}/labels/baton:claimed", 200, JSON_HEADERS, _body(bare))
    assert problems == [
        "issues/get-label response 200 (githubkit Label): body.archived_at: Field required",
        "issues/get-label response 200 (githubkit Label): body.archived_by: Field required",
    ]


def test_labels_given_as_a_string_are_caught(contract: Contract) -> None:
    path = f"{R}/issues/42/labels"
    problems = contract.request_problems("POST", path, {}, JSON_HEADERS, _body({"labels": "x"}))
    assert problems == ["issues/add-labels request: body.labels is string, expected array"]
    assert contract.request_problems("POST", path, {}, JSON_HEADERS, _body({"labels": ["x"]})) == []


def test_a_reaction_that_github_does_not_have_is_caught(contract: Contract) -> None:
    path = f"{R}/issues/42/reactions"
    problems = contract.request_problems("POST", path, {}, JSON_HEADERS, _body({"content": "thumbs"}))
    assert len(problems) == 1
    assert problems[0].startswith('reactions/create-for-issue request: body.content is "thumbs", expected one of')
    answer = {**shapes.reaction(REPO, 1, "+1", BOT), "content": "thumbs"}
    problems = contract.response_problems("POST", path, 201, JSON_HEADERS, _body(answer))
    assert any(p.startswith('reactions/create-for-issue response 201: body.content is "thumbs"') for p in problems)
    assert any("(githubkit Reaction): body.content" in p for p in problems)


def test_paths_github_does_not_have_are_caught(contract: Contract) -> None:
    assert contract.operation("GET", "/repos/octo-org/widgets/issuez/42") is None
    assert contract.operation("PUT", f"{R}/issues/42/comments") is None
    assert contract.request_problems("GET", "/nowhere", {}, {}, None) == [
        "GET /nowhere request: GitHub has no such operation"
    ]
    # A real operation the stand-in does not serve is named, so it can be added to the contract.
    assert contract.response_problems("GET", f"{R}/issues/42/events", 200, {}, b"[]") == [
        "issues/list-events response: not in the contract (add it to contract.OPERATIONS)"
    ]


def test_an_installation_token_with_a_wrong_expiry_is_caught(contract: Contract) -> None:
    path = "/app/installations/5/access_tokens"
    numeric = {**TOKEN, "expires_at": 1767229200}
    problems = contract.response_problems("POST", path, 201, JSON_HEADERS, _body(numeric))
    assert "apps/create-installation-access-token response 201: body.expires_at is integer, expected string" in problems
    assert any("(githubkit InstallationToken): body.expires_at" in p for p in problems)
    offset = {**TOKEN, "expires_at": "2026-01-01T01:00:00+00:00"}
    assert contract.response_problems("POST", path, 201, JSON_HEADERS, _body(offset)) == [
        "apps/create-installation-access-token response 201 (githubkit App auth): "
        'body.expires_at is "2026-01-01T01:00:00+00:00", not in %Y-%m-%dT%H:%M:%SZ'
    ]


def test_a_payload_without_sender_is_caught() -> None:
    payload = shapes.issues_event("opened", REPO, ISSUE, ALICE)
    del payload["sender"]
    assert hook_problems("issues", payload) == ["issues.opened webhook: payload.sender is required"]


def test_other_webhook_near_misses_are_caught() -> None:
    extra = {**shapes.create_event(REPO, "x", ALICE), "surprise": 1}
    assert hook_problems("create", extra) == ["create webhook: payload.surprise is not allowed here"]
    unknown_action = {**shapes.issues_event("opened", REPO, ISSUE, ALICE), "action": "thumbs"}
    assert hook_problems("issues", unknown_action)[0].startswith('issues.thumbs webhook: payload.action is "thumbs"')
    assert hook_problems("nonsense", {}) == ["nonsense webhook: @octokit/webhooks-schemas knows no event 'nonsense'"]
    open_but_closed = shapes.issues_event("opened", REPO, CLOSED_ISSUE, ALICE)
    assert 'issues.opened webhook: payload.issue.state is "closed", expected one of ["open"]' in hook_problems(
        "issues", open_but_closed
    )
    bad_time = shapes.issue_comment_event(REPO, ISSUE, {**COMMENT, "created_at": "2026-01-01 00:00:00"}, ALICE)
    assert hook_problems("issue_comment", bad_time) == [
        'issue_comment.created webhook: payload.comment.created_at is "2026-01-01 00:00:00", not a valid date-time'
    ]


def test_request_parameters_are_checked(contract: Contract) -> None:
    comments = f"{R}/issues/42/comments"
    assert contract.request_problems("GET", comments, {"per_page": "100", "page": "2"}, {}, None) == []
    problems = contract.request_problems("GET", comments, {"per_page": "many", "perpage": "1"}, {}, None)
    assert problems[0].startswith("issues/list-comments request: query.per_page is not valid")
    assert problems[1:] == ["issues/list-comments request: query.perpage is not a parameter of this operation"]
    problems = contract.request_problems("POST", f"{R}/issues/forty-two/comments", {}, JSON_HEADERS, b'{"body": "x"}')
    assert len(problems) == 1 and problems[0].startswith("issues/create-comment request: path.issue_number")
    assert contract.request_problems("POST", f"{R}/issues/42/reactions", {}, JSON_HEADERS, None) == [
        "reactions/create-for-issue request: body is required"
    ]
    old = {**JSON_HEADERS, "X-GitHub-Api-Version": "2022-11-28"}
    assert contract.request_problems("POST", f"{R}/issues/42/comments", {}, old, b'{"body": "x"}') == [
        "issues/create-comment request: header X-GitHub-Api-Version is '2022-11-28', the contract describes 2026-03-10"
    ]


def test_error_answers_are_checked_where_github_lists_them(contract: Contract) -> None:
    not_found = _body({"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
    assert contract.response_problems("GET", f"{R}/labels/nope", 404, JSON_HEADERS, not_found) == []
    wrong = _body({"message": 404})
    assert contract.response_problems("GET", f"{R}/labels/nope", 404, JSON_HEADERS, wrong) == [
        "issues/get-label response 404: body.message is integer, expected string"
    ]
    invalid = {"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest", "status": "422"}
    invalid["errors"] = [{"resource": "Label", "code": "already_exists", "field": "name", "value": None}]
    assert contract.response_problems("POST", f"{R}/labels", 422, JSON_HEADERS, _body(invalid)) == []
    del invalid["documentation_url"]
    assert contract.response_problems("POST", f"{R}/labels", 422, JSON_HEADERS, _body(invalid)) == [
        "issues/create-label response 422: body.documentation_url is required"
    ]
    # A rate limit: GitHub answers any call with it, listed or not; it must still look like GitHub's errors.
    limited = {
        **JSON_HEADERS,
        "X-RateLimit-Limit": "5000",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "1767229200",
    }
    rate_limit = _body({"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com/rest"})
    assert contract.response_problems("POST", f"{R}/issues/42/comments", 403, limited, rate_limit) == []
    assert contract.response_problems("DELETE", f"{R}/issues/42/labels/x", 403, limited, rate_limit) == []
    assert contract.response_problems("GET", f"{R}/issues/comments/1", 500, JSON_HEADERS, b"") == []
    assert contract.response_problems("GET", f"{R}/issues/comments/1", 500, {}, b"<html>oops</html>") == [
        "issues/get-comment response 500: body is not JSON (GitHub's errors are JSON objects)"
    ]
    # A success GitHub never answers with is a problem, whatever its body.
    assert contract.response_problems("GET", f"{R}/labels/x", 201, JSON_HEADERS, _body(LABEL)) == [
        "issues/get-label response 201: GitHub does not answer this operation with 201"
    ]


@pytest.mark.parametrize(
    ("method", "path", "operation"),
    [
        ("GET", f"{R}/contents/.github/baton.yml", "repos/get-content"),
        ("GET", f"{R}/contents/README.md", "repos/get-content"),
        ("GET", f"{R}/issues/comments", "issues/list-comments-for-repo"),  # a literal beats {issue_number}
        ("GET", f"{R}/issues/comments/7", "issues/get-comment"),
        ("GET", f"{R}/issues/7/comments", "issues/list-comments"),
        ("DELETE", f"{R}/issues/7/labels/kind%2Fbug", "issues/remove-label"),
        ("GET", f"{R}/labels/good%20first%20issue", "issues/get-label"),
        ("GET", f"{R}/branches/feature/widget", "repos/get-branch"),  # branch names hold slashes
        ("GET", f"{R}/branches/feature/widget/protection", "repos/get-branch-protection"),
        ("GET", f"{R}/compare/main...feature/widget", "repos/compare-commits-with-basehead"),
        ("GET", R, "repos/get"),
        ("GET", f"{R}/", None),
        ("POST", "/app/installations/5/access_tokens", "apps/create-installation-access-token"),
        ("GET", "/app/installations/5/access_tokens", None),
    ],
)
def test_concrete_paths_resolve_to_githubs_operations(
    contract: Contract, method: str, path: str, operation: str | None
) -> None:
    assert contract.operation(method, path) == operation


def test_the_contract_describes_the_version_githubkit_asks_for(contract: Contract) -> None:
    assert contract.description.name == "api.github.com.json"
    assert GITHUBKIT_MODELS_MODULE.endswith(f".v{API_VERSION.replace('-', '_')}.models")
    # The description's 2026-03-10 changes are applied: the single assignee and merge_commit_sha are gone.
    schemas = contract.subset["components"]["schemas"]
    assert "assignee" not in schemas["issue"]["required"]
    assert "merge_commit_sha" not in schemas["pull-request"]["properties"]
    assert any("issue/properties/state_reason" in patch for patch in contract.patches)
    assert Contract.load() is contract  # loaded once per process


def test_the_subset_is_a_valid_openapi_description(contract: Contract) -> None:
    from openapi_spec_validator import validate

    validate(contract.subset)


# -- the requests githubkit sends pass, and githubkit reads the answers -------------------------------

# (what Baton asks githubkit to do, the answer the stand-in gives, its status)
GITHUBKIT_CALLS: list[tuple[str, Callable[[GitHub[Any]], Any], Any, int]] = [
    ("token", lambda gh: gh.rest.apps.create_installation_access_token(5), TOKEN, 201),
    ("app", lambda gh: gh.rest.apps.get_authenticated(), shapes.app_object(APP), 200),
    ("permission", lambda gh: gh.rest.repos.get_collaborator_permission_level("octo-org", "widgets", "alice"),
     shapes.collaborator_permission(REPO, ALICE, "admin", "admin"), 200),
    ("list-collaborators",
     lambda gh: gh.rest.repos.list_collaborators("octo-org", "widgets", affiliation="all", per_page=100),
     [shapes.collaborator(REPO, ALICE, "admin"), shapes.collaborator(REPO, BOB, "read")], 200),
    ("content", lambda gh: gh.rest.repos.get_content("octo-org", "widgets", ".github/baton.yml"),
     shapes.content_file(REPO, ".github/baton.yml", CONFIG_TEXT, "d" * 40), 200),
    ("issue", lambda gh: gh.rest.issues.get("octo-org", "widgets", 42), ISSUE, 200),
    ("list-issues", lambda gh: gh.rest.issues.list_for_repo(
        "octo-org", "widgets", state="open", sort="created", direction="asc", per_page=100, page=1
    ), [ISSUE, PR_ISSUE], 200),
    ("add-labels", lambda gh: gh.rest.issues.add_labels("octo-org", "widgets", 42, data={"labels": ["baton:claimed"]}),
     [LABEL], 200),
    ("remove-label", lambda gh: gh.rest.issues.remove_label("octo-org", "widgets", 42, "baton:claimed"), [], 200),
    ("add-assignees",
     lambda gh: gh.rest.issues.add_assignees("octo-org", "widgets", 42, data={"assignees": ["alice"]}), ISSUE, 201),
    ("remove-assignees",
     lambda gh: gh.rest.issues.remove_assignees("octo-org", "widgets", 42, data={"assignees": ["alice"]}),
     CLOSED_ISSUE, 200),
    ("get-label", lambda gh: gh.rest.issues.get_label("octo-org", "widgets", "baton:claimed"), LABEL, 200),
    ("create-label", lambda gh: gh.rest.issues.create_label(
        "octo-org", "widgets", data={"name": "baton:claimed", "color": "0e8a16", "description": "Claimed"}
    ), LABEL, 201),
    ("list-comments", lambda gh: gh.rest.issues.list_comments("octo-org", "widgets", 42, per_page=100, page=1),
     [COMMENT, STATUS_COMMENT], 200),
    ("get-comment", lambda gh: gh.rest.issues.get_comment("octo-org", "widgets", 7000), COMMENT, 200),
    ("create-comment", lambda gh: gh.rest.issues.create_comment("octo-org", "widgets", 42, data={"body": "x"}),
     STATUS_COMMENT, 201),
    ("update-comment", lambda gh: gh.rest.issues.update_comment("octo-org", "widgets", 7001, data={"body": "y"}),
     STATUS_COMMENT, 200),
    ("react-issue", lambda gh: gh.rest.reactions.create_for_issue("octo-org", "widgets", 42, data={"content": "+1"}),
     shapes.reaction(REPO, 1, "+1", BOT), 201),
    ("react-comment", lambda gh: gh.rest.reactions.create_for_issue_comment(
        "octo-org", "widgets", 7000, data={"content": "+1"}
    ), shapes.reaction(REPO, 2, "+1", BOT), 200),
    ("create-check", lambda gh: gh.rest.checks.create("octo-org", "widgets", data={
        "name": "baton", "head_sha": HEAD, "status": "in_progress", "output": {"title": "Claimed", "summary": "…"},
    }), CHECK_RUN, 201),
    ("update-check", lambda gh: gh.rest.checks.update("octo-org", "widgets", 900, data={
        "status": "completed", "conclusion": "success", "completed_at": LATER,
    }), DONE_RUN, 200),
    ("list-checks", lambda gh: gh.rest.checks.list_for_ref(
        "octo-org", "widgets", HEAD, check_name="baton/acceptance", per_page=100
    ), {"total_count": 1, "check_runs": [DONE_RUN]}, 200),
    ("pull", lambda gh: gh.rest.pulls.get("octo-org", "widgets", 43), PR, 200),
    ("branch", lambda gh: gh.rest.repos.get_branch("octo-org", "widgets", "feature/widget"),
     shapes.branch(REPO, "feature/widget", SECOND), 200),
    ("compare", lambda gh: gh.rest.repos.compare_commits("octo-org", "widgets", "main...feature/widget"),
     shapes.compare(REPO, "main...feature/widget", FIRST, [SECOND]), 200),
    ("repository", lambda gh: gh.rest.repos.get("octo-org", "widgets"), shapes.repository(REPO), 200),
    ("team-membership", lambda gh: gh.rest.teams.get_membership_for_user_in_org("octo-org", "reviewers", "alice"),
     shapes.team_membership(f"{API}/organizations/10/team/reviewers/memberships/alice"), 200),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "answer", "status"), [c[1:] for c in GITHUBKIT_CALLS], ids=[c[0] for c in GITHUBKIT_CALLS]
)
def test_githubkit_requests_pass_and_its_models_read_the_answers(
    contract: Contract, call: Callable[[GitHub[Any]], Any], answer: Any, status: int
) -> None:
    sent: list[httpx.Request] = []

    def stand_in(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, json=answer)

    github = GitHub(
        TokenAuthStrategy("t"),
        base_url="http://127.0.0.1:9/",
        auto_retry=False,
        http_cache=False,
        cache_strategy=MemCacheStrategy(),
        transport=httpx.MockTransport(stand_in),
    )
    response = call(github)
    (request,) = sent
    path = request.url.raw_path.decode().split("?", 1)[0]
    operation = contract.operation(request.method, path)
    assert operation in contract.covered, (request.method, path)
    assert request.headers["X-GitHub-Api-Version"] == API_VERSION
    query = dict(request.url.params)
    body = request.content or None
    assert contract.request_problems(request.method, path, query, dict(request.headers), body) == []
    parsed = response.parsed_data  # githubkit's own reading of the answer, with the model it declares
    accepted = {member.strip() for member in GITHUBKIT_MODELS[operation].split("|")}
    if isinstance(parsed, list):
        read = {f"list[{type(item).__name__}]" for item in parsed} or {m for m in accepted if m.startswith("list[")}
    else:
        read = {type(parsed).__name__}
    assert read
    assert read <= accepted


# -- without the packages ------------------------------------------------------------------------------


def test_without_the_npm_packages_the_contract_says_how_to_install_them(tmp_path: Path) -> None:
    with pytest.raises(ContractUnavailable, match=INSTALL_COMMAND.replace(" ", r"\s")):
        Contract.load(tmp_path)
    with pytest.raises(ContractUnavailable, match="@octokit/webhooks-schemas"):
        webhook_problems("issues", {}, root=tmp_path)


def test_the_modules_import_without_the_validators() -> None:
    # `baton demo` runs where the test extra is not installed: the modules import, and the contract says why
    # it is unavailable instead of failing with an ImportError.
    code = (
        "import sys\n"
        "for name in ('openapi_core', 'jsonschema', 'openapi_spec_validator'):\n"
        "    sys.modules[name] = None\n"
        "from github_standin import contract, shapes\n"
        "shapes.issue(shapes.Repo(shapes.Account('o', 1), 'r', 2), 1, 1, 't', shapes.Account('u', 3))\n"
        "try:\n"
        "    contract.Contract.load()\n"
        "except contract.ContractUnavailable as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    if "is not installed" in done.stdout and "@octokit/openapi" in done.stdout:
        return  # no npm packages here either: the first thing it says
    assert "the validators are not installed (" in done.stdout
    assert "run `pip install -e '.[test]'`" in done.stdout


def test_the_fast_webhook_check_refuses_whatever_jsonschema_refuses_in_githubs_examples() -> None:
    """`webhook_problems` asks jsonschema only once jsonschema-rs found a problem: over every example payload of
    GitHub's corpus (many of which its own schemas refuse), and each one made invalid on purpose, the two agree."""
    from github_standin.contract import WEBHOOK_SCHEMAS_FILE, _package_file, _webhook_schemas

    try:
        path = _package_file(None, WEBHOOK_SCHEMAS_FILE, "@octokit/webhooks-schemas")
    except ContractUnavailable as exc:
        missing(str(exc))
    schemas = _webhook_schemas(path.resolve())
    compared = refused = 0
    for event, examples in webhook_examples().items():
        for example in examples:
            name = schemas.name(event, example.get("action"))
            if not isinstance(name, str):
                continue
            broken = {**example, "sender": "nobody"}  # a string where GitHub sends an object
            for payload in (example, broken):
                valid = not list(schemas.validator(name).iter_errors(payload))
                assert schemas.accepts(name, payload) == valid, (event, example.get("action"), valid)
                compared += 1
                refused += not valid
    assert compared > 400 and compared / 2 < refused < compared, (compared, refused)
