"""Claim-next's statement (`WorkTx.next_ready`) and counts (`store/ready.py`), on both engines: labels are matched
as written, and on PostgreSQL a task another transaction holds is passed over without waiting."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from baton.domain import Policy, RepositoryKey, TicketKey, WorkState
from baton.process.wiring import work_service
from baton.service.work import Issue
from baton.store import make_engine, ready
from baton.store.engine import warm
from baton.store.work import Opening

PLACE = RepositoryKey(1, 77)


def test_labels_are_kept_lower_case_between_newlines_and_baton_s_own_are_not() -> None:
    assert ready.labels_text(["UI", "baton:open", "good first task", "ui", "two\nlines", " "]) == (
        "\ngood first task\nui\n")  # fmt: skip
    assert ready.labels_text([]) == ""
    assert [ready.label_name(name) for name in ("Bug ", "baton:claimed", "a\rb")] == ["bug", None, None]


def test_the_next_ready_task_matches_labels_as_written_and_skips_what_another_transaction_holds(
    database_url: str,
) -> None:
    engine = make_engine(database_url, pool_size=3, max_overflow=0)
    service = work_service(engine)
    labelled = {1: ("50%_done",), 2: ("50xxdone",), 3: ("a\\b", "UI"), 4: ()}
    for number, labels in labelled.items():
        service.open_ticket(Issue(TicketKey(1, 77, number), "octo/ready", "owner", labels=labels), f"open-{number}")
    with service.units.begin() as uow:

        def first(*wanted: str, passed: tuple[int, ...] = ()) -> int | None:
            names = [name for name in map(ready.label_name, wanted) if name is not None]
            found = uow.work.next_ready([PLACE], names, passed)
            return None if found is None else found[0].ticket.key.number

        assert first() == 1  # all of one priority and age: the lowest number
        assert first("50%_DONE") == 1 and first("50xxdone") == 2
        assert first("50%") is None and first("50__done") is None  # no wildcards
        assert first("a\\b") == 3 and first("ui", "a\\b") == 3 and first("ui", "bug") is None
        assert first("ui", passed=(3,)) is None
        assert first(passed=(1, 2)) == 3
        assert first() == 1
        assert ready.counts(uow.connection, [PLACE], ["ui"]) == {"ready": 1, "blocked": 0, "claimed": 0}
        assert uow.work.next_ready([RepositoryKey(1, 78)], [], ()) is None
    if engine.dialect.name == "postgresql":  # SQLite lets one writer in at a time: nothing to pass over
        with service.units.begin() as holding, service.units.begin() as other:
            held = holding.work.next_ready([PLACE], [], ())
            assert held is not None and held[0].ticket.key.number == 1
            taken = other.work.next_ready([PLACE], [], ())  # answers at once, with the next one
            assert taken is not None and taken[0].ticket.key.number == 2
    engine.dispose()


def test_a_claim_next_batch_reads_what_it_needs_first_together_and_learns_after_its_writes_if_a_limit_held(
    database_url: str,
) -> None:
    """`WorkTx.opening` reads a batch's first results, claims held and ready tasks (one round trip on
    PostgreSQL, its tasks locked as `ready_tasks` locks them); `count_all`, sent with the writes that follow it,
    says after them whether every claim count moved."""
    engine = make_engine(database_url, pool_size=3, max_overflow=0)
    service = work_service(engine)
    for number in (1, 2, 3, 4):
        labels = ("ui",) if number in (2, 4) else ()
        service.open_ticket(Issue(TicketKey(1, 77, number), "octo/ready", "owner", labels=labels), f"open-{number}")
    with service.units.begin() as uow:
        found = uow.work.ticket(TicketKey(1, 77, 1))
        assert found is not None
        before = found.ticket
        claimed = replace(before, state=WorkState.CLAIMED, runner="Agent-A")
        with uow.work.together():
            counted = uow.work.count_all([(before, claimed, 1)])
            uow.work.record_operations([("after-the-count", None, {})])  # sent behind it, without waiting
        assert counted()
        with uow.work.together():
            over = uow.work.count_all([(before, replace(claimed, key=TicketKey(1, 77, 2)), 1)])
        assert not over()  # agent-a holds one already: a limit of one held
    with service.units.begin() as uow:
        wanted = [((PLACE,), (), 2), ((PLACE,), ("ui",), 5), ((RepositoryKey(1, 78),), (), 1)]
        opened = uow.work.opening(["open-1", "unseen"], {PLACE: {"agent-a", "agent-b"}}, wanted)
        assert set(opened.firsts) == {"open-1"} and opened.firsts == uow.work.firsts(["open-1", "unseen"])
        assert opened.held == {(PLACE, "agent-a"): 1}
        numbers = {where: [one[0].ticket.key.number for one in tasks] for where, tasks in opened.tasks.items()}
        assert numbers == {((PLACE,), ()): [1, 2], ((PLACE,), ("ui",)): [2, 4], ((RepositoryKey(1, 78),), ()): []}
        assert uow.work.opening([], {}, []) == Opening({}, {}, {})
    if engine.dialect.name == "postgresql":  # the tasks it read are locked until it ends
        with service.units.begin() as holding, service.units.begin() as other:
            holding.work.opening([], {}, [((PLACE,), (), 2)])
            taken = other.work.next_ready([PLACE], [], ())
            assert taken is not None and taken[0].ticket.key.number == 3
    engine.dispose()


def test_label_changes_decided_in_either_order_leave_the_issue_s_labels(database_url: str) -> None:
    """GitHub sends a delivery per label, each listing the labels of its moment; decided in the other order, the
    later list would drop the label the earlier delivery added. Only the label each one names changes."""
    engine = make_engine(database_url)
    service = work_service(engine)
    key = TicketKey(1, 77, 9)
    service.open_ticket(Issue(key, "octo/ready", "owner", labels=("ui",)), "open-9")
    # "bug" then "docs" were added, then "ui" removed; their deliveries are decided last first.
    service.relabeled(key, ["bug", "docs"], ("ui", False))
    service.relabeled(key, ["ui", "bug", "docs"], ("docs", True))
    service.relabeled(key, ["ui", "bug"], ("bug", True))
    with service.units.read() as uow:
        assert ready.counts(uow.connection, [PLACE], ["bug", "docs"])["ready"] == 1
        assert ready.counts(uow.connection, [PLACE], ["ui"])["ready"] == 0
        found = uow.work.next_ready([PLACE], ["docs"], ())
        assert found is not None and found[0].ticket.key == key
    service.relabeled(key, [], ("docs", False))
    service.relabeled(key, ["docs"], ("docs", True))  # the same label again: kept once
    with service.units.read() as uow:
        assert ready.counts(uow.connection, [PLACE], ["docs"])["ready"] == 1
        assert ready.counts(uow.connection, [PLACE], ["bug"])["ready"] == 1
    service.relabeled(key, [], ("docs", False))
    with service.units.read() as uow:
        assert ready.counts(uow.connection, [PLACE], ["docs"])["ready"] == 0
    engine.dispose()


def test_one_label_added_then_removed_decided_in_the_other_order_ends_removed(database_url: str) -> None:
    """GitHub's hooks about one label: added, then removed a moment later. Decided last first, the removal is
    applied and the older addition is not: the label stays off, as on GitHub; a later addition still counts."""
    engine = make_engine(database_url)
    service = work_service(engine)
    key = TicketKey(1, 77, 11)
    service.open_ticket(Issue(key, "octo/ready", "owner", labels=("ui",)), "open-11")
    added, removed = datetime(2026, 12, 6, 9, 0, 0, 1000, UTC), datetime(2026, 12, 6, 9, 0, 0, 2000, UTC)
    service.relabeled(key, ["ui"], ("Docs", False), at=removed)
    service.relabeled(key, ["ui", "Docs"], ("Docs", True), at=added)  # arrived first, decided last: not applied
    with service.units.read() as uow:
        assert ready.counts(uow.connection, [PLACE], ["docs"])["ready"] == 0
        assert ready.counts(uow.connection, [PLACE], ["ui"])["ready"] == 1
    service.relabeled(key, ["ui", "docs"], ("docs", True), at=removed + timedelta(seconds=1))
    service.relabeled(key, ["ui"], ("ui", False), at=added)  # another label's older hook: applied
    with service.units.read() as uow:
        assert ready.counts(uow.connection, [PLACE], ["docs"])["ready"] == 1
        assert ready.counts(uow.connection, [PLACE], ["ui"])["ready"] == 0
    engine.dispose()


def test_the_priority_labels_give_is_the_one_the_kept_labels_give_whichever_delivery_is_decided_first(
    database_url: str,
) -> None:
    engine = make_engine(database_url)
    service = work_service(engine)
    key = TicketKey(1, 77, 10)
    service.open_ticket(Issue(key, "octo/ready", "owner"), "open-10")
    policy = Policy(priority_labels=(("P0", 0), ("P1", 1)))
    # P1 was added, then P0: the delivery for P0 (listing both) is decided first, then P1's (listing P1 alone).
    service.relabeled(key, ["P1", "P0"], ("P0", True), policy)
    service.relabeled(key, ["P1"], ("P1", True), policy)
    with service.units.read() as uow:
        found = uow.work.next_ready([PLACE], ["p0", "p1"], ())
        assert found is not None and found[2] == 0  # P0 kept: the higher priority counts
    engine.dispose()


def test_warming_opens_the_connections_a_burst_holds_and_leaves_an_unreachable_database_to_the_work(
    postgres_url: str,
) -> None:
    engine = make_engine(postgres_url, pool_size=3, max_overflow=0)
    assert warm(engine, 4) == 3  # no more than the pool keeps
    assert engine.pool.checkedin() == 3  # type: ignore[attr-defined]
    engine.dispose()
    away = make_engine("postgresql://postgres@127.0.0.1:1/baton")
    assert warm(away, 4) == 0
    away.dispose()
