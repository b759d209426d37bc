"""What a person sees on GitHub: labels, assignee, status comment, reactions and replies, written by the
outbox writer through the real app, against the stand-in GitHub (`github_standin`) on 127.0.0.1.

Baton runs without its background lanes: a delivery is decided right after its answer and the test writes
with `drain()`. What Baton writes comes back to it as webhooks, as from GitHub; `settle()` waits until every
delivery the stand-in sent has been answered and decided (tests/support/standin_scene.py)."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from baton.domain.status import LABELS
from github_standin.server import Fault
from support import standin_scene
from support.standin_scene import BOT, Scene, opened

scene = standin_scene.scene  # Baton and the stand-in GitHub, wired to each other
github_timeout = standin_scene.github_timeout


def test_a_claim_is_shown_with_one_label_the_assignee_a_status_comment_and_a_thumbs_up(scene: Scene) -> None:
    claim = scene.comment("agent-a", "/claim")
    assert scene.drain() == 1
    assert scene.labels() == {"baton:claimed"}
    assert scene.assignees() == ["agent-a"]
    assert scene.reactions() == [(claim, "+1")]
    assert scene.status() == (
        "<!-- baton:status -->\n**Work:** Claimed — attempt 1 by @agent-a\n**Repository:** Unreported\n"
        "**Deployment:** Not deployed\n\nRevision 2. @agent-a works on it; /deliver comes next."
    )
    assert scene.outbox() == []


def test_the_status_comment_is_edited_in_place_through_a_life(scene: Scene) -> None:
    claim = scene.comment("agent-a", "/claim")
    scene.drain()
    deliver = scene.comment("agent-a", "/deliver Done.\nbranch: 42-empty-state")
    scene.drain()
    assert scene.labels() == {"baton:delivered"}
    assert "**Work:** Delivered — attempt 1 by @agent-a, awaiting review" in scene.status()
    accept = scene.comment("maria", "/accept")
    scene.drain()
    assert scene.labels() == {"baton:accepted"}
    assert scene.assignees() == []  # the claim is over
    assert "**Work:** Accepted by @maria — attempt 1 by @agent-a" in scene.status()
    assert len(scene.comments()) == 1
    assert scene.reactions() == [(claim, "+1"), (deliver, "+1"), (accept, "+1")]


def test_a_refusal_gets_a_reply_mentioning_its_author(scene: Scene) -> None:
    scene.comment("agent-a", "/deliver")
    scene.drain()
    [reply] = scene.replies()
    assert reply.startswith(f"@agent-a #{scene.number} is open (revision 1), not claimed. An agent can /claim it.")
    assert scene.reactions() == []


def test_help_is_answered_with_what_this_person_may_use(scene: Scene) -> None:
    scene.comment("agent-b", "/help")
    scene.drain()
    [reply] = scene.replies()
    assert reply.startswith(f"@agent-b commands you may use on #{scene.number} now:\n- `/claim [rev=N]`")


def test_twenty_claimants_cost_at_most_six_writes(scene: Scene) -> None:
    with scene.hub.world.lock:
        scene.issue.labels = ["baton:open"]  # there since before: no webhook about it now
    logins = [f"agent-{n:02d}" for n in range(20)]
    for login in logins:
        scene.person(login)
    barrier = threading.Barrier(len(logins))
    threads = [threading.Thread(target=scene.comment, args=(login, "/claim"), kwargs={"together": barrier})
               for login in logins]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    scene.drain()
    winner = scene.assignees()[0]
    assert scene.labels() == {"baton:claimed"}
    assert scene.assignees() == [winner]
    assert len(scene.reactions()) == 1
    [reply] = scene.replies()
    mentioned = set(re.findall(r"@(agent-\d\d)", reply.split("\n\n<!--")[0].split(f" #{scene.number}")[0]))
    assert mentioned == set(logins) - {winner}
    assert f"#{scene.number} is claimed by @{winner} (revision 2), not open. Pick another issue." in reply
    assert len(scene.writes()) <= 6, scene.writes()


@pytest.mark.parametrize(
    ("fault", "github_timeout"),
    [({"status": 500}, 10.0), ({"status": 502}, 10.0),
     # GitHub answers in 4 s, Baton gives up after 2 s; the write lands on GitHub all the same. (With 1 s, the
     # retry's own calls could take longer than that on a busy machine, and time out too.)
     ({"status": None, "delay": 4.0}, 2.0),
     ({"status": 403, "retry_after": 1}, 10.0)],
    ids=["500", "502", "timeout", "secondary-rate-limit"],
)  # fmt: skip
def test_github_failing_delays_but_never_loses_or_doubles(scene: Scene, fault: dict[str, Any]) -> None:
    injected = Fault("POST", f"^{scene.path}/labels$", **fault)
    scene.rest.inject(injected)
    claim = scene.comment("agent-a", "/claim")
    before = datetime.now(UTC)
    scene.drain()
    rows = scene.outbox()
    if rows:  # not tried again yet: on a busy machine the drain can outlast the wait, and try it again itself
        [row] = rows
        assert row.attempts == (0 if fault.get("retry_after") else 1)  # a rate limit is no fault of the issue's
        assert row.last_error
        assert row.due_at.replace(tzinfo=row.due_at.tzinfo or UTC) > before  # later than the failure
        scene.due_now()
        scene.drain()
    assert injected.times == 0  # GitHub failed (or was too slow) once, and the labels were written all the same
    assert scene.labels() == {"baton:claimed"}
    assert scene.assignees() == ["agent-a"]
    assert scene.reactions() == [(claim, "+1")]
    assert len(scene.comments()) == 1
    assert scene.outbox() == [] and scene.unsent() == 0


def test_a_crash_after_writing_before_recording_doubles_nothing(scene: Scene) -> None:
    """The worker dies after GitHub took the writes but before the database heard of it."""
    scene.comment("agent-a", "/deliver")  # refused: a reply
    claim = scene.comment("agent-b", "/claim")  # applied: label, assignee, status comment, 👍
    worker = scene.app.state.writer
    real_sent, real_done = worker.outbox.sent, worker.outbox.done

    def killed_after_the_reply(item_ids: list[int], result_id: int | None = None) -> None:
        if result_id is not None:  # the reply is on GitHub; its recording never happens
            raise SystemExit("killed")
        real_sent(item_ids, result_id)

    worker.outbox.sent = killed_after_the_reply
    scene.settle()
    with pytest.raises(SystemExit):
        scene.drain()
    worker.outbox.sent, worker.outbox.done = real_sent, real_done
    writes_before = scene.writes()
    # the 👍 first, then the reply; the crash came before the labels, assignee and status comment
    assert [w.split(" ")[0] + " " + w.split("/")[-1] for w in writes_before] == ["POST reactions", "POST comments"]
    # the restarted writer finds the issue again
    scene.due_now()
    scene.drain()
    assert len(scene.replies()) == 1  # the reply it had posted was found, not posted again
    assert len([c for c in scene.comments() if "baton:status" in c.body]) == 1
    assert scene.labels() == {"baton:claimed"} and scene.assignees() == ["agent-b"]
    assert scene.outbox() == [] and scene.unsent() == 0
    assert scene.reactions() == [(claim, "+1")]
    assert [w.split(" ")[0] + " " + w.split("/")[-1] for w in scene.writes()[len(writes_before) :]] == [
        "POST labels", "POST assignees", "POST comments",
    ]  # fmt: skip


def test_a_deleted_status_comment_is_written_again(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.drain()
    [status] = scene.comments()
    scene.person("maria").delete_comment(scene.stage.full_name, status.id)
    scene.comment("agent-a", "/status")
    scene.drain()
    assert "Claimed — attempt 1 by @agent-a" in scene.status()
    assert scene.comments()[0].id != status.id


def test_a_missing_label_is_created_with_colour_and_description(scene: Scene) -> None:
    with scene.hub.world.lock:
        scene.repository.labels.clear()
    scene.comment("agent-a", "/claim")
    scene.drain()
    assert f"POST /repos/{scene.stage.full_name}/labels" in scene.writes()
    label = scene.repository.label("baton:claimed")
    assert label is not None
    assert (label.color, label.description) == (LABELS["baton:claimed"][0].lstrip("#").lower(),
                                                LABELS["baton:claimed"][1])  # fmt: skip


@pytest.mark.both_engines
def test_with_external_workers_the_web_process_only_stores_and_baton_worker_does_the_rest(database_url: str) -> None:
    from baton.process.runtime import Runtime
    from baton.process.wiring import assemble

    with opened(database_url, worker="external") as scene:
        # the comment only: nothing in the web process decides it, so there is nothing to wait for
        claim = scene.person("agent-a").comment(scene.full_name, scene.number, "/claim")
        assert scene.app.state.work.ticket(scene.key) is None  # stored only
        parts = assemble(scene.stage.settings)
        lanes = Runtime(parts)  # what `baton worker` runs
        lanes.start()

        def finished() -> bool:  # the claim shown, and what GitHub sent back about it decided too
            with scene.hub.world.lock:
                answered = all(d.status is not None for d in scene.hub.deliveries)
            return len(scene.comments()) == 1 and answered and parts.inbox.pending() == []

        deadline = time.monotonic() + 20
        while not finished() and time.monotonic() < deadline:
            time.sleep(0.05)
        lanes.stop()
        try:
            assert scene.labels() == {"baton:claimed"} and scene.assignees() == ["agent-a"]
            assert scene.reactions() == [(claim, "+1")]
            assert parts.inbox.pending() == []
        finally:
            parts.engine.dispose()


def test_a_state_label_changed_by_hand_is_put_back_and_the_change_recorded(scene: Scene) -> None:
    scene.comment("agent-a", "/claim")
    scene.drain()
    before = scene.app.state.work.ticket(scene.key)
    scene.label("someone", "baton:open", added=True)
    scene.label("someone", "baton:claimed", added=False)
    scene.drain()
    assert scene.labels() == {"baton:claimed"}
    assert scene.app.state.work.ticket(scene.key) == before  # the database never follows a label
    restored = [e for e in scene.app.state.work.history(scene.key) if e.type == "label_restored"]
    assert [(e.actor, e.data["label"], e.data["action"]) for e in restored] == [
        ("someone", "baton:open", "added"), ("someone", "baton:claimed", "removed"),
    ]  # fmt: skip


@pytest.mark.both_engines
def test_batons_own_label_writes_and_other_labels_change_nothing(scene: Scene) -> None:
    with scene.hub.world.lock:
        scene.issue.labels = ["baton:open"]  # there since before: the claim takes it off
    scene.comment("agent-a", "/claim")
    scene.drain()  # GitHub reports Baton's own label writes back to it
    echoed = [(d.event, d.body) for d in scene.hub.deliveries if d.event == "issues" and BOT.encode() in d.body]
    assert [b'"action": "labeled"' in body for _, body in echoed] == [True, False]
    scene.label("someone", "bug", added=True)
    scene.settle()
    assert [e.type for e in scene.app.state.work.history(scene.key)] == ["created", "claimed"]
    assert scene.outbox() == []
