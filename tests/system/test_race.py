"""Claims that really arrive at once: threads and separate processes, on SQLite and on PostgreSQL.

The race itself is `bench/claim_race.py`'s (one barrier across every claimer in every process before
each round); here it runs with fewer rounds and every round is checked.
"""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from baton.domain import Actor, Command, Permission, Policy, TicketKey
from baton.environment.clock import SYSTEM
from baton.process.wiring import work_service
from baton.service.unit import Units
from baton.service.work import Issue
from baton.store import make_engine
from baton.store import tables as t
from bench.claim_race import POLICY, Report, issue, race

pytestmark = pytest.mark.both_engines  # by default on both databases: claims racing

AGENT = Actor("agent-a", Permission.WRITE)  # agents push their branches: write access


def check(report: Report) -> None:
    assert len(report.decisions) == report.claimers * report.rounds
    for r in range(report.rounds):
        winners = report.winners(r)
        assert len(winners) == 1, f"round {r}: winners {winners}"
        assert report.stored_runners[r] == winners[0]
        assert report.claimed_events[r] == 1
        losers = [d for d in report.decisions if d.round == r and d.kind != "applied"]
        assert len(losers) == report.claimers - 1
        for loser in losers:
            assert loser.code == "wrong_state"
            assert loser.message == (
                f"#{r + 1} is claimed by @{winners[0]} (revision 2), not open. Pick another issue."
            )
    assert report.rounds_with_one_winner == report.rounds


@pytest.mark.parametrize(("claimers", "processes"), [(20, 1), (12, 4)], ids=["threads", "4-processes"])
def test_one_winner_per_round(database_url: str, claimers: int, processes: int) -> None:
    check(race(database_url, claimers=claimers, rounds=6, processes=processes))


def test_claim_limit_holds_under_concurrent_claims(database_url: str) -> None:
    """One runner claims ten tickets at once with a limit of three: exactly three claims apply."""
    engine = make_engine(database_url, pool_size=10, max_overflow=0)
    service = work_service(engine)
    issues = [Issue(TicketKey(1, 77, n), "octo/limit", "owner") for n in range(1, 11)]
    for n, each in enumerate(issues):
        service.open_ticket(each, f"open-{n}")
    barrier = threading.Barrier(len(issues))
    outcomes = []

    def claim(n: int) -> None:
        barrier.wait()
        outcomes.append(service.apply(issues[n], Command("claim"), AGENT, f"c-{n}", Policy(max_active_claims=3)))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(len(issues))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(o.kind for o in outcomes) == ["applied"] * 3 + ["refused"] * 7
    assert {o.code for o in outcomes if o.kind == "refused"} == {"claim_limit"}
    with engine.connect() as connection:
        claimed = connection.execute(
            select(func.count()).select_from(t.tickets).where(t.tickets.c.state == "claimed")
        ).scalar()
        active = connection.execute(select(t.runner_claims.c.active)).scalar()
    assert claimed == active == 3
    engine.dispose()


def test_the_same_operation_at_once_is_applied_once(database_url: str) -> None:
    """A redelivered webhook processed twice at the same moment: one claim, one event."""
    engine = make_engine(database_url, pool_size=8, max_overflow=0)
    service = work_service(engine)
    service.open_ticket(issue(0), "open")
    barrier = threading.Barrier(8)
    outcomes = []

    def claim() -> None:
        barrier.wait()
        outcomes.append(service.apply(issue(0), Command("claim"), AGENT, "comment-1", POLICY))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {(o.kind, o.revision) for o in outcomes} == {("applied", 2)}
    assert sum(not o.duplicate for o in outcomes) == 1
    with engine.connect() as connection:
        events = connection.execute(select(t.events.c.type).order_by(t.events.c.id)).scalars().all()
    assert events == ["created", "claimed"]
    engine.dispose()


def test_swap_is_a_compare_and_swap_on_the_revision(database_url: str) -> None:
    """Two transactions read revision 1 and both try to move it; the second waits, then loses."""
    from dataclasses import replace

    from baton.domain import WorkState

    engine = make_engine(database_url, pool_size=2, max_overflow=0)
    units = Units(engine, SYSTEM)
    work_service(engine).open_ticket(issue(0), "open")
    with units.begin() as uow:
        stored = uow.work.ticket(issue(0).key)
    assert stored is not None
    mine = replace(stored.ticket, state=WorkState.CLAIMED, runner="agent-a", attempt=1, revision=2)
    theirs = replace(mine, runner="agent-b")

    first_swapped = threading.Event()
    results: dict[str, bool] = {}

    def second() -> None:
        first_swapped.wait()
        with units.begin() as uow:
            results["second"] = uow.work.swap(stored.id, 1, theirs)

    other = threading.Thread(target=second)
    other.start()
    with units.begin() as uow:
        results["first"] = uow.work.swap(stored.id, 1, mine)
        first_swapped.set()
        other.join(timeout=0.3)  # PostgreSQL: the second swap is blocked on our row lock until we commit
    other.join()
    assert results == {"first": True, "second": False}
    with units.begin() as uow:
        after = uow.work.ticket(issue(0).key)
    assert after is not None and (after.ticket.runner, after.ticket.revision) == ("agent-a", 2)
    engine.dispose()
