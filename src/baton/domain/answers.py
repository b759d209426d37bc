"""What Baton says back to the commands of one batch, and when each issue's writes are due.

A command written in a comment is answered there: a 👍 where GitHub has reactions unless only a reply answers
it (a refusal, /help), then its reply, if it has one. A comment gets one 👍 however many of its commands are
answered with one; its misspelt commands share one reply, and its note of the commands it held past the limit
comes after its own answers. An issue is due at once where its ticket's view changed or a 👍 waits, and after
the coalescing delay where only replies wait, so that the replies of a race share one comment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .misspelt import misspelt_text
from .model import Answer, TicketKey

Due = tuple[str, float, bool]  # the repository's name, seconds until due, and whether a 👍 waits


@dataclass(frozen=True)
class Source:
    """Where a command was written, so its answer goes there.

    `comment_id` is the comment to react to (None: the issue's or pull request's own body); `number`
    is the issue or pull request the answer goes on, when it is not the ticket's issue (a command on a
    pull request); `reactable` is False where GitHub has no reactions (a review's body); `ignored` counts
    the comment's commands past `MAX_COMMANDS`, not read, of which one note tells.
    """

    comment_id: int | None
    number: int | None = None
    reactable: bool = True
    ignored: int = 0


@dataclass(frozen=True)
class Result:
    """What became of one command of a batch, as far as its answers go."""

    key: TicketKey  # the issue the command is about
    repository: str  # its repository's name, "owner/name"
    author: str  # who sent the command
    source: Source | None = None  # where it was written, to be answered there (None: nothing to answer)
    reply: str | None = None  # what the answer says: a refusal's sentence, /help, what a claim found
    thumb: bool = False  # the reply comes with the 👍 (an applied or noted command's)
    misspelt: str | None = None  # a misspelt command's word, answered with the comment's others
    note: str | None = None  # the comment's note of the commands it held past the limit
    shown: bool = False  # the ticket's view on GitHub changes (or /status asked to refresh it)


@dataclass(frozen=True)
class Answers:
    queued: dict[TicketKey, list[Answer]]  # each issue's answers, in the order they are written
    due: dict[TicketKey, Due]  # the issues to write, and when


def answer_all(results: Sequence[Result], delay: float) -> Answers:
    """The answers of a batch's commands, in the order they came, and when each issue is due (`delay`: the
    seconds replies wait to be coalesced)."""
    queued: dict[TicketKey, list[Answer]] = {}
    reacted: set[tuple[TicketKey, int | None]] = set()
    misspelt: dict[tuple[TicketKey, int | None], tuple[str, list[str]]] = {}
    notes: dict[tuple[TicketKey, int | None], Answer] = {}
    shown: dict[TicketKey, str] = {}
    for result in results:
        if result.shown:
            shown[result.key] = result.repository
        source = result.source
        if source is None:
            continue
        place = _answered_on(result.key, source)
        comment = (place, source.comment_id)
        if result.misspelt is not None:
            misspelt.setdefault(comment, (result.author, []))[1].append(result.misspelt)
            continue
        for item in _own(result, source):
            if item[0] == "reaction":
                if comment in reacted:
                    continue
                reacted.add(comment)
            queued.setdefault(place, []).append(item)
        if result.note is not None:
            notes[comment] = ("reply", source.comment_id, result.author, result.note)
    for (place, comment_id), (author, words) in misspelt.items():
        queued.setdefault(place, []).append(("reply", comment_id, author, misspelt_text(words)))
    for (place, _), note in notes.items():
        queued.setdefault(place, []).append(note)
    due: dict[TicketKey, Due] = {key: (name, 0.0, False) for key, name in shown.items()}
    for place, items in queued.items():
        urgent = any(kind == "reaction" for kind, *_ in items)
        name = due[place][0] if place in due else _repository_of(results, place)
        due[place] = (name, 0.0 if urgent or place in due else delay, urgent)
    return Answers(queued, due)


def _answered_on(key: TicketKey, source: Source) -> TicketKey:
    """The issue or pull request a command's answer goes on."""
    return key if source.number is None else replace(key, number=source.number)


def _own(result: Result, source: Source) -> list[Answer]:
    """A command's own answers: its 👍 where GitHub has reactions, unless only a reply answers it, then its reply."""
    items: list[Answer] = []
    if (result.reply is None or result.thumb) and source.reactable:
        items.append(("reaction", source.comment_id, result.author, "+1"))
    if result.reply is not None:
        items.append(("reply", source.comment_id, result.author, result.reply))
    return items


def _repository_of(results: Sequence[Result], place: TicketKey) -> str:
    """The repository's name for an issue answered on (the ticket's, or its pull request's)."""
    return next(result.repository for result in results if result.key.repository_key == place.repository_key)
