"""What the migrations (`migrations/versions/`) share: the column types they name alike, and their two common
steps, a table created and a column added, each with the downgrade that undoes it.

A migration once applied must make the same schema for ever: change nothing here that a migration uses (add
a new step instead). Loaded only while migrating, as the migrations are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

Step = Callable[[], None]

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # a row id: 64 bits, SQLite's own on SQLite
When = sa.DateTime(timezone=True)

REPOSITORY = ("installation_id", "repository_id")  # a repository's key: the installation, GitHub's id
ISSUE = (*REPOSITORY, "number")  # an issue's key


def repository_key() -> list[sa.Column[Any]]:
    """The columns of a repository's key (`REPOSITORY`), made afresh for each table."""
    return [sa.Column(name, sa.BigInteger, nullable=False) for name in REPOSITORY]


def issue_key() -> list[sa.Column[Any]]:
    """The columns of an issue's key (`ISSUE`), made afresh for each table."""
    return [*repository_key(), sa.Column("number", sa.Integer, nullable=False)]


def of_ticket(name: str, *columns: sa.Column[Any], unique: str | None = None) -> list[sa.schema.SchemaItem]:
    """What a table of rows about one ticket each holds around its `columns`: its own `id`, the `ticket_id`
    keyed to `tickets.id`, and, with `unique`, that column unique per ticket. (SQLAlchemy writes constraints
    in the order they are made, so they are made in the order the table has them.)"""
    items: list[sa.schema.SchemaItem] = [
        sa.Column("id", Id, primary_key=True),
        sa.Column("ticket_id", Id, nullable=False),
        *columns,
        sa.PrimaryKeyConstraint("id", name=f"pk_{name}"),
        on_ticket(name),
    ]
    if unique is not None:
        items.append(sa.UniqueConstraint("ticket_id", unique, name=f"uq_{name}_ticket_id_{unique}"))
    return items


def on_ticket(table: str) -> sa.ForeignKeyConstraint:
    """The foreign key of `table`'s `ticket_id` to `tickets.id`, named as the models name it."""
    return sa.ForeignKeyConstraint(["ticket_id"], ["tickets.id"], name=f"fk_{table}_ticket_id_tickets")


def table(
    name: str, items: Callable[[], Sequence[sa.schema.SchemaItem]], indexes: Mapping[str, Sequence[str]] | None = None
) -> tuple[Step, Step]:
    """Create table `name` with `items()` (its columns and constraints, made afresh for each upgrade), then the
    `indexes` (name: columns), in order; the downgrade drops the indexes, last first, then the table."""
    indexes = indexes or {}

    def upgrade() -> None:
        op.create_table(name, *items())
        for index, columns in indexes.items():
            op.create_index(index, name, list(columns))

    def downgrade() -> None:
        for index in reversed(list(indexes)):
            op.drop_index(index, name)
        op.drop_table(name)

    return upgrade, downgrade


def column(
    name: str, made: Callable[[], sa.Column[Any]], *, batch: bool = False, batch_drop: bool = False
) -> tuple[Step, Step]:
    """Add the column `made()` to table `name`; the downgrade drops it. `batch`: both steps in a batch
    (`batch_alter_table`), `batch_drop`: only the downgrade."""

    def upgrade() -> None:
        if batch:
            with op.batch_alter_table(name) as altered:
                altered.add_column(made())
        else:
            op.add_column(name, made())

    def downgrade() -> None:
        dropped = made().name
        if batch or batch_drop:
            with op.batch_alter_table(name) as altered:
                altered.drop_column(dropped)
        else:
            op.drop_column(name, dropped)

    return upgrade, downgrade
