"""The identities Baton keeps for the tokens it has checked (src/baton/github/identity.py): for a while, no longer
than an OIDC token lasts, and no more than so many, the least recently used put out first. The tokens here are
made-up JWTs a stand-in checker takes, so no network is involved; tests/system/test_agent_api.py and
test_actions_tokens.py show the same through `baton serve`."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from baton.domain import Run
from baton.environment.clock import ManualClock
from baton.github.actions_oidc import ActionsTokens, NotTaken
from baton.github.identity import MOST, TTL, BadToken, Identities

T0 = datetime(2025, 3, 14, 9, 0, tzinfo=UTC)


class Checker(ActionsTokens):
    """Takes `actor.<seconds it lasts>.sig` as `actor`'s run, counting the checks; refuses `junk.*`."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__("https://issuer.example.test", "https://baton.example.test", lambda _: 1, clock=clock)
        self.checked: list[str] = []
        self._checks = threading.Lock()

    def check(self, token: str) -> tuple[str, Run, float]:
        actor, lasts, _ = token.split(".")
        with self._checks:
            self.checked.append(actor)
        if actor.startswith("junk"):
            raise NotTaken("made up")
        return actor, Run("octo/shop/.github/workflows/agent.yml@refs/heads/main", "1", 1), T0.timestamp() + int(lasts)


def identities(clock: ManualClock, most: int = MOST) -> tuple[Identities, Checker]:
    checker = Checker(clock)
    made = Identities("http://127.0.0.1:9", actions=checker, clock=clock, most=most)
    return made, checker


def test_an_identity_is_kept_for_its_ttl_then_checked_again() -> None:
    clock = ManualClock(T0)
    kept, checker = identities(clock)
    assert kept.who("alice.3600.sig").login == "alice"
    clock.advance(timedelta(seconds=TTL - 1))
    assert kept.known("alice.3600.sig") is not None and kept.who("alice.3600.sig").login == "alice"
    assert checker.checked == ["alice"]
    clock.advance(timedelta(seconds=1))
    assert kept.known("alice.3600.sig") is None
    assert kept.who("alice.3600.sig").login == "alice"
    assert checker.checked == ["alice", "alice"]


def test_an_oidc_tokens_identity_is_not_kept_past_its_exp() -> None:
    clock = ManualClock(T0)
    kept, _ = identities(clock)
    kept.who("bob.60.sig")
    clock.advance(timedelta(seconds=59))
    assert kept.known("bob.60.sig") is not None
    clock.advance(timedelta(seconds=1))
    assert kept.known("bob.60.sig") is None
    assert len(kept) == 0  # dropped when met expired


def test_a_refused_token_is_not_kept() -> None:
    kept, checker = identities(ManualClock(T0))
    for n in range(100):
        with pytest.raises(BadToken):
            kept.who(f"junk{n}.3600.sig")
    assert len(kept) == 0 and len(checker.checked) == 100


def test_never_more_than_most_and_the_least_recently_used_go_first() -> None:
    kept, checker = identities(ManualClock(T0), most=50)
    for n in range(1000):
        kept.who(f"agent{n}.3600.sig")
        if n % 10 == 0:
            kept.who("agent0.3600.sig")  # used again and again: kept
        assert len(kept) <= 50
    assert len(kept) == 50
    assert kept.known("agent0.3600.sig") is not None and kept.known("agent999.3600.sig") is not None
    assert kept.known("agent1.3600.sig") is None
    assert checker.checked.count("agent0") == 1


def test_the_expired_go_as_new_tokens_come_without_being_looked_up() -> None:
    clock = ManualClock(T0)
    kept, _ = identities(clock)
    for n in range(100):
        kept.who(f"agent{n}.3600.sig")
    clock.advance(timedelta(seconds=TTL))
    kept.who("late.3600.sig")
    assert len(kept) == 1


def test_threads_at_once_keep_within_the_bound() -> None:
    kept, _ = identities(ManualClock(T0), most=20)
    failures: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for n in range(300):
                token = f"t{thread}x{n % 40}.3600.sig"
                assert kept.who(token).login == f"t{thread}x{n % 40}"
                kept.known(token)
        except BaseException as error:  # reported below, from the test's own thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(kept) == 20
