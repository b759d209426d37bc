"""An installation event and a sweep (or a lookup) recording the same repositories at the same moment: on a new
installation both find no row and insert it, and the later insert meets the earlier one's key. Neither may
fail: the one that loses the race updates what the other inserted."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial

from sqlalchemy import func, select

from baton.environment.clock import SYSTEM
from baton.store import make_engine
from baton.store import tables as t
from baton.store.installations import Installations

ROUNDS = 30
REPOSITORIES = [(7000 + n, f"octo/repo-{n}") for n in range(5)]


def _at_once(*works: Callable[[], object]) -> list[BaseException]:
    """Runs each of `works` in its own thread, all let go together; what they raised."""
    barrier = threading.Barrier(len(works))
    failures: list[BaseException] = []

    def run(work: Callable[[], object]) -> None:
        barrier.wait()
        try:
            work()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(work,)) for work in works]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return failures


def test_an_installation_event_and_a_sweep_recording_the_same_repositories_at_once_both_succeed(
    database_url: str,
) -> None:
    engine = make_engine(database_url)
    try:
        event, sweep = Installations(engine, SYSTEM), Installations(engine, SYSTEM)
        for round_ in range(ROUNDS):
            installation = 900_000 + round_
            event.record(installation, "octo", "active")
            failures = _at_once(
                partial(event.repositories, installation, REPOSITORIES, True),
                partial(sweep.reconcile, installation, REPOSITORIES),
            )
            assert failures == [], (round_, failures)
            with engine.connect() as connection:
                present = connection.execute(
                    select(func.count())
                    .select_from(t.installation_repositories)
                    .where(
                        t.installation_repositories.c.installation_id == installation,
                        t.installation_repositories.c.present,
                    )
                ).scalar_one()
            assert present == len(REPOSITORIES)
    finally:
        engine.dispose()
