"""Where the App is installed, as GitHub says it: its installations (`GET /app/installations`, the App's JWT),
the repositories each one reaches (`GET /installation/repositories`, the installation's token) and the
installation holding one repository (`GET /repos/{owner}/{repo}/installation`, the App's JWT).

Lists are read a page of 100 at a time until a page comes back short. Answers are read leniently, field by
field; an entry without a usable id is left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from githubkit.exception import RequestFailed

from .client import GitHubApp
from .webhooks import Unreadable, full_name, login, number

PAGE = 100
MAX_PAGES = 1000  # a bound on one listing, whatever GitHub answers


@dataclass(frozen=True)
class Installed:
    """One installation of the App: its id, the account it is on, and whether it is suspended."""

    id: int
    account: str
    suspended: bool


def installed(data: Any) -> Installed | None:
    """An installation object as GitHub shows it; None without an id."""
    if not isinstance(data, dict):
        return None
    try:
        found, account = number(data, "id"), login(data, "account", "login")
    except Unreadable:
        return None
    return None if found is None else Installed(found, account, data.get("suspended_at") is not None)


def repositories_of(data: Any) -> list[tuple[int, str]]:
    """(id, "owner/name") of each repository of a `GET /installation/repositories` page."""
    listed = data.get("repositories") if isinstance(data, dict) else None
    found = []
    for repository in listed if isinstance(listed, list) else []:
        try:
            repository_id, name = number(repository, "id"), full_name(repository, "full_name")
        except Unreadable:
            continue
        if repository_id is not None and name:
            found.append((repository_id, name))
    return found


class GitHubInstallations:
    """Every call raises githubkit's `RequestError` when GitHub fails, refuses or cannot be reached."""

    def __init__(self, github: GitHubApp) -> None:
        self.github = github

    def installations(self) -> list[Installed]:
        """Every installation of the App, suspended ones too."""
        found: list[Installed] = []
        for page in range(1, MAX_PAGES + 1):
            data = self.github.app.rest.apps.list_installations(per_page=PAGE, page=page).json()
            items = data if isinstance(data, list) else []
            found += [one for item in items if (one := installed(item)) is not None]
            if len(items) < PAGE:
                break
        return found

    def repositories(self, installation_id: int) -> list[tuple[int, str]]:
        """(id, "owner/name") of every repository the installation reaches."""
        client = self.github.installation(installation_id)
        found: list[tuple[int, str]] = []
        for page in range(1, MAX_PAGES + 1):
            data = client.rest.apps.list_repos_accessible_to_installation(per_page=PAGE, page=page).json()
            listed = repositories_of(data)
            found += listed
            items = data.get("repositories") if isinstance(data, dict) else None
            if not isinstance(items, list) or len(items) < PAGE:
                break
        return found

    def holding(self, repository: str) -> tuple[Installed, int, str] | None:
        """The installation holding `repository` ("owner/name"), with the repository's id and name as GitHub
        spells it; None where the App is not installed on it (GitHub answers 404)."""
        owner, _, name = repository.partition("/")
        try:
            data = self.github.app.rest.apps.get_repo_installation(owner, name).json()
        except RequestFailed as error:
            if error.response.status_code == 404:
                return None
            raise
        found = installed(data)
        if found is None:
            return None
        if found.suspended:  # its token cannot be minted to read the repository; the status is what matters
            return found, 0, repository
        try:
            shown = self.github.installation(found.id).rest.repos.get(owner, name).json()
        except RequestFailed as error:
            if error.response.status_code == 404:
                return None
            raise
        repository_id = number(shown, "id")
        if repository_id is None:
            return None
        return found, repository_id, full_name(shown, "full_name") or repository
