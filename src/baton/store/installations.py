"""Installations and their repositories, as GitHub's `installation` events report them."""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine, bindparam, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from baton.environment.clock import Clock

from . import tables as t
from .engine import one_statement, reader

_i = t.installations.c
_r = t.installation_repositories.c
_STATUS = select(_i.status).where(_i.id == bindparam("installation"))  # asked once per hook: built once


# How long an installation's status, and where a repository is installed, are taken as read. Asking once per
# hook cost more than deciding the hook (and once per agent API call, more than deciding the call); an
# installation suspended or a repository removed through another process counts here within this time (at once
# when this process recorded it).
STATUS_TTL = 1.0


class Installations:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self._reads = reader(engine)  # what only reads takes no lock (`reader`)
        self.clock = clock
        self._known: dict[int, tuple[float, bool]] = {}
        self._found: dict[str, tuple[float, tuple[int, int] | None]] = {}
        self._lock = threading.Lock()

    def record(self, installation_id: int, account: str, status: str) -> None:
        try:
            self._record(installation_id, account, status)
        finally:
            with self._lock:
                self._known.pop(installation_id, None)

    def _record(self, installation_id: int, account: str, status: str) -> None:
        now = self.clock.now()
        for _ in range(2):  # a concurrent first insert makes the second round an update
            try:
                with self.engine.begin() as connection:
                    changed = connection.execute(
                        update(t.installations)
                        .where(_i.id == installation_id)
                        .values(status=status, updated_at=now, **({"account": account} if account else {}))
                    ).rowcount
                    if not changed:
                        connection.execute(
                            insert(t.installations).values(
                                id=installation_id, account=account, status=status, updated_at=now
                            )
                        )
                return
            except IntegrityError:
                continue

    def repositories(self, installation_id: int, repositories: list[tuple[int, str]], present: bool) -> None:
        try:
            try:
                self._repositories(installation_id, repositories, present)
            except IntegrityError:  # a sweep or lookup inserted one of them meanwhile: this round updates it
                self._repositories(installation_id, repositories, present)
        finally:
            with self._lock:
                self._found.clear()

    def _repositories(self, installation_id: int, repositories: list[tuple[int, str]], present: bool) -> None:
        now = self.clock.now()
        with self.engine.begin() as connection:
            for repository_id, full_name in repositories:
                where = (_r.installation_id == installation_id) & (_r.repository_id == repository_id)
                values = {"full_name": full_name, "present": present, "updated_at": now}
                if not connection.execute(update(t.installation_repositories).where(where).values(**values)).rowcount:
                    connection.execute(
                        insert(t.installation_repositories).values(
                            installation_id=installation_id, repository_id=repository_id, **values
                        )
                    )

    def active(self, installation_id: int) -> bool:
        """Unknown installations count as active: Baton may have been installed before it kept count."""
        now = time.monotonic()
        with self._lock:
            known = self._known.get(installation_id)
        if known is not None and now - known[0] < STATUS_TTL:
            return known[1]
        with one_statement(self.engine, reads=True) as connection:
            status = connection.execute(_STATUS, {"installation": installation_id}).scalar()
        active = status in (None, "active")
        with self._lock:
            self._known[installation_id] = (now, active)
        return active

    def status(self, installation_id: int) -> str | None:
        with self._reads.connect() as connection:
            return connection.execute(select(_i.status).where(_i.id == installation_id)).scalar()

    def find(self, full_name: str) -> tuple[int, int] | None:
        """The installation and repository id of a repository an installation holds now ("owner/name", in
        any case), as its installation events reported it; None when none does."""
        name, now = full_name.lower(), time.monotonic()
        with self._lock:
            known = self._found.get(name)
        if known is not None and now - known[0] < STATUS_TTL:
            return known[1]
        query = (
            select(_r.installation_id, _r.repository_id)
            .where(func.lower(_r.full_name) == name, _r.present.is_(True))
            .order_by(_r.updated_at.desc())
        )
        with one_statement(self.engine, reads=True) as connection:
            row = connection.execute(query).first()
        found = None if row is None else (int(row.installation_id), int(row.repository_id))
        with self._lock:
            if len(self._found) > 10_000:
                self._found.clear()
            self._found[name] = (now, found)
        return found

    def owned_by(self, owner: str) -> list[tuple[int, int, str]]:
        """The repositories of `owner` (an organisation or user, any case) that an active installation holds now,
        as (installation, repository id, "owner/name"), by name."""
        prefix = owner.lower() + "/"
        query = (
            select(_r.installation_id, _r.repository_id, _r.full_name)
            .outerjoin(t.installations, _i.id == _r.installation_id)
            .where(func.substr(func.lower(_r.full_name), 1, len(prefix)) == prefix, _r.present.is_(True),
                   or_(_i.status.is_(None), _i.status == "active"))
            .order_by(func.lower(_r.full_name), _r.updated_at.desc())
        )  # fmt: skip
        found: dict[str, tuple[int, int, str]] = {}
        with one_statement(self.engine, reads=True) as connection:
            for row in connection.execute(query):  # a name held twice: the newest record, as `find` takes it
                found.setdefault(str(row.full_name).lower(),
                                 (int(row.installation_id), int(row.repository_id), str(row.full_name)))  # fmt: skip
        return list(found.values())

    def statuses(self) -> dict[int, str]:
        """Every recorded installation's status (active, suspended or deleted)."""
        with one_statement(self.engine, reads=True) as connection:
            return {int(row.id): str(row.status) for row in connection.execute(select(_i.id, _i.status))}

    def reconcile(self, installation_id: int, repositories: list[tuple[int, str]]) -> tuple[list[str], list[str]]:
        """The installation holds exactly `repositories` (id, "owner/name"), as GitHub lists them: those are
        present, every other one recorded for it is not. The names of those that came and went."""
        try:
            try:
                return self._reconcile(installation_id, repositories)
            except IntegrityError:  # an installation event or a lookup inserted one meanwhile: read again
                return self._reconcile(installation_id, repositories)
        finally:
            with self._lock:
                self._found.clear()

    def _reconcile(self, installation_id: int, repositories: list[tuple[int, str]]) -> tuple[list[str], list[str]]:
        now = self.clock.now()
        listed = dict(repositories)
        came: list[str] = []
        with self.engine.begin() as connection:
            recorded = {
                int(row.repository_id): (str(row.full_name), bool(row.present))
                for row in connection.execute(
                    select(_r.repository_id, _r.full_name, _r.present).where(_r.installation_id == installation_id)
                )
            }
            gone = [name for repository_id, (name, present) in recorded.items()
                    if present and repository_id not in listed]  # fmt: skip
            if gone:
                connection.execute(
                    update(t.installation_repositories)
                    .where(_r.installation_id == installation_id, _r.repository_id.not_in(list(listed)), _r.present)
                    .values(present=False, updated_at=now)
                )
            for repository_id, full_name in listed.items():
                known = recorded.get(repository_id)
                if known == (full_name, True):
                    continue
                came += [full_name] if known is None or not known[1] else []
                values = {"full_name": full_name, "present": True, "updated_at": now}
                if known is None:
                    connection.execute(
                        insert(t.installation_repositories).values(
                            installation_id=installation_id, repository_id=repository_id, **values
                        )
                    )
                else:
                    where = (_r.installation_id == installation_id) & (_r.repository_id == repository_id)
                    connection.execute(update(t.installation_repositories).where(where).values(**values))
        return came, gone

    def present(self, installation_id: int) -> dict[str, bool]:
        with self._reads.connect() as connection:
            rows = connection.execute(
                select(_r.full_name, _r.present).where(_r.installation_id == installation_id)
            ).all()
        return {row.full_name: bool(row.present) for row in rows}
