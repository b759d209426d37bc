"""What GitHub shows of the evidence rails, through the real app and worker with the respx fake of GitHub:
the three rails in the status comment, reported against verified (asked of GitHub where webhooks said
nothing), and the `baton/acceptance` check run on pull request heads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

import fake_github
from baton.domain import TicketKey, WorkState
from baton.store import tables as t
from fake_github import INSTALLATION, NUMBER, REPOSITORY_ID, Scene
from payloads import HEAD, LATER, MERGE, NEWER, Repo, at

scene = fake_github.scene  # the app and worker, with the respx fake of GitHub
SHOP = Repo(INSTALLATION, REPOSITORY_ID, "octo/shop")
KEY = TicketKey(INSTALLATION, REPOSITORY_ID, NUMBER)


def lines(scene: Scene) -> list[str]:
    """The status comment's rail lines."""
    return [line for line in scene.github.status().splitlines() if line.startswith("**")]


def branch_answer(name: str, sha: str, protection: list[str] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"name": name, "commit": {"sha": sha, "commit": {"committer": {"date": at(0)}}}}
    if protection is not None:
        answer["protection"] = {"enabled": True, "required_status_checks": {"contexts": protection}}
    return answer


def checks_table(scene: Scene) -> list[Any]:
    with scene.app.state.work.units.engine.connect() as connection:
        return list(connection.execute(select(t.check_runs)).all())


# ---------------------------------------------------------------------------------------------- the status comment


def test_the_status_comment_shows_the_three_rails_and_a_mismatch(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\nbranch: 42-empty-state\ncommit: 0c0ffee")
    scene.post("pull_request", SHOP.pull_request("opened", sha=HEAD))
    scene.drain()
    assert lines(scene) == [
        "**Work:** Delivered — attempt 1 by @agent-a, awaiting review",
        "**Repository:** Pull request #57 open (head 1a2b3c4, verified)",
        "**Mismatch:** Reported commit 0c0ffee is not the head of pull request #57 (1a2b3c4)",
        "**Deployment:** Not deployed",
    ]


def test_merged_then_deployed_while_the_work_stays_delivered(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\nbranch: 42-empty-state")
    scene.post("pull_request", SHOP.pull_request("closed", merged=True, minute=5))
    scene.post("issues", SHOP.issue("closed"))
    scene.post("deployment", SHOP.deployment(minute=10))
    scene.post("deployment_status", SHOP.deployment_status("success", minute=11))
    scene.drain()
    assert lines(scene) == [
        "**Work:** Delivered — attempt 1 by @agent-a, awaiting review",
        "**Repository:** Pull request #57 merged (merge commit 9f8e7d6)",
        "**Deployment:** Deployed to production (9f8e7d6)",
    ]
    assert scene.app.state.work.ticket(KEY).state is WorkState.DELIVERED


# ---------------------------------------------------------------------------------------------- verification


def test_a_reported_branch_no_webhook_showed_is_verified_through_the_api(scene: Scene) -> None:
    scene.github.branches["wip"] = branch_answer("wip", HEAD)
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\nbranch: wip\ncommit: 1a2b3c4")
    scene.drain()
    assert lines(scene)[1:] == ["**Repository:** Branch wip (head 1a2b3c4, verified)", "**Deployment:** Not deployed"]
    assert scene.github.reads.count("/repos/octo/shop/branches/wip") == 1
    scene.comment("agent-a", "/status")
    scene.drain()
    assert scene.github.reads.count("/repos/octo/shop/branches/wip") == 1  # verified: not asked again


def test_a_reported_branch_at_another_commit_is_a_mismatch(scene: Scene) -> None:
    scene.github.branches["wip"] = branch_answer("wip", NEWER)
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\nbranch: wip\ncommit: 1a2b3c4")
    scene.drain()
    assert "**Mismatch:** Reported commit 1a2b3c4 is not the head of branch wip (5e6f7a8)" in lines(scene)
    body = scene.client.get("/api/v1/repos/octo/shop/issues/42")  # the read API is off here: no token
    assert body.status_code == 403


def test_a_reported_branch_github_does_not_know_stays_unverified(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\nbranch: typo")
    scene.drain()
    assert "**Repository:** Branch typo reported, not verified yet" in lines(scene)
    assert scene.outbox() == []


def test_a_reported_pull_request_is_read_from_the_api_and_links_the_ticket(scene: Scene) -> None:
    scene.github.pulls[60] = SHOP.pull_request("opened", 60, body="No keyword here", ref="wip", sha=NEWER)[
        "pull_request"
    ]
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\npr: #60")
    scene.drain()
    assert "**Repository:** Pull request #60 open (head 5e6f7a8, verified)" in lines(scene)
    assert scene.github.runs(NEWER) == [("in_progress", None, "Waiting for acceptance of #42")]


def test_the_compare_api_decides_a_later_deployment(scene: Scene) -> None:
    scene.github.comparisons[f"{MERGE}...{LATER}"] = "ahead"
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("closed", merged=True, minute=5))
    scene.post("deployment", SHOP.deployment(sha=LATER, minute=10))
    scene.post("deployment_status", SHOP.deployment_status("success", sha=LATER, minute=11))
    scene.drain()
    assert "**Deployment:** Deployed to production (7777777)" in lines(scene)
    assert scene.github.reads.count(f"/repos/octo/shop/compare/{MERGE}...{LATER}") == 1


def test_a_deployment_the_compare_api_puts_before_the_merge_does_not_count(scene: Scene) -> None:
    scene.github.comparisons[f"{MERGE}...{LATER}"] = "behind"
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("closed", merged=True, minute=5))
    scene.post("deployment", SHOP.deployment(sha=LATER, minute=10))
    scene.post("deployment_status", SHOP.deployment_status("success", sha=LATER, minute=11))
    scene.drain()
    assert "**Deployment:** Not deployed" in lines(scene)


def test_a_failing_check_blocks_once_the_base_branch_says_it_is_required(scene: Scene) -> None:
    scene.github.branches["main"] = branch_answer("main", MERGE, protection=["build"])
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("opened"))
    scene.post("check_run", SHOP.check_run("build", "failure"))
    scene.post("check_run", SHOP.check_run("lint", "failure"))
    scene.drain()
    assert "**Repository:** Blocked — pull request #57 has failing required checks: build" in lines(scene)
    scene.post("check_run", SHOP.check_run("build", "success", minute=9))
    scene.drain()
    assert "**Repository:** Pull request #57 open (head 1a2b3c4, verified)" in lines(scene)


def test_github_failing_while_verifying_delays_and_retries(scene: Scene) -> None:
    import httpx

    scene.github.branches["wip"] = branch_answer("wip", HEAD)
    scene.github.faults["GET /repos/octo/shop/branches/wip"] = [httpx.Response(502, text="bad gateway")]
    scene.comment("agent-a", "/claim")
    scene.comment("agent-a", "/deliver\nbranch: wip")
    scene.drain()
    [row] = scene.outbox()
    assert row.attempts == 1 and row.last_error
    scene.due_now()
    scene.drain()
    assert "**Repository:** Branch wip (head 1a2b3c4, verified)" in lines(scene)
    assert scene.outbox() == []


# ---------------------------------------------------------------------------------------------- the check run


def test_the_acceptance_check_through_a_life(scene: Scene) -> None:
    github = scene.github
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("opened"))
    scene.drain()
    assert github.runs(HEAD) == [("in_progress", None, "Waiting for acceptance of #42")]
    first = next(iter(github.check_runs.values()))
    assert (first["name"], first["external_id"]) == ("baton/acceptance", f"baton-acceptance:{HEAD}")
    assert "Claimed — attempt 1 by @agent-a" in first["output"]["summary"]

    scene.comment("agent-a", "/deliver done")
    scene.drain()
    assert github.runs(HEAD) == [("in_progress", None, "Waiting for acceptance of #42")]
    assert "awaiting review" in first["output"]["summary"]

    scene.comment("maria", "/accept")
    scene.drain()
    assert github.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]
    assert first["output"]["summary"] == "#42: accepted by @maria at 1a2b3c4."

    writes = len(github.writes)
    scene.comment("agent-b", "/status")
    scene.drain()
    assert [w for w in github.writes[writes:] if "check-runs" in w] == []  # nothing differs: nothing written

    scene.post("pull_request", SHOP.pull_request("synchronize", sha=NEWER, minute=9))
    scene.drain()
    assert github.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]
    assert github.runs(NEWER) == [("completed", "neutral", "Head 5e6f7a8 moved after the acceptance")]
    moved = next(r for r in github.check_runs.values() if r["head_sha"] == NEWER)
    assert moved["output"]["summary"].startswith(
        "#42: accepted by @maria at 1a2b3c4. The head has moved to 5e6f7a8 since, and the commits after 1a2b3c4 "
        "were not part of the acceptance. The work state stays accepted"
    )
    assert scene.app.state.work.ticket(KEY).state is WorkState.ACCEPTED

    scene.comment("maria", "/reopen it needs another look")
    scene.drain()
    # a completed run does not start again: a new one follows it on the same head
    assert github.runs(NEWER) == [
        ("completed", "neutral", "Head 5e6f7a8 moved after the acceptance"),
        ("in_progress", None, "Waiting for acceptance of #42"),
    ]


def test_the_check_passes_only_when_every_ticket_the_pull_request_links_is_accepted(scene: Scene) -> None:
    for number in (42, 43):
        scene.post("issue_comment", SHOP.comment("agent-a", "/claim", number=number, comment_id=900 + number))
        scene.post("issue_comment", SHOP.comment("agent-a", "/deliver done", number=number, comment_id=950 + number))
    scene.post("pull_request", SHOP.pull_request("opened", body="Fixes #42, fixes #43"))
    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.github.runs(HEAD) == [("in_progress", None, "Waiting for acceptance of #43")]
    scene.post("issue_comment", SHOP.comment("maria", "/accept", number=43, comment_id=999))
    scene.drain()
    assert scene.github.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]


def test_a_merge_before_acceptance_gets_the_check_once_accepted(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("opened"))
    scene.comment("agent-a", "/deliver done")
    scene.drain()
    scene.post("pull_request", SHOP.pull_request("closed", merged=True, minute=5))
    scene.comment("maria", "/accept")
    scene.drain()
    assert scene.github.runs(HEAD) == [("completed", "success", "Accepted at 1a2b3c4")]


def test_no_check_on_a_pull_request_closed_before_one_was_made(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("closed", state="closed"))
    scene.drain()
    assert scene.github.check_runs == {}


def lease_runs_out(scene: Scene) -> None:
    """Age the lease on creating each head's check run past its minute, as if its worker died."""
    with scene.app.state.work.units.engine.begin() as connection:
        connection.execute(update(t.check_runs).values(updated_at=datetime.now(UTC) - timedelta(minutes=5)))


def test_a_crash_after_creating_the_check_run_never_makes_a_second_one(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("opened"))
    outbox = scene.app.state.writer.outbox
    real = outbox.record_check_run

    def killed(*args: Any) -> None:
        raise SystemExit("killed after GitHub created the run")

    outbox.record_check_run = killed
    with pytest.raises(SystemExit):
        scene.drain()
    outbox.record_check_run = real
    assert len(scene.github.check_runs) == 1
    scene.due_now()
    scene.drain()  # the creation is still leased: another writer might be making the run right now
    assert len(scene.github.check_runs) == 1
    [row] = scene.outbox()
    assert row.last_error == "the check run is being created by another writer"
    lease_runs_out(scene)
    scene.due_now()
    scene.drain()
    assert scene.github.runs(HEAD) == [("in_progress", None, "Waiting for acceptance of #42")]
    [row] = checks_table(scene)
    assert row.check_run_id == next(iter(scene.github.check_runs))
    assert scene.outbox() == []


def test_a_crash_before_creating_the_check_run_creates_it_once(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("opened"))
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
    assert scene.github.runs(HEAD) == [("in_progress", None, "Waiting for acceptance of #42")]
    assert any(read.endswith(f"/commits/{HEAD}/check-runs") for read in scene.github.reads)  # looked first


def test_github_refusing_the_check_run_leaves_the_rest_shown(scene: Scene) -> None:
    import httpx

    scene.github.faults["POST /repos/octo/shop/check-runs"] = [
        httpx.Response(403, json={"message": "Resource not accessible by integration"})
    ]
    scene.comment("agent-a", "/claim")
    scene.post("pull_request", SHOP.pull_request("opened"))
    scene.drain()
    assert scene.github.labels == {"baton:claimed"} and scene.github.reactions == [(1, "+1")]
    assert scene.outbox() == []
    assert scene.github.check_runs == {}
