"""Misspelt commands: which `/word` lines are near misses of a command, and the one answer for them. Ordinary
prose and other bots' commands must never be taken for one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.domain import RULES, Command
from baton.domain.misspelt import closest, distance, misspelt_text
from baton.reading.commands import MAX_COMMANDS, misspelt, parse


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [("claim", "claim", 0), ("claimm", "claim", 1), ("clam", "claim", 1), ("cliam", "claim", 1),
     ("acept", "accept", 1), ("sendback", "send-back", 1), ("accepted", "accept", 2), ("", "help", 4),
     ("hold", "help", 2), ("abc", "cab", 2)],
)  # fmt: skip
def test_distance(a: str, b: str, expected: int) -> None:
    assert distance(a, b) == expected == distance(b, a)


@pytest.mark.parametrize(
    ("word", "meant"),
    [("claimm", "claim"), ("Claimm", "claim"), ("clam", "claim"), ("cliam", "claim"), ("claims", "claim"),
     ("acept", "accept"), ("accepted", "accept"), ("relase", "release"), ("released", "release"),
     ("deliverd", "deliver"), ("delivered", "deliver"), ("sendback", "send-back"), ("send_back", "send-back"),
     ("withdrew", "withdraw"), ("repoen", "reopen"), ("publsh", "publish"), ("asign", "assign"),
     ("stats", "status"), ("hepl", "help"), ("helo", "help")],
)  # fmt: skip
def test_near_misses_name_the_command_meant(word: str, meant: str) -> None:
    assert closest(word) == meant


@pytest.mark.parametrize(
    "word",
    # other bots' commands (Prow, chat apps, CI), and words too far from any command
    ["frobnicate", "retest", "lgtm", "approve", "hold", "unhold", "cc", "me", "shrug", "giphy", "test",
     "ok-to-test", "kind", "area", "label", "close", "rebase", "merge", "deploy", "rerun", "remind", "todo",
     "done", "note", "design", "resign", "hello", "state", "stat", "check", "unassign", "unclaim", "usr", "etc",
     "api", "tmp", "claiming", "deliveries", "publishing", "claim", "accept", "send-back", "help"],
)  # fmt: skip
def test_other_words_are_no_near_miss(word: str) -> None:
    assert closest(word) is None


# Ordinary prose with slashes, and lines that are never commands: none of them is answered.
PROSE = [
    "see /usr/bin or /etc/hosts",
    "/usr/bin/env python",
    "/etc/hosts has the entry",
    "and/or",
    "the /api/v1 route returns 404",
    "/api/v1/tickets is slow",
    "/tmp is full",
    "/claim.",
    "/claimm, please",
    "/acept!",
    "- /claimm",
    "> /claimm",
    "`/claimm`",
    "    /claimm",
    "```\n/claimm\n```",
    "<!-- /claimm -->",
    "<pre>\n/acept\n</pre>",
    "I will /claimm it later",
    "/cc @octo/reviewers",
    "/cc",
    "/me",
    "/frobnicate the widget",
    "/retest please",
    "/assign @someone",  # a command: answered as one, not as a misspelling
    "/unassign @someone",
    "/test all",
    "/kind bug",
    "/me waves",
    "/s/foo/bar/",
    "//claimm",
    "/ claimm",
    "/clа1m",
    "／claimm",
    "/cla\u0131mm",
    "/2024-01-01 release notes",
    "a URL: https://example.com/claimm",
    "path: src/acept.ts",
    "/",
    "",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_holds_no_misspelt_command(text: str) -> None:
    assert misspelt(text) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [("/claimm", ["claimm"]), ("/Claimm rev=3", ["claimm"]), ("   /acept looks good", ["acept"]),
     ("/claimm\n/acept\n/claimm", ["claimm", "acept"]), ("hello\n/claim\n/delivr done", ["delivr"]),
     ("/relase\r\n/stats", ["relase", "stats"]), ("/claimm\n```\n/acept\n```", ["claimm"])],
)  # fmt: skip
def test_near_misses_are_found_once_each_in_order(text: str, found: list[str]) -> None:
    assert misspelt(text) == found


@pytest.mark.parametrize(
    ("text", "found"),
    [("/frobnicate", ["frobnicate"]), ("/retest", ["retest"]), ("  /LGTM  ", ["lgtm"]), ("/ok-to-test", ["ok-to-test"]),
     ("/claim\n/frobnicate", ["frobnicate"]), ("hello\n/hold\nthanks", ["hold"])],
)  # fmt: skip
def test_a_line_of_nothing_but_an_unknown_word_is_answered_however_far_it_is(text: str, found: list[str]) -> None:
    assert misspelt(text) == found


def test_a_near_miss_is_no_command_and_leaves_the_commands_as_they_were() -> None:
    # the line stays the free text of the command before it, as any line that is no command does
    assert parse("/claim\n/acept\nnote") == [Command("claim", text="/acept\nnote")]
    assert [c.name for c in parse("/claimm\n/status")] == ["status"]


def test_at_most_max_commands_are_read() -> None:
    words = [f"claim{'m' * n}" for n in range(1, 3)] + [f"acep{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    assert len(misspelt("\n".join(f"/{w}" for w in words))) <= MAX_COMMANDS


def test_the_answer() -> None:
    assert misspelt_text(["claimm"]) == (
        "`/claimm` is not a command; did you mean `/claim`? /help lists the commands you may use."
    )
    assert misspelt_text(["claimm", "acept", "claimm"]) == (
        "`/claimm` and `/acept` are not commands; did you mean `/claim` and `/accept`? "
        "/help lists the commands you may use."
    )
    assert misspelt_text(["claimm", "clam", "acept"]) == (
        "`/claimm`, `/clam` and `/acept` are not commands; did you mean `/claim` and `/accept`? "
        "/help lists the commands you may use."
    )
    assert misspelt_text(["frobnicate"]) == (
        "`/frobnicate` is not a command; the closest is `/release`. /help lists the commands you may use."
    )
    assert misspelt_text(["retest", "hold"]) == (
        "`/retest` and `/hold` are not commands; the closest are `/release` and `/help`. "
        "/help lists the commands you may use."
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["/", "/claimm", "/usr/bin", " ", "\n", "> ", "```", "a", "/acept", "x/y"])).map("".join)
)
def test_every_word_found_is_close_to_a_command_or_alone_on_its_line(text: str) -> None:
    lines = {line.strip().lower() for line in text.splitlines()}
    for word in misspelt(text):
        assert word not in RULES
        assert closest(word) is not None or f"/{word}" in lines
