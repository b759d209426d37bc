"""Engines for SQLite (the embedded default) and PostgreSQL (through psycopg 3)."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

SQLITE_BUSY_TIMEOUT_MS = 30_000
READ_ONLY = "baton_read_only"  # execution option: this connection only reads (SQLite then takes no write lock)
# Each SQLite engine's writer lock, by its pool (which the engine's option-bearing copies share).
_WRITERS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_HERE = threading.local()  # `held`: the writer lock this thread holds for all it writes (`writing_at_hand`)


def normalise_url(url: str) -> str:
    """`postgresql://` means psycopg 3 here, whatever SQLAlchemy's default driver is."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


_URL_EXAMPLES = "sqlite:///./baton.db or postgresql://user@host:5432/baton"


def unusable(error: BaseException) -> str | None:
    """One line a person can act on for an error that says BATON_DATABASE_URL cannot be used (a URL that is not
    one, a database Baton does not speak, a server that does not answer, a database or folder that does not
    exist, one migrated by a newer Baton); None for any other error."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

    from baton.store.migrate import NewerDatabase

    if isinstance(error, NewerDatabase):
        return str(error)
    if isinstance(error, NoSuchModuleError) or (
        isinstance(error, ModuleNotFoundError) and error.__traceback__ is not None and _from_dialect(error)
    ):
        return f"BATON_DATABASE_URL names a database Baton does not use ({error}): use {_URL_EXAMPLES}"
    if isinstance(error, ArgumentError) and "URL" in str(error):
        return f"BATON_DATABASE_URL is not a database URL: use {_URL_EXAMPLES}"
    if isinstance(error, OperationalError) and error.orig is not None:
        said = str(error.orig).strip().splitlines()[0] if str(error.orig).strip() else type(error.orig).__name__
        said = said.removeprefix("connection failed: ")
        if "unable to open database file" in said:
            said += " (does its folder exist, and may Baton write there?)"
        if "no such table" in said or ("relation" in said and "does not exist" in said):
            said += " (the database was never migrated: `baton db upgrade`, or start `baton serve` once)"
        return f"cannot use the database in BATON_DATABASE_URL: {said}"
    return None


def _from_dialect(error: ModuleNotFoundError) -> bool:
    """Whether a missing module was wanted by a SQLAlchemy dialect (the database's driver is not installed)."""
    frame = error.__traceback__
    while frame is not None:
        if "sqlalchemy/dialects" in frame.tb_frame.f_code.co_filename.replace("\\", "/"):
            return True
        frame = frame.tb_next
    return False


def make_engine(url: str, **kwargs: Any) -> Engine:
    url = normalise_url(url)
    if make_url(url).get_backend_name() == "sqlite":
        return _sqlite_engine(url, **kwargs)
    # Each connection is pinged as it leaves the pool (one short round trip), so a connection the server
    # closed (a restart, a failover, an administrator) is replaced there instead of failing a request.
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_recycle", 1800)
    # Server-side prepared statements from the second use on: planning the work rail's reads costs
    # more than running them. (Behind a transaction-pooling PgBouncer, set prepare_threshold=None.)
    connect_args = kwargs.setdefault("connect_args", {})
    connect_args.setdefault("prepare_threshold", 1)
    # A server that does not answer fails a connection in seconds, not after the system's TCP timeout:
    # a webhook must be answered (and, with the database away, spooled) within GitHub's ten seconds.
    connect_args.setdefault("connect_timeout", 5)
    return create_engine(url, **kwargs)


def warm(engine: Engine, connections: int) -> int:
    """Open `connections` of the pool's connections now (no more than the pool keeps), so that the first burst of
    work holding several at once does not wait for them to be made: a new PostgreSQL connection costs a process
    on the server and a few round trips, several milliseconds. A database that cannot be reached is left for the
    work to meet. How many were opened."""
    keeps = getattr(engine.pool, "size", None)
    wanted = min(connections, keeps()) if callable(keeps) else connections
    opened: list[Connection] = []
    try:
        for _ in range(wanted):
            opened.append(engine.connect())
    except Exception:  # unreachable, or refused: the work finds out and says so
        pass
    finally:
        for connection in opened:
            connection.close()
    return len(opened)


def unreachable(error: BaseException) -> bool:
    """The database cannot be reached (refused, closed, restarting, timed out), as opposed to a statement
    it refused: what is tried again later rather than reported as a fault of the data."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    if isinstance(error, OperationalError | InterfaceError):
        return True
    # psycopg is imported only by a process that uses PostgreSQL (about 0.1 s at each start otherwise); in one
    # that never did, no psycopg error can be raised.
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)


def describe(error: BaseException) -> str:
    """One line about a database error, without its statement or parameters (which may hold payloads)."""
    cause = error.orig if isinstance(error, DBAPIError) and error.orig is not None else error
    first = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {first[0]}" if first else type(cause).__name__


CHECKPOINT_EVERY = 0.1  # seconds: at the webhook race's pace (some 13 MB a second), a third of the 1,000 pages


class Checkpoints:
    """On SQLite, the write-ahead log copied into the database file every `CHECKPOINT_EVERY` seconds by a thread of
    its own (`step`; PASSIVE: it waits for no reader and no writer, and copies what it can). SQLite still checkpoints
    at the commit that grows the log past 1,000 pages (the log starts again from its beginning only after a
    checkpoint no write lands in, which a busy process seldom leaves time for), but that commit, an acknowledgement's
    or a decision's on the event loop, then finds all but the last moment's pages copied already, instead of some
    4 MB to copy before it returns."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._connection: Any = None

    def step(self) -> float:
        if self._connection is None:  # a connection of its own, out of the pool: the pool's stay for the work
            raw = self.engine.raw_connection()
            raw.detach()
            self._connection = raw
        cursor = self._connection.cursor()
        try:
            cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
            cursor.fetchall()
        finally:
            cursor.close()
        return CHECKPOINT_EVERY

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def checkpoints(engine: Engine) -> Checkpoints | None:
    """The engine's `Checkpoints`: only a SQLite database in a file has a write-ahead log to copy (one in memory has
    none, and its one connection must stay in its pool)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:" or "mode=memory" in str(engine.url):
        return None
    return Checkpoints(engine)


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    """SQLite in WAL mode, every transaction `BEGIN IMMEDIATE`.

    A deferred transaction that reads and then writes can fail with "database is locked" at the
    moment it upgrades its lock, whatever the busy timeout; taking the write lock at BEGIN makes
    writers queue on the busy timeout instead, so callers never see that error.

    Threads of one process also queue on a lock of their own before BEGIN: SQLite's busy handler
    sleeps in growing steps (up to 100 ms) while it waits, and a plain lock hands over at once.
    Other processes still meet at the busy timeout.
    """
    connect_args = kwargs.pop("connect_args", {})
    connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT_MS / 1000)
    connect_args.setdefault("check_same_thread", False)
    engine = create_engine(url, connect_args=connect_args, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    writer = _WRITERS[engine.pool] = threading.Lock()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if connection.get_execution_options().get(READ_ONLY):
            # A reader: WAL gives it a snapshot beside the one writer, so it takes neither lock.
            connection.exec_driver_sql("BEGIN")
            return
        if getattr(_HERE, "held", None) is writer:  # this thread holds it for all it writes now
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        writer.acquire()
        connection.info["baton_writer"] = True
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            _release(connection)
            raise

    def _release(connection: Any) -> None:
        if connection.info.pop("baton_writer", False):
            writer.release()

    event.listen(engine, "commit", _release)
    event.listen(engine, "rollback", _release)

    return engine


@contextmanager
def writing_at_hand(engine: Engine) -> Iterator[bool]:
    """On SQLite, whether this thread may write now without waiting for another thread of the process: the
    process's writer lock, if free, taken for every transaction this thread begins inside (True), and a connection
    of the pool free for them. False where another thread writes, the pool's connections are all out, or the
    database is not SQLite (a round trip away: never written without leaving the event loop). Another process
    writing to the same file is still waited for, at BEGIN, as any writer waits."""
    writer = _WRITERS.get(engine.pool)
    pool: Any = engine.pool
    spare = not callable(getattr(pool, "checkedout", None)) or pool.checkedout() < pool.size()
    if writer is None or not spare or getattr(_HERE, "held", None) is not None or not writer.acquire(blocking=False):
        yield False
        return
    _HERE.held = writer
    try:
        yield True
    finally:
        _HERE.held = None
        writer.release()


def reader(engine: Engine) -> Engine:
    """`engine` for transactions that only read. On SQLite each begins as a snapshot of what is committed (plain
    `BEGIN`) and takes neither the process's writer lock nor SQLite's: a reader never waits for a writer, and never
    holds up one (a writer deciding a race at hand, `writing_at_hand`, finds the lock free). Only for what reads: a
    write inside would go past the process's lock and could meet SQLite's "database is locked". On PostgreSQL it
    changes nothing."""
    return engine.execution_options(**{READ_ONLY: True})


@contextmanager
def one_statement(engine: Engine, *, reads: bool = False) -> Iterator[Connection]:
    """A connection for one statement that is a transaction by itself. On PostgreSQL it runs in
    autocommit: one round trip instead of three (BEGIN, the statement, COMMIT). On SQLite a write takes
    the writer lock like any other; a statement that only `reads` takes a snapshot and no lock."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            yield connection.execution_options(isolation_level="AUTOCOMMIT")
    elif reads:
        with engine.connect() as connection:
            yield connection.execution_options(**{READ_ONLY: True})
    else:
        with engine.begin() as connection:
            yield connection
