"""Which entries of an issue's timeline name a pull request of the same repository (`cross_referenced`)."""

from __future__ import annotations

from typing import Any

import pytest

from baton.github.verify import cross_referenced


def entry(number: int, repository: str = "octo/shop", *, pull: bool = True, event: str = "cross-referenced") -> Any:
    source: dict[str, Any] = {"number": number, "repository_url": f"https://api.github.com/repos/{repository}"}
    if pull:
        source["pull_request"] = {"url": f"https://api.github.com/repos/{repository}/pulls/{number}"}
    return {"event": event, "source": {"type": "issue", "issue": source}}


@pytest.mark.parametrize(
    ("item", "found"),
    [
        (entry(57), 57),
        (entry(57, "Octo/Shop"), 57),  # GitHub's names are not case-sensitive
        (entry(57, pull=False), None),  # an issue that mentions it is no work
        (entry(57, "octo/other"), None),  # another repository's pull request is not this one's
        (entry(57, "someone/octo/shop"), None),
        (entry(57, event="referenced"), None),
        ({"event": "cross-referenced", "source": None}, None),
        ({"event": "cross-referenced"}, None),
        ("cross-referenced", None),
    ],
)
def test_a_timeline_entry_names_a_pull_request_of_the_same_repository(item: Any, found: int | None) -> None:
    assert cross_referenced(item, "octo/shop") == found
