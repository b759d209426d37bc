"""The comment parser, `/help`'s list and `docs/commands.md`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.domain.model import Command, Evidence
from baton.domain.transitions import RULES
from baton.reading.commands import MAX_COMMANDS, commands_markdown, help_text, ignored_text, misspelt, parse, read

C = Command
E = Evidence

FENCED_TESTS = """\
/deliver Fixed the parser.
- branch: `fix/parser`
* Commit: 0a1b2c3
pr: https://github.com/octo/repo/pull/57
tests: https://ci.example/run/1
tests:
```console
$ pytest -q
  12 passed
```
screenshot: ![the board](https://example.com/board.png)
screenshots: https://example.com/second.png
branch: ignored-second-branch
pr: #99
"""

FENCED_TESTS_TEXT = FENCED_TESTS.strip().removeprefix("/deliver ")

PARSES = [
    # ------------------------------------------------------------------ plain commands and near misses
    ("/claim", [C("claim")], "bare"),
    ("/Claim", [C("claim")], "capitalised"),
    ("/CLAIM", [C("claim")], "upper-case"),
    ("   /claim", [C("claim")], "three-space-indent"),
    ("/claim   ", [C("claim")], "trailing-spaces"),
    ("/claim\tnow", [C("claim", text="now")], "tab-separator"),
    ("/send-back needs tests", [C("send-back", text="needs tests")], "hyphenated-name"),
    ("/claim I will take this", [C("claim", text="I will take this")], "trailing-text"),
    ("> /claim", [], "block-quote"),
    (">/claim", [], "block-quote-no-space"),
    ("> > /claim", [], "nested-block-quote"),
    ("  > /claim", [], "indented-block-quote"),
    ("`/claim`", [], "inline-code"),
    ("use `/claim` to take it", [], "inline-code-mid-line"),
    ("x /claim", [], "mid-line"),
    ("```\n/claim\n```", [], "backtick-fence"),
    ("~~~\n/claim\n~~~", [], "tilde-fence"),
    ("```python\n/claim\n```\n/status", [C("status")], "fence-with-info-string"),
    ("  ```\n/claim\n  ```\n/status", [C("status")], "indented-fence"),
    ("````\n/claim\n```\n/release\n````\n/status", [C("status")], "longer-fence-needs-longer-close"),
    ("~~~\n/claim\n```\n/release\n~~~\n/status", [C("status")], "fence-closed-by-same-char"),
    ("```\n/claim\n/release", [], "unclosed-fence"),
    ("``` not `a` fence\n/claim", [C("claim")], "backtick-info-with-backtick-is-not-a-fence"),
    ("    /claim", [], "indented-four-spaces"),
    ("\t/claim", [], "tab-indented"),
    ("  \t/claim", [], "spaces-then-tab"),
    ("<!-- /claim -->", [], "html-comment-one-line"),
    ("<!--\n/claim\n-->", [], "html-comment-multi-line"),
    ("<!--\n/claim", [], "unclosed-html-comment-at-line-start"),
    ("note <!-- hidden\n/claim\n-->\n/status", [C("status")], "inline-comment-spanning-lines"),
    ("a <!-- b --> c\n/claim", [C("claim")], "comment-closed-on-its-line"),
    ("<!-- a -->\n/claim", [C("claim")], "command-after-comment"),
    ("--> <!-- x\n/claim\n-->\n/status", [C("status")], "comment-opened-after-a-stray-close"),
    (
        "I fixed `<!--` handling\n/claim",
        [C("claim")],
        "never-closed-inline-comment-is-literal",
    ),
    (
        "a <!-- b\n\n/claim\n-->",
        [C("claim", text="-->")],
        "inline-comment-ends-at-blank-line",
    ),
    # ------------------------------------------------------------------ HTML code, shown as code by GitHub
    ("<pre>\n/claim\n</pre>", [], "pre"),
    ("<pre>\n/claim\n</pre>\n/status", [C("status")], "command-after-pre"),
    ("<PRE>\n/claim\n</Pre>\n/status", [C("status")], "pre-any-case"),
    ('<pre class="x" lang=sh>\n/claim\n</pre>\n/status', [C("status")], "pre-with-attributes"),
    ("<pre\nclass=x>\n/claim\n</pre>\n/status", [C("status")], "pre-attributes-on-the-next-line"),
    ("   <pre>\n/claim\n</pre>", [], "indented-pre"),
    ("<pre>\n/claim\n\n/release\n</pre>\n/status", [C("status")], "pre-across-blank-lines"),
    ("<pre>\n/claim", [], "unclosed-pre-at-line-start"),
    ("<pre>/claim</pre>\n/status", [C("status")], "pre-on-one-line"),
    ("<pre><code>\n/claim\n</code></pre>\n/status", [C("status")], "pre-and-code"),
    ("<code>\n/claim\n</code>", [], "code"),
    ("<CODE class=x>\n/claim\n</CODE>\n/status", [C("status")], "code-any-case-with-attributes"),
    ("see <code>a\n/claim\n</code>\n/status", [C("status")], "code-opened-mid-line"),
    ("see <code>a\n\n/claim\n</code>", [C("claim", text="</code>")], "mid-line-code-ends-at-blank-line"),
    ("a <code>b</code> c\n/claim", [C("claim")], "code-closed-on-its-line"),
    ("<!-- <pre> -->\n/claim", [C("claim")], "pre-inside-a-comment"),
    ("<pre>\n<!--\n</pre>\n/claim", [C("claim")], "comment-inside-pre"),
    ("<preview>\n/claim", [C("claim")], "preview-is-not-pre"),
    ("<codex>\n/claim", [C("claim")], "codex-is-not-code"),
    ("<code/>\n/claim", [C("claim")], "self-closed-code"),
    ("</pre>\n/claim", [C("claim")], "stray-close"),
    ("```\n<pre>\n```\n/claim", [C("claim")], "pre-in-a-fence"),
    (
        "/deliver\n<pre>\nbranch: hidden\n</pre>\nbranch: real",
        [C("deliver", text="<pre>\nbranch: hidden\n</pre>\nbranch: real", evidence=E(branch="real"))],
        "evidence-in-pre-ignored",
    ),
    ("/claimed", [], "longer-word"),
    ("/claim,", [], "trailing-comma"),
    ("/claim.", [], "trailing-period"),
    ("／claim", [], "fullwidth-slash"),
    ("/usr/bin/env python", [], "unknown-slash-word"),
    ("/", [], "lone-slash"),
    ("//claim", [], "double-slash"),
    ("/cla\u0131m", [], "dotless-i-is-not-ascii"),
    ("/send-bac\u212a it", [], "kelvin-sign-is-not-k"),
    ("/claim\u00a0now", [C("claim", text="now")], "no-break-space-separator"),
    ("- /claim", [], "list-item"),
    # ------------------------------------------------------------------ line endings
    ("/claim rev=3\r\n/release\r\n", [C("claim", rev=3), C("release")], "crlf"),
    ("/claim\rhi\r/status", [C("claim", text="hi"), C("status")], "lone-cr"),
    ("a\r\n```\r\n/claim\r\n```\r\n/help", [C("help")], "crlf-fence"),
    # ------------------------------------------------------------------ arguments
    ("/claim rev=19", [C("claim", rev=19)], "rev"),
    ("/claim REV=7", [C("claim", rev=7)], "rev-any-case"),
    ("/claim rev=abc", [C("claim", text="rev=abc")], "rev-not-a-number"),
    ("/claim rev=", [C("claim", text="rev=")], "rev-empty"),
    ("/claim rev=-1", [C("claim", text="rev=-1")], "rev-negative"),
    ("/claim rev=1" + "0" * 40, [C("claim", text="rev=1" + "0" * 40)], "rev-too-long"),
    ("/claim rev=١٩", [C("claim", text="rev=١٩")], "rev-arabic-indic-digits"),
    ("/assign @octo-cat", [C("assign", user="octo-cat")], "user"),
    ("/release @dependabot[bot]", [C("release", user="dependabot[bot]")], "bot-user"),
    ("/assign @-bad", [C("assign", text="@-bad")], "user-leading-hyphen"),
    ("/assign @" + "a" * 40, [C("assign", text="@" + "a" * 40)], "user-too-long"),
    ("/assign @alice,", [C("assign", text="@alice,")], "user-with-comma"),
    ("/assign @ユーザー", [C("assign", text="@ユーザー")], "user-not-ascii"),
    ("/accept #42", [C("accept", issue=42)], "issue"),
    ("/accept #42 looks good", [C("accept", issue=42, text="looks good")], "issue-then-text"),
    ("/accept #４２", [C("accept", text="#４２")], "issue-fullwidth-digits"),
    ("/send-back it breaks in #3", [C("send-back", text="it breaks in #3")], "issue-inside-text"),
    (
        "/assign rev=4 @bob #7 please",
        [C("assign", rev=4, user="bob", issue=7, text="please")],
        "rev-user-issue",
    ),
    (
        "/assign #7 @bob rev=4 please",
        [C("assign", rev=4, user="bob", issue=7, text="please")],
        "issue-user-rev",
    ),
    ("/assign @bob rev=4", [C("assign", rev=4, user="bob")], "user-rev"),
    ("/assign @alice @bob", [C("assign", user="alice", text="@bob")], "second-user-is-text"),
    ("/accept #1 #2", [C("accept", issue=1, text="#2")], "second-issue-is-text"),
    ("/claim rev=1 rev=2", [C("claim", rev=1, text="rev=2")], "second-rev-is-text"),
    ("/claim ok rev=3", [C("claim", text="ok rev=3")], "arguments-only-before-text"),
    ("/claim\nrev=3", [C("claim", text="rev=3")], "arguments-only-on-the-command-line"),
    # ------------------------------------------------------------------ unicode
    ("🎉 done\n/claim 🚀 on it", [C("claim", text="🚀 on it")], "emoji"),
    ("/accept 很好，谢谢", [C("accept", text="很好，谢谢")], "cjk"),
    ("/reopen שלום עולם", [C("reopen", text="שלום עולם")], "rtl"),
    (
        "/accept @bob #5 ✅ 合格 مرحبا",
        [C("accept", user="bob", issue=5, text="✅ 合格 مرحبا")],
        "unicode-after-arguments",
    ),
    ("/assign rev=2 @bob\u200b", [C("assign", rev=2, text="@bob\u200b")], "zero-width-space-in-user"),
    ("\u200b/claim", [], "zero-width-space-before-slash"),
    # ------------------------------------------------------------------ several commands and free text
    (
        "Hi team.\n\n/claim rev=2\nStarting now.\n\n/release\n/status\n\nbye",
        [C("claim", rev=2, text="Starting now."), C("release"), C("status", text="bye")],
        "several-in-order",
    ),
    ("preamble only\n/status", [C("status")], "text-before-first-command-is-nobodys"),
    (
        "/withdraw\n\n\n  Out of scope.  \n  Sorry.\n\n",
        [C("withdraw", text="Out of scope.  \n  Sorry.")],
        "text-stripped",
    ),
    (
        "/send-back fails:\n```\n/claim\nTraceback\n```\n/status",
        [C("send-back", text="fails:\n```\n/claim\nTraceback\n```"), C("status")],
        "fence-belongs-to-text-verbatim",
    ),
    (
        "/reopen see below\n> /claim quoted\n    /release indented",
        [C("reopen", text="see below\n> /claim quoted\n    /release indented")],
        "non-commands-stay-in-text",
    ),
    ("/claim\n/claim", [C("claim"), C("claim")], "repeated"),
    # ------------------------------------------------------------------ evidence
    (
        FENCED_TESTS,
        [
            C(
                "deliver",
                text=FENCED_TESTS_TEXT,
                evidence=E(
                    branch="fix/parser",
                    commit="0a1b2c3",
                    pull_request=57,
                    tests=("https://ci.example/run/1", "$ pytest -q\n  12 passed"),
                    screenshots=("https://example.com/board.png", "https://example.com/second.png"),
                ),
            )
        ],
        "deliver-every-evidence-kind",
    ),
    (
        "/deliver pr: #12\nPR : 13",
        [C("deliver", text="pr: #12\nPR : 13", evidence=E(pull_request=12))],
        "evidence-on-the-command-line",
    ),
    ("/deliver\npr: 57", [C("deliver", text="pr: 57", evidence=E(pull_request=57))], "pr-number"),
    (
        "/deliver\npr: soon\npr: https://github.com/o/r/pull/57/files\npr: #8",
        [
            C(
                "deliver",
                text="pr: soon\npr: https://github.com/o/r/pull/57/files\npr: #8",
                evidence=E(pull_request=8),
            )
        ],
        "pr-bad-values-ignored",
    ),
    (
        "/deliver\nbranch:\nbranch: main",
        [C("deliver", text="branch:\nbranch: main", evidence=E(branch="main"))],
        "empty-value-does-not-win",
    ),
    (
        "/deliver\nscreenshot: see attached\nscreenshot: <https://x.test/a.png>",
        [
            C(
                "deliver",
                text="screenshot: see attached\nscreenshot: <https://x.test/a.png>",
                evidence=E(screenshots=("https://x.test/a.png",)),
            )
        ],
        "screenshot-needs-a-url",
    ),
    (
        '/deliver\nscreenshot: ![a](https://x.test/1.png "one") ![b](https://x.test/2.png)',
        [
            C(
                "deliver",
                text='screenshot: ![a](https://x.test/1.png "one") ![b](https://x.test/2.png)',
                evidence=E(screenshots=("https://x.test/1.png", "https://x.test/2.png")),
            )
        ],
        "several-images-on-a-line",
    ),
    (
        "/deliver\n  tests:\n  ~~~\n  ok\n   indented\n  ~~~",
        [
            C(
                "deliver",
                text="tests:\n  ~~~\n  ok\n   indented\n  ~~~",
                evidence=E(tests=("ok\n indented",)),
            )
        ],
        "tests-fence-indent-removed",
    ),
    (
        "/deliver\ntests:\n\n```\nok\n```",
        [C("deliver", text="tests:\n\n```\nok\n```")],
        "tests-fence-must-be-next-line",
    ),
    (
        "/deliver\ntests:\n```\n```",
        [C("deliver", text="tests:\n```\n```")],
        "tests-empty-fence-ignored",
    ),
    (
        "/deliver\ntests:\n```\nstill running",
        [C("deliver", text="tests:\n```\nstill running", evidence=E(tests=("still running",)))],
        "tests-unclosed-fence",
    ),
    (
        "/deliver\n```\nbranch: in-code\n```\n> branch: quoted\n<!--\nbranch: hidden\n-->\nbranch: real",
        [
            C(
                "deliver",
                text="```\nbranch: in-code\n```\n> branch: quoted\n<!--\nbranch: hidden\n-->\nbranch: real",
                evidence=E(branch="real"),
            )
        ],
        "evidence-outside-code-quotes-and-comments-only",
    ),
    (
        "branch: before\n/deliver\ncolour: blue",
        [C("deliver", text="colour: blue")],
        "evidence-only-in-the-command-text",
    ),
    (
        "/deliver\nbranch: a\n/deliver\ncommit: b",
        [
            C("deliver", text="branch: a", evidence=E(branch="a")),
            C("deliver", text="commit: b", evidence=E(commit="b")),
        ],
        "evidence-split-between-commands",
    ),
    # ------------------------------------------------------------------ odd input
    ("", [], "empty"),
    ("   \n\t\n", [], "whitespace"),
    ("\x00/claim\n/claim \x00", [C("claim", text="\x00")], "nul"),
    ("/claim\x00", [], "nul-glued-to-name"),
    ("\n\n/help\n\n", [C("help")], "blank-lines-around"),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for t, e, _ in PARSES], ids=[i for *_, i in PARSES])
def test_parse(text: str, expected: list[Command]) -> None:
    assert parse(text) == expected


def test_ids_are_unique() -> None:
    ids = [i for *_, i in PARSES]
    assert len(ids) == len(set(ids))


def test_every_registered_command_parses() -> None:
    text = "\n".join(f"/{name} x" for name in RULES)
    assert [command.name for command in parse(text)] == list(RULES)


def test_large_comment_finds_first_and_last_command() -> None:
    filler = ("lorem ipsum /claim dolor `x` <!-- -->\n" * 2000)[: 64 * 1024]
    text = "/claim rev=1\n" + filler + "\n/release @bob"
    assert len(text) > 64 * 1024
    commands = parse(text)
    assert [(c.name, c.rev, c.user) for c in commands] == [("claim", 1, None), ("release", None, "bob")]
    assert commands[0].text == filler.strip()


def test_large_single_line() -> None:
    text = "/reopen " + "word " * 13_000
    (command,) = parse(text)
    assert command.name == "reopen"
    assert command.text == ("word " * 13_000).strip()


@pytest.mark.parametrize(
    "text",
    [
        "<!--" * 16_000,
        "x <!--\n" * 9_000,
        "x <!--\n\n" * 8_000 + "-->",
        "```\n" * 16_000,
        "/deliver\nscreenshot: " + "![" * 32_000,
        "/deliver\n" + "tests:\n```\n" * 5_000,
        " " * 65_000 + "/claim",
        "/" * 65_000,
        "<pre>" * 13_000,
        "x <code>\n" * 7_000,
        "<!-- -->" + "<prex" * 13_000 + "<pre>",
        "<!-- x --> " * 6_000 + "\n/claim",
    ],
    ids=[
        "comment-opens",
        "inline-opens",
        "opens-and-blanks",
        "fences",
        "images",
        "test-fences",
        "spaces",
        "slashes",
        "pre-opens",
        "inline-code-opens",
        "near-miss-tags",
        "many-closed-comments",
    ],
)
def test_pathological_inputs_parse(text: str) -> None:
    commands = parse(text)
    assert all(command.name in RULES for command in commands)


def test_ten_thousand_commands() -> None:
    commands = parse("/claim\n" * 10_000)
    assert len(commands) == 10_000
    assert set(commands) == {C("claim")}


def test_read_takes_the_first_commands_and_counts_the_rest() -> None:
    text = "".join(f"/claim rev={n}\nnote {n}\n" for n in range(1, 10_001))
    commands, ignored = read(text)
    assert commands == [C("claim", rev=n, text=f"note {n}") for n in range(1, MAX_COMMANDS + 1)]
    assert ignored == 10_000 - MAX_COMMANDS
    assert read("/claim\n" * MAX_COMMANDS) == (parse("/claim\n" * MAX_COMMANDS), 0)
    assert read("<pre>\n" + "/claim\n" * 100 + "</pre>\n/status") == ([C("status")], 0)  # hidden ones don't count


def test_the_last_command_read_keeps_its_text_up_to_the_first_ignored_one() -> None:
    text = "/status\n" * (MAX_COMMANDS - 1) + "/deliver done\nbranch: b\n/claim\nmore"
    commands, ignored = read(text + "\n/claim")
    assert commands[-1] == C("deliver", text="done\nbranch: b", evidence=E(branch="b"))
    assert ignored == 2


def test_ignored_text() -> None:
    assert ignored_text(1) == (
        f"only the first {MAX_COMMANDS} commands of a comment are read: the other command in this one was "
        "ignored. Send them in another comment."
    )
    assert "the other 5 commands in this one were ignored" in ignored_text(5)


FRAGMENTS = st.sampled_from(
    [
        "/claim", "/Release", "/send-back", "/deliver", "/usr", "/", " ", "   ", "\t", "\n", "\r", "\r\n",
        "```", "~~~", "````", "`", ">", "<!--", "-->", "<pre>", "</pre>", "<code x>", "</CODE>", "<pre",
        "rev=1", "rev=x", "@bob", "@a[bot]", "#4", "#",
        "branch:", "tests:", "screenshot: ![a](https://x.y/z.png)", "pr: #5", "pr:", "text", "é", "🎉",
        "\x00", "\u2028", "\x85", "／",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.lists(st.one_of(FRAGMENTS, st.text(max_size=3))).map("".join)))
def test_parse_never_raises_and_names_are_registered(text: str) -> None:
    commands = parse(text)
    assert all(command.name in RULES for command in commands)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not any(line.lstrip(" ").startswith("/") for line in lines):
        assert commands == []


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(RULES)),
    st.text(alphabet=st.characters(blacklist_characters="\r\n")),
)
def test_command_line_keeps_unicode_text(name: str, words: str) -> None:
    text = f"/{name} ~{words}~"
    assert parse(text) == [C(name, text=f"~{words}~")]


def test_help_text_lists_given_rules_in_order() -> None:
    rules = [RULES["status"], RULES["claim"], RULES["help"]]
    assert help_text(rules) == (
        f"- `/status` — {RULES['status'].summary}\n"
        f"- `/claim [rev=N]` — {RULES['claim'].summary}\n"
        f"- `/help` — {RULES['help'].summary}"
    )
    assert help_text([]) == ""


def test_commands_markdown_has_a_row_per_rule() -> None:
    markdown = commands_markdown()
    assert markdown.startswith("# ")
    assert markdown == commands_markdown()
    for rule in RULES.values():
        sources = ", ".join(state.value for state in rule.sources) or "any"
        target = rule.target.value if rule.target else "—"
        row = f"| `{rule.usage}` | {rule.summary} | {rule.who} | {sources} | {target} |"
        assert row in markdown.splitlines(), rule.name
    for key in ("rev=N", "@user", "#N", "branch:", "commit:", "pr:", "tests:", "screenshot:"):
        assert key in markdown


def test_docs_commands_md_is_current() -> None:
    path = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
    assert path.read_text(encoding="utf-8") == commands_markdown()


def test_a_short_text_read_again_gives_the_same_commands_in_lists_of_its_own() -> None:
    # A race's comments are the same few words: a short text is read once and kept, but no caller sees another's
    # lists (one that changes its list changes nothing for the next).
    text = "/claim rev=2"
    first, again = read(text), read(text)
    assert first == again == ([C("claim", rev=2)], 0)
    first.commands.clear()
    assert read(text).commands == [C("claim", rev=2)]
    typos = misspelt("/claimm")
    assert typos == ["claimm"]
    typos.append("other")
    assert misspelt("/claimm") == ["claimm"]
    long = "/claim rev=2\n" + "x" * 300  # a longer one is read each time, as before
    assert read(long) == read(long) == ([C("claim", rev=2, text="x" * 300)], 0)
