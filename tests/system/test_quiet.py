"""Quiet claims, end to end over the stand-in GitHub: a claim whose runner shows no activity for `stale_after`
is flagged stale (`baton:stale`, a `Quiet:` line, one comment mentioning the runner and the task owner, a
`flagged_stale` event) and cleared by the runner's next comment, push or pull request update; with
`auto_release_after` it is released, with an event and a comment. Time is a `ManualClock` the test moves; the
sweep is the lane's own step, called by the test."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from baton.domain import Event, Policy, Role, Ticket, TicketKey, WorkState, replay
from baton.domain.quiet import FLAG, RELEASE, auto_release, due, duration_text, flagged_stale, stale_text
from baton.environment.clock import ManualClock
from baton.process.runtime import Runtime
from baton.service.quiet import Sweep, Swept
from baton.service.unit import Units
from baton.store import make_engine
from support.standin_scene import Scene, opened

HOUR = timedelta(hours=1)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def _scene(database_url: str, clock: ManualClock, settings: str) -> Iterator[Scene]:
    with opened(database_url, clock=clock) as scene:
        scene.settle()
        scene.configure(settings)  # pushed: whatever Baton read of the repository's settings before is forgotten
        yield scene


@pytest.fixture
def quiet(database_url: str, clock: ManualClock) -> Iterator[Scene]:
    """`octo/shop` marks claims stale after an hour, and never releases them by itself."""
    yield from _scene(database_url, clock, "stale_after: 1h\n")


@pytest.fixture
def releasing(database_url: str, clock: ManualClock) -> Iterator[Scene]:
    """`octo/shop` marks claims stale after an hour and releases them after two."""
    yield from _scene(database_url, clock, "stale_after: 1h\nauto_release_after: 2h\n")


def _sweep(scene: Scene) -> Swept:
    swept: Swept = scene.app.state.parts.sweep.sweep()
    scene.drain()
    return swept


def _ticket(scene: Scene) -> Ticket:
    ticket = scene.app.state.work.ticket(scene.key)
    assert ticket is not None
    return ticket


def _history(scene: Scene) -> list[Event]:
    return list(scene.app.state.work.history(scene.key))


def _types(scene: Scene) -> list[str]:
    return [event.type for event in _history(scene)]


def _stale_replies(scene: Scene) -> list[str]:
    return [body for body in scene.replies() if "has been quiet since" in body]


def _claimed(scene: Scene) -> Ticket:
    scene.comment("agent-a", "/claim")
    scene.drain()
    ticket = _ticket(scene)
    assert ticket.state is WorkState.CLAIMED and ticket.runner == "agent-a"
    return ticket


# ------------------------------------------------------------------------------------------ end to end


def test_a_quiet_claim_is_flagged_once_and_activity_clears_it(quiet: Scene, clock: ManualClock) -> None:
    scene = quiet
    claimed = _claimed(scene)
    clock.advance(59 * timedelta(minutes=1))
    assert _sweep(scene) == Swept()
    assert "baton:stale" not in scene.labels()

    clock.advance(2 * timedelta(minutes=1))
    assert _sweep(scene) == Swept(flagged=1)
    assert scene.labels() == {"baton:claimed", "baton:stale"}
    assert "**Quiet:** Stale — no comment, push or pull request update from @agent-a since" in scene.status()
    [reply] = _stale_replies(scene)
    assert reply.startswith(f"@agent-a @olivia #{scene.number} has been quiet since")
    assert "`stale_after`" in reply and "for 1h" in reply
    flagged = _history(scene)[-1]
    assert (flagged.type, flagged.actor, flagged.role) == ("flagged_stale", "baton[bot]", Role.APP)
    assert flagged.data["runner"] == "agent-a" and flagged.data["owner"] == "olivia"
    ticket = _ticket(scene)
    assert ticket == claimed  # the work state and its revision are where the claim left them
    assert replay(scene.key, scene.full_name, _history(scene)) == ticket

    clock.advance(3 * HOUR)  # still quiet: no second comment for the same quiet period
    assert _sweep(scene) == Swept()
    assert len(_stale_replies(scene)) == 1

    scene.person("agent-a").push(scene.full_name, f"{scene.number}-empty-cart", "Start the empty state")
    scene.drain()
    assert scene.labels() == {"baton:claimed"}
    assert "**Quiet:**" not in scene.status()
    assert _types(scene)[-1] == "activity_resumed"
    assert _history(scene)[-1].data["source"] in ("push", "branch created")
    assert _ticket(scene) == claimed

    clock.advance(30 * timedelta(minutes=1))
    assert _sweep(scene) == Swept()  # quiet for half an hour only
    clock.advance(31 * timedelta(minutes=1))
    assert _sweep(scene) == Swept(flagged=1)  # a new quiet period: a new comment
    assert len(_stale_replies(scene)) == 2 and "baton:stale" in scene.labels()

    scene.comment("olivia", "Any news?")  # not the runner: the claim stays quiet
    scene.drain()
    assert "baton:stale" in scene.labels()
    scene.comment("agent-a", "Still on it, the layout is nearly done.")  # no command: activity all the same
    scene.drain()
    assert scene.labels() == {"baton:claimed"}
    assert _history(scene)[-1].data["source"] == "comment"

    clock.advance(61 * timedelta(minutes=1))
    assert _sweep(scene) == Swept(flagged=1)
    scene.person("agent-a").open_pull_request(
        scene.full_name, f"{scene.number}-empty-cart", "Empty state", f"Fixes #{scene.number}"
    )
    scene.drain()
    assert scene.labels() == {"baton:claimed"}
    assert _history(scene)[-1].data["source"] == "pull request opened"
    assert replay(scene.key, scene.full_name, _history(scene)) == _ticket(scene) == claimed


@pytest.mark.both_engines
def test_a_ticket_that_leaves_claimed_is_stale_no_more(quiet: Scene, clock: ManualClock) -> None:
    scene = quiet
    _claimed(scene)
    clock.advance(2 * HOUR)
    assert _sweep(scene) == Swept(flagged=1)
    scene.comment("agent-a", "/status")  # a command that changes nothing is activity too
    scene.drain()
    assert scene.labels() == {"baton:claimed"} and _types(scene)[-1] == "activity_resumed"
    clock.advance(2 * HOUR)
    assert _sweep(scene) == Swept(flagged=1)
    scene.comment("maria", "/release @agent-a")  # a maintainer's: not the runner's activity
    scene.drain()
    assert scene.labels() == {"baton:open"}
    assert _types(scene)[-2:] == ["flagged_stale", "released"]  # the release says enough
    scene.comment("agent-b", "/claim")  # a new runner starts a new quiet period
    scene.drain()
    assert scene.labels() == {"baton:claimed"} and "**Quiet:**" not in scene.status()
    assert _sweep(scene) == Swept()


def test_auto_release_after_releases_with_an_event_and_a_comment(releasing: Scene, clock: ManualClock) -> None:
    scene = releasing
    claimed = _claimed(scene)
    clock.advance(61 * timedelta(minutes=1))
    assert _sweep(scene) == Swept(flagged=1)
    [warning] = _stale_replies(scene)
    assert "`auto_release_after: 2h`" in warning

    clock.advance(HOUR)
    assert _sweep(scene) == Swept(released=1)
    ticket = _ticket(scene)
    assert (ticket.state, ticket.runner, ticket.revision) == (WorkState.OPEN, None, claimed.revision + 1)
    released = _history(scene)[-1]
    assert (released.type, released.actor, released.role) == ("released", "baton[bot]", Role.APP)
    assert released.data["ended"] == {"attempt": 1, "reason": "auto_released"}
    assert released.data["setting"] == "auto_release_after" and released.data["auto_release_after"] == 7200
    assert replay(scene.key, scene.full_name, _history(scene)) == ticket
    assert scene.labels() == {"baton:open"} and scene.assignees() == []
    [notice] = [body for body in scene.replies() if "was released" in body]
    assert notice.startswith(f"@agent-a #{scene.number} was released")
    assert "`auto_release_after: 2h`" in notice and "auto_released" in notice
    assert _sweep(scene) == Swept()  # nothing left to do

    scene.comment("agent-b", "/claim")  # open again, for anyone
    assert _ticket(scene).runner == "agent-b"


def test_auto_release_racing_a_delivery_lets_exactly_one_win(releasing: Scene, clock: ManualClock) -> None:
    scene = releasing
    claimed = _claimed(scene)
    clock.advance(3 * HOUR)
    together = threading.Barrier(2)
    swept: list[Swept] = []

    def sweep() -> None:
        together.wait()
        swept.append(scene.app.state.parts.sweep.sweep())

    thread = threading.Thread(target=sweep)
    thread.start()
    scene.comment("agent-a", "/deliver The empty state is done.", together=together)
    thread.join(30)
    scene.drain()
    after = [event.type for event in _history(scene) if event.revision > claimed.revision]
    ticket = _ticket(scene)
    if ticket.state is WorkState.DELIVERED:
        assert swept == [Swept()] and after == ["delivered"]
    else:
        assert ticket.state is WorkState.OPEN and swept == [Swept(released=1)]
        assert after == ["released"]
        assert any("cannot /deliver" in body or "not claimed" in body for body in scene.replies())
    assert ticket.revision == claimed.revision + 1


def test_sweeps_in_parallel_flag_a_quiet_period_once(quiet: Scene, clock: ManualClock, database_url: str) -> None:
    """Two processes' sweeps (each its own engine) and a second thread of one of them, all at once."""
    scene = quiet
    _claimed(scene)
    clock.advance(2 * HOUR)
    mine: Sweep = scene.app.state.parts.sweep
    engine = make_engine(database_url)
    other = Sweep(Units(engine, clock), mine.configs, answer_delay=mine.answer_delay)
    together = threading.Barrier(3)
    swept: list[Swept] = []

    def run(sweep: Sweep) -> None:
        together.wait()
        swept.append(sweep.sweep())

    threads = [threading.Thread(target=run, args=(s,)) for s in (mine, other, mine)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    engine.dispose()
    assert sorted(s.flagged for s in swept) == [0, 0, 1]
    scene.drain()
    assert len(_stale_replies(scene)) == 1
    assert _types(scene).count("flagged_stale") == 1


def test_the_sweep_runs_as_a_lane_of_the_runtime(quiet: Scene, clock: ManualClock) -> None:
    scene = quiet
    _claimed(scene)
    clock.advance(2 * HOUR)
    runtime = Runtime(scene.app.state.parts, writers=0)
    assert runtime.sweeper is not None and scene.app.state.parts.sweep.interval <= 30.0
    runtime.start()  # a lane's first round runs at once
    try:
        deadline = time.monotonic() + 30
        while "flagged_stale" not in _types(scene):
            assert time.monotonic() < deadline, "the sweep lane did not flag the quiet claim"
            time.sleep(0.05)
    finally:
        runtime.stop()
    scene.drain()
    assert "baton:stale" in scene.labels() and len(_stale_replies(scene)) == 1


# ------------------------------------------------------------------------------------------ pure rules

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KEY = TicketKey(1, 2, 42)
CLAIM = Ticket(KEY, "octo/shop", WorkState.CLAIMED, 5, "olivia", runner="agent-a", attempt=2)


@pytest.mark.parametrize(
    ("quiet", "flagged", "policy", "wanted"),
    [
        (timedelta(hours=71), False, Policy(), None),
        (timedelta(hours=72), False, Policy(), FLAG),
        (timedelta(hours=80), True, Policy(), None),
        (timedelta(hours=80), True, Policy(auto_release_after=4 * 86400), None),
        (timedelta(days=4), True, Policy(auto_release_after=4 * 86400), RELEASE),
        (timedelta(days=5), False, Policy(auto_release_after=4 * 86400), RELEASE),  # the sweep was away
        (timedelta(seconds=30), False, Policy(stale_after=30), FLAG),
    ],
)
def test_what_a_quiet_claim_needs(quiet: timedelta, flagged: bool, policy: Policy, wanted: str | None) -> None:
    assert due(T0, flagged, policy, T0 + quiet) == wanted


@pytest.mark.parametrize(("seconds", "text"), [(30, "30s"), (5400, "90m"), (43200, "12h"), (259200, "3d"),
                                               (1209600, "2w"), (90061, "90061s")])  # fmt: skip
def test_durations_read_as_the_settings_write_them(seconds: int, text: str) -> None:
    assert duration_text(seconds) == text


def test_flagging_is_no_transition_and_the_release_replays() -> None:
    history = [
        Event("created", "olivia", Role.REQUESTER, 1, 0, {"state": "open", "owner": "olivia", "brief": None}),
        Event("claimed", "agent-a", Role.RUNNER, 2, 1, {"runner": "agent-a"}),
    ]
    claimed = replay(KEY, "octo/shop", history)
    policy = Policy(stale_after=3600, auto_release_after=7200)
    flag = flagged_stale(claimed, T0, policy)
    assert (flag.revision, flag.attempt, flag.role) == (claimed.revision, claimed.attempt, Role.APP)
    history.append(flag)
    assert replay(KEY, "octo/shop", history) == claimed
    applied = auto_release(claimed, T0, policy)
    assert applied.ticket.state is WorkState.OPEN and applied.ticket.runner is None
    assert applied.event.data["ended"] == {"attempt": 1, "reason": "auto_released"}
    history.append(applied.event)
    assert replay(KEY, "octo/shop", history) == applied.ticket
    with pytest.raises(ValueError):
        auto_release(applied.ticket, T0, policy)


def test_the_stale_comment_mentions_the_runner_and_the_owner_once_each() -> None:
    text = stale_text(CLAIM, T0, Policy(stale_after=86400))
    assert text.startswith("@agent-a @olivia #42 has been quiet since 2026-12-01 12:00 UTC")
    assert "auto_release_after" not in text
    own = stale_text(Ticket(KEY, "octo/shop", WorkState.CLAIMED, 5, "agent-a", runner="agent-a"), T0, Policy())
    assert own.startswith("@agent-a #42 ")
    assert "released at 2026-12-03 12:00 UTC (`auto_release_after: 2d`)" in stale_text(
        CLAIM, T0, Policy(stale_after=86400, auto_release_after=2 * 86400)
    )
