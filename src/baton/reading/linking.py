"""Which tickets a pull request or a branch links. Pure.

Closing keywords: `Fixes #42`, `closes octo/shop#42` and `resolves https://github.com/octo/shop/issues/42`
link issue 42 of the same repository; any casing; the keyword may be followed by a colon. References to
other repositories are not this repository's tickets and are left out.

Branch names: the last path segment of the branch, after an optional `issue` or `issues` prefix (with or
without `-`/`_`), must begin with the issue number, followed by nothing, `-` or `_`. So `42`,
`42-empty-state`, `agent/42-empty-state`, `feature/issue-42` and `issues/42` link 42; `v1.42`,
`release-2024`, `fix-3-bugs-in-99`, `1.2-maintenance` and `42/empty-state` link nothing. A number never
starts with 0, and only the last segment counts, so an owner prefix (`agent-7/…`) cannot link anything.

A delivery links what it reports: its pull request, and the pull request or pushes of its branch.
"""

from __future__ import annotations

import re

KEYWORDS = ("close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved")

_REFERENCE = re.compile(
    r"(?<![\w/])(?:" + "|".join(KEYWORDS) + r")\s*:?\s+"
    r"(?:(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+))?#(?P<number>\d{1,9})\b"
    r"|(?<![\w/])(?:" + "|".join(KEYWORDS) + r")\s*:?\s+"
    r"https?://[^\s/]+/(?P<url_owner>[\w.-]+)/(?P<url_repo>[\w.-]+)/issues/(?P<url_number>\d{1,9})\b",
    re.IGNORECASE,
)


def linked_issues(body: str, repository: str) -> list[int]:
    """The issue numbers of `repository` ("owner/name") that `body` links, in order of first mention."""
    found: list[int] = []
    for match in _REFERENCE.finditer(body or ""):
        owner = match.group("owner") or match.group("url_owner")
        repo = match.group("repo") or match.group("url_repo")
        number = int(match.group("number") or match.group("url_number"))
        if owner is not None and f"{owner}/{repo}".lower() != repository.lower():
            continue
        if number not in found:
            found.append(number)
    return found


_BRANCH_ISSUE = re.compile(r"(?:issues?[-_]?)?([1-9]\d{0,8})(?:[-_].*)?", re.IGNORECASE | re.DOTALL)


def branch_issue(branch: str) -> int | None:
    """The issue number a branch name carries, or None. Accepts `refs/heads/…` as pushes name branches."""
    if branch.startswith("refs/") and not branch.startswith("refs/heads/"):
        return None  # a tag or another kind of ref, never a branch of work
    segment = branch.removeprefix("refs/heads/").rsplit("/", 1)[-1]
    match = _BRANCH_ISSUE.fullmatch(segment)
    return int(match.group(1)) if match else None


def branch_links(branch: str) -> frozenset[int]:
    """The tickets a branch links by its own name: a `BranchFact`'s `links`."""
    number = branch_issue(branch)
    return frozenset() if number is None else frozenset({number})


def pull_request_links(body: str | None, head_ref: str, repository: str) -> frozenset[int]:
    """The tickets a pull request links by its own content, its body's closing keywords and its head
    branch's name: a `PullRequestFact`'s `links`. Computed from the current body, so an edit that drops
    `Fixes #42` unlinks 42 (unless the head branch still carries it)."""
    return frozenset(linked_issues(body or "", repository)) | branch_links(head_ref)
