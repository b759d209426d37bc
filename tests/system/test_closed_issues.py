"""A closed issue is not work, through Baton's app on a real port against the stand-in GitHub: closed while
nobody works on it, its ticket is withdrawn (gone from the tasks an agent lists, `baton:open` gone, an event
naming who closed it and why) and offered again when the issue is reopened, whatever order GitHub's
deliveries arrive in; closed by a person while somebody works on it, the ticket keeps its state and is
flagged (status comment, one reply to the runner, the board, the read API); closed by a merge, it is
evidence only."""

from __future__ import annotations

import time
from typing import Any

import pytest

from baton.domain import TicketKey, WorkState, create, replay
from baton.domain.issue import IssueState, newer
from baton.domain.offering import CLOSED, reoffer, withdrawal, withdrawn_state
from support.board_scene import TOKEN, call, session
from support.local_http import HTTP
from support.standin_scene import Scene, scene_with

scene = scene_with(api_token=TOKEN)


def tasks(scene: Scene) -> list[int]:
    """The issues `GET /api/v1/tasks` offers an agent."""
    token = scene.stage.person("agent-a").token()
    answer = HTTP.get(f"{scene.stage.baton_url}/api/v1/tasks", params={"repo": scene.full_name},
                      headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    return [task["issue"] for task in answer.json()["tasks"]]


def ticket(scene: Scene) -> dict[str, Any]:
    """The ticket as the read API gives it."""
    answer = HTTP.get(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}",
                      headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def state(scene: Scene) -> WorkState:
    stored = scene.app.state.work.ticket(scene.key)
    assert stored is not None
    return WorkState(stored.state)


@pytest.mark.parametrize("reason", ["not_planned", "completed", "duplicate"])
def test_an_open_ticket_whose_issue_closes_is_withdrawn_and_offered_again_when_it_reopens(
    scene: Scene, reason: str
) -> None:
    scene.drain()
    assert scene.labels() == {"baton:open"} and tasks(scene) == [scene.number]

    scene.person("maria").close_issue(scene.full_name, scene.number, reason)
    scene.drain()
    assert state(scene) is WorkState.WITHDRAWN
    assert tasks(scene) == []
    assert "baton:open" not in scene.labels()
    withdrawn = scene.app.state.work.history(scene.key)[-1]
    assert (withdrawn.type, withdrawn.actor) == ("withdrawn", "maria")
    assert withdrawn.data["state_reason"] == reason and withdrawn.data["offering"] == "closed"
    assert "by @maria" in withdrawn.data["reason"]
    assert ticket(scene)["issue_state"] | {"at": None} == {
        "state": "closed", "reason": reason, "by": "maria", "at": None, "merged": False, "flagged": False
    }  # fmt: skip
    assert scene.replies() == []  # nobody worked on it: nobody to tell

    scene.later()
    scene.person("olivia").reopen_issue(scene.full_name, scene.number)
    scene.drain()
    assert state(scene) is WorkState.OPEN
    assert tasks(scene) == [scene.number]
    assert scene.labels() == {"baton:open"}
    reopened = scene.app.state.work.history(scene.key)[-1]
    assert (reopened.type, reopened.actor) == ("reopened", "olivia")
    assert ticket(scene)["issue_state"]["state"] == "open"


def test_a_draft_whose_issue_closes_comes_back_a_draft(scene: Scene) -> None:
    scene.number = scene.person("olivia").open_issue(
        scene.full_name, "Half a brief", "```yaml\ntask: Add a footer\ndraft: true\n```"
    )
    scene.settle()
    assert state(scene) is WorkState.DRAFT
    scene.person("maria").close_issue(scene.full_name, scene.number, "not_planned")
    scene.settle()
    assert state(scene) is WorkState.WITHDRAWN
    scene.later()
    scene.person("maria").reopen_issue(scene.full_name, scene.number)
    scene.drain()
    assert state(scene) is WorkState.DRAFT and scene.labels() == {"baton:draft"}


def _decided(scene: Scene, delivery: str) -> None:
    deadline = time.monotonic() + 30
    while delivery not in {d.id for d in scene.app.state.inbox.listed("done")}:
        assert time.monotonic() < deadline, f"delivery {delivery} was not decided in 30 s"
        time.sleep(0.05)


def test_closed_then_reopened_arriving_the_other_way_round_ends_open(scene: Scene) -> None:
    maria = scene.person("maria")
    with scene.hub.gathered() as sent:
        maria.close_issue(scene.full_name, scene.number, "not_planned")
        scene.later()
        maria.reopen_issue(scene.full_name, scene.number)
        older = sent.pop(0)  # the reopening first, decided, and only then the older close
        reopening = sent[0].id
    _decided(scene, reopening)
    with scene.hub.gathered() as sent:
        sent.append(older)
    scene.drain()
    assert state(scene) is WorkState.OPEN and tasks(scene) == [scene.number]
    assert [event.type for event in scene.app.state.work.history(scene.key)] == ["created"]
    assert scene.labels() == {"baton:open"}

    with scene.hub.gathered() as sent:  # and the other way: reopened, then closed for good, told reversed
        scene.later()
        maria.close_issue(scene.full_name, scene.number, "duplicate")
        sent.reverse()
    scene.drain()
    assert state(scene) is WorkState.WITHDRAWN and tasks(scene) == []


@pytest.mark.both_engines
def test_a_claimed_ticket_closed_by_a_person_keeps_its_state_and_is_flagged(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    maria = scene.person("maria")
    maria.close_issue(scene.full_name, scene.number, "not_planned")
    scene.drain()
    assert state(scene) is WorkState.CLAIMED
    assert "baton:claimed" in scene.labels() and scene.assignees() == ["agent-a"]
    assert "**Issue:** Issue closed as not planned by @maria. The work state stays claimed" in scene.status()
    replies = scene.replies()
    assert len(replies) == 1 and "@agent-a" in replies[0] and "closed as not planned by @maria" in replies[0]
    found = ticket(scene)
    assert (found["state"], found["runner"]) == ("claimed", "agent-a")
    assert found["issue_state"] | {"at": None} == {
        "state": "closed", "reason": "not_planned", "by": "maria", "at": None, "merged": False, "flagged": True
    }  # fmt: skip

    with scene.hub.world.lock:  # GitHub sends the close again: nobody is told twice
        close = next(d for d in reversed(scene.hub.deliveries) if d.event == "issues")
    scene.hub.redeliver(close)
    scene.drain()
    assert len(scene.replies()) == 1

    board = call(scene.stage.baton_url, "GET", "/", session(scene.stage.baton_url))
    assert board.status_code == 200
    card = board.text[board.text.index(f'data-ticket="{scene.full_name}#{scene.number}"') :]
    card = card[: card.index("</li>")]
    assert 'data-badge="issue-closed"' in card and "Issue closed as not planned by @maria" in card

    # the runner goes on and delivers: still flagged, and the state is the reviewer's to decide
    scene.comment("agent-a", "/deliver Done.\nbranch: feature")
    scene.drain()
    assert state(scene) is WorkState.DELIVERED
    assert "**Issue:** Issue closed as not planned by @maria. The work state stays delivered" in scene.status()
    scene.later()
    maria.reopen_issue(scene.full_name, scene.number)
    scene.drain()
    assert "**Issue:**" not in scene.status() and ticket(scene)["issue_state"]["flagged"] is False
    assert state(scene) is WorkState.DELIVERED and len(scene.replies()) == 1


def test_a_delivered_ticket_whose_pull_request_merges_and_closes_the_issue_is_not_flagged(scene: Scene) -> None:
    """Whatever order GitHub's deliveries of the merge and the close arrive in."""
    agent, maria = scene.person("agent-a"), scene.person("maria")
    branch = f"{scene.number}-empty-state"
    scene.comment("agent-a", "/claim")
    agent.push(scene.full_name, branch, "Empty state for the cart")
    pr = agent.open_pull_request(scene.full_name, branch, "Empty state for the cart", f"Fixes #{scene.number}")
    scene.comment("agent-a", f"/deliver Done.\npr: #{pr}")
    scene.later()
    with scene.hub.gathered() as sent:
        maria.merge(scene.full_name, pr)
        merge = sent.pop(0)  # the issue closed is decided before the merge that closed it arrives
    deadline = time.monotonic() + 30
    while ticket(scene)["issue_state"]["state"] != "closed":
        assert time.monotonic() < deadline, "the close was never decided"
        time.sleep(0.05)
    with scene.hub.gathered() as sent:
        sent.append(merge)
    scene.drain()
    assert scene.issue.state == "closed"
    assert f"/repos/{scene.full_name}/issues/{scene.number}/timeline" in scene.reads()
    assert state(scene) is WorkState.DELIVERED
    assert "**Issue:**" not in scene.status() and scene.replies() == []
    issue = ticket(scene)["issue_state"]
    assert (issue["state"], issue["merged"], issue["flagged"]) == ("closed", True, False)
    assert "issue_closed" in {event["type"] for event in scene.app.state.work.evidence.reads.events(scene.key)}


# -- the order of GitHub's stamps ----------------------------------------------------------------------

CLOSE = IssueState("closed", "2024-05-01T10:30:00Z", "maria", "not_planned")


@pytest.mark.parametrize(
    ("recorded", "incoming", "acted"),
    [
        (None, CLOSE, True),
        (CLOSE, CLOSE, False),  # the same close told twice
        (CLOSE, IssueState("open", "2024-05-01T10:31:00Z", "maria"), True),
        (IssueState("open", "2024-05-01T10:31:00Z", "maria"), CLOSE, False),  # an older close arriving late
        (CLOSE, IssueState("open", "2024-05-01T10:30:00Z", "maria"), True),  # the same second: the last told wins
        (CLOSE, IssueState("closed", "2024-05-01T10:30:00Z", "maria", "duplicate"), True),
    ],
)
def test_a_change_is_acted_on_only_when_it_is_newer_than_the_one_recorded(
    recorded: IssueState | None, incoming: IssueState, acted: bool
) -> None:
    assert newer(recorded, incoming) is acted


def test_a_withdrawn_draft_replays_back_to_a_draft() -> None:
    key = TicketKey(1, 2, 3)
    draft, created = create(key, "octo/shop", "olivia", draft=True)
    gone = withdrawal(draft, "maria", CLOSED, how=CLOSE.words(), state_reason="not_planned")
    back = reoffer(gone.ticket, "maria", withdrawn_state([created, gone.event]))
    assert back is not None and back.ticket.state is WorkState.DRAFT
    assert replay(key, "octo/shop", [created, gone.event, back.event]) == back.ticket
    assert gone.event.data["reason"] == "the issue was closed as not planned by @maria"
