"""Listing a repository's issues, as GitHub's list-repository-issues API does: pull requests are listed
too (each with its `pull_request` key), filtered by `state` (`open` unless asked otherwise), ordered by
`sort` (`created` or `updated`) and `direction` (newest first unless asked otherwise), a page at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import _Context

SORTS = ("created", "updated")


def list_issues(c: _Context) -> tuple[int, Any]:
    from .server import Answer  # the server imports this module

    state = c.query.get("state", "open")
    sort = c.query.get("sort", "created")
    direction = c.query.get("direction", "desc")
    if state not in ("open", "closed", "all") or sort not in (*SORTS, "comments") or direction not in ("asc", "desc"):
        raise Answer(422, "Validation Failed")
    issues = [issue for issue in c.repository.issues.values() if state in ("all", issue.state)]
    issues.sort(key=lambda issue: (issue.updated_at if sort == "updated" else issue.created_at, issue.number))
    if direction == "desc":
        issues.reverse()
    return 200, [c.issue(issue) for issue in c.page(issues)]
