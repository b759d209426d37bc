"""Ready work as GitHub shows it and as briefs say it (docs/agents.md, "Ready work"): an open task that waits for
open issues carries `baton:blocked` and a `Blocked by` line per blocker in its status comment until the last one
closes, which an `unblocked` event names; a brief's `depends_on` links issues beside GitHub's own links; the
labels `priority_labels` maps give a task its priority when its brief says none. Webhooks from the stand-in GitHub
into Baton over HTTP on 127.0.0.1, on both engines."""

from __future__ import annotations

import re
from typing import Any

import pytest

from baton.domain import TicketKey
from github_standin.server import Fault
from support.board_scene import TOKEN, call, session
from support.local_http import HTTP
from support.standin_scene import Scene, scene_with

OTHER = "lib"  # another repository of the installation


scene = scene_with(hidden=(OTHER,), api_token=TOKEN)


def _key(scene: Scene, number: int) -> TicketKey:
    return TicketKey(scene.key.installation_id, scene.key.repository_id, number)


def _shown(scene: Scene, number: int) -> tuple[set[str], list[str]]:
    """The issue's labels and its status comment's `Blocked by` lines, once Baton wrote what was due."""
    scene.drain()
    scene.number = number
    return scene.labels(), [line for line in scene.status().splitlines() if line.startswith("Blocked by")]


def test_a_blocked_task_shows_it_on_github_until_its_last_blocker_closes(scene: Scene) -> None:
    olivia, maria = scene.person("olivia"), scene.person("maria")
    other = f"{scene.stage.other(OTHER).full_name}"
    blocked = olivia.open_issue(scene.full_name, "Blocked")
    blocker = olivia.open_issue(scene.full_name, "Blocker")
    elsewhere = olivia.open_issue(other, "Blocker in another repository")
    scene.settle()
    maria.block(scene.full_name, blocked, by=(scene.full_name, blocker))
    maria.block(scene.full_name, blocked, by=(other, elsewhere))
    scene.settle()

    labels, lines = _shown(scene, blocked)
    assert {"baton:open", "baton:blocked"} <= labels
    assert lines == [f"Blocked by {other}#{elsewhere} (open)", f"Blocked by #{blocker} (open)"]  # by name
    assert "once the issues it waits for are closed" in scene.status()

    olivia.close_issue(scene.full_name, blocker)  # one of two: still blocked
    scene.settle()
    labels, lines = _shown(scene, blocked)
    assert "baton:blocked" in labels and lines == [f"Blocked by {other}#{elsewhere} (open)"]

    olivia.close_issue(other, elsewhere)  # the last: ready, and the event says which close did it
    scene.settle()
    labels, lines = _shown(scene, blocked)
    assert "baton:blocked" not in labels and "baton:open" in labels and lines == []
    assert "An agent can /claim it." in scene.status()
    last = scene.app.state.work.history(_key(scene, blocked))[-1]
    assert (last.type, last.actor, last.data) == ("unblocked", "olivia", {"by": f"{other}#{elsewhere}"})

    olivia.reopen_issue(other, elsewhere)  # open again: blocked again, and shown so
    scene.settle()
    labels, lines = _shown(scene, blocked)
    assert "baton:blocked" in labels and lines == [f"Blocked by {other}#{elsewhere} (open)"]
    scene.comment("maria", "/claim force", number=blocked)  # a task somebody holds is not shown as blocked
    labels, lines = _shown(scene, blocked)
    assert "baton:claimed" in labels and "baton:blocked" not in labels and lines == []
    scene.comment("maria", "/release", number=blocked)  # offered again: blocked again
    labels, lines = _shown(scene, blocked)
    assert {"baton:open", "baton:blocked"} <= labels and lines == [f"Blocked by {other}#{elsewhere} (open)"]
    maria.unblock(scene.full_name, blocked, by=(other, elsewhere))  # unlinked: ready again
    scene.settle()
    labels, lines = _shown(scene, blocked)
    assert "baton:blocked" not in labels and lines == []
    last = scene.app.state.work.history(_key(scene, blocked))[-1]
    assert (last.type, last.data) == ("unblocked", {"by": f"{other}#{elsewhere}"})


@pytest.mark.both_engines
def test_a_briefs_depends_on_links_issues_beside_githubs_own_links(scene: Scene) -> None:
    olivia, maria = scene.person("olivia"), scene.person("maria")
    lib = scene.stage.other(OTHER)
    with scene.hub.world.lock:  # issues Baton was never told of: their state is asked of GitHub
        unheard = scene.hub.world.add_issue(lib, "Unheard", scene.hub.world.account("olivia")).number
        done = scene.hub.world.add_issue(lib, "Done long ago", scene.hub.world.account("olivia"))
        done.state = "closed"
    tracked = olivia.open_issue(scene.full_name, "Tracked")
    scene.settle()
    own, other = scene.full_name.lower(), lib.full_name.lower()
    brief = "```yaml\ntask: Waits\ndepends_on: [{}]\n```"
    task = olivia.open_issue(
        scene.full_name, "Waits", brief.format(f"{tracked}, {other}#{unheard}, {other}#{done.number}")
    )
    scene.settle()

    assert task not in scene.tasks()
    assert scene.tasks(blocked="true")[task]["blocked_by"] == [f"{other}#{unheard}", f"{own}#{tracked}"]
    assert f"GET /repos/{lib.full_name}/issues/{unheard}" in [f"GET {path}" for path in scene.reads()]
    labels, lines = _shown(scene, task)
    assert "baton:blocked" in labels and lines == [
        f"Blocked by {other}#{unheard} (open)",
        f"Blocked by #{tracked} (open)",
    ]

    maria.block(scene.full_name, task, by=(scene.full_name, tracked))  # GitHub's link and the brief's, side by side
    scene.settle()
    maria.unblock(scene.full_name, task, by=(scene.full_name, tracked))  # GitHub's goes; the brief's stays
    scene.settle()
    assert scene.tasks(blocked="true")[task]["blocked_by"] == [f"{other}#{unheard}", f"{own}#{tracked}"]

    olivia.close_issue(lib.full_name, unheard)  # its close is heard as any other blocker's
    scene.settle()
    assert scene.tasks(blocked="true")[task]["blocked_by"] == [f"{own}#{tracked}"]

    # the brief no longer names it (and an issue never waits for itself)
    olivia.edit_issue(scene.full_name, task, brief.format(f"{other}#{unheard}, {task}"))
    scene.settle()
    assert scene.tasks()[task]["blocked_by"] == []
    labels, lines = _shown(scene, task)
    assert "baton:blocked" not in labels and lines == []
    history = scene.app.state.work.history(_key(scene, task))
    assert [(e.type, e.actor, e.data) for e in history[-1:]] == [("unblocked", "olivia", {"by": f"{own}#{tracked}"})]

    olivia.edit_issue(scene.full_name, task, brief.format("banana"))  # a problem names the key; nothing is lost
    scene.drain()
    scene.number = task
    assert any("`depends_on` must be a list" in said for said in scene.replies())
    ticket = scene.app.state.work.ticket(_key(scene, task))
    assert (
        ticket is not None
        and ticket.brief is not None
        and ticket.brief.depends_on == (f"{other}#{unheard}", f"#{task}")
    )


def test_labels_give_a_priority_the_brief_does_not_and_the_apis_and_board_say_what_is_ready(scene: Scene) -> None:
    olivia, maria = scene.person("olivia"), scene.person("maria")
    scene.configure("priority_labels: {P0: 0, P1: p1}\n")
    plain = olivia.open_issue(scene.full_name, "Plain")
    urgent = olivia.open_issue(scene.full_name, "Urgent")
    said = olivia.open_issue(scene.full_name, "Said", "```yaml\ntask: Said\npriority: p3\n```")
    epic = olivia.open_issue(scene.full_name, "Epic")
    scene.settle()
    maria.label(scene.full_name, urgent, "p0", add=True)  # any case
    maria.label(scene.full_name, said, "P0", add=True)  # the brief's priority wins
    maria.label(scene.full_name, plain, "P1", add=True)
    scene.settle()  # each delivery's labels are the issue's whole list: the later one is decided last
    maria.label(scene.full_name, plain, "P1", add=False)  # taken off: as if never said
    maria.add_sub_issue(scene.full_name, epic, (scene.full_name, urgent))
    scene.settle()
    own = scene.full_name.lower()

    tasks = scene.tasks(blocked="true")
    assert [(n, tasks[n]["priority"]) for n in tasks] == [(urgent, 0), (scene.number, 2), (plain, 2), (epic, 2),
                                                          (said, 3)]  # fmt: skip
    assert [n for n in scene.tasks()] == [urgent, scene.number, plain, said]  # the epic waits for its sub-issue
    assert (tasks[epic]["ready"], tasks[epic]["blocked_by"], tasks[epic]["parent"]) == (False, [f"{own}#{urgent}"],
                                                                                         None)  # fmt: skip
    assert (tasks[urgent]["ready"], tasks[urgent]["parent"]) == (True, f"{own}#{epic}")

    def read(number: int) -> dict[str, Any]:
        answer = HTTP.get(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{number}",
                          headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    shown = read(epic)
    assert (shown["ready"], shown["blocked_by"], shown["parent"], shown["priority"]) == (
        False, [f"{own}#{urgent}"], None, 2)  # fmt: skip
    shown = read(urgent)
    assert (shown["ready"], shown["blocked_by"], shown["parent"], shown["priority"]) == (True, [], f"{own}#{epic}", 0)
    assert read(said)["priority"] == 3

    cookie = session(scene.stage.baton_url)
    board = call(scene.stage.baton_url, "GET", "/board?state=open", cookie)
    assert board.status_code == 200, board.text
    row = re.search(rf'<tr data-repository="{scene.full_name}">(.*?)</tr>', board.text)
    assert row is not None, board.text  # per repository: its open tasks, and those ready (the epic waits)
    assert re.findall(r'data-count="(\w+)">(\d+)<', row.group(1)) == [("open", "5"), ("ready", "4")]
    assert f'data-badge="blocked" title="Blocked by #{urgent}"' in board.text
    page = call(scene.stage.baton_url, "GET", f"/t/{scene.full_name}/{epic}", cookie)
    assert f'<span class="stale" data-badge="blocked">Blocked by #{urgent}</span>' in page.text


def test_github_failing_to_say_whether_an_issue_is_open_holds_nothing_back(scene: Scene) -> None:
    """The task is tracked all the same, the issue it names counts as open, and its close is heard as any other."""
    olivia = scene.person("olivia")
    lib = scene.stage.other(OTHER)
    with scene.hub.world.lock:
        unheard = scene.hub.world.add_issue(lib, "Unheard", scene.hub.world.account("olivia")).number
    scene.rest.inject(Fault("GET", rf"^/repos/{lib.full_name}/issues/{unheard}$", status=502, times=10))
    task = olivia.open_issue(
        scene.full_name, "Waits", f"```yaml\ntask: Waits\ndepends_on: [{lib.full_name}#{unheard}]\n```"
    )
    scene.settle()
    assert f"/repos/{lib.full_name}/issues/{unheard}" in scene.reads()  # asked, and GitHub failed
    assert scene.tasks(blocked="true")[task]["blocked_by"] == [f"{lib.full_name.lower()}#{unheard}"]
    olivia.close_issue(lib.full_name, unheard)
    scene.settle()
    assert scene.tasks()[task]["ready"] is True


def test_settings_that_map_labels_count_for_the_issues_labelled_before_them(scene: Scene) -> None:
    olivia, maria = scene.person("olivia"), scene.person("maria")
    first = olivia.open_issue(scene.full_name, "Labelled before the settings")
    second = olivia.open_issue(scene.full_name, "Labelled too")
    scene.settle()
    maria.label(scene.full_name, first, "P0", add=True)
    maria.label(scene.full_name, second, "P1", add=True)
    scene.settle()
    assert {n: task["priority"] for n, task in scene.tasks().items()} == {scene.number: 2, first: 2, second: 2}

    scene.configure("priority_labels: {P0: 0, P1: 1}\n")  # read again from GitHub's list of the open issues
    assert {n: task["priority"] for n, task in scene.tasks().items()} == {scene.number: 2, first: 0, second: 1}
    scene.configure("priority_labels: {P1: 1}\n")  # a label the settings no longer map counts no more
    assert {n: task["priority"] for n, task in scene.tasks().items()} == {scene.number: 2, first: 2, second: 1}
