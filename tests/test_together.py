"""`Together`: calls from threads that arrive while one is under way are done in one call of the work."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from baton.service.together import Together


def test_callers_arriving_together_share_rounds_and_each_gets_its_own_result() -> None:
    rounds: list[list[int]] = []

    def work(items: Sequence[int]) -> list[int]:
        rounds.append(list(items))
        time.sleep(0.02)  # a transaction's worth of time, in which the others arrive
        return [item * 10 for item in items]

    together: Together[int, int] = Together(work)
    start = threading.Barrier(20)
    results: dict[int, int] = {}

    def caller(item: int) -> None:
        start.wait()
        results[item] = together.run(item)

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == {n: n * 10 for n in range(20)}
    assert sorted(item for batch in rounds for item in batch) == list(range(20))  # each item done once
    assert len(rounds) < 20 and max(len(batch) for batch in rounds) > 1


def test_a_round_that_fails_raises_to_each_of_its_callers_and_the_next_round_goes_on() -> None:
    def work(items: Sequence[str]) -> list[str]:
        if "bad" in items:
            raise RuntimeError("the database refused")
        return [item.upper() for item in items]

    together: Together[str, str] = Together(work)
    with pytest.raises(RuntimeError, match="the database refused"):
        together.run("bad")
    assert together.run("good") == "GOOD"


def test_at_most_the_given_number_of_items_go_in_one_round() -> None:
    sizes: list[int] = []
    release = threading.Event()

    def work(items: Sequence[int]) -> list[int]:
        sizes.append(len(items))
        release.wait(5)
        return list(items)

    together: Together[int, int] = Together(work, most=3)
    threads = [threading.Thread(target=together.run, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # one round under way, nine waiting
    release.set()
    for thread in threads:
        thread.join(10)
    assert sum(sizes) == 10 and max(sizes) <= 3
