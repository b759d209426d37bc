"""Which issues a pull request links: GitHub's closing keywords in its body. Pure.

`Fixes #42`, `closes octo/shop#42` and `resolves https://github.com/octo/shop/issues/42` link issue 42
of the same repository; any casing; the keyword may be followed by a colon. References to other
repositories are not this repository's tickets and are left out.
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
