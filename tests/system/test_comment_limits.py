"""Hostile comments through the real app: a comment's commands are bounded, and answered with at most one 👍
and one note about the rest; control characters in a command are refused with a reply, not stored; HTML
code blocks run nothing. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from baton.demo.stage import Stage
from baton.demo.story import wait_for
from baton.domain import WorkState
from baton.reading.commands import MAX_COMMANDS
from baton.store import tables as t
from github_standin.contract import Contract, ContractUnavailable
from support import webhook_hub
from support.corpus import missing
from support.keys import app_key, app_public_key
from support.webhook_hub import (
    INSTALLATION,
    REPOSITORY,
    REPOSITORY_ID,
    Hub,
    comment,
    pr_comment,
    replies_on,
)

hub = webhook_hub.hub  # the fixture: Baton with its lanes off, a fake directory

ONLY_THE_FIRST = f"only the first {MAX_COMMANDS} commands of a comment are read"


def items_on(hub: Hub, number: int, kind: str) -> list[tuple[int | None, str]]:
    """The answers queued on an issue of one kind ("reaction" or "reply"): (comment id, message)."""
    i = t.outbox_items.c
    with hub.app.state.work.units.engine.connect() as connection:
        rows = connection.execute(
            select(i.comment_id, i.message).where(i.number == number, i.kind == kind).order_by(i.id)
        ).all()
    return [(row.comment_id, row.message) for row in rows]


def events_on(hub: Hub, number: int) -> list[str]:
    with hub.app.state.work.units.engine.connect() as connection:
        rows = connection.execute(
            select(t.events.c.type)
            .join(t.tickets, t.tickets.c.id == t.events.c.ticket_id)
            .where(t.tickets.c.number == number)
            .order_by(t.events.c.id)
        ).all()
    return [row.type for row in rows]


def operations(hub: Hub) -> int:
    with hub.app.state.work.units.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(t.operations)).scalar_one())


# ---------------------------------------------------------------------------------------------- item 4: bounds


def test_eight_thousand_claims_and_releases_are_read_up_to_the_limit_and_answered_once(hub: Hub) -> None:
    body = "/claim\n/release\n" * 4000
    assert len(body) <= 65_536  # GitHub takes it
    assert hub.post("issue_comment", comment("agent-a", body, comment_id=11), hook="d-big").status_code == 202
    hub.post("issue_comment", comment("agent-b", "/claim", number=43, comment_id=12), hook="d-next")

    assert hub.inbox("d-big")[0] == "done" and hub.inbox("d-next")[0] == "done"
    assert hub.ticket(43).runner == "agent-b"  # the other issue was decided right after
    assert events_on(hub, 42) == ["created"] + ["claimed", "released"] * (MAX_COMMANDS // 2)
    assert operations(hub) == MAX_COMMANDS + 1
    assert items_on(hub, 42, "reaction") == [(11, "+1")]  # one 👍 for the comment, not one per command
    assert items_on(hub, 42, "reply") == [
        (11, f"{ONLY_THE_FIRST}: the other 7980 commands in this one were ignored. Send them in another comment.")
    ]
    assert items_on(hub, 43, "reaction") == [(12, "+1")]


def test_ten_thousand_help_lines_are_answered_with_one_reply(hub: Hub) -> None:
    body = "/help\n" * 10_000
    hub.post("issue_comment", comment("agent-a", body, comment_id=11), hook="d-big")
    assert hub.inbox("d-big")[0] == "done"
    assert operations(hub) == MAX_COMMANDS
    replies = replies_on(hub, 42)
    assert len(replies) == MAX_COMMANDS + 1  # identical /help answers share one line of the one reply comment
    assert len({message for _, message in replies[:-1]}) == 1
    assert replies[-1] == ("agent-a", f"{ONLY_THE_FIRST}: the other 9980 commands in this one were ignored. "
                                      "Send them in another comment.")  # fmt: skip
    assert items_on(hub, 42, "reaction") == []


def test_a_comment_at_the_limit_is_answered_as_before(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim\n/release\n" * (MAX_COMMANDS // 2), comment_id=11))
    assert events_on(hub, 42) == ["created"] + ["claimed", "released"] * (MAX_COMMANDS // 2)
    assert items_on(hub, 42, "reaction") == [(11, "+1")]
    assert items_on(hub, 42, "reply") == []


def test_a_redelivered_long_comment_is_not_answered_twice(hub: Hub) -> None:
    payload = comment("agent-a", "/status\n" * 30, comment_id=11)
    hub.post("issue_comment", payload, hook="d-1")
    hub.post("issue_comment", payload, hook="d-2")  # the same comment, sent again under another id
    assert len(items_on(hub, 42, "reply")) == 1
    assert items_on(hub, 42, "reaction") == [(11, "+1")]


def test_a_long_comment_on_a_pull_request_is_bounded_and_answered_once_there(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"))
    hub.post("issue_comment", pr_comment("maria", "/status\n" * 50, "Fixes #42", comment_id=5))
    assert items_on(hub, 57, "reaction") == [(5, "+1")]
    assert items_on(hub, 57, "reply") == [
        (5, f"{ONLY_THE_FIRST}: the other 30 commands in this one were ignored. Send them in another comment.")
    ]
    assert operations(hub) == 1 + MAX_COMMANDS


def test_a_long_comment_on_a_pull_request_that_links_no_issue_is_still_told(hub: Hub) -> None:
    hub.post("issue_comment", pr_comment("maria", "/accept\n" * 25, "No link", comment_id=5), hook="d-pr")
    replies = replies_on(hub, 57)
    assert len(replies) == MAX_COMMANDS + 1
    assert replies[-1][1].startswith(ONLY_THE_FIRST)
    hub.post("issue_comment", pr_comment("maria", "/accept\n" * 25, "No link", comment_id=5), hook="d-pr2")
    assert len(replies_on(hub, 57)) == MAX_COMMANDS + 1


def test_a_long_review_body_is_bounded_and_told_by_reply_alone(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"))
    review = {
        "action": "submitted",
        "review": {"id": 77, "body": "/status\n" * 25, "user": {"login": "maria"}},
        "pull_request": {"number": 57, "body": "Fixes #42", "user": {"login": "agent-a"}},
        "repository": {"id": REPOSITORY_ID, "full_name": REPOSITORY},
        "installation": {"id": INSTALLATION},
        "sender": {"login": "maria", "type": "User"},
    }
    hub.post("pull_request_review", review)
    assert items_on(hub, 57, "reaction") == []  # GitHub has no reactions on reviews
    assert items_on(hub, 57, "reply") == [
        (None, f"{ONLY_THE_FIRST}: the other 5 commands in this one were ignored. Send them in another comment.")
    ]
    assert operations(hub) == 1 + MAX_COMMANDS


@pytest.fixture
def stage(database_url: str) -> Iterator[Stage]:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    with Stage.open(database_url, key=(app_key(), app_public_key())) as opened:
        yield opened
        assert opened.hub.all_problems() == []
    opened.app.state.work.units.engine.dispose()


def reactions_posted(stage: Stage) -> list[str]:
    return [call.path for call in stage.hub.rest.writes() if call.path.endswith("/reactions")]


def test_on_github_a_long_comment_gets_one_thumbs_up_and_one_note(stage: Stage) -> None:
    """Through the stand-in GitHub: what a person sees after a 10,000-line comment, and that a /claim on
    another issue right after it is shown without waiting for it."""
    olivia = stage.person("olivia", "maintain")
    first, second = olivia.open_issue(stage.full_name, "One"), olivia.open_issue(stage.full_name, "Two")
    agent_a, agent_b = stage.person("agent-a"), stage.person("agent-b")

    big = agent_a.comment(stage.full_name, first, "/claim\n/release\n" * 4000)
    claim = agent_b.comment(stage.full_name, second, "/claim")
    wait_for(stage, second, lambda s: s.reactions.get(claim) == ("+1",) and s.assignees == ("agent-b",),
             "the other issue's 👍 and assignee", timeout=20)  # fmt: skip

    shown = wait_for(stage, first, lambda s: bool(s.replies) and s.status is not None, "the note", timeout=20)
    assert shown.reactions == {big: ("+1",)}
    (reply,) = shown.replies
    assert reply.startswith(
        f"@agent-a {ONLY_THE_FIRST}: the other 7980 commands in this one were ignored. Send them in another comment."
    )
    assert shown.labels == ("baton:open",)  # ten claims and ten releases
    assert len(reactions_posted(stage)) == 2  # one per comment


# ---------------------------------------------------------------------------------------------- item 5: NUL


@pytest.mark.parametrize(
    "body",
    ["/deliver done\nbranch: a\u0000b", "/deliver done \u0000", "/deliver\ntests:\n```\nok\u0001\n```"],
    ids=["nul-in-evidence", "nul-in-text", "control-in-test-output"],
)
def test_a_control_character_in_a_command_is_refused_with_a_reply(hub: Hub, body: str) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"), hook="d-1")
    hub.post("issue_comment", comment("agent-a", body, comment_id=2), hook="d-2")
    assert hub.inbox("d-2") == ("done", 1, None)  # decided, not failed
    ticket = hub.ticket(42)
    assert (ticket.state, ticket.revision) == (WorkState.CLAIMED, 2)
    (reply,) = replies_on(hub, 42)
    assert reply[1].startswith("/deliver was not run: its text holds the control character U+000")
    hub.post("issue_comment", comment("agent-a", "/deliver done\nbranch: a-b", comment_id=3), hook="d-3")
    assert hub.ticket(42).state is WorkState.DELIVERED  # the same without it is taken


def test_nul_outside_the_commands_breaks_nothing_stored(hub: Hub) -> None:
    body = "Taking it \u0000 now.\n<!-- \u0000 -->\n\u0000\n/claim"
    hub.post("issue_comment", comment("agent-a", body), hook="d-1")
    assert hub.inbox("d-1") == ("done", 1, None)
    assert hub.ticket(42).runner == "agent-a"
    with hub.app.state.work.units.engine.connect() as connection:
        stored = connection.execute(select(t.webhook_payloads.c.payload)).scalar_one()
    assert "\\u0000" in stored  # the raw JSON keeps the escape, which PostgreSQL's text can hold
    assert json.loads(stored)["comment"]["body"] == body


def test_tab_and_newline_are_not_control_characters_here(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"), hook="d-1")
    hub.post("issue_comment", comment("agent-a", "/deliver\tdone\nbranch:\ta-b", comment_id=2), hook="d-2")
    assert hub.ticket(42).state is WorkState.DELIVERED


# ---------------------------------------------------------------------------------------------- item 6: HTML code


@pytest.mark.parametrize(
    "body",
    ["<pre>\n/claim\n</pre>", '<PRE class="x">\n/claim\n</PRE>', "<code>\n/claim\n</code>",
     "see <code>x\n/claim\n</code>", "<!--\n/claim\n-->"],
    ids=["pre", "pre-upper-with-attributes", "code", "code-mid-line", "html-comment"],
)  # fmt: skip
def test_commands_in_html_code_run_nothing(hub: Hub, body: str) -> None:
    hub.post("issue_comment", comment("agent-a", body), hook="d-1")
    assert hub.inbox("d-1") == ("done", 1, None)
    assert hub.ticket(42) is None and operations(hub) == 0
    hub.post("issue_comment", comment("agent-a", body + "\n/claim", comment_id=2), hook="d-2")
    assert hub.ticket(42).runner == "agent-a"  # after the block, a command runs
    assert operations(hub) == 1
