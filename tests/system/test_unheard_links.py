"""Links Baton was never told of (docs/agents.md, "Ready work"): an issue blocked, or made a parent, before Baton
saw it is found blocked when Baton first tracks it, by an offer or by a command, since GitHub's issue object counts
its links and Baton lists them when its own counts disagree; links changed while Baton heard nothing are found at
the issue's next `issues` delivery; GitHub failing to list them holds nothing back. Webhooks from the stand-in
GitHub into Baton over HTTP on 127.0.0.1, on both engines."""

from __future__ import annotations

from github_standin.server import Fault
from github_standin.world import Issue
from support.board_scene import TOKEN
from support.local_http import HTTP
from support.standin_scene import Scene, scene_with

OTHER = "lib"  # another repository of the installation, whose deliveries Baton does not hear


scene = scene_with(hidden=(OTHER,), api_token=TOKEN)


def _unheard(scene: Scene, title: str, where: str = "") -> Issue:
    """An issue GitHub never told Baton about (opened before Baton was installed, say)."""
    repository = scene.stage.other(where) if where else scene.repository
    with scene.hub.world.lock:
        return scene.hub.world.add_issue(repository, title, scene.hub.world.account("olivia"))


def _link_unheard(
    scene: Scene, issue: Issue, *, blocked_by: Issue | None = None, sub_issue: Issue | None = None
) -> None:
    """Link issues on GitHub while Baton hears nothing of it."""
    with scene.hub.world.lock:
        if blocked_by is not None:
            scene.hub.world.add_blocked_by(issue, blocked_by.id)
        if sub_issue is not None:
            scene.hub.world.add_sub_issue(issue, "octo", sub_issue.id)


def _link_reads(scene: Scene, number: int) -> list[str]:
    path = f"/repos/{scene.full_name}/issues/{number}/"
    return [read for read in scene.reads() if read.startswith(path) and read.split("?")[0].endswith(
        ("/dependencies/blocked_by", "/sub_issues"))]  # fmt: skip


def test_an_issue_blocked_before_baton_saw_it_is_offered_blocked(scene: Scene) -> None:
    scene.configure("offer: labeled\n")
    blocked = _unheard(scene, "Blocked before Baton")
    here, elsewhere = _unheard(scene, "Blocker"), _unheard(scene, "Blocker elsewhere", OTHER)
    _link_unheard(scene, blocked, blocked_by=here)
    _link_unheard(scene, blocked, blocked_by=elsewhere)
    with scene.hub.world.lock:
        here.state = "closed"  # closed long ago: it blocks nothing
    scene.person("maria").label(scene.full_name, blocked.number, "baton", add=True)  # offered
    scene.settle()

    task = scene.tasks(blocked="true")[blocked.number]
    assert task["ready"] is False and task["blocked_by"] == [
        f"{scene.stage.other(OTHER).full_name.lower()}#{elsewhere.number}"
    ]
    assert blocked.number not in scene.tasks()
    assert len(_link_reads(scene, blocked.number)) == 2  # each list read once, on first sight
    scene.drain()
    scene.number = blocked.number
    assert "baton:blocked" in scene.labels()

    scene.person("olivia").edit_issue(scene.full_name, blocked.number, title="Blocked, renamed")
    scene.settle()  # GitHub's counts agree with Baton's: nothing is read again
    assert len(_link_reads(scene, blocked.number)) == 2


def test_a_claim_on_an_issue_blocked_before_baton_saw_it_is_refused(scene: Scene) -> None:
    blocked, blocker = _unheard(scene, "Blocked before Baton"), _unheard(scene, "Blocker")
    _link_unheard(scene, blocked, blocked_by=blocker)
    scene.number = blocked.number
    scene.comment("agent-a", "/claim")  # the command makes the ticket: first sight, before the claim is decided
    scene.drain()

    ticket = scene.app.state.work.ticket(scene.key)
    assert ticket is not None and ticket.state.value == "open" and ticket.runner is None
    assert any(f"#{blocker.number}" in reply for reply in scene.replies()), scene.replies()
    assert {"baton:open", "baton:blocked"} <= scene.labels()
    assert len(_link_reads(scene, blocked.number)) == 2


def test_an_agents_claim_over_the_api_on_an_issue_blocked_before_baton_saw_it_is_refused(scene: Scene) -> None:
    blocked, blocker = _unheard(scene, "Blocked before Baton"), _unheard(scene, "Blocker")
    _link_unheard(scene, blocked, blocked_by=blocker)
    token = scene.stage.person("agent-a").token()
    answer = HTTP.post(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{blocked.number}/claim",
                       headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert answer.status_code == 409 and answer.json()["code"] == "blocked", answer.text
    assert f"#{blocker.number}" in answer.json()["message"]
    assert len(_link_reads(scene, blocked.number)) == 2


def test_a_parent_with_open_sub_issues_found_before_baton_saw_it_is_no_task(scene: Scene) -> None:
    scene.configure("offer: labeled\n")
    parent, child, done = _unheard(scene, "Epic"), _unheard(scene, "Part"), _unheard(scene, "Part done")
    _link_unheard(scene, parent, sub_issue=child)
    _link_unheard(scene, parent, sub_issue=done)
    with scene.hub.world.lock:
        done.state = "closed"
    scene.person("maria").label(scene.full_name, parent.number, "baton", add=True)
    scene.settle()

    own = scene.full_name.lower()
    assert scene.tasks(blocked="true")[parent.number]["blocked_by"] == [f"{own}#{child.number}"]
    assert len(_link_reads(scene, parent.number)) == 2

    with scene.hub.world.lock:  # the last part closed while Baton heard nothing of it
        child.state = "closed"
    scene.person("olivia").edit_issue(scene.full_name, parent.number, title="Epic, renamed")
    scene.settle()  # the issue's next delivery counts no open sub-issue: read again, and ready
    assert scene.tasks()[parent.number]["ready"] is True
    assert len(_link_reads(scene, parent.number)) == 4
    last = scene.app.state.work.history(scene.key.repository_key.ticket(parent.number))[-1]
    assert (last.type, last.data) == ("unblocked", {"by": f"{own}#{child.number}"})


def test_github_failing_to_list_the_links_makes_the_ticket_and_the_next_delivery_learns_them(scene: Scene) -> None:
    scene.configure("offer: labeled\n")
    blocked, blocker = _unheard(scene, "Blocked before Baton"), _unheard(scene, "Blocker")
    _link_unheard(scene, blocked, blocked_by=blocker)
    path = rf"^/repos/{scene.full_name}/issues/{blocked.number}/dependencies/blocked_by$"
    scene.rest.inject(Fault("GET", path, status=502, times=1))
    scene.person("maria").label(scene.full_name, blocked.number, "baton", add=True)
    scene.settle()

    assert scene.tasks()[blocked.number]["ready"] is True  # tracked all the same, as if nothing blocked it
    assert len(_link_reads(scene, blocked.number)) == 1  # asked, and GitHub failed

    scene.person("olivia").edit_issue(scene.full_name, blocked.number, title="Blocked, renamed")
    scene.settle()
    own = scene.full_name.lower()
    assert scene.tasks(blocked="true")[blocked.number]["blocked_by"] == [f"{own}#{blocker.number}"]
    assert len(_link_reads(scene, blocked.number)) == 3  # the failed read, then the two lists
