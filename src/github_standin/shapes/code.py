"""GitHub's git and pull-request objects, complete, built from plain facts: commits, branches, comparisons,
pull requests and check runs, as the stand-in GitHub answers them (the conventions of `objects` apply)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from .objects import EPOCH, Account, App, Json, Repo, _app, _node_id, _quoted, _rest_repository, _user


def _git_user(account: Account, at: str) -> Json:
    return {"name": account.login, "email": f"{account.id}+{account.login}@users.noreply.github.com", "date": at}


def commit(
    repo: Repo,
    sha: str,
    message: str,
    author: Account,
    *,
    parents: Sequence[str] = (),
    at: str = EPOCH,
) -> Json:
    """A commit as the REST API shows it (`commit`), e.g. in a comparison or at a branch's head."""
    api = f"{repo.api}/commits/{sha}"
    tree = hashlib.sha1(f"tree {sha}".encode()).hexdigest()
    return {
        "url": api,
        "sha": sha,
        "node_id": _node_id("Commit", f"{repo.id}:{sha}"),
        "html_url": f"{repo.html}/commit/{sha}",
        "comments_url": f"{api}/comments",
        "commit": {
            "url": f"{repo.api}/git/commits/{sha}",
            "author": _git_user(author, at),
            "committer": _git_user(author, at),
            "message": message,
            "comment_count": 0,
            "tree": {"sha": tree, "url": f"{repo.api}/git/trees/{tree}"},
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "payload": None,
                "signature": None,
                "verified_at": None,
            },
        },
        "author": _user(author, repo),
        "committer": _user(author, repo),
        "parents": [
            {"sha": parent, "url": f"{repo.api}/commits/{parent}", "html_url": f"{repo.html}/commit/{parent}"}
            for parent in parents
        ],
    }


def branch(
    repo: Repo, name: str, head: Mapping[str, Any], *, protected: bool = False, required: Sequence[str] = ()
) -> Json:
    """GET .../branches/{branch} (`branch-with-protection`); `head` is its commit, from `commit()`. A protected
    branch whose protection `required` status checks names them (from any source: no App pinned)."""
    api = f"{repo.api}/branches/{_quoted(name)}"
    checks = {
        "enforcement_level": "non_admins" if required else "off",
        "contexts": list(required),
        "checks": [{"context": context, "app_id": None} for context in required],
    }
    return {
        "name": name,
        "commit": dict(head),
        "_links": {"self": api, "html": f"{repo.html}/tree/{name}"},
        "protected": protected,
        "protection": {"enabled": protected, "required_status_checks": checks},
        "protection_url": f"{api}/protection",
    }


def compare(
    repo: Repo,
    basehead: str,
    base: Mapping[str, Any],
    commits: Sequence[Mapping[str, Any]],
    *,
    merge_base: Mapping[str, Any] | None = None,
    behind_by: int = 0,
) -> Json:
    """GET .../compare/{basehead} (`commit-comparison`): `commits` (from `commit()`) lead from `base` to head."""
    ahead_by = len(commits)
    status = (
        "identical"
        if not ahead_by and not behind_by
        else "ahead"
        if not behind_by
        else "behind"
        if not ahead_by
        else "diverged"
    )
    return {
        "url": f"{repo.api}/compare/{basehead}",
        "html_url": f"{repo.html}/compare/{basehead}",
        "permalink_url": f"{repo.html}/compare/{basehead}",
        "diff_url": f"{repo.html}/compare/{basehead}.diff",
        "patch_url": f"{repo.html}/compare/{basehead}.patch",
        "base_commit": dict(base),
        "merge_base_commit": dict(merge_base if merge_base is not None else base),
        "status": status,
        "ahead_by": ahead_by,
        "behind_by": behind_by,
        "total_commits": ahead_by,
        "commits": [dict(one) for one in commits],
        "files": [],
    }


def pull_request(
    repo: Repo,
    number: int,
    id: int,
    title: str,
    author: Account,
    head_ref: str,
    head_sha: str,
    base_sha: str,
    *,
    base_ref: str | None = None,
    body: str | None = None,
    state: str = "open",
    draft: bool = False,
    merged: bool = False,
    merged_by: Account | None = None,
    merged_at: str | None = None,
    closed_at: str | None = None,
    labels: Sequence[Mapping[str, Any]] = (),
    assignees: Sequence[Account] = (),
    requested_reviewers: Sequence[Account] = (),
    created_at: str = EPOCH,
    updated_at: str | None = None,
    author_association: str = "NONE",
    commits: int = 1,
    additions: int = 0,
    deletions: int = 0,
    changed_files: int = 0,
) -> Json:
    """GET .../pulls/{pull_number} (`pull-request`); the head branch is in the same repository."""
    api = f"{repo.api}/pulls/{number}"
    html = f"{repo.html}/pull/{number}"
    issue_api = f"{repo.api}/issues/{number}"
    base = base_ref or repo.default_branch
    links = {
        "self": api,
        "html": html,
        "issue": issue_api,
        "comments": f"{issue_api}/comments",
        "review_comments": f"{api}/comments",
        "review_comment": f"{repo.api}/pulls/comments{{/number}}",
        "commits": f"{api}/commits",
        "statuses": f"{repo.api}/statuses/{head_sha}",
    }
    return {
        "url": api,
        "id": id,
        "node_id": _node_id("PullRequest", id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": issue_api,
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "number": number,
        "state": state,
        "locked": False,
        "title": title,
        "user": _user(author, repo),
        "body": body,
        "labels": [dict(one) for one in labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": created_at,
        "updated_at": updated_at or closed_at or created_at,
        "closed_at": closed_at,
        "merged_at": merged_at,
        "assignees": [_user(one, repo) for one in assignees],
        "requested_reviewers": [_user(one, repo) for one in requested_reviewers],
        "requested_teams": [],
        "head": _pull_end(repo, head_ref, head_sha),
        "base": _pull_end(repo, base, base_sha),
        "_links": {key: {"href": href} for key, href in links.items()},
        "author_association": author_association,
        "auto_merge": None,
        "draft": draft,
        "merged": merged,
        "mergeable": None if state == "closed" else True,
        "rebaseable": None if state == "closed" else True,
        "mergeable_state": "unknown" if state == "closed" else "clean",
        "merged_by": _user(merged_by, repo) if merged_by is not None else None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": commits,
        "additions": additions,
        "deletions": deletions,
        "changed_files": changed_files,
    }


def _pull_end(repo: Repo, ref: str, sha: str) -> Json:
    return {
        "label": f"{repo.owner.login}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": _user(repo.owner, repo),
        "repo": _rest_repository(repo),
    }


def check_run(
    repo: Repo,
    id: int,
    name: str,
    head_sha: str,
    app: App,
    *,
    status: str = "queued",
    conclusion: str | None = None,
    external_id: str | None = None,
    details_url: str | None = None,
    started_at: str | None = EPOCH,
    completed_at: str | None = None,
    title: str | None = None,
    summary: str | None = None,
    text: str | None = None,
    check_suite_id: int | None = None,
    pull_requests: Sequence[Mapping[str, Any]] = (),
) -> Json:
    """POST .../check-runs and PATCH .../check-runs/{id} (`check-run`); `pull_requests` are the open pull
    requests whose head it is on, from `pull_request_minimal()`."""
    api = f"{repo.api}/check-runs/{id}"
    return {
        "id": id,
        "head_sha": head_sha,
        "node_id": _node_id("CheckRun", id),
        "external_id": external_id if external_id is not None else "",
        "url": api,
        "html_url": f"{repo.html}/runs/{id}",
        "details_url": details_url if details_url is not None else f"{repo.html}/runs/{id}",
        "status": status,
        "conclusion": conclusion,
        "started_at": started_at,
        "completed_at": completed_at,
        "output": {
            "title": title,
            "summary": summary,
            "text": text,
            "annotations_count": 0,
            "annotations_url": f"{api}/annotations",
        },
        "name": name,
        "check_suite": {"id": check_suite_id if check_suite_id is not None else id},
        "app": _app(app, repo),
        "pull_requests": [dict(one) for one in pull_requests],
    }


def pull_request_minimal(
    repo: Repo, number: int, id: int, head_ref: str, head_sha: str, base_ref: str, base_sha: str
) -> Json:
    """A pull request as a check run or check suite names it (`pull-request-minimal`)."""
    where = {"id": repo.id, "url": repo.api, "name": repo.name}
    return {
        "id": id,
        "number": number,
        "url": f"{repo.api}/pulls/{number}",
        "head": {"ref": head_ref, "sha": head_sha, "repo": dict(where)},
        "base": {"ref": base_ref, "sha": base_sha, "repo": dict(where)},
    }
