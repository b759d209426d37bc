"""What a batch writes for many rows at once (`RawTx._many`): every row, on SQLite (the one-row statement run per
row) and on PostgreSQL (one multi-row INSERT, or the one-row statement in a pipeline past `_KEPT_PARAMS`), and a
row a unique key refuses is a `Conflict` that leaves none of its statement's rows once rolled back."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from baton.service.unit import Units
from baton.store import tables as t
from baton.store.statements import Conflict


def _operations(store: Units) -> dict[str, object]:
    with store.engine.connect() as connection:
        return dict(connection.execute(select(t.operations.c.id, t.operations.c.result)).all())


@pytest.mark.parametrize("rows", [1, 3, 300])  # one row; few parameters; more than any statement's usual batch
def test_many_rows_are_all_written_with_their_values(store: Units, rows: int) -> None:
    records = [(f"op-{n}", None, {"n": n, "text": "é" * (n % 7)}) for n in range(rows)]
    with store.begin() as uow:
        uow.work.record_operations(records)
    written = _operations(store)
    assert len(written) == rows
    assert written == {f"op-{n}": {"n": n, "text": "é" * (n % 7)} for n in range(rows)}


@pytest.mark.parametrize("rows", [2, 300])
def test_a_row_a_unique_key_refuses_is_a_conflict_and_its_statement_leaves_nothing(store: Units, rows: int) -> None:
    with store.begin() as uow:
        uow.work.record_operations([("taken", None, {"first": True})])
    fresh = [(f"new-{n}", None, {"n": n}) for n in range(rows - 1)]
    with pytest.raises(Conflict), store.begin() as uow:
        uow.work.record_operations([*fresh[: rows // 2], ("taken", None, {"again": True}), *fresh[rows // 2 :]])
    with store.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(t.operations)).scalar_one() == 1
    assert list(_operations(store)) == ["taken"]
