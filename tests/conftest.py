"""Shared fixtures: a migrated store on SQLite (a temporary file) and on PostgreSQL (a fresh database)."""

from __future__ import annotations

import functools
import gc
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from baton.environment.clock import SYSTEM
from baton.environment.settings import Settings
from baton.process import logs
from baton.service.unit import Units
from baton.store import make_engine, upgrade
from baton.store.tables import metadata
from github_standin.contract import Contract, ContractUnavailable
from support.corpus import missing
from support.databases import scratch_database, url_of

# The fault suite (`pytest -m faults`): hostile input, killed processes, database and GitHub outages.
FAULT_SUITE = {
    "test_comment_limits.py", "test_crash_recovery.py", "test_faults.py", "test_hostile_input.py",
    "test_hostile_payloads.py", "test_poison.py",
}  # fmt: skip


# Which databases the tests that take `database_url` run on (`--engines`, or BATON_TEST_ENGINES):
# - default: SQLite; PostgreSQL as well for the modules of tests/store and the tests marked `both_engines`,
#   those whose subject is how the database behaves (its SQL, locks, transactions racing, what it refuses to
#   store) and enough others that together they run every line of `baton.store` that any test runs on PostgreSQL
#   (checked with coverage: CONTRIBUTING.md, "Which database a test runs on");
# - both: every such test on both;
# - postgresql-rest: only the PostgreSQL runs that `default` leaves out. `.ci/run` runs `default`, then this, so
#   CI runs every database test on both.
ENGINE_CHOICES = ("default", "both", "postgresql-rest")

TESTS = Path(__file__).resolve().parent
CORPUS_NOTE_VARIABLE = "BATON_CORPUS_NOTE"  # what the session did about the npm corpora, for the report header


def _install_corpora() -> str:
    """Install the npm corpora pinned in tests/package-lock.json into tests/node_modules when they are missing
    and npm is there (`npm ci --prefix tests`, quietly); return one line saying what happened. Whatever it
    says, a test that needs a missing corpus skips with the install command (fails under BATON_REQUIRE_CORPUS=1).
    Nothing is done when BATON_CORPUS_DIR names another folder: that folder is the caller's to fill."""
    if os.environ.get("BATON_CORPUS_DIR"):
        return f"corpora: read from BATON_CORPUS_DIR={os.environ['BATON_CORPUS_DIR']}"
    if (TESTS / "node_modules").exists():
        return "corpora: tests/node_modules"
    npm = shutil.which("npm")
    if npm is None:
        return "corpora: not installed and no npm here; the tests that need them skip (npm ci --prefix tests)"
    try:
        done = subprocess.run(
            [npm, "ci", "--prefix", str(TESTS), "--no-audit", "--no-fund", "--loglevel=error"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"corpora: npm ci --prefix tests failed ({error}); the tests that need them skip"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return f"corpora: npm ci --prefix tests failed ({last}); the tests that need them skip"
    return "corpora: installed into tests/node_modules by npm ci --prefix tests"


def pytest_report_header() -> str:
    return os.environ.get(CORPUS_NOTE_VARIABLE, "")


def pytest_configure(config: pytest.Config) -> None:
    """The npm corpora are installed once, by the process that starts the run (before any test worker starts;
    each worker inherits the note of what happened, and BATON_CORPUS_DIR).

    Each test process collects its garbage less often. A test process holds Baton, the stand-in GitHub and
    GitHub's REST description at once, and with Python's default thresholds (700, 10, 10) a sixth of its CPU
    went to the garbage collector walking them; with these, a twentieth. Only timing changes: what the tests
    check does not depend on when garbage is collected. (`baton serve` freezes what it loaded at start instead,
    src/baton/cli/main.py.)"""
    if not hasattr(config, "workerinput") and CORPUS_NOTE_VARIABLE not in os.environ:
        os.environ[CORPUS_NOTE_VARIABLE] = _install_corpora()
        # These tests' own folder, named for every reader (tests/support/corpus.py, the stand-in's contract, and the
        # processes the tests start), wherever the baton package was installed from.
        os.environ.setdefault("BATON_CORPUS_DIR", str(TESTS / "node_modules"))
    gc.set_threshold(20_000, 20, 100)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the last test, what the process holds is frozen, so the collections that still follow (pytest's
    last look for unraisable exceptions, the interpreter's exit) pass it by. In a parallel run each worker
    otherwise walked its whole heap (close to a million objects) after its last test, every worker at once."""
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked `long` first, in their order, then the rest in theirs. In a parallel run the workers
    are handed tests from the front a few at a time (`--maxschedchunk` in pyproject.toml), so the long tests
    start at once, side by side, instead of one of them starting last and keeping the run waiting.

    The tests of the files in FAULT_SUITE are marked `faults`."""
    for item in items:
        if item.path.name in FAULT_SUITE:
            item.add_marker(pytest.mark.faults)
    if config.getoption("engines") == "postgresql-rest":
        kept = [item for item in items
                if "database_url" in getattr(item, "fixturenames", ()) and not _on_both_engines(item)]  # fmt: skip
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def figure(record_property: Callable[[str, object], None]) -> Callable[[str], None]:
    """Report a measured figure (one line of text): printed with the others at the end of the run, under
    "figures", whichever worker process ran the test."""

    def report(line: str) -> None:
        record_property("figure", line)

    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    lines = [
        f"{report.nodeid}: {value}"
        for report in terminalreporter.stats.get("passed", [])
        if report.when == "call"
        for name, value in report.user_properties
        if name == "figure"
    ]
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)
    shots = sorted(
        {
            Path(value).parent
            for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
            for name, value in report.user_properties
            if name == "screenshot"
        }
    )
    if shots:
        terminalreporter.section("screenshots")
        for folder in shots:
            terminalreporter.write_line(f"{folder}: {len(list(folder.glob('*.png')))} pictures")


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of its own for this test session, dropped at the end."""
    with scratch_database("baton_test") as (admin, name):
        yield url_of(admin, name)


@functools.cache
def _emptying(engine: Engine) -> str:
    """The statements that empty every table of `engine`'s database and start its ids from 1 again: DELETE
    and a sequence restart take about 12 ms where TRUNCATE takes about 100 (it makes new files for every table
    and index). Sent as one string, they cost one round trip."""
    with engine.connect() as connection:
        query = text("SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema()")
        sequences = connection.execute(query).scalars().all()
    deletes = [f'DELETE FROM "{table.name}"' for table in reversed(metadata.sorted_tables)]
    return "; ".join(deletes + [f'ALTER SEQUENCE "{sequence}" RESTART' for sequence in sequences])


def _empty(engine: Engine) -> None:
    """Every table of a PostgreSQL database emptied, its ids starting from 1 again."""
    with engine.begin() as connection:
        connection.exec_driver_sql(_emptying(engine))


@pytest.fixture(scope="session")
def migrated_sqlite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per session (per worker), for tests to copy: migrating costs far more."""
    path = tmp_path_factory.mktemp("migrated") / "baton.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()  # the last connection closed: the WAL is checked into the file and removed
    assert not path.with_name("baton.db-wal").exists()
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, migrated_sqlite_file: Path) -> str:
    """A fresh, migrated SQLite file of the test's own."""
    path = tmp_path / "baton.db"
    shutil.copyfile(migrated_sqlite_file, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def _postgres_engine(postgres_database: str) -> Iterator[Engine]:
    engine = make_engine(postgres_database)
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_url(postgres_database: str, _postgres_engine: Engine) -> str:
    _empty(_postgres_engine)
    return postgres_database


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--engines", choices=ENGINE_CHOICES, default=os.environ.get("BATON_TEST_ENGINES", "default"),
        help="which databases the tests that take `database_url` run on: default (SQLite; PostgreSQL too where "
        "the database or concurrency is the subject, see tests/conftest.py), both, or postgresql-rest (only the "
        "PostgreSQL runs that `default` leaves out; `.ci/run` runs it after `default`). "
        "Environment: BATON_TEST_ENGINES.",
    )  # fmt: skip


def _on_both_engines(node: pytest.Item) -> bool:
    """Whether the default run takes this test to PostgreSQL as well as SQLite."""
    return node.path.relative_to(TESTS).parts[0] == "store" or node.get_closest_marker("both_engines") is not None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The databases a test that takes `database_url` runs on (`--engines`)."""
    if "database_url" not in metafunc.fixturenames:
        return
    engines = metafunc.config.getoption("engines")
    both = engines == "both" or _on_both_engines(metafunc.definition)
    params = ["postgresql"] if engines == "postgresql-rest" else ["sqlite", "postgresql"] if both else ["sqlite"]
    metafunc.parametrize("database_url", params, indirect=True)


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str:
    """A migrated database of the test's own, on the engine of its parameter (`pytest_generate_tests`)."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture(scope="session")
def contract() -> Contract:
    """GitHub's REST description and webhook schemas, as the stand-in checks its calls against them (skipped, or
    failed under BATON_REQUIRE_CORPUS=1, without the npm corpora)."""
    try:
        return Contract.load()
    except ContractUnavailable as error:
        missing(str(error))


@pytest.fixture
def store(database_url: str) -> Iterator[Units]:
    engine = make_engine(database_url)
    try:
        yield Units(engine, SYSTEM)
    finally:
        engine.dispose()


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Logging set up as `baton serve` sets it up (`baton.process.logs.configure`), with text lines; yields
    (formatting thread, line) for each line written."""
    written: list[tuple[str, str]] = []
    root = logging.getLogger()
    before = (list(root.handlers), root.level, logging.getLogger("baton").level)

    class Recording(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            line = super().format(record)
            written.append((threading.current_thread().name, line))
            return line

    monkeypatch.setattr(logs.logging, "Formatter", Recording)
    logs.configure(Settings(log_format="text", log_level="INFO"))
    try:
        yield written
    finally:
        logs._stop_listening()
        root.handlers[:] = before[0]
        root.setLevel(before[1])
        logging.getLogger("baton").setLevel(before[2])
