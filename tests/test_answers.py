"""Answers that change nothing, through the real app against the stand-in GitHub (tests/standin_scene.py): the
holder claiming again and commands misspelt."""

from __future__ import annotations

from sqlalchemy import func, select

import standin_scene
from baton.domain import WorkState
from baton.store import tables as t
from standin_scene import Scene

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
