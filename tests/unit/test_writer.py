"""The writer's pure parts: how answers are gathered into one reply."""

from __future__ import annotations

from baton.process.writer import reply_text
from baton.store.outbox.writing import Item


def item(n: int, author: str, message: str) -> Item:
    return Item(n, "reply", n, author, message)


def test_identical_refusals_share_one_line_mentioning_every_author_once() -> None:
    lost = "#42 is claimed by @agent-a (revision 2), not open. Pick another issue."
    items = [item(1, "agent-b", lost), item(2, "agent-c", lost), item(3, "agent-b", lost)]
    assert reply_text(items) == f"@agent-b @agent-c {lost}"


def test_different_messages_get_their_own_lines_in_order() -> None:
    items = [item(1, "agent-b", "first."), item(2, "rita", "second.")]
    assert reply_text(items) == "@agent-b first.\n\n@rita second."


def test_a_message_that_already_names_its_author_is_not_mentioned_twice() -> None:
    message = "@agent-a cannot /accept #42: reviewing needs write access to octo/shop."
    assert reply_text([item(1, "agent-a", message)]) == message
    assert reply_text([item(1, "agent-b", message)]) == f"@agent-b {message}"
