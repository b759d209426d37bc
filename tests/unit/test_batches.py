"""`Batches`: requests that arrive on the event loop while a batch runs are done together in the next, in one
worker thread."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from baton.web.batches import LATER, Batches, Later


def test_requests_arriving_together_share_batches_and_each_gets_its_own_result() -> None:
    batches_seen: list[list[int]] = []
    threads: set[str] = set()

    def work(items: list[int]) -> list[int]:
        batches_seen.append(list(items))
        threads.add(threading.current_thread().name)
        time.sleep(0.02)  # a transaction's worth of time, in which the others arrive
        return [item * 10 for item in items]

    async def main() -> list[int]:
        batches: Batches[int, int] = Batches(work)
        first = asyncio.ensure_future(batches.run(0))
        await asyncio.sleep(0.005)  # its batch is under way in a thread: the others arrive meanwhile
        return [await first, *await asyncio.gather(*(batches.run(n) for n in range(1, 20)))]

    assert asyncio.run(main()) == [n * 10 for n in range(20)]
    assert sorted(item for batch in batches_seen for item in batch) == list(range(20))  # each done once
    assert batches_seen[0] == [0] and batches_seen[1] == list(range(1, 20))  # in the order they came
    assert threading.main_thread().name not in threads  # the work never runs on the event loop's thread


def test_an_exception_as_a_result_is_raised_to_its_caller_alone() -> None:
    def work(items: list[int]) -> list[int | Exception]:
        return [ValueError(f"no {item}") if item == 3 else item for item in items]

    async def main() -> list[int | BaseException]:
        batches: Batches[int, int] = Batches(work)
        return list(await asyncio.gather(*(batches.run(n) for n in range(6)), return_exceptions=True))

    results = asyncio.run(main())
    assert [r for n, r in enumerate(results) if n != 3] == [0, 1, 2, 4, 5]
    assert isinstance(results[3], ValueError) and str(results[3]) == "no 3"


def test_a_batch_that_fails_raises_to_each_of_its_callers_and_the_next_batch_goes_on() -> None:
    calls = 0

    def work(items: list[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the database went away")
        return items

    async def main() -> None:
        batches: Batches[int, int] = Batches(work)
        with pytest.raises(RuntimeError, match="went away"):
            await batches.run(1)
        assert await batches.run(2) == 2

    asyncio.run(main())


def test_at_most_the_given_number_of_items_go_in_one_batch_and_a_caller_that_went_away_is_skipped() -> None:
    sizes: list[int] = []

    def work(items: list[int]) -> list[int]:
        sizes.append(len(items))
        time.sleep(0.01)
        return items

    async def main() -> list[int]:
        batches: Batches[int, int] = Batches(work, most=4)
        first = asyncio.ensure_future(batches.run(0))
        await asyncio.sleep(0)  # the first batch is under way
        gone = asyncio.ensure_future(batches.run(99))
        rest = [asyncio.ensure_future(batches.run(n)) for n in range(1, 10)]
        await asyncio.sleep(0)
        gone.cancel()
        return [await first] + [await one for one in rest]

    assert asyncio.run(main()) == list(range(10))
    assert sizes[0] == 1 and max(sizes) == 4 and sum(sizes) == 11


def test_with_two_at_once_requests_arriving_while_a_batch_runs_start_the_next_and_a_third_waits() -> None:
    seen: list[list[int]] = []
    started = [threading.Event() for _ in range(3)]
    release = threading.Event()

    def work(items: list[int]) -> list[int]:
        seen.append(list(items))
        started[len(seen) - 1].set()
        release.wait(10)  # held until the test has seen the batches that overlap
        return [item * 10 for item in items]

    async def main() -> list[int]:
        batches: Batches[int, int] = Batches(work, at_once=2)
        first = asyncio.ensure_future(batches.run(0))
        assert await asyncio.to_thread(started[0].wait, 10)
        second = [asyncio.ensure_future(batches.run(n)) for n in (1, 2)]
        assert await asyncio.to_thread(started[1].wait, 10)  # under way while the first still runs
        third = [asyncio.ensure_future(batches.run(n)) for n in (3, 4)]
        await asyncio.sleep(0.05)
        assert not started[2].is_set()  # two are under way: these wait for one of them
        release.set()
        return [await first, *[await one for one in second + third]]

    assert asyncio.run(main()) == [0, 10, 20, 30, 40]
    assert seen == [[0], [1, 2], [3, 4]]


def test_a_burst_waits_while_it_goes_on_and_a_lone_item_does_not_wait() -> None:
    seen: list[list[int]] = []

    def work(items: list[int]) -> list[int]:
        seen.append(list(items))
        return items

    async def main() -> list[int]:
        lone: Batches[int, int] = Batches(work, gather=60)
        alone = await asyncio.wait_for(lone.run(0), 10)  # nothing else waiting: not held for `gather`
        batches: Batches[int, int] = Batches(work, gather=0.5)
        burst = [asyncio.ensure_future(batches.run(n)) for n in (1, 2)]
        await asyncio.sleep(0.05)  # the burst goes on: the next arrives within `gather`
        burst.append(asyncio.ensure_future(batches.run(3)))
        return [alone, *[await one for one in burst]]

    assert asyncio.run(main()) == [0, 1, 2, 3]
    assert seen == [[0], [1, 2, 3]]


def test_while_calls_keep_coming_a_lone_first_call_waits_for_the_burst_and_no_longer_than_it_lasts() -> None:
    seen: list[list[int]] = []

    def work(items: list[int]) -> list[int]:
        seen.append(list(items))
        return items

    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        batches: Batches[int, int] = Batches(work, gather=0.2, busy=30)
        quiet = loop.time()
        await asyncio.wait_for(batches.run(0), 10)  # a quiet process: the lone call does not wait
        quiet = loop.time() - quiet
        await asyncio.gather(*(batches.run(n) for n in (1, 2, 3)))  # a burst of three
        # The next burst's first call is alone when its batch starts, but calls came lately: it waits for the
        # others, and no longer than it takes the burst to be as large as the last one.
        began = loop.time()
        first = asyncio.ensure_future(batches.run(4))
        await asyncio.sleep(0.05)
        rest = [asyncio.ensure_future(batches.run(n)) for n in (5, 6)]
        await asyncio.gather(first, *rest)
        return quiet, loop.time() - began

    quiet, burst = asyncio.run(main())
    assert seen == [[0], [1, 2, 3], [4, 5, 6]]
    assert quiet < 0.15  # not held for `gather` (0.2 s)
    assert burst < 0.2  # the third call made it as large as the last: it went at once, not after `gather`


def test_while_calls_keep_coming_a_lone_call_waits_at_most_a_gather_for_others() -> None:
    seen: list[list[int]] = []

    def work(items: list[int]) -> list[int]:
        seen.append(list(items))
        return items

    async def main() -> float:
        loop = asyncio.get_running_loop()
        batches: Batches[int, int] = Batches(work, gather=0.1, busy=30)
        await asyncio.gather(*(batches.run(n) for n in (1, 2, 3)))
        began = loop.time()
        await batches.run(4)  # calls came lately, but no other comes now
        return loop.time() - began

    waited = asyncio.run(main())
    assert seen == [[1, 2, 3], [4]]
    assert 0.09 <= waited < 1.0  # one `gather`, then it went alone


def test_at_hand_answers_what_it_can_on_the_loop_and_leaves_the_rest_to_a_thread_in_order() -> None:
    """`at_hand` runs on the event loop's thread; the items it leaves `LATER` go to `work` in a thread, in the order
    they came, and its own answers are given without waiting for that thread."""
    seen: list[tuple[str, list[int]]] = []
    loop_thread: list[str] = []
    released = threading.Event()

    def at_hand(items: list[int]) -> list[int | Exception | Later]:
        seen.append((threading.current_thread().name, list(items)))
        return [LATER if item % 3 == 0 else ValueError("odd") if item == 7 else item + 100 for item in items]

    def work(items: list[int]) -> list[int]:
        seen.append((threading.current_thread().name, list(items)))
        released.wait(10)
        return [item + 1000 for item in items]

    async def main() -> list[int | BaseException]:
        loop_thread.append(threading.current_thread().name)
        batches: Batches[int, int] = Batches(work, gather=0.01, at_hand=at_hand)
        futures = [batches.submit(n) for n in range(1, 10)]
        await asyncio.wait_for(futures[0], 5)  # answered at hand while the thread still holds 3, 6 and 9
        assert not futures[2].done()
        released.set()
        return list(await asyncio.gather(*futures, return_exceptions=True))

    results = asyncio.run(main())
    assert [str(r) if isinstance(r, ValueError) else r for r in results] == [
        101, 102, 1003, 104, 105, 1006, "odd", 108, 1009]  # fmt: skip
    assert seen == [(loop_thread[0], list(range(1, 10))), (seen[1][0], [3, 6, 9])] and seen[1][0] != loop_thread[0]


def test_at_hand_answering_none_sends_the_whole_batch_to_a_thread_and_its_failure_fails_the_batch() -> None:
    declined: list[list[int]] = []
    done_in: list[list[int]] = []

    def at_hand(items: list[int]) -> list[int | Exception | Later] | None:
        if items[0] == 0:
            declined.append(items)
            return None
        raise RuntimeError("at hand failed")

    def work(items: list[int]) -> list[int]:
        done_in.append(items)
        return [-item for item in items]

    async def main() -> tuple[int, BaseException | int]:
        batches: Batches[int, int] = Batches(work, at_hand=at_hand)
        first = await batches.run(0)
        second = (await asyncio.gather(batches.run(5), return_exceptions=True))[0]
        return first, second

    first, second = asyncio.run(main())
    assert first == 0 and declined == [[0]] and done_in == [[0]]
    assert isinstance(second, RuntimeError) and str(second) == "at hand failed" and done_in == [[0]]
