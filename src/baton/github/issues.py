"""A repository's open issues, as GitHub's list-repository-issues API gives them (read-only).

That API lists pull requests too (they are issues to GitHub); they carry a `pull_request` key and are
left out here. Pages of 100 are read until one comes back short.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from githubkit.exception import RequestFailed

from baton.domain.issue import LinkCounts, Linked

from .client import GitHubApp
from .webhooks import dig, issue_number, login, number, text

PAGE = 100
TIMELINE_PAGES = 10  # an issue with more than a thousand timeline entries is read no further
LINK_PAGES = 10  # GitHub keeps far fewer links to one issue than that many pages hold


@dataclass(frozen=True)
class OpenIssue:
    number: int
    author: str
    body: str
    labels: tuple[str, ...]
    title: str = ""
    links: LinkCounts | None = None


class NotOpened(RuntimeError):
    """GitHub did not open the issue Baton asked for (it refused, failed or could not be reached)."""


def open_issue(data: Any) -> OpenIssue | None:
    """One listed item as an issue; None for a pull request or an item without a number."""
    if not isinstance(data, dict) or data.get("pull_request") is not None:
        return None
    found = issue_number(data, "number")
    if found is None or text(data, "state") not in ("", "open"):
        return None
    return OpenIssue(found, login(data, "user", "login"), text(data, "body"), label_names(data), text(data, "title"),
                     link_counts(data))  # fmt: skip


def _count(issue: Any, *path: str) -> int | None:
    value = dig(issue, *path)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def link_counts(issue: Any) -> LinkCounts | None:
    """What an issue object (a webhook's or the REST API's) says of its links; None when it carries no summaries
    Baton can read (a GitHub that has none)."""
    counts = (_count(issue, "issue_dependencies_summary", "total_blocked_by"),
              _count(issue, "issue_dependencies_summary", "blocked_by"), _count(issue, "sub_issues_summary", "total"),
              _count(issue, "sub_issues_summary", "completed"))  # fmt: skip
    if counts[0] is None and counts[2] is None:
        return None
    return LinkCounts(*(value or 0 for value in counts))


def _linked_issue(data: Any) -> tuple[str, int, bool] | None:
    """One listed linked issue as (owner/repo, number, open); its repository from `repository_url`."""
    found = issue_number(data, "number")
    repository = "/".join(text(data, "repository_url").rstrip("/").split("/")[-2:])
    if found is None or repository.count("/") != 1 or repository.startswith("/"):
        return None
    return repository, found, text(data, "state") != "closed"


def label_names(issue: Any) -> tuple[str, ...]:
    """The names of an issue's labels (of the issue as a webhook or the REST API shows it)."""
    labels = dig(issue, "labels", default=[])
    return tuple(text(label, "name") for label in labels if text(label, "name")) if isinstance(labels, list) else ()


class GitHubIssues:
    def __init__(self, github: GitHubApp) -> None:
        self.github = github

    def open_issues(self, installation_id: int, repository: str) -> Iterator[OpenIssue]:
        """The repository's open issues, oldest first, without its pull requests."""
        owner, _, name = repository.partition("/")
        client = self.github.installation(installation_id)
        page = 1
        while True:
            response = client.rest.issues.list_for_repo(
                owner, name, state="open", sort="created", direction="asc", per_page=PAGE, page=page
            )
            items: Any = response.json()
            if not isinstance(items, list):
                return
            for item in items:
                found = open_issue(item)
                if found is not None:
                    yield found
            if len(items) < PAGE:
                return
            page += 1

    def issue(self, installation_id: int, repository: str, number: int) -> OpenIssue | None:
        """One open issue; None when GitHub has none of that number (or it is a pull request, or closed)."""
        owner, _, name = repository.partition("/")
        try:
            data: Any = self.github.installation(installation_id).rest.issues.get(owner, name, number).json()
        except RequestFailed as error:
            if error.response.status_code in (404, 410):
                return None
            raise
        return open_issue(data)

    def linked(self, installation_id: int, repository: str, number: int) -> Linked:
        """The issue's blockers (`GET …/dependencies/blocked_by`) and sub-issues (`GET …/sub_issues`), every page."""
        owner, _, name = repository.partition("/")
        rest = self.github.installation(installation_id).rest.issues
        lists = []
        for read in (rest.list_dependencies_blocked_by, rest.list_sub_issues):
            found: list[tuple[str, int, bool]] = []
            for page in range(1, LINK_PAGES + 1):
                items: Any = read(owner, name, number, per_page=PAGE, page=page).json()
                if not isinstance(items, list):
                    break
                found.extend(one for one in map(_linked_issue, items) if one is not None)
                if len(items) < PAGE:
                    break
            lists.append(tuple(found))
        return Linked(*lists)

    def is_open(self, installation_id: int, repository: str, number: int) -> bool:
        """Whether GitHub has an open issue of that number (a closed, missing or unreadable one is not)."""
        return self.issue(installation_id, repository, number) is not None

    def closing_commit(self, installation_id: int, repository: str, number: int) -> str | None:
        """The commit that closed the issue last (a merged pull request's, or a push's), from its timeline's
        last `closed` event; None when a person closed it (or GitHub shows no close)."""
        owner, _, name = repository.partition("/")
        client = self.github.installation(installation_id)
        last: Any = None
        for page in range(1, TIMELINE_PAGES + 1):
            response = client.rest.issues.list_events_for_timeline(owner, name, number, per_page=PAGE, page=page)
            items: Any = response.json()
            if not isinstance(items, list):
                break
            last = next((item for item in reversed(items) if isinstance(item, dict) and item.get("event") == "closed"),
                        last)  # fmt: skip
            if len(items) < PAGE:
                break
        commit = last.get("commit_id") if isinstance(last, dict) else None
        return commit if isinstance(commit, str) and commit else None

    def create(self, installation_id: int, repository: str, title: str, body: str, labels: list[str]) -> OpenIssue:
        """Open an issue as the App; it is returned as GitHub made it. Raises `NotOpened`."""
        owner, _, name = repository.partition("/")
        client = self.github.installation(installation_id)
        try:
            data: Any = client.rest.issues.create(owner, name, title=title, body=body, labels=labels).json()
        except RequestFailed as error:
            raise NotOpened(f"GitHub answered {error.response.status_code} when asked to open it") from None
        except httpx.HTTPError as error:
            raise NotOpened(f"GitHub could not be reached ({type(error).__name__})") from None
        made = open_issue(data)
        if made is None:
            raise NotOpened("GitHub's answer holds no issue")
        return made

    def repository_id(self, installation_id: int, repository: str) -> int | None:
        owner, _, name = repository.partition("/")
        data = self.github.installation(installation_id).rest.repos.get(owner, name).json()
        return number(data, "id") if isinstance(data, dict) else None
