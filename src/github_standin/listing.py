"""Listing a repository's issues, as GitHub's list-repository-issues API does: pull requests are listed
too (each with its `pull_request` key), filtered by `state` (`open` unless asked otherwise), ordered by
`sort` (`created` or `updated`) and `direction` (newest first unless asked otherwise); the server answers
a page at a time."""

from __future__ import annotations

from collections.abc import Iterable

from .world import Issue

SORTS = ("created", "updated")


def list_issues(issues: Iterable[Issue], query: dict[str, str]) -> list[Issue] | None:
    """The issues `query` asks for, in its order; None when it asks for a state, sort or direction GitHub
    does not know (GitHub answers 422)."""
    state = query.get("state", "open")
    sort = query.get("sort", "created")
    direction = query.get("direction", "desc")
    if state not in ("open", "closed", "all") or sort not in (*SORTS, "comments") or direction not in ("asc", "desc"):
        return None
    listed = [issue for issue in issues if state in ("all", issue.state)]
    listed.sort(key=lambda issue: (issue.updated_at if sort == "updated" else issue.created_at, issue.number))
    if direction == "desc":
        listed.reverse()
    return listed
