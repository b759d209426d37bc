"""Made-up evidence is caught, through the real app against the stand-in GitHub on 127.0.0.1: a delivery naming
a branch, commit or pull request GitHub does not know shows it as not found on GitHub on the repository rail
(status comment, board card, ticket page, read API) within 30 s; /accept of it is applied and the answer names
what was not found; with `require_verified_evidence: true` /accept is refused, naming each item, until GitHub
shows them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from baton.demo.stage import Stage
from baton.demo.story import seen
from baton.domain import WorkState
from baton.domain.model import TicketKey
from baton.github.verify import RETRIES
from support.board_scene import call, sign_in
from support.keys import app_key, app_public_key
from support.local_http import HTTP
from support.payloads import HEAD
from support.standin_scene import Scene

TOKEN = "made-up-evidence-read-token"
MADE_UP_COMMIT = "0c0ffee0c0ffee0c0ffee0c0ffee0c0ffee0c0ff"
BOUND = 30.0  # seconds from the delivery; the retries take 7 of them, Baton's default pacing 2 or 3 more


@pytest.fixture
def stage(database_url: str) -> Iterator[Stage]:
    """Baton with its default answer delay and write pacing, its lanes running, and the read API on."""
    options: dict[str, Any] = {"answer_delay": 2.0, "write_interval": 1.0}
    with Stage.open(database_url, key=(app_key(), app_public_key()), api_token=TOKEN, **options) as opened:
        yield opened
        assert opened.hub.all_problems() == []
    opened.app.state.work.units.engine.dispose()


def ticket_json(stage: Stage, number: int) -> Any:
    answer = HTTP.get(f"{stage.baton_url}/api/v1/repos/{stage.full_name}/issues/{number}",
                      headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return answer.json()


def until(what: str, check: Any, timeout: float = BOUND) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.1)


def delivered(stage: Stage, number: int, deliver: str) -> float:
    """agent-a claims issue `number` and delivers it with `deliver`; returns when the delivery was decided."""
    agent = stage.person("agent-a", "write")
    key = TicketKey(stage.repository.installation_id, stage.repository.id, number)
    claim = agent.comment(stage.full_name, number, "/claim")

    def claimed() -> bool:  # and shown on GitHub: what the delivery's writes do not wait behind
        now = seen(stage.repository, number, stage.hub.world.lock)
        return "+1" in now.reactions.get(claim, ()) and "Claimed" in (now.status or "") and "agent-a" in now.assignees

    until("the claim shown on GitHub", claimed)
    agent.comment(stage.full_name, number, deliver)
    until("the delivery", lambda: stage.app.state.work.ticket(key).state is WorkState.DELIVERED)
    return time.monotonic()


@pytest.mark.long
def test_made_up_evidence_shows_as_not_found_on_github_within_30_seconds(stage: Stage) -> None:
    number = stage.person("olivia").open_issue(stage.full_name, "Empty state for the cart")
    at = delivered(stage, number, f"/deliver Done.\nbranch: made-up\ncommit: {MADE_UP_COMMIT}\npr: #77")

    def shown() -> bool:
        status = seen(stage.repository, number, stage.hub.world.lock).status or ""
        states = [item["state"] for item in ticket_json(stage, number)["evidence"]["repository"]["verification"]]
        return states == ["not_found"] * 3 and status.count("not found on GitHub") == 3

    until("the made-up evidence to show as not found on GitHub", shown)
    took = time.monotonic() - at
    assert took < BOUND
    assert took >= sum(RETRIES)  # asked again 1, 3 and 7 s after the first answer, then not found

    body = ticket_json(stage, number)["evidence"]["repository"]
    assert body["verification"] == [
        {"kind": "branch", "reported": "made-up", "state": "not_found"},
        {"kind": "pull_request", "reported": "77", "state": "not_found"},
        {"kind": "commit", "reported": MADE_UP_COMMIT, "state": "not_found"},
    ]
    words = (
        "Pull request #77 reported, not found on GitHub; branch made-up reported, not found on GitHub; "
        "commit 0c0ffee reported, not found on GitHub"
    )
    assert body["text"] == words
    status = seen(stage.repository, number, stage.hub.world.lock).status or ""
    assert f"**Repository:** {words}" in status.splitlines()

    board = sign_in(stage.baton_url, TOKEN)
    cookie = board.cookies["baton_session"]
    html = call(stage.baton_url, "GET", "/", cookie).text
    start = html.index(f'data-ticket="{stage.full_name}#{number}"')
    assert f'data-rail="repository">{words}</dd>' in html[start : html.index("</li>", start)]
    page = call(stage.baton_url, "GET", f"/t/{stage.full_name}/{number}", cookie).text
    assert f'data-rail="repository">{words}</dd>' in page

    # accepted all the same, with an answer that names what GitHub did not find
    maria = stage.person("maria", "maintain")
    accept = maria.comment(stage.full_name, number, "/accept")

    def answered() -> list[str]:
        now = seen(stage.repository, number, stage.hub.world.lock)
        return (
            [reply for reply in now.replies if "is accepted" in reply] if "+1" in now.reactions.get(accept, ()) else []
        )

    replies = until("the acceptance's answer", answered)
    assert [reply.partition("\n\n<!-- baton:reply")[0] for reply in replies] == [
        f"@maria #{number} is accepted, but GitHub did not find branch made-up, pull request #77 and commit 0c0ffee, "
        "which the delivery reported. The acceptance stands."
    ]
    key = TicketKey(stage.repository.installation_id, stage.repository.id, number)
    assert stage.app.state.work.ticket(key).state is WorkState.ACCEPTED


# ---------------------------------------------------------------------------------------------- verified only


@pytest.fixture
def scene(database_url: str) -> Iterator[Scene]:
    from support.standin_scene import opened

    with opened(database_url) as made:
        made.settle()
        made.configure("require_verified_evidence: true\n")
        yield made


def accept_by_api(scene: Scene) -> httpx.Response:
    token = scene.stage.person("maria", "maintain").token()
    return HTTP.post(f"{scene.stage.baton_url}/api/v1{scene.path}/accept", json={"note": "Looks right"},
                     headers={"Authorization": f"Bearer {token}"})  # fmt: skip


def test_require_verified_evidence_refuses_acceptance_until_github_shows_each_item(scene: Scene) -> None:
    branch = f"{scene.number}-empty-state"
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", f"/deliver Done.\nbranch: {branch}\ncommit: 1a2b3c4")
    scene.drain_until_empty(3 * sum(RETRIES))
    assert (
        f"**Repository:** Branch {branch} reported, not found on GitHub; commit 1a2b3c4 reported, not found on GitHub"
        in scene.status().splitlines()
    )

    scene.comment("maria", "/accept")
    scene.drain()
    refusal = (
        f"#{scene.number} cannot be accepted yet: this repository accepts only evidence GitHub verified "
        f"(`require_verified_evidence: true`), and the delivery reported branch {branch} (not found on GitHub) "
        "and commit 1a2b3c4 (not found on GitHub)."
    )
    assert any(reply.startswith(f"@maria {refusal}") for reply in scene.replies()), scene.replies()
    answer = accept_by_api(scene)
    assert answer.status_code == 409, answer.text
    assert answer.json()["code"] == "unverified_evidence"
    assert answer.json()["message"].startswith(refusal)
    assert answer.json()["state"] == "delivered"
    assert scene.app.state.work.ticket(scene.key).state is WorkState.DELIVERED

    # the branch is pushed, at the reported commit: GitHub's push verifies both, and the acceptance goes through
    scene.person("agent-a").push(scene.full_name, branch, "Empty state for the cart", sha=HEAD)
    scene.drain()
    assert f"**Repository:** Branch {branch} (head 1a2b3c4, verified)" in scene.status().splitlines()
    answer = accept_by_api(scene)
    assert answer.status_code == 200, answer.text
    assert answer.json()["state"] == "accepted" and answer.json()["message"] is None
    assert scene.app.state.work.ticket(scene.key).state is WorkState.ACCEPTED


def test_require_verified_evidence_waits_for_evidence_not_verified_yet_and_a_later_delivery_is_asked_afresh(
    scene: Scene,
) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver Done.\npr: #77")
    answer = accept_by_api(scene)  # before Baton asked GitHub: not verified yet
    assert answer.status_code == 409 and "pull request #77 (not verified yet)" in answer.json()["message"]
    scene.drain_until_empty(3 * sum(RETRIES))
    assert "**Repository:** Pull request #77 reported, not found on GitHub" in scene.status().splitlines()

    scene.comment("maria", "/send-back Open the pull request you named.")
    agent = scene.person("agent-a")
    agent.push(scene.full_name, "cart", "Empty state for the cart", sha=HEAD)
    with scene.hub.world.lock:  # opened, and GitHub's webhook lost: only the API can tell Baton
        author = scene.hub.world.account("agent-a")
        pr = scene.hub.world.add_pull_request(scene.repository, author, "cart", "Cart", "No keyword").number
    scene.comment("agent-a", f"/deliver Done.\npr: #{pr}")
    scene.drain()
    assert f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)" in scene.status().splitlines()
    assert accept_by_api(scene).status_code == 200
