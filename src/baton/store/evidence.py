"""The evidence rail's SQL: rails per ticket (compare-and-swap on `version`), the link index, the facts log
and evidence events.

`EvidenceTx` is the evidence facet of a unit of work: it works on the unit's open connection, so the work
service can write a delivery's report into the rail in the same transaction as the delivery. It reads
tickets but never writes them: nothing here can move the work state. It imports nothing of the work store
for the same reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, and_, bindparam, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from baton.domain.evidence import EvidenceRail, Fact, Subject, instant
from baton.domain.model import RepositoryKey, TicketKey
from baton.environment.clock import Clock

from . import tables as t
from .engine import reader
from .evidence_codec import fact_from_dict, fact_to_dict, from_dict, to_dict
from .statements import key_params

_r = t.evidence_rails.c
_l = t.evidence_links.c
_f = t.evidence_facts.c
_e = t.evidence_events.c
_t = t.tickets.c

# How many logged facts of one subject a rail catches up on: the newest ones, which are the ones a join keeps.
CATCH_UP_LIMIT = 500


@dataclass(frozen=True)
class StoredRail:
    ticket_id: int
    number: int
    version: int  # 0: no row yet
    rail: EvidenceRail


def digest(fact: Fact) -> str:
    return hashlib.sha256(json.dumps(fact_to_dict(fact), sort_keys=True).encode()).hexdigest()


def _utc(stamp: str | None) -> datetime | None:
    # SQLite keeps the wall time without its offset, so every stamp is stored in UTC to compare as text
    return None if stamp is None else instant(stamp).astimezone(UTC)


def _in(table: Any, place: RepositoryKey) -> ColumnElement[bool]:
    return and_(table.c.installation_id == place.installation_id, table.c.repository_id == place.repository_id)


def _ticket_is(key: TicketKey) -> ColumnElement[bool]:
    return and_(
        _t.installation_id == key.installation_id, _t.repository_id == key.repository_id, _t.number == key.number
    )


# Statements a ticket's first sight runs, built once (building one cost more than running it).
_TICKET = select(_t.id, _t.repository).where(
    _t.installation_id == bindparam("installation_id"), _t.repository_id == bindparam("repository_id"),
    _t.number == bindparam("number"),
)  # fmt: skip


def _linking(links: str) -> Any:
    """The pull requests and branches whose facts' `links` hold `:link` (`links`: the dialect's test of that)."""
    return (
        select(_f.subject)
        .where(_f.installation_id == bindparam("installation_id"), _f.repository_id == bindparam("repository_id"),
               _f.kind.in_(("pull_request", "branch")), text(links))
        .distinct()
    )  # fmt: skip


_LINKING_POSTGRES = _linking(
    "EXISTS (SELECT 1 FROM json_array_elements_text(evidence_facts.fact -> 'links') AS link WHERE link = :link)"
)
_LINKING_SQLITE = _linking(
    "EXISTS (SELECT 1 FROM json_each(evidence_facts.fact, '$.links') AS link WHERE link.value = :link)"
)


def _lock_key(place: RepositoryKey) -> int:
    raw = hashlib.sha256(f"baton-evidence:{place.installation_id}:{place.repository_id}".encode()).digest()
    return int.from_bytes(raw[:8], "big", signed=True)


class EvidenceTx:
    """Evidence reads and writes inside one open transaction. Methods never commit."""

    def __init__(self, connection: Connection, clock: Clock) -> None:
        self.connection = connection
        self.clock = clock
        self._postgres = connection.dialect.name == "postgresql"

    def _insert(self, table: Any) -> Any:
        dialect = postgresql if self._postgres else sqlite
        return dialect.insert(table)

    def lock(self, place: RepositoryKey) -> None:
        """Serialise evidence writers of one repository (PostgreSQL; SQLite's writers are serial already).

        A fact logged by one transaction and a rail that starts holding its subject in another must meet:
        without this, each could miss the other's uncommitted row and the rail would never see the fact. And
        every writer of evidence events takes it: one at a time, their ids follow the times they are stamped with,
        which the timeline's merge by time relies on (store/timeline.py).
        """
        if self._postgres:
            self.connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(place)})

    # -- tickets ------------------------------------------------------------------------------------

    def tracked(self, place: RepositoryKey, numbers: Iterable[int]) -> dict[int, int]:
        """Ticket id by issue number, for the numbers Baton tracks in this repository."""
        wanted = sorted(set(numbers))
        if not wanted:
            return {}
        rows = self.connection.execute(select(_t.id, _t.number).where(_in(t.tickets, place), _t.number.in_(wanted)))
        return {int(row.id): int(row.number) for row in rows}

    def ticket(self, key: TicketKey) -> tuple[int, str] | None:
        """A tracked ticket's id and repository name."""
        row = self.connection.execute(_TICKET, key_params(key)).first()
        return None if row is None else (int(row.id), str(row.repository))

    def holding(self, place: RepositoryKey, subjects: Iterable[Subject]) -> dict[int, int]:
        """Ticket id by issue number, for the rails that hold any of `subjects`."""
        wanted = [subject.key for subject in sorted(set(subjects))]
        if not wanted:
            return {}
        rows = self.connection.execute(
            select(_t.id, _t.number)
            .join(t.evidence_links, _l.ticket_id == _t.id)
            .where(_in(t.evidence_links, place), _l.subject.in_(wanted))
            .distinct()
        )
        return {int(row.id): int(row.number) for row in rows}

    def merged(self, place: RepositoryKey) -> list[StoredRail]:
        """The rails of this repository whose repository rail is `merged`: a deployment may ship them."""
        rows = self.connection.execute(
            select(_r.ticket_id, _t.number, _r.version, _r.rail)
            .join(t.tickets, _t.id == _r.ticket_id)
            .where(_in(t.evidence_rails, place), _r.repository_state == "merged")
            .order_by(_r.ticket_id)
        )
        return [StoredRail(int(r.ticket_id), int(r.number), int(r.version), from_dict(r.rail)) for r in rows]

    # -- rails --------------------------------------------------------------------------------------

    def rail(self, ticket_id: int, number: int) -> StoredRail:
        """The ticket's rail; an empty one at version 0 before its first fact."""
        row = self.connection.execute(select(_r.version, _r.rail).where(_r.ticket_id == ticket_id)).first()
        if row is None:
            return StoredRail(ticket_id, number, 0, EvidenceRail(number))
        return StoredRail(ticket_id, number, int(row.version), from_dict(row.rail))

    def save(self, place: RepositoryKey, stored: StoredRail, rail: EvidenceRail) -> bool:
        """Compare-and-swap: write `rail` if the row is still at `stored.version`. False: another writer won."""
        values = {
            "version": stored.version + 1,
            "repository_state": rail.repository.value,
            "deployment_state": rail.deployment.value,
            "rail": to_dict(rail),
            "updated_at": self.clock.now(),
        }
        if stored.version == 0:
            statement = (
                self._insert(t.evidence_rails)
                .values(
                    ticket_id=stored.ticket_id,
                    installation_id=place.installation_id,
                    repository_id=place.repository_id,
                    **values,
                )
                .on_conflict_do_nothing()
            )
        else:
            statement = (
                update(t.evidence_rails)
                .where(_r.ticket_id == stored.ticket_id, _r.version == stored.version)
                .values(**values)
            )
        # RETURNING says whether a row was written: the driver's rowcount of an INSERT … ON CONFLICT is not
        # reliable through SQLAlchemy
        return self.connection.execute(statement.returning(_r.ticket_id)).first() is not None

    def link(self, place: RepositoryKey, ticket_id: int, subjects: Iterable[Subject]) -> None:
        rows = [
            {"installation_id": place.installation_id, "repository_id": place.repository_id, "subject": subject.key,
             "ticket_id": ticket_id}
            for subject in sorted(set(subjects))
        ]  # fmt: skip
        if rows:
            self.connection.execute(self._insert(t.evidence_links).on_conflict_do_nothing(), rows)

    def append(self, ticket_id: int, type_: str, source: str, data: dict[str, Any], rail: EvidenceRail) -> None:
        self.connection.execute(
            insert(t.evidence_events).values(
                ticket_id=ticket_id, type=type_, source=source[:120], data=data,
                repository_state=rail.repository.value, deployment_state=rail.deployment.value,
                created_at=self.clock.now(),
            )
        )  # fmt: skip

    def events_of(self, ticket_id: int, type_: str) -> list[dict[str, Any]]:
        """The data of the ticket's evidence events of one type."""
        rows = self.connection.execute(select(_e.data).where(_e.ticket_id == ticket_id, _e.type == type_))
        return [dict(row.data) for row in rows]

    # -- the facts log ------------------------------------------------------------------------------

    def log(self, place: RepositoryKey, subject: Subject, fact: Fact, source: str) -> None:
        """Keep a fact once, however often it is told."""
        data = fact_to_dict(fact)
        self.connection.execute(
            self._insert(t.evidence_facts)
            .values(
                installation_id=place.installation_id, repository_id=place.repository_id, subject=subject.key[:300],
                kind=data["kind"], stamp=_utc(data.get("stamp")), digest=digest(fact), fact=data,
                source=source[:120], created_at=self.clock.now(),
            )
            .on_conflict_do_nothing()
        )  # fmt: skip

    def facts(self, place: RepositoryKey, subjects: Iterable[Subject]) -> list[Fact]:
        """The logged facts about `subjects`, the newest `CATCH_UP_LIMIT` of each."""
        found: list[Fact] = []
        for subject in sorted(set(subjects)):
            rows = self.connection.execute(
                select(_f.fact)
                .where(_in(t.evidence_facts, place), _f.subject == subject.key)
                .order_by(_f.id.desc())
                .limit(CATCH_UP_LIMIT)
            )
            found.extend(fact_from_dict(row.fact) for row in rows)
        return found

    def linking(self, place: RepositoryKey, number: int) -> set[Subject]:
        """The pull requests and branches whose logged facts link issue `number` (the facts' own `links`: closing
        keywords, a branch name): what a ticket made after them catches up on."""
        statement = _LINKING_POSTGRES if self._postgres else _LINKING_SQLITE
        link = str(number) if self._postgres else number
        rows = self.connection.execute(statement, {"installation_id": place.installation_id,
                                                   "repository_id": place.repository_id, "link": link})  # fmt: skip
        return {Subject(str(row.subject)) for row in rows}

    def deployments_since(self, place: RepositoryKey, since: datetime) -> list[Fact]:
        """Deployments and their statuses stamped at or after `since`: the ones that may ship a merge made then."""
        rows = self.connection.execute(
            select(_f.fact)
            .where(
                _in(t.evidence_facts, place),
                _f.kind.in_(("deployment", "deployment_status")),
                _f.stamp >= since.astimezone(UTC),
            )
            .order_by(_f.id)
            .limit(CATCH_UP_LIMIT)
        )
        return [fact_from_dict(row.fact) for row in rows]


class EvidenceReads:
    """Reads outside any write: one short transaction each."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._reads = reader(engine)  # what only reads takes no lock (`reader`)

    def rail(self, key: TicketKey) -> EvidenceRail | None:
        with self._reads.connect() as connection:
            row = connection.execute(
                select(_r.rail).join(t.tickets, _t.id == _r.ticket_id).where(_ticket_is(key))
            ).first()
        return None if row is None else from_dict(row.rail)

    def holding(self, place: RepositoryKey, subject: Subject) -> list[tuple[TicketKey, EvidenceRail]]:
        """Every rail that holds `subject`, with its ticket's key, by issue number."""
        with self._reads.connect() as connection:
            rows = connection.execute(
                select(_t.installation_id, _t.repository_id, _t.number, _r.rail)
                .join(t.evidence_links, _l.ticket_id == _t.id)
                .join(t.evidence_rails, _r.ticket_id == _t.id)
                .where(_in(t.evidence_links, place), _l.subject == subject.key)
                .order_by(_t.number)
            )
            return [(TicketKey(r.installation_id, r.repository_id, r.number), from_dict(r.rail)) for r in rows]

    def holds(self, key: TicketKey, subject: Subject) -> bool:
        """Whether the ticket's rail holds `subject` (the link index's word for it)."""
        with self._reads.connect() as connection:
            row = connection.execute(
                select(_l.subject)
                .join(t.tickets, _t.id == _l.ticket_id)
                .where(_ticket_is(key), _in(t.evidence_links, key.repository_key), _l.subject == subject.key)
            ).first()
        return row is not None

    def events(self, key: TicketKey) -> list[dict[str, Any]]:
        with self._reads.connect() as connection:
            rows = connection.execute(
                select(_e.type, _e.source, _e.data, _e.repository_state, _e.deployment_state, _e.created_at)
                .join(t.tickets, _t.id == _e.ticket_id)
                .where(_ticket_is(key))
                .order_by(_e.id)
            )
            return [dict(row._mapping) for row in rows]


__all__ = ["CATCH_UP_LIMIT", "EvidenceReads", "EvidenceTx", "StoredRail", "digest"]
