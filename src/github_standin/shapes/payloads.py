"""GitHub's webhook payloads, complete, built from the REST objects the stand-in already holds.

Pure functions, no state. Each `*_event` builder returns a payload that `@octokit/webhooks-schemas` accepts,
with no field it does not list: REST objects (an issue from `objects.issue()`, a pull request from
`code.pull_request()`) are reshaped and trimmed as GitHub does in its payloads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from .objects import (
    API_URL,
    EPOCH,
    WEB_URL,
    Account,
    App,
    Json,
    Repo,
    _app,
    _hook_repository,
    _node_id,
    _user,
    installation_object,
    user,
)

# -- webhook payloads ---------------------------------------------------------------------------------
# The payload schemas allow no field they do not list, so REST objects are trimmed to those fields.


def _fields(names: str) -> tuple[str, ...]:
    return tuple(names.split())


_HOOK_USER = _fields(
    "login id node_id name email avatar_url gravatar_id url html_url followers_url following_url "
    "gists_url starred_url subscriptions_url organizations_url repos_url events_url received_events_url "
    "type site_admin"
)
_HOOK_LABEL = _fields("id node_id url name description color default")
_HOOK_ISSUE = _fields(
    "url repository_url labels_url comments_url events_url html_url id node_id number title user labels "
    "state locked assignee assignees milestone comments created_at updated_at closed_at "
    "author_association active_lock_reason draft performed_via_github_app pull_request body reactions "
    "timeline_url state_reason issue_dependencies_summary sub_issues_summary"
)
_HOOK_COMMENT = _fields(
    "url html_url issue_url id node_id user created_at updated_at author_association body reactions "
    "performed_via_github_app"
)
_HOOK_SIMPLE_PULL = _fields(
    "url id node_id html_url diff_url patch_url issue_url number state locked title user body created_at "
    "updated_at closed_at merged_at merge_commit_sha assignee assignees requested_reviewers "
    "requested_teams labels milestone draft commits_url review_comments_url review_comment_url "
    "comments_url statuses_url head base _links author_association auto_merge active_lock_reason"
)
_HOOK_APP = _fields(
    "id slug node_id owner name description external_url html_url created_at updated_at permissions events"
)


def _only(value: Mapping[str, Any], keys: Sequence[str]) -> Json:
    return {key: value[key] for key in keys if key in value}


def _hook_user(value: Mapping[str, Any] | None) -> Json | None:
    return _only(value, _HOOK_USER) if value is not None else None


def _hook_app(value: Mapping[str, Any] | None) -> Json | None:
    if value is None:
        return None
    return {**_only(value, _HOOK_APP), "owner": _hook_user(value["owner"])}


def _hook_issue(value: Mapping[str, Any]) -> Json:
    assignees = [_hook_user(one) for one in value.get("assignees") or []]
    return {
        **_only(value, _HOOK_ISSUE),
        "user": _hook_user(value["user"]),
        "labels": [_only(one, _HOOK_LABEL) for one in value.get("labels") or []],
        "assignees": assignees,
        # API 2026-03-10 dropped the single `assignee` from REST answers; payloads still carry it.
        "assignee": assignees[0] if assignees else None,
        "performed_via_github_app": _hook_app(value.get("performed_via_github_app")),
    }


def _hook_comment(value: Mapping[str, Any]) -> Json:
    return {
        **_only(value, _HOOK_COMMENT),
        "user": _hook_user(value["user"]),
        "performed_via_github_app": _hook_app(value.get("performed_via_github_app")),
    }


def _hook_pull_request(value: Mapping[str, Any], repo: Repo, merge_commit_sha: str | None) -> Json:
    assignees = [_hook_user(one) for one in value.get("assignees") or []]
    result = {
        **value,
        "user": _hook_user(value["user"]),
        "labels": [_only(one, _HOOK_LABEL) for one in value.get("labels") or []],
        "assignees": assignees,
        "assignee": assignees[0] if assignees else None,
        "requested_reviewers": [_hook_user(one) for one in value.get("requested_reviewers") or []],
        "merged_by": _hook_user(value.get("merged_by")),
        "merge_commit_sha": merge_commit_sha,
    }
    for end in ("head", "base"):
        result[end] = {**value[end], "user": _hook_user(value[end]["user"]), "repo": _hook_repository(repo)}
    return result


def _context(repo: Repo, sender: Account, installation_id: int | None) -> Json:
    context: Json = {"repository": _hook_repository(repo), "sender": _user(sender, repo)}
    if installation_id is not None:
        context["installation"] = {"id": installation_id, "node_id": _node_id("Installation", installation_id)}
    return context


def issues_event(
    action: str,
    repo: Repo,
    issue: Mapping[str, Any],
    sender: Account,
    *,
    label: Mapping[str, Any] | None = None,
    changes: Mapping[str, Any] | None = None,
    installation_id: int | None = None,
    moved_to: tuple[Repo, Mapping[str, Any]] | None = None,
) -> Json:
    """`issues`: opened, edited (`changes`), closed, reopened, labeled or unlabeled (with the `label` from
    `label()`), deleted, or transferred (`moved_to`: the repository and the issue it became there)."""
    payload: Json = {"action": action, "issue": _hook_issue(issue)}
    if action == "edited":
        payload["changes"] = dict(changes or {})
    if label is not None:
        payload["label"] = _only(label, _HOOK_LABEL)
    if moved_to is not None:
        payload["changes"] = {"new_repository": _hook_repository(moved_to[0]), "new_issue": _hook_issue(moved_to[1])}
    return {**payload, **_context(repo, sender, installation_id)}


def issue_comment_event(
    repo: Repo,
    issue: Mapping[str, Any],
    comment: Mapping[str, Any],
    sender: Account,
    *,
    action: str = "created",
    installation_id: int | None = None,
) -> Json:
    """`issue_comment` on an issue, or on a pull request when `issue` came from `issue(pull_request=True)`."""
    return {
        "action": action,
        "issue": _hook_issue(issue),
        "comment": _hook_comment(comment),
        **_context(repo, sender, installation_id),
    }


def pull_request_event(
    action: str,
    repo: Repo,
    pull_request: Mapping[str, Any],
    sender: Account,
    *,
    merge_commit_sha: str | None = None,
    changes: Mapping[str, Any] | None = None,
    before: str | None = None,
    after: str | None = None,
    installation_id: int | None = None,
) -> Json:
    """`pull_request`: opened, edited (`changes`), synchronize (`before`, `after`), closed, reopened,
    ready_for_review or converted_to_draft. `pull_request` comes from `pull_request()`."""
    payload: Json = {
        "action": action,
        "number": pull_request["number"],
        "pull_request": _hook_pull_request(pull_request, repo, merge_commit_sha),
    }
    if action == "edited":
        payload["changes"] = dict(changes or {})
    if action == "synchronize":
        payload["before"] = before if before is not None else pull_request["base"]["sha"]
        payload["after"] = after if after is not None else pull_request["head"]["sha"]
    return {**payload, **_context(repo, sender, installation_id)}


def pull_request_review_event(
    repo: Repo,
    pull_request: Mapping[str, Any],
    review_id: int,
    reviewer: Account,
    state: str,
    *,
    body: str | None = None,
    submitted_at: str = EPOCH,
    author_association: str = "NONE",
    installation_id: int | None = None,
) -> Json:
    """`pull_request_review` submitted; `state` is `approved`, `changes_requested` or `commented`."""
    html = f"{pull_request['html_url']}#pullrequestreview-{review_id}"
    review = {
        "id": review_id,
        "node_id": _node_id("PullRequestReview", review_id),
        "user": _user(reviewer, repo),
        "body": body,
        "commit_id": pull_request["head"]["sha"],
        "submitted_at": submitted_at,
        "state": state,
        "html_url": html,
        "pull_request_url": pull_request["url"],
        "author_association": author_association,
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_request["url"]}},
    }
    simple = _only(_hook_pull_request(pull_request, repo, None), _HOOK_SIMPLE_PULL)
    return {
        "action": "submitted",
        "review": review,
        "pull_request": simple,
        **_context(repo, sender=reviewer, installation_id=installation_id),
    }


def create_event(
    repo: Repo, ref: str, sender: Account, *, ref_type: str = "branch", installation_id: int | None = None
) -> Json:
    """`create`: a branch or tag was created (`ref` without `refs/heads/`)."""
    return {
        "ref": ref,
        "ref_type": ref_type,
        "master_branch": repo.default_branch,
        "description": repo.description,
        "pusher_type": "user",
        **_context(repo, sender, installation_id),
    }


def delete_event(
    repo: Repo, ref: str, sender: Account, *, ref_type: str = "branch", installation_id: int | None = None
) -> Json:
    """`delete`: a branch or tag was deleted."""
    return {"ref": ref, "ref_type": ref_type, "pusher_type": "user", **_context(repo, sender, installation_id)}


def push_commit(
    repo: Repo,
    sha: str,
    message: str,
    author: Account,
    *,
    at: str = EPOCH,
    added: Sequence[str] = (),
    modified: Sequence[str] = (),
    removed: Sequence[str] = (),
) -> Json:
    """One commit of a `push` payload."""
    person = {
        "name": author.login,
        "email": f"{author.id}+{author.login}@users.noreply.github.com",
        "username": author.login,
    }
    return {
        "id": sha,
        "tree_id": hashlib.sha1(f"tree {sha}".encode()).hexdigest(),
        "distinct": True,
        "message": message,
        "timestamp": at,
        "url": f"{repo.html}/commit/{sha}",
        "author": person,
        "committer": person,
        "added": list(added),
        "removed": list(removed),
        "modified": list(modified),
    }


def push_event(
    repo: Repo,
    ref: str,
    before: str,
    after: str,
    commits: Sequence[Mapping[str, Any]],
    sender: Account,
    *,
    created: bool = False,
    deleted: bool = False,
    forced: bool = False,
    installation_id: int | None = None,
) -> Json:
    """`push` of `commits` (from `push_commit()`, oldest first) to `ref` (`refs/heads/...`)."""
    return {
        "ref": ref,
        "before": before,
        "after": after,
        "created": created,
        "deleted": deleted,
        "forced": forced,
        "base_ref": None,
        "compare": f"{repo.html}/compare/{before[:12]}...{after[:12]}",
        "commits": [dict(one) for one in commits],
        "head_commit": dict(commits[-1]) if commits else None,
        "pusher": {"name": sender.login, "email": f"{sender.id}+{sender.login}@users.noreply.github.com"},
        **_context(repo, sender, installation_id),
    }


def deployment(
    repo: Repo,
    id: int,
    sha: str,
    ref: str,
    environment: str,
    creator: Account,
    *,
    task: str = "deploy",
    description: str | None = None,
    created_at: str = EPOCH,
) -> Json:
    """A deployment as the `deployment` and `deployment_status` payloads carry it."""
    api = f"{repo.api}/deployments/{id}"
    return {
        "url": api,
        "id": id,
        "node_id": _node_id("Deployment", id),
        "sha": sha,
        "ref": ref,
        "task": task,
        "payload": {},
        "original_environment": environment,
        "environment": environment,
        "transient_environment": False,
        "production_environment": environment == "production",
        "description": description,
        "creator": _user(creator, repo),
        "created_at": created_at,
        "updated_at": created_at,
        "statuses_url": f"{api}/statuses",
        "repository_url": repo.api,
        "performed_via_github_app": None,
    }


def deployment_event(
    repo: Repo, deployment: Mapping[str, Any], sender: Account, *, installation_id: int | None = None
) -> Json:
    """`deployment` created (by hand or by the API: no workflow)."""
    return {
        "action": "created",
        "deployment": dict(deployment),
        "workflow": None,
        "workflow_run": None,
        **_context(repo, sender, installation_id),
    }


def deployment_status_event(
    repo: Repo,
    deployment: Mapping[str, Any],
    status_id: int,
    state: str,
    sender: Account,
    *,
    description: str = "",
    target_url: str = "",
    environment_url: str = "",
    created_at: str = EPOCH,
    installation_id: int | None = None,
) -> Json:
    """`deployment_status` created; `state` is e.g. `success`, `failure`, `in_progress`."""
    api = f"{deployment['url']}/statuses/{status_id}"
    status = {
        "url": api,
        "id": status_id,
        "node_id": _node_id("DeploymentStatus", status_id),
        "state": state,
        "creator": _user(sender, repo),
        "description": description,
        "environment": deployment["environment"],
        "environment_url": environment_url,
        "target_url": target_url,
        "created_at": created_at,
        "updated_at": created_at,
        "deployment_url": deployment["url"],
        "repository_url": repo.api,
        "performed_via_github_app": None,
    }
    return {
        "action": "created",
        "deployment_status": status,
        "deployment": dict(deployment),
        **_context(repo, sender, installation_id),
    }


def installation_event(
    installation_id: int,
    app: App,
    account: Account,
    sender: Account,
    repositories: Sequence[Repo],
    *,
    repository_selection: str = "selected",
    created_at: str = EPOCH,
    api_url: str = API_URL,
    web_url: str = WEB_URL,
) -> Json:
    """`installation` created: `app` installed on `account`'s `repositories`."""
    api_url, web_url = api_url.rstrip("/"), web_url.rstrip("/")
    installation = installation_object(installation_id, app, account, repository_selection=repository_selection,
                                       created_at=created_at, api_url=api_url, web_url=web_url)  # fmt: skip
    return {
        "action": "created",
        "installation": installation,
        "repositories": [
            {
                "id": one.id,
                "node_id": _node_id("Repository", one.id),
                "name": one.name,
                "full_name": one.full_name,
                "private": one.private,
            }
            for one in repositories
        ],
        "sender": user(sender.login, sender.id, type=sender.type, api_url=api_url, web_url=web_url),
    }


def _suite(
    repo: Repo,
    suite_id: int,
    head_branch: str | None,
    head_sha: str,
    conclusion: str | None,
    app: Json,
    at: str,
    *,
    status: str = "completed",
    pull_requests: Sequence[Mapping[str, Any]] = (),
) -> Json:
    return {
        "id": suite_id,
        "node_id": _node_id("CheckSuite", suite_id),
        "head_branch": head_branch,
        "head_sha": head_sha,
        "status": status,
        "conclusion": conclusion,
        "url": f"{repo.api}/check-suites/{suite_id}",
        "before": None,
        "after": head_sha,
        "pull_requests": [dict(one) for one in pull_requests],
        "app": app,
        "created_at": at,
        "updated_at": at,
    }


def check_run_event(
    repo: Repo,
    check_run: Mapping[str, Any],
    sender: Account,
    *,
    action: str = "completed",
    head_branch: str | None = None,
    installation_id: int | None = None,
) -> Json:
    """`check_run` `created` or `completed`; `check_run` comes from `check_run(...)` (completed for
    `completed`), and the pull requests it lists are the ones GitHub names in the payload."""
    app = _hook_app(check_run["app"])
    completed = action == "completed"
    completed_at = (check_run["completed_at"] or check_run["started_at"] or EPOCH) if completed else None
    started_at = check_run["started_at"] or completed_at or EPOCH
    run = {
        key: check_run[key]
        for key in ("id", "node_id", "head_sha", "url", "html_url", "details_url", "status", "conclusion", "name")
    }
    pulls = check_run.get("pull_requests") or []
    run.update(
        external_id=check_run["external_id"] or "",
        started_at=started_at,
        completed_at=completed_at,
        output=dict(check_run["output"]),
        check_suite=_suite(
            repo,
            check_run["check_suite"]["id"],
            head_branch or repo.default_branch,
            check_run["head_sha"],
            check_run["conclusion"] if completed else None,
            app or {},
            completed_at or started_at,
            status="completed" if completed else "in_progress",
            pull_requests=pulls,
        ),
        app=app,
        pull_requests=[dict(one) for one in pulls],
    )
    return {"action": action, "check_run": run, **_context(repo, sender, installation_id)}


def check_suite_event(
    repo: Repo,
    suite_id: int,
    head_sha: str,
    conclusion: str,
    app: App,
    sender: Account,
    *,
    head_branch: str | None = None,
    message: str = "",
    at: str = EPOCH,
    pull_requests: Sequence[Mapping[str, Any]] = (),
    installation_id: int | None = None,
) -> Json:
    """`check_suite` completed for `head_sha`, with `conclusion` (`success`, `failure`, ...); `pull_requests`
    (from `pull_request_minimal()`) are the open pull requests whose head it is on."""
    suite = _suite(repo, suite_id, head_branch or repo.default_branch, head_sha, conclusion, _app(app, repo), at,
                   pull_requests=pull_requests)  # fmt: skip
    author = {"name": sender.login, "email": f"{sender.id}+{sender.login}@users.noreply.github.com"}
    suite.update(
        latest_check_runs_count=1,
        check_runs_url=f"{repo.api}/check-suites/{suite_id}/check-runs",
        head_commit={
            "id": head_sha,
            "tree_id": hashlib.sha1(f"tree {head_sha}".encode()).hexdigest(),
            "message": message,
            "timestamp": at,
            "author": author,
            "committer": author,
        },
    )
    return {"action": "completed", "check_suite": suite, **_context(repo, sender, installation_id)}


# -- links between issues: dependencies and sub-issues --------------------------------------------------
# Their payloads carry whole REST issues and repositories (GitHub's description, `webhook-issue-dependencies-*`
# and `webhook-sub-issues-*`; @octokit/webhooks-schemas has neither event).


def _organization(account: Account, repo: Repo) -> Json:
    """The repository's owner, an organisation, as payloads name it (`organization-simple-webhooks`)."""
    api = f"{repo.api_url.rstrip('/')}/orgs/{account.login}"
    return {
        "login": account.login, "id": account.id, "node_id": _node_id("Organization", account.id), "url": api,
        "repos_url": f"{api}/repos", "events_url": f"{api}/events", "hooks_url": f"{api}/hooks",
        "issues_url": f"{api}/issues", "members_url": f"{api}/members{{/member}}",
        "public_members_url": f"{api}/public_members{{/member}}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{account.id}?v=4", "description": None,
    }  # fmt: skip


def _whole_issue(value: Mapping[str, Any]) -> Json:
    """A REST issue, whole, as these payloads carry it: with the single `assignee` payloads still have."""
    assignees = value.get("assignees") or []
    return {**value, "assignee": assignees[0] if assignees else None}


def _whole_repository(value: Mapping[str, Any]) -> Json:
    """A REST repository as these payloads carry it (`repository`): `has_downloads` is there, and no
    `temp_clone_token` unless it is one."""
    whole = {**value, "has_downloads": True}
    if whole.get("temp_clone_token") is None:
        whole.pop("temp_clone_token", None)
    return whole


def _linked_context(repo: Repo, sender: Account, installation_id: int | None) -> Json:
    context = _context(repo, sender, installation_id)
    if repo.owner.type == "Organization":
        context["organization"] = _organization(repo.owner, repo)
    return context


def issue_dependencies_event(
    action: str,
    repo: Repo,
    blocked: Mapping[str, Any],
    blocking: Mapping[str, Any],
    other: Mapping[str, Any],
    sender: Account,
    *,
    installation_id: int | None = None,
) -> Json:
    """`issue_dependencies`: `blocked_by_added`/`blocked_by_removed`, sent for the blocked issue's repository
    `repo` (`other` is the blocking issue's repository, a REST `repository()`), or `blocking_added`/
    `blocking_removed`, sent for the blocking issue's (`other` is the blocked issue's)."""
    which = "blocking_issue_repo" if action.startswith("blocked_by") else "blocked_issue_repo"
    return {
        "action": action,
        "blocked_issue_id": blocked["id"],
        "blocked_issue": _whole_issue(blocked),
        "blocking_issue_id": blocking["id"],
        "blocking_issue": _whole_issue(blocking),
        which: _whole_repository(other),
        **_linked_context(repo, sender, installation_id),
    }


def sub_issues_event(
    action: str,
    repo: Repo,
    parent: Mapping[str, Any],
    sub_issue: Mapping[str, Any],
    other: Mapping[str, Any],
    sender: Account,
    *,
    installation_id: int | None = None,
) -> Json:
    """`sub_issues`: `sub_issue_added`/`sub_issue_removed`, sent for the parent's repository `repo` (`other` is
    the sub-issue's repository, a REST `repository()`), or `parent_issue_added`/`parent_issue_removed`, sent for
    the sub-issue's (`other` is the parent's)."""
    which = "sub_issue_repo" if action.startswith("sub_issue") else "parent_issue_repo"
    return {
        "action": action,
        "sub_issue_id": sub_issue["id"],
        "sub_issue": _whole_issue(sub_issue),
        which: _whole_repository(other),
        "parent_issue_id": parent["id"],
        "parent_issue": _whole_issue(parent),
        **_linked_context(repo, sender, installation_id),
    }
