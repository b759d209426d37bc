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

from .client import GitHubApp
from .webhooks import dig, issue_number, login, number, text

PAGE = 100
TIMELINE_PAGES = 10  # an issue with more than a thousand timeline entries is read no further


@dataclass(frozen=True)
class OpenIssue:
    number: int
    author: str
    body: str
    labels: tuple[str, ...]
    title: str = ""


class NotOpened(RuntimeError):
    """GitHub did not open the issue Baton asked for (it refused, failed or could not be reached)."""


def open_issue(data: Any) -> OpenIssue | None:
    """One listed item as an issue; None for a pull request or an item without a number."""
    if not isinstance(data, dict) or data.get("pull_request") is not None:
        return None
    found = issue_number(data, "number")
    if found is None or text(data, "state") not in ("", "open"):
        return None
    return OpenIssue(found, login(data, "user", "login"), text(data, "body"), label_names(data), text(data, "title"))


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
