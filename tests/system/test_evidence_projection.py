"""What GitHub shows of the evidence rails, through the real app and writer against the stand-in GitHub
(`github_standin`) on 127.0.0.1: the three rails in the status comment, reported against verified (asked of
GitHub where webhooks said nothing), and the `baton/acceptance` check run on pull request heads.

People push, open and merge pull requests and deploy, and GitHub Actions reports check runs, each as GitHub
tells Baton; commits carry the ids the test chooses (tests/support/payloads.py), so the lines shown name them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from baton.domain import WorkState
from baton.github.verify import RETRIES
from baton.store import tables as t
from github_standin.server import Fault
from support import standin_scene
from support.local_http import HTTP
from support.payloads import HEAD, LATER, MERGE, NEWER
from support.standin_scene import Scene

scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


def lines(scene: Scene) -> list[str]:
    """The status comment's rail lines."""
    return [line for line in scene.status().splitlines() if line.startswith("**")]


def branch(scene: Scene) -> str:
    """The ticket's branch: named after its issue, so the name links it."""
    return f"{scene.number}-empty-state"


def open_pull_request(scene: Scene, *, body: str | None = None, sha: str = HEAD) -> int:
    """agent-a pushes commit `sha` to the ticket's branch and opens a pull request that fixes the ticket."""
    agent = scene.person("agent-a")
    agent.push(scene.full_name, branch(scene), "Empty state for the cart", sha=sha)
    body = f"Fixes #{scene.number}" if body is None else body
    number = agent.open_pull_request(scene.full_name, branch(scene), "Empty state for the cart", body)
    scene.settle()
    return number


def there_since_before(scene: Scene, name: str, sha: str) -> None:
    """Branch `name` at commit `sha` on GitHub, pushed before any webhook could tell Baton."""
    with scene.hub.world.lock:
        scene.hub.world.add_commit(scene.repository, name, "Work in progress", sha=sha)


def checks_table(scene: Scene) -> list[Any]:
    with scene.app.state.work.units.engine.connect() as connection:
        return list(connection.execute(select(t.check_runs)).all())


# ---------------------------------------------------------------------------------------------- the status comment


def test_the_status_comment_shows_the_three_rails_and_a_mismatch(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", f"/deliver Done.\nbranch: {branch(scene)}\ncommit: 0c0ffee")
    pr = open_pull_request(scene)
    scene.drain()
    assert lines(scene) == [
        "**Work:** Delivered — attempt 1 by @agent-a, awaiting review",
        f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)",
        f"**Mismatch:** Reported commit 0c0ffee is not the head of pull request #{pr} (1a2b3c4)",
        "**Deployment:** Not deployed",
    ]


def test_merged_then_deployed_while_the_work_stays_delivered(scene: Scene) -> None:
    maria = scene.person("maria")
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", f"/deliver Done.\nbranch: {branch(scene)}")
    pr = open_pull_request(scene)
    scene.later()
    maria.merge(scene.full_name, pr, sha=MERGE)  # GitHub closes the issue too: the body says it fixes it
    assert scene.issue.state == "closed"
    scene.later()
    maria.deploy(scene.full_name, MERGE, "production")
    scene.drain()
    assert lines(scene) == [
        "**Work:** Delivered — attempt 1 by @agent-a, awaiting review",
        f"**Repository:** Pull request #{pr} merged (merge commit 9f8e7d6)",
        "**Deployment:** Deployed to production (9f8e7d6)",
    ]
    assert scene.app.state.work.ticket(scene.key).state is WorkState.DELIVERED


# ---------------------------------------------------------------------------------------------- verification


def test_a_reported_branch_no_webhook_showed_is_verified_through_the_api(scene: Scene) -> None:
    there_since_before(scene, "wip", HEAD)
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver Done.\nbranch: wip\ncommit: 1a2b3c4")
    scene.drain()
    assert lines(scene)[1:] == ["**Repository:** Branch wip (head 1a2b3c4, verified)", "**Deployment:** Not deployed"]
    assert scene.reads().count(f"/repos/{scene.full_name}/branches/wip") == 1
    scene.comment("agent-a", "/status")
    scene.drain()
    assert scene.reads().count(f"/repos/{scene.full_name}/branches/wip") == 1  # verified: not asked again


def test_a_reported_branch_at_another_commit_is_a_mismatch(scene: Scene) -> None:
    there_since_before(scene, "wip", NEWER)
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver Done.\nbranch: wip\ncommit: 1a2b3c4")
    scene.drain()
    assert "**Mismatch:** Reported commit 1a2b3c4 is not the head of branch wip (5e6f7a8)" in lines(scene)
    # the read API is off here: no token
    body = HTTP.get(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}")
    assert body.status_code == 403


def test_a_reported_branch_github_does_not_know_is_asked_again_then_shown_not_found(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver Done.\nbranch: typo")
    scene.drain()
    assert "**Repository:** Branch typo reported, not verified yet" in lines(scene)
    assert len(scene.outbox()) == 1  # asked again shortly: GitHub can lag right after a push
    scene.drain_until_empty(3 * sum(RETRIES))
    assert "**Repository:** Branch typo reported, not found on GitHub" in lines(scene)
    with scene.hub.world.lock:
        asked = [c.at for c in scene.rest.calls if c.path == f"/repos/{scene.full_name}/branches/typo"]
    assert 2 <= len(asked) <= 1 + len(RETRIES)
    assert asked[-1] - asked[0] >= sum(RETRIES) - 0.1  # still missing 7 s after the first answer
    scene.person("agent-a").push(scene.full_name, "typo", "Work in progress", sha=HEAD)
    scene.drain()
    assert "**Repository:** Branch typo (head 1a2b3c4, verified)" in lines(scene)
    assert len(asked) == len([c for c in scene.rest.calls if c.path.endswith("/branches/typo")])  # not asked again


def test_a_reported_pull_request_is_read_from_the_api_and_links_the_ticket(scene: Scene) -> None:
    there_since_before(scene, "wip", NEWER)
    with scene.hub.world.lock:  # opened before any webhook could tell Baton, and not naming the ticket
        author = scene.hub.world.account("agent-a")
        pr = scene.hub.world.add_pull_request(scene.repository, author, "wip", "Cart", "No keyword here").number
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", f"/deliver Done.\npr: #{pr}")
    scene.drain()
    assert f"**Repository:** Pull request #{pr} open (head 5e6f7a8, verified)" in lines(scene)
    assert scene.runs(NEWER) == [("in_progress", None, f"Waiting for acceptance of #{scene.number}")]


def test_the_compare_api_decides_a_later_deployment(scene: Scene) -> None:
    maria = scene.person("maria")
    scene.comment("agent-a", "/claim")
    pr = open_pull_request(scene)
    scene.later()
    maria.merge(scene.full_name, pr, sha=MERGE)
    scene.later()
    maria.push(scene.full_name, "main", "After the merge", sha=LATER)
    scene.later()
    maria.deploy(scene.full_name, LATER, "production")
    scene.drain()
    assert "**Deployment:** Deployed to production (7777777)" in lines(scene)
    assert scene.reads().count(f"/repos/{scene.full_name}/compare/{MERGE}...{LATER}") == 1


def test_a_deployment_the_compare_api_puts_before_the_merge_does_not_count(scene: Scene) -> None:
    maria = scene.person("maria")
    maria.push(scene.full_name, "main", "Before the merge", sha=LATER)
    scene.comment("agent-a", "/claim")
    pr = open_pull_request(scene)
    scene.later()
    maria.merge(scene.full_name, pr, sha=MERGE)
    scene.later()
    maria.deploy(scene.full_name, LATER, "production")
    scene.drain()
    assert "**Deployment:** Not deployed" in lines(scene)
    assert scene.reads().count(f"/repos/{scene.full_name}/compare/{MERGE}...{LATER}") == 1


def test_a_failing_check_blocks_once_the_base_branch_says_it_is_required(scene: Scene) -> None:
    with scene.hub.world.lock:
        scene.hub.world.protect(scene.repository, "main", ("build",))
    ci = scene.ci()
    scene.comment("agent-a", "/claim")
    pr = open_pull_request(scene)
    ci.check_run(scene.full_name, "build", HEAD, "failure")
    ci.check_run(scene.full_name, "lint", HEAD, "failure")
    scene.drain()
    assert f"**Repository:** Blocked — pull request #{pr} has failing required checks: build" in lines(scene)
    scene.later()
    ci.check_run(scene.full_name, "build", HEAD, "success")  # run again, and passed
    scene.drain()
    assert f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)" in lines(scene)


def test_github_failing_while_verifying_delays_and_retries(scene: Scene) -> None:
    there_since_before(scene, "wip", HEAD)
    failing = Fault("GET", f"^/repos/{scene.full_name}/branches/wip$", status=502, times=1_000)
    scene.rest.inject(failing)
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver Done.\nbranch: wip")
    scene.drain()
    # The first retry is due a second later; a slow drain may already have made it, and failed again.
    [row] = scene.outbox()
    assert row.attempts >= 1 and "502" in row.last_error
    failing.times = 0  # GitHub answers again
    scene.due_now()
    scene.drain()
    assert "**Repository:** Branch wip (head 1a2b3c4, verified)" in lines(scene)
    assert scene.outbox() == []


# ---------------------------------------------------------------------------------------------- the check run


@pytest.mark.both_engines
def test_the_acceptance_check_through_a_life(scene: Scene) -> None:
    n = scene.number
    scene.comment("agent-a", "/claim")
    open_pull_request(scene)
    scene.drain()
    assert scene.runs(HEAD) == [("in_progress", None, f"Waiting for acceptance of #{n}")]
    [first] = scene.check_runs()
    assert (first.name, first.external_id) == ("baton/acceptance", f"baton-acceptance:{HEAD}")
    assert "Claimed — attempt 1 by @agent-a" in (first.summary or "")

    scene.comment("agent-a", "/deliver done")
    scene.drain()
    assert scene.runs(HEAD) == [("in_progress", None, f"Waiting for acceptance of #{n}")]
    assert "awaiting review" in (first.summary or "")

    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]
    assert first.summary == f"#{n}: accepted by @maria at 1a2b3c4."

    writes = len(scene.writes())
    scene.comment("agent-b", "/status")
    scene.drain()
    assert [w for w in scene.writes()[writes:] if "check-runs" in w] == []  # nothing differs: nothing written

    scene.later()
    scene.person("agent-a").push(scene.full_name, branch(scene), "One more thing", sha=NEWER)  # synchronize
    scene.drain()
    assert scene.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]
    assert scene.runs(NEWER) == [("completed", "neutral", "Head 5e6f7a8 moved after the acceptance")]
    [moved] = [r for r in scene.check_runs() if r.head_sha == NEWER]
    assert (moved.summary or "").startswith(
        f"#{n}: accepted by @maria at 1a2b3c4. The head has moved to 5e6f7a8 since, and the commits after 1a2b3c4 "
        "were not part of the acceptance. The work state stays accepted"
    )
    assert scene.app.state.work.ticket(scene.key).state is WorkState.ACCEPTED

    scene.comment("maria", "/reopen it needs another look")
    scene.drain()
    # a completed run does not start again: a new one follows it on the same head
    assert scene.runs(NEWER) == [
        ("completed", "neutral", "Head 5e6f7a8 moved after the acceptance"),
        ("in_progress", None, f"Waiting for acceptance of #{n}"),
    ]


def test_the_check_passes_only_when_every_ticket_the_pull_request_links_is_accepted(scene: Scene) -> None:
    first = scene.number
    second = scene.person("olivia").open_issue(scene.full_name, "Empty state for the wish list")
    for number in (first, second):
        scene.comment("agent-a", "/claim", number=number)
        scene.comment("agent-a", "/deliver done", number=number)
    open_pull_request(scene, body=f"Fixes #{first}, fixes #{second}")
    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.runs(HEAD) == [("in_progress", None, f"Waiting for acceptance of #{second}")]
    scene.comment("maria", "/accept", number=second)
    scene.drain()
    assert scene.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]


def test_a_merge_before_acceptance_gets_the_check_once_accepted(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    pr = open_pull_request(scene)
    scene.comment("agent-a", "/deliver done")
    scene.drain()
    scene.later()
    scene.person("maria").merge(scene.full_name, pr, sha=MERGE)
    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]


def test_no_check_on_a_pull_request_closed_before_one_was_made(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    pr = open_pull_request(scene)
    scene.later()
    scene.person("agent-a").close_pull_request(scene.full_name, pr)
    scene.drain()
    assert scene.check_runs() == []


def lease_runs_out(scene: Scene) -> None:
    """Age the lease on creating each head's check run past its minute, as if its writer died."""
    with scene.app.state.work.units.engine.begin() as connection:
        connection.execute(update(t.check_runs).values(updated_at=datetime.now(UTC) - timedelta(minutes=5)))


def test_a_crash_after_creating_the_check_run_never_makes_a_second_one(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    open_pull_request(scene)
    scene.settle()
    outbox = scene.app.state.writer.outbox
    real = outbox.record_check_run

    def killed(*args: Any) -> None:
        raise SystemExit("killed after GitHub created the run")

    outbox.record_check_run = killed
    with pytest.raises(SystemExit):
        scene.drain()
    outbox.record_check_run = real
    assert len(scene.check_runs()) == 1
    scene.due_now()
    scene.drain()  # the creation is still leased: another writer might be making the run right now
    assert len(scene.check_runs()) == 1
    [row] = scene.outbox()
    assert row.last_error == "the check run is being created by another writer"
    lease_runs_out(scene)
    scene.due_now()
    scene.drain()
    assert scene.runs(HEAD) == [("in_progress", None, f"Waiting for acceptance of #{scene.number}")]
    [row] = checks_table(scene)
    assert row.check_run_id == scene.check_runs()[0].id
    assert scene.outbox() == []


@pytest.mark.both_engines
def test_a_crash_before_creating_the_check_run_creates_it_once(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    open_pull_request(scene)
    scene.settle()
    projector = scene.app.state.writer.projector
    real = projector.create_check_run

    def killed(*args: Any) -> int:
        raise SystemExit("killed before GitHub heard of it")

    projector.create_check_run = killed
    with pytest.raises(SystemExit):
        scene.drain()
    projector.create_check_run = real
    lease_runs_out(scene)
    scene.due_now()
    scene.drain()
    assert scene.runs(HEAD) == [("in_progress", None, f"Waiting for acceptance of #{scene.number}")]
    assert any(read.endswith(f"/commits/{HEAD}/check-runs") for read in scene.reads())  # looked first


def test_github_refusing_the_check_run_leaves_the_rest_shown(scene: Scene) -> None:
    scene.rest.inject(
        Fault("POST", f"^/repos/{scene.full_name}/check-runs$", status=403,
              message="Resource not accessible by integration")
    )  # fmt: skip
    claim = scene.comment("agent-a", "/claim")
    open_pull_request(scene)
    scene.drain()
    assert scene.labels() == {"baton:claimed"} and scene.reactions() == [(claim, "+1")]
    assert scene.outbox() == []
    assert scene.check_runs() == []
