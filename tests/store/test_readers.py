"""What only reads waits for no writer (`reader` in src/baton/store/engine.py). On SQLite, Baton's transactions that
write take the process's writer lock and SQLite's at `BEGIN`; a read that took them too held up every writer of the
process meanwhile: the write lanes look at the outbox and the write budget again and again, and a race decided at
hand on the event loop found the lock taken by a look. The looks now read a snapshot and take neither lock; on
PostgreSQL reads never waited."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from baton.domain import TicketKey
from baton.environment.clock import SYSTEM
from baton.service.unit import Units
from baton.store import tables as t
from baton.store.budget import Budgets, Limits
from baton.store.inbox import Inbox
from baton.store.issue_states import issue_states
from baton.store.outbox.writing import Outbox

KEY = TicketKey(7, 9, 42)


def looks(units: Units) -> dict[str, Callable[[], Any]]:
    """What the write lanes, the decide lane and the gauges read between writes, each once."""
    engine = units.engine
    outbox, budgets, inbox = Outbox(engine, SYSTEM), Budgets(engine, Limits(), SYSTEM), Inbox(engine, SYSTEM)
    return {
        "outbox.due_installations": outbox.due_installations,
        "outbox.due": outbox.due,
        "outbox.most_urgent": lambda: outbox.most_urgent(7),
        "outbox.urgent_elsewhere": lambda: outbox.urgent_elsewhere(KEY),
        "outbox.items": lambda: outbox.items(KEY),
        "outbox.status_comment": lambda: outbox.status_comment(KEY),
        "outbox.quiet": lambda: outbox.quiet(KEY),
        "outbox.pending": outbox.pending,
        "budgets.slot": lambda: budgets.slot(7),
        "budgets.slot offering": lambda: budgets.slot(7, offering=True),
        "inbox.pending": inbox.pending,
        "inbox.status": lambda: inbox.status("delivery-1"),
        "issue_states": lambda: issue_states(engine, [1, 2]),
    }


def test_what_only_reads_answers_while_another_thread_of_the_process_holds_a_write_transaction(store: Units) -> None:
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.engine.begin() as connection:  # on SQLite: the writer lock and BEGIN IMMEDIATE, held
            connection.execute(t.write_budgets.insert().values(installation_id=7))
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(10)
        answered: dict[str, Any] = {}
        failed: list[BaseException] = []

        def look_all() -> None:
            try:
                for name, look in looks(store).items():
                    answered[name] = look()
            except BaseException as error:
                failed.append(error)

        looking = threading.Thread(target=look_all)
        looking.start()
        looking.join(10)  # with the write still open: a look that waited for the writer would still be waiting
        assert not looking.is_alive(), f"waited for the writer after {sorted(answered)}"
        assert not failed, failed
        assert answered["budgets.slot"] is not None and answered["outbox.due"] == []
    finally:
        release.set()
        thread.join(30)
    with store.engine.connect() as connection:  # and the write went through
        assert connection.execute(select(t.write_budgets.c.installation_id)).scalars().all() == [7]
