"""Answers that change nothing, through the real app against the stand-in GitHub (tests/support/standin_scene.py): the
holder claiming again and commands misspelt."""

from __future__ import annotations

from sqlalchemy import func, select

from baton.domain import WorkState
from baton.store import tables as t
from support import standin_scene
from support.standin_scene import BOT, Scene

scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


def events(scene: Scene) -> int:
    with scene.app.state.work.units.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(t.events)).scalar_one())


# ---------------------------------------------------------------------------------------------- claiming again


def test_the_holder_claiming_again_gets_a_thumbs_up_and_what_it_holds_and_nothing_changes(scene: Scene) -> None:
    first = scene.comment("agent-a", "/claim")
    scene.drain()
    before, history, shown = scene.app.state.work.ticket(scene.key), events(scene), scene.status()
    for body in ("/claim", "/claim rev=2", "/claim rev=1"):  # no revision, the current one, a stale one
        written = len(scene.writes())
        again = scene.comment("agent-a", body)
        scene.drain()
        assert scene.reactions()[-1] == (again, "+1")
        assert scene.replies()[-1].startswith(f"@agent-a you already hold #{scene.number} (attempt 1, revision 2).")
        # a 👍 and one reply: no label, assignee or status comment is written again
        assert [w.split()[0] for w in scene.writes()[written:]] == ["POST", "POST"]
    assert scene.app.state.work.ticket(scene.key) == before
    assert events(scene) == history
    assert scene.status() == shown
    assert scene.labels() == {"baton:claimed"} and scene.assignees() == ["agent-a"]
    assert scene.reactions()[0] == (first, "+1")


def test_the_holder_of_a_delivered_ticket_is_told_it_awaits_review(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver done")
    scene.drain()
    reactions, history = scene.reactions(), events(scene)
    scene.comment("agent-a", "/claim")
    scene.drain()
    assert scene.replies()[-1].startswith(
        f"@agent-a you delivered #{scene.number} (attempt 1, revision 3); it awaits review, so there is nothing to "
        "claim. A reviewer can /accept it, or /send-back it to you for a new attempt."
    )
    assert scene.reactions() == reactions  # refused: no 👍
    assert events(scene) == history
    assert scene.app.state.work.ticket(scene.key).state is WorkState.DELIVERED


# ---------------------------------------------------------------------------------------------- misspelt commands


def test_a_misspelt_command_gets_one_reply_naming_the_command_meant(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.drain()
    history, reactions = events(scene), scene.reactions()
    scene.comment("agent-b", "/acept")
    scene.drain()
    assert scene.replies()[-1].startswith(
        "@agent-b `/acept` is not a command; did you mean `/accept`? /help lists the commands you may use."
    )
    assert scene.reactions() == reactions and events(scene) == history


def test_several_misspelt_commands_in_one_comment_get_one_reply_beside_the_commands_answers(scene: Scene) -> None:
    said = scene.comment("agent-a", "/claimm\nI take it.\n/claim\n/stauts\n/claimm")
    scene.drain()
    assert scene.reactions() == [(said, "+1")]  # the /claim between them was applied
    [reply] = scene.replies()
    assert reply.startswith(
        "@agent-a `/claimm` and `/stauts` are not commands; did you mean `/claim` and `/status`? "
        "/help lists the commands you may use."
    )
    assert reply.count("not a command") + reply.count("not commands") == 1


def test_an_unknown_word_alone_on_its_line_gets_one_reply_naming_the_closest_command(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.drain()
    history, reactions, replies = events(scene), scene.reactions(), len(scene.replies())
    scene.comment("agent-b", "/frobnicate")
    scene.drain()
    assert len(scene.replies()) == replies + 1
    assert scene.replies()[-1].startswith(
        "@agent-b `/frobnicate` is not a command; the closest is `/release`. /help lists the commands you may use."
    )
    assert scene.reactions() == reactions and events(scene) == history


def test_prose_with_slashes_writes_nothing_to_github(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.drain()
    written = scene.writes()
    prose = (
        "See /usr/bin or /etc/hosts, and/or the /api/v1 route.\n/usr/bin/env python\n/frobnicate the widget\n"
        "/retest please\n/cc @maria\n> /claimm\n```\n/acept\n```\n`/acept` is what I typed at first"
    )
    scene.comment("agent-b", prose)
    scene.comment("olivia", "/cc")
    scene.drain()
    assert scene.writes() == written
    assert scene.unsent() == 0


def test_a_misspelt_command_on_an_issue_baton_does_not_track_or_offer_is_left_alone(scene: Scene) -> None:
    scene.configure("offer: labeled\n")
    scene.drain()  # the scene's first issue, offered when it was opened
    scene.unheard_issue("Not labelled")
    written = scene.writes()
    scene.comment("agent-a", "/claimm")
    scene.drain()
    assert scene.writes() == written
    assert scene.app.state.work.ticket(scene.key) is None


def test_a_misspelt_command_on_an_untracked_issue_that_is_offered_is_answered_and_starts_nothing(
    scene: Scene,
) -> None:
    scene.unheard_issue("Opened before Baton was installed")
    scene.comment("agent-a", "/relase")  # every issue is offered (`offer: all`, the default)
    scene.drain()
    [reply] = scene.replies()
    assert reply.startswith("@agent-a `/relase` is not a command; did you mean `/release`?")
    assert scene.app.state.work.ticket(scene.key) is None  # nothing is tracked for a misspelling
    assert scene.labels() == set()


def test_a_misspelt_command_on_a_pull_request_is_answered_there(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    agent = scene.person("agent-a")
    agent.push(scene.full_name, f"{scene.number}-empty-state", "Empty state", sha="1a2b3c4")
    pr = agent.open_pull_request(scene.full_name, f"{scene.number}-empty-state", "Cart", f"Fixes #{scene.number}")
    scene.settle()
    scene.drain()
    scene.comment("maria", "/acept\nLooks good.\n/acept", number=pr)
    scene.drain()
    with scene.hub.world.lock:
        on_pr = [c.body for c in scene.repository.comments.values() if c.issue == pr and c.user.login == BOT]
    assert [body.split("\n")[0] for body in on_pr] == [
        "@maria `/acept` is not a command; did you mean `/accept`? /help lists the commands you may use."
    ]
    assert scene.app.state.work.ticket(scene.key).state is WorkState.CLAIMED


def test_a_misspelt_command_on_a_pull_request_that_links_no_tracked_issue_is_left_alone(scene: Scene) -> None:
    agent = scene.person("agent-a")
    agent.push(scene.full_name, "cleanup", "Tidy", sha="1a2b3c4")
    pr = agent.open_pull_request(scene.full_name, "cleanup", "Tidy up", "No issue here")
    scene.settle()
    scene.drain()
    written = scene.writes()
    scene.comment("maria", "/acept", number=pr)
    scene.drain()
    assert scene.writes() == written
