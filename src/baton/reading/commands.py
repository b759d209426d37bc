"""Comment commands: a comment body parsed into `Command`s, and the words that describe the commands.

Pure: standard library and `baton.domain` only. The command names come from `RULES` alone.

A command is a line that starts (after at most three spaces) with `/name`, `name` being a key of
`RULES`, followed by whitespace or the end of the line. Lines in fenced or indented code, block quotes,
inline code, HTML comments and HTML `<pre>` or `<code>` elements are never commands. Only the first
`MAX_COMMANDS` commands of a comment are read (`read`). Every step is linear in the length of the comment:
lines are classified in one pass, searches only move forward, and no pattern can backtrack badly.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from baton.domain.misspelt import SHORTEST, closest
from baton.domain.model import Command, Evidence
from baton.domain.transitions import RULES, Rule

# A number longer than this is not an argument (and never reaches int()'s digit limit).
_MAX_DIGITS = 18

# The most commands one comment (an issue's body, a review) is read for. Each command is decided, recorded
# and answered; a comment of thousands held everyone's commands up for minutes. The rest get one note.
MAX_COMMANDS = 20

_TOKEN = re.compile(r"\S+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")  # what a misspelt command may be: `/usr/bin` or `/claim.` is none
_LOGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\[bot\])?")
# `key: value`, with an optional `- ` or `* ` bullet; the key is checked against _EVIDENCE_KEYS.
_EVIDENCE_LINE = re.compile(r"[ \t]*(?:[-*][ \t]+)?([A-Za-z]{1,16})[ \t]*:(.*)")
_EVIDENCE_KEYS = {
    "branch": "branch",
    "commit": "commit",
    "pr": "pr",
    "tests": "tests",
    "test": "tests",
    "screenshot": "screenshot",
    "screenshots": "screenshot",
}


class _Kind(Enum):
    TEXT = "text"  # outside code and comments (it may still be a quote, indented code, …)
    OPEN = "open"  # the fence that opens a code block
    CODE = "code"  # inside a fenced code block
    CLOSE = "close"  # the fence that closes one
    HIDDEN = "hidden"  # starts inside an HTML comment, <pre> or <code>


# HTML that hides commands: what opens it, and what closes it. A tag opens only where its name ends
# (`<pre>`, `<pre class="x">`, `<code>`; not `<preview>`); tags are matched in any case.
_HIDING = {"<!--": "-->", "<pre": "</pre>", "<code": "</code>"}
_OPENING = re.compile(r"<!--|<(?:pre|code)(?=[ \t>\n]|\Z)")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class _Line(NamedTuple):
    text: str
    kind: _Kind
    indent: int = 0  # for OPEN: the fence's indentation, removed from the block's lines


class _Fence(NamedTuple):
    char: str
    length: int
    indent: int


# ---------------------------------------------------------------------------------------------- lines


def _fence_open(line: str) -> _Fence | None:
    """The fence this line opens, if it is an opening code fence (CommonMark rules)."""
    rest = line.lstrip(" ")
    indent = len(line) - len(rest)
    if indent > 3 or not rest or rest[0] not in "`~":
        return None
    char = rest[0]
    length = len(rest) - len(rest.lstrip(char))
    if length < 3 or (char == "`" and "`" in rest[length:]):
        return None
    return _Fence(char, length, indent)


def _fence_closes(line: str, fence: _Fence) -> bool:
    rest = line.lstrip(" ")
    if len(line) - len(rest) > 3:
        return False
    after = rest.lstrip(fence.char)
    return len(rest) - len(after) >= fence.length and not after.strip(" \t")


class _Finder:
    """`text.find(needle, pos)` for positions that mostly increase, in linear time overall."""

    def __init__(self, text: str, needle: str) -> None:
        self._text = text
        self._needle = needle
        self._from = 0
        self._found = -2  # nothing searched yet

    def find(self, pos: int) -> int:
        cached = self._found != -2 and self._from <= pos and (self._found == -1 or self._found >= pos)
        if not cached:
            self._from = pos
            self._found = self._text.find(self._needle, pos)
        return self._found


def _classify(lines: list[str]) -> list[_Line]:
    """Each line with what it is: ordinary text, a fence, fenced code, or hidden in HTML.

    HTML hides what GitHub does not show as text: a comment `<!-- … -->`, and the code elements
    `<pre …> … </pre>` and `<code …> … </code>` (tag names in any case, with or without attributes). Such
    HTML that starts a line (up to three spaces in) runs to its end or to the end of the text, like
    CommonMark's HTML block. HTML that opens mid-line hides text only if it ends before the next blank
    line (the end of the paragraph); otherwise it is literal text.
    """
    text = "\n".join(lines)
    lowered = text.translate(_ASCII_LOWER)  # the same length: positions carry over
    end_of_text = len(text) + 1
    starts: list[int] = []
    offset = 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    next_blank = [end_of_text] * len(lines)  # where the first blank line after each line starts
    blank = end_of_text
    for i in range(len(lines) - 1, -1, -1):
        next_blank[i] = blank
        if not lines[i].strip(" \t"):
            blank = starts[i]

    openings = [(found.start(), found.group()) for found in _OPENING.finditer(lowered)]
    closers = {opening: _Finder(lowered, closing) for opening, closing in _HIDING.items()}
    upcoming = 0  # the first of `openings` not yet passed; every search below moves forward
    result: list[_Line] = []
    fence: _Fence | None = None
    hidden_end = -1  # where the open hiding HTML ends (exclusive), or -1
    for i, line in enumerate(lines):
        start = starts[i]
        if fence is not None:
            if _fence_closes(line, fence):
                result.append(_Line(line, _Kind.CLOSE))
                fence = None
            else:
                result.append(_Line(line, _Kind.CODE))
            continue
        if start < hidden_end:
            kind = _Kind.HIDDEN
            pos = hidden_end - start
            if pos > len(line):
                result.append(_Line(line, kind))
                continue
        else:
            opened = _fence_open(line)
            if opened is not None:
                fence = opened
                result.append(_Line(line, _Kind.OPEN, opened.indent))
                continue
            kind = _Kind.TEXT
            pos = 0
        hidden_end = -1
        while True:
            while upcoming < len(openings) and openings[upcoming][0] < start + pos:
                upcoming += 1
            if upcoming == len(openings) or openings[upcoming][0] >= start + len(line):
                break
            at, opening = openings[upcoming][0] - start, openings[upcoming][1]
            # `<!-->` is a whole comment, as in CommonMark
            close = closers[opening].find(start + at + (2 if opening == "<!--" else len(opening)))
            block = pos == 0 and at <= 3 and not line[:at].strip(" ")
            if close < 0 and block:
                hidden_end = end_of_text
                break
            if close < 0 or (not block and next_blank[i] < close):
                pos = at + len(opening)  # never closed in its paragraph: literal text
                continue
            end = close + len(_HIDING[opening])
            if end > start + len(line):
                hidden_end = end
                break
            pos = end - start
        result.append(_Line(line, kind))
    return result


# ---------------------------------------------------------------------------------------------- commands


def _number(digits: str) -> int | None:
    if 0 < len(digits) <= _MAX_DIGITS and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def _head(line: str) -> tuple[str, int] | None:
    """The command name a line starts with (lower-case) and where the name ends, or None."""
    indent = len(line) - len(line.lstrip(" "))
    if indent > 3 or line[indent : indent + 1] != "/":
        return None
    token = _TOKEN.match(line, indent)
    if token is None:  # pragma: no cover - the line has a "/" there
        return None
    name = token.group()[1:]
    if not name.isascii() or name.lower() not in RULES:
        return None
    return name.lower(), token.end()


@dataclass
class _Draft:
    """A command being read: its head, and the lines of its free text."""

    name: str
    rev: int | None = None
    user: str | None = None
    issue: int | None = None
    body: list[_Line] = field(default_factory=list)

    def read_arguments(self, line: str, pos: int) -> str:
        """Take the arguments after the name; the rest of the line is the start of the free text.

        Each kind of argument is taken once: a second `rev=`, `@login` or `#N` starts the free text.
        """
        for token in _TOKEN.finditer(line, pos):
            word = token.group()
            if self.rev is None and word[:4].lower() == "rev=" and _number(word[4:]) is not None:
                self.rev = _number(word[4:])
            elif self.user is None and word[:1] == "@" and _LOGIN.fullmatch(word, 1):
                self.user = word[1:]
            elif self.issue is None and word[:1] == "#" and _number(word[1:]) is not None:
                self.issue = _number(word[1:])
            else:
                return line[token.start() :]
        return ""

    def build(self) -> Command:
        text = "\n".join(line.text for line in self.body).strip()
        return Command(self.name, self.rev, self.user, self.issue, text, _evidence(self.body), _summary(self.body))


class Reading(NamedTuple):
    """A comment's commands as read: the first `MAX_COMMANDS`, and how many came after them (ignored)."""

    commands: list[Command]
    ignored: int


def read(text: str) -> Reading:
    """The commands of a comment body that are run: at most `MAX_COMMANDS`. The ones after them are
    only counted, not read."""
    if len(text) > _SHORT:
        return _read(text, MAX_COMMANDS)
    commands, ignored = _read_short(text)
    return Reading(list(commands), ignored)


# A race is many comments of the same few words (`/claim`, one per agent): a short text is read once while it keeps
# coming. What is kept is immutable (commands are frozen); each caller gets lists of its own.
_SHORT = 200


@functools.lru_cache(maxsize=256)
def _read_short(text: str) -> tuple[tuple[Command, ...], int]:
    commands, ignored = _read(text, MAX_COMMANDS)
    return tuple(commands), ignored


def parse(text: str) -> list[Command]:
    """Every command a comment body holds, in order, each with its arguments, free text and evidence."""
    return _read(text, None).commands


def _read(text: str, limit: int | None) -> Reading:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    commands: list[Command] = []
    draft: _Draft | None = None
    ignored = 0
    for line in _classify(lines):
        head = _head(line.text) if line.kind is _Kind.TEXT else None
        if head is not None:
            if draft is not None:
                commands.append(draft.build())
                draft = None
            if limit is not None and len(commands) >= limit:
                ignored += 1
                continue
            name, end = head
            draft = _Draft(name)
            draft.body.append(_Line(draft.read_arguments(line.text, end), _Kind.TEXT))
        elif draft is not None:
            draft.body.append(line)
    if draft is not None:
        commands.append(draft.build())
    return Reading(commands, ignored)


def misspelt(text: str) -> list[str]:
    """The words (lower-case, without the slash) of the lines that would be commands if the word were one and
    that are near misses of a command (`baton.domain.misspelt`), or that hold nothing but the word:
    `/claimm rev=3` and `/frobnicate`, but not `/frobnicate the widget`, `/usr/bin` or `> /claimm`. Each
    once, in order, at most `MAX_COMMANDS`."""
    if "/" not in text:
        return []
    return list(_misspelt_short(text)) if len(text) <= _SHORT else _misspelt(text)


@functools.lru_cache(maxsize=256)
def _misspelt_short(text: str) -> tuple[str, ...]:
    return tuple(_misspelt(text))


def _misspelt(text: str) -> list[str]:
    found: dict[str, None] = {}
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for line in _classify(lines):
        if line.kind is not _Kind.TEXT or len(found) >= MAX_COMMANDS:
            continue
        indent = len(line.text) - len(line.text.lstrip(" "))
        if indent > 3 or line.text[indent : indent + 1] != "/":
            continue
        token = _TOKEN.match(line.text, indent)
        word = token.group()[1:] if token is not None else ""
        # a line of one `/word` (of four letters or more: `/cc`, `/me` are chat's) is addressed to a bot, not prose
        alone = line.text.strip() == f"/{word}" and len(word) >= SHORTEST and word.lower() not in RULES
        if word.isascii() and _WORD.fullmatch(word) and (alone or closest(word) is not None):
            found[word.lower()] = None
    return list(found)


# ---------------------------------------------------------------------------------------------- evidence


def _unwrap(value: str) -> str:
    """A value without one pair of surrounding backticks or angle brackets (`x`, <x>)."""
    value = value.strip()
    if len(value) >= 2 and (value[0], value[-1]) in (("`", "`"), ("<", ">")):
        return value[1:-1].strip()
    return value


def _single(value: str) -> bool:
    return _TOKEN.fullmatch(value) is not None


def _is_url(value: str) -> bool:
    lowered = value[:8].lower()
    prefix = "https://" if lowered.startswith("https://") else "http://"
    return lowered.startswith(prefix) and len(value) > len(prefix) and _single(value)


def _pull_request(value: str) -> int | None:
    """`#57`, `57` or a URL ending in `/pull/57`."""
    value = _unwrap(value)
    if value.startswith("#"):
        return _number(value[1:])
    if _is_url(value):
        _, found, number = value.rpartition("/pull/")
        return _number(number) if found else None
    return _number(value)


def _image_urls(value: str) -> list[str]:
    """The targets of the Markdown images `![alt](url)` in a value, in order."""
    urls: list[str] = []
    pos = 0
    while (start := value.find("![", pos)) >= 0:
        middle = value.find("](", start + 2)
        if middle < 0:
            break
        end = value.find(")", middle + 2)
        if end < 0:
            break
        target = value[middle + 2 : end].split()
        if target and _is_url(_unwrap(target[0])):
            urls.append(_unwrap(target[0]))
        pos = end + 1
    return urls


def _screenshots(value: str) -> list[str]:
    images = _image_urls(value)
    if images:
        return images
    url = _unwrap(value)
    return [url] if _is_url(url) else []


def _summary(body: list[_Line]) -> str:
    """The free text without its evidence lines (and the test output fenced under an empty `tests:`) and
    without what HTML hides."""
    kept: list[str] = []
    in_output = False
    for i, line in enumerate(body):
        if line.kind is _Kind.HIDDEN:
            continue
        if line.kind is not _Kind.TEXT:
            if not in_output:
                kept.append(line.text)
            if line.kind is _Kind.CLOSE:
                in_output = False
            continue
        match = _EVIDENCE_LINE.match(line.text)
        if match is None or match.group(1).lower() not in _EVIDENCE_KEYS:
            kept.append(line.text)
            continue
        following = body[i + 1] if i + 1 < len(body) else None
        key = _EVIDENCE_KEYS[match.group(1).lower()]
        in_output = (
            key == "tests" and not match.group(2).strip() and following is not None and (following.kind is _Kind.OPEN)
        )
    return "\n".join(kept).strip()


def _dedent(line: str, indent: int) -> str:
    """A fenced line without the fence's own indentation (at most `indent` spaces)."""
    kept = line.lstrip(" ")
    return line[min(indent, len(line) - len(kept)) :]


def _evidence(body: list[_Line]) -> Evidence:
    """The `key: value` evidence lines of a command's free text, outside code and comments."""
    branch: str | None = None
    commit: str | None = None
    pull_request: int | None = None
    tests: list[str] = []
    screenshots: list[str] = []
    i = 0
    while i < len(body):
        line = body[i]
        i += 1
        if line.kind is not _Kind.TEXT:
            continue
        match = _EVIDENCE_LINE.match(line.text)
        if match is None or match.group(1).lower() not in _EVIDENCE_KEYS:
            continue
        key = _EVIDENCE_KEYS[match.group(1).lower()]
        value = match.group(2).strip()
        if key == "branch":
            branch = branch or _unwrap(value) or None
        elif key == "commit":
            commit = commit or _unwrap(value) or None
        elif key == "pr":
            pull_request = pull_request if pull_request is not None else _pull_request(value)
        elif key == "screenshot":
            screenshots.extend(_screenshots(value))
        elif value:
            tests.append(value)
        elif i < len(body) and body[i].kind is _Kind.OPEN:
            indent = body[i].indent
            block: list[str] = []
            i += 1
            while i < len(body) and body[i].kind is _Kind.CODE:
                block.append(_dedent(body[i].text, indent))
                i += 1
            output = "\n".join(block)
            if output.strip():
                tests.append(output)
    return Evidence(branch, commit, pull_request, tuple(tests), tuple(screenshots))


# ---------------------------------------------------------------------------------------------- words


def help_text(rules: Iterable[Rule]) -> str:
    """A Markdown list of the given commands, one line each, in the order given (the `/help` answer)."""
    return "\n".join(f"- `{rule.usage}` — {rule.summary}" for rule in rules)


def ignored_text(ignored: int) -> str:
    """The note for a comment that held more than `MAX_COMMANDS` commands."""
    return (
        f"only the first {MAX_COMMANDS} commands of a comment are read: the other "
        + (f"{ignored} commands in this one were" if ignored != 1 else "command in this one was")
        + " ignored. Send them in another comment."
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_HOW = """\
Write a command at the start of a line of an issue comment: a slash and the command's name, followed
by a space or the end of the line (up to three spaces of indentation are allowed; the name may be in
any case). A command is not run when it is in a code block or inline code, in a block quote, in an
HTML comment (`<!-- … -->`) or an HTML `<pre>` or `<code>` element (in any case, with or without
attributes), or in the middle of a line. Editing a comment runs nothing; only new comments do.

One comment may hold several commands: they run in order, one after the other, up to 20 (an issue's
body and a review's body count as comments). The commands after the 20th are not read, and one reply
says how many were ignored: send them again in another comment. However many of its commands are
applied, a comment gets one 👍 (GitHub shows one per person anyway).

A line that would be a command if its word were one, and whose word is a near miss of a command
(`/claimm`, `/acept`: one letter added, removed, replaced or two swapped; two for words of seven letters
or more), is not run: one reply per comment names the commands meant. So is a line that holds nothing but
an unknown `/word` (`/frobnicate`): the reply names the closest command. A `/word` far from every command
in the middle of prose (`/frobnicate the widget`, a path such as `/usr/bin`) is left alone, and so is any
unknown command on an issue Baton neither tracks nor offers.

A command whose text holds a control character (U+0000 to U+001F, except tab and newline: no editor
types them, but a program may send them) is not run: it is refused with a reply, and nothing of it is
stored. The same command without the character is taken.

Arguments come right after the name, in any order: `rev=N` (act only if the issue is still at
revision N), `@user` (a person) and `#N` (an issue). The rest of the line and the lines that follow,
up to the next command, are the command's free text: a note, a reason, feedback or a delivery's summary.

The free text may carry evidence, one `key: value` line each (a leading `- ` is fine):
`branch:`, `commit:`, `pr:` (`#57`, `57` or the pull request's URL), `tests:` (a URL or text; leave the
value empty and put a fenced code block on the next line to paste test output) and `screenshot:` (an
image URL or a pasted image). Evidence lines are claims until Baton verifies them. A `/deliver` needs a
summary, a line of free text that is not an evidence line, and the evidence the task's brief and the
repository require, each kind as many times as required; a delivery that lacks any of it is refused
with everything it lacks.
"""


def commands_markdown() -> str:
    """The content of `docs/commands.md`, made from `RULES` alone."""
    rows = [
        "| Command | What it does | Who may | From | To |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in RULES.values():
        sources = ", ".join(state.value for state in rule.sources) or "any"
        target = rule.target.value if rule.target is not None else "—"
        cells = (f"`{rule.usage}`", rule.summary, rule.who, sources, target)
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return (
        "# Commands\n\n"
        "Generated from the command registry (`baton.reading.commands.commands_markdown()`); do not edit by hand.\n\n"
        + _HOW
        + "\n"
        + "\n".join(rows)
        + "\n"
    )
