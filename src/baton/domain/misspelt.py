"""Commands misspelt: the command a `/word` that is none was meant to be, when one is close enough.

Comments are shared with people writing prose, so a `/word` line is answered only when it is a near miss of
one of Baton's own commands, or when the line holds nothing but the word (`/frobnicate`: someone addressing
a bot); the answer then names the closest command. A word is a near miss when it has at least four letters
and is at most one edit away from a command (two for words of seven letters or more), an edit being a letter
added, removed, replaced, or two neighbours swapped: `/claimm`, `/acept`, `/relase`, `/sendback`,
`/delivered` are near misses; `/hold`, `/design`, `/frobnicate` are not, and neither is a command with `un`
before it (`/unassign`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .transitions import RULES

SHORTEST = 4  # shorter words are too near too much: `/cc` or `/me` is never taken for a command
_LONG = 7  # from this length on, a word may be two edits away


def distance(a: str, b: str) -> int:
    """The optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def closest(word: str) -> str | None:
    """The command `word` (without its slash) is a near miss of, or None. Of two equally near, the first in
    the command table."""
    word = word.lower()
    if len(word) < SHORTEST or word in RULES or word.removeprefix("un") in RULES:
        return None  # `/unassign` is another bot's undoing of its `/assign`, no misspelling of ours
    limit = 2 if len(word) >= _LONG else 1
    found = min(RULES, key=lambda name: distance(word, name))
    return found if distance(word, found) <= limit else None


def nearest(word: str) -> str:
    """The command closest to `word` (without its slash), however far: of two equally near, the first in the
    command table."""
    word = word.lower()
    return min(RULES, key=lambda name: distance(word, name))


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def misspelt_text(words: Sequence[str]) -> str:
    """The one answer for a comment's unknown commands (each a word without its slash), in their order, with
    the commands they are near misses of."""
    words = list(dict.fromkeys(words))
    meant = list(dict.fromkeys(f"`/{found}`" for found in map(closest, words) if found is not None))
    typed = _listed([f"`/{word}`" for word in words])
    are = "is not a command" if len(words) == 1 else "are not commands"
    if meant:
        guess = f"; did you mean {_listed(meant)}?"
    else:  # none is near any command: name the closest all the same
        near = list(dict.fromkeys(f"`/{nearest(word)}`" for word in words))
        guess = f"; the closest {'is' if len(near) == 1 else 'are'} {_listed(near)}."
    return f"{typed} {are}{guess} /help lists the commands you may use."
