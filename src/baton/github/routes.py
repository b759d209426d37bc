"""The name of a call to GitHub, for its metrics and log lines: the method and GitHub's route template
(`POST /repos/{owner}/{repo}/issues/{issue_number}/labels`), never the path itself, whose names and numbers
would make a series per issue. The table lists the routes Baton calls; any other is `METHOD other`."""

from __future__ import annotations

import re

ROUTES = (
    "POST /app/installations/{installation_id}/access_tokens",
    "GET /app",
    "GET /repos/{owner}/{repo}",
    "GET /repos/{owner}/{repo}/issues",
    "POST /repos/{owner}/{repo}/issues",
    "GET /repos/{owner}/{repo}/issues/{issue_number}",
    "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
    "GET /repos/{owner}/{repo}/issues/{issue_number}/timeline",
    "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
    "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
    "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
    "POST /repos/{owner}/{repo}/issues/{issue_number}/assignees",
    "DELETE /repos/{owner}/{repo}/issues/{issue_number}/assignees",
    "POST /repos/{owner}/{repo}/issues/{issue_number}/reactions",
    "GET /repos/{owner}/{repo}/issues/comments/{comment_id}",
    "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
    "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
    "POST /repos/{owner}/{repo}/labels",
    "GET /repos/{owner}/{repo}/labels/{name}",
    "GET /repos/{owner}/{repo}/pulls/{pull_number}",
    "GET /repos/{owner}/{repo}/collaborators",
    "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
    "GET /repos/{owner}/{repo}/collaborators/{username}",
    "GET /repos/{owner}/{repo}/contents/{path}",
    "GET /repos/{owner}/{repo}/branches/{branch}",
    "GET /repos/{owner}/{repo}/compare/{basehead}",
    "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
    "POST /repos/{owner}/{repo}/check-runs",
    "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}",
    "GET /orgs/{org}/teams/{team_slug}/memberships/{username}",
    "GET /app/hook/deliveries",
    "POST /app/hook/deliveries/{delivery_id}/attempts",
)


def _pattern(path: str) -> re.Pattern[str]:
    """A route's template as a regular expression: a number where GitHub takes one, a file's path across its
    slashes, any other name within one segment."""

    def part(found: re.Match[str]) -> str:
        name = found.group(1)
        if name == "path":
            return ".+"
        return "[0-9]+" if name.endswith(("_id", "_number")) else "[^/]+"

    return re.compile(re.sub(r"\\\{(\w+)\\\}", part, re.escape(path)))


_TABLE: dict[str, list[tuple[re.Pattern[str], str]]] = {}
for _route in ROUTES:
    _method, _, _path = _route.partition(" ")
    _TABLE.setdefault(_method, []).append((_pattern(_path), _route))


def operation(method: str, path: str) -> str:
    """`path` is the part after the API's base URL, with its leading slash and without the query."""
    for pattern, route in _TABLE.get(method, ()):
        if pattern.fullmatch(path):
            return route
    return f"{method} other"
