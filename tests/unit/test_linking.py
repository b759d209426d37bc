"""Closing keywords: which issues a pull request's description links."""

from __future__ import annotations

import pytest

from baton.reading.linking import KEYWORDS, linked_issues

REPO = "octo/shop"


@pytest.mark.parametrize("keyword", [*KEYWORDS, "FIXES", "Closes", "ReSoLvEd"])
def test_every_closing_keyword_in_any_case(keyword: str) -> None:
    assert linked_issues(f"{keyword} #42", REPO) == [42]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Fixes #42", [42]),
        ("fixes: #42", [42]),
        ("This PR closes octo/shop#42 and resolves #43.", [42, 43]),
        ("Closes OCTO/Shop#42", [42]),
        ("Resolves https://github.com/octo/shop/issues/42", [42]),
        ("fixes https://ghe.example.com/octo/shop/issues/7", [7]),
        ("Fixes #42, fixes #42 again", [42]),
        ("Fixes other/repo#42", []),
        ("Resolves https://github.com/other/repo/issues/42", []),
        ("Refs #42", []),
        ("#42", []),
        ("prefixes #42", []),
        ("fix#42", []),
        ("see https://github.com/octo/shop/pull/42", []),
        ("", []),
        ("Fixes #42\r\nCloses #43", [42, 43]),
    ],
    ids=["plain", "colon", "two", "case-repo", "url", "enterprise-url", "dedupe", "other-repo", "other-url",
         "refs", "bare", "inside-word", "no-space", "pull-url", "empty", "crlf"],
)  # fmt: skip
def test_references(body: str, expected: list[int]) -> None:
    assert linked_issues(body, REPO) == expected


def test_a_long_body_is_read_in_linear_time() -> None:
    body = ("fixes " * 20_000) + "#1 " + "x" * 100_000
    assert linked_issues(body, REPO) == [1]
