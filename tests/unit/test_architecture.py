"""The shape the code promises: a pure core, generated docs that match the registry, a working CLI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from baton.cli.docs import documents, state_machine_markdown
from baton.domain import RULES

ROOT = Path(__file__).resolve().parents[2]
PURE = [ROOT / "src/baton/domain", ROOT / "src/baton/reading/commands.py"]
READING = ROOT / "src/baton/reading"  # pure readers of what people write: the standard library, YAML, the domain
IO_LIBRARIES = {"sqlalchemy", "alembic", "psycopg", "fastapi", "starlette", "uvicorn", "httpx", "githubkit",
                "pydantic", "pydantic_settings", "yaml", "requests", "socket", "sqlite3", "asyncio", "os",
                "subprocess", "threading", "multiprocessing"}  # fmt: skip


def _python_files() -> list[Path]:
    files: list[Path] = []
    for path in PURE:
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_modules_import_only_the_standard_library_and_each_other(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top not in IO_LIBRARIES, f"{path.name} imports {name}"
            assert (top == "baton" and name.startswith("baton.domain")) or top in sys.stdlib_module_names, (
                f"{path.name} imports {name}, which is neither the standard library nor the domain"
            )


# What a reader may not do: reach a file, the network, the environment, a process or a thread.
_IO_MODULES = {"pathlib", "io", "shutil", "tempfile", "glob", "urllib", "http", "logging"}
_IO_CALLS = {"open", "print", "input", "read_text", "write_text", "read_bytes", "write_bytes", "getenv"}


@pytest.mark.parametrize("path", sorted(READING.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_readers_import_only_the_standard_library_yaml_and_the_domain_and_do_no_io(path: Path) -> None:
    for name in _imports(path):
        top = name.split(".")[0]
        assert top not in (IO_LIBRARIES | _IO_MODULES) - {"yaml"}, f"{path.name} imports {name}"
        allowed = top in sys.stdlib_module_names or top == "yaml" or name.startswith(("baton.domain", "baton.reading"))
        assert allowed, f"{path.name} imports {name}, which is neither the standard library, YAML nor the domain"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            assert called not in _IO_CALLS, f"{path.name}:{node.lineno} calls {called}"


def test_nothing_but_init_stands_loose_in_the_baton_package() -> None:
    """Every module lives in the package that says what it is (README.md, "What is here")."""
    assert sorted(path.name for path in (ROOT / "src/baton").glob("*.py")) == ["__init__.py"]


APART = [("environment", ()), ("client", ("baton.client", "baton.environment"))]


@pytest.mark.parametrize(("package", "may_reach"), APART)
def test_the_environment_and_the_agents_client_stay_apart(package: str, may_reach: tuple[str, ...]) -> None:
    """The environment is for every layer, so it imports nothing of Baton's; an agent's client speaks HTTP
    to a Baton and never reaches the database, the use cases or the web."""
    for path in sorted((ROOT / "src/baton" / package).rglob("*.py")):
        reached = {name for name in _imports(path) if name.split(".")[0] == "baton"}
        assert all(name.startswith(may_reach) for name in reached) if may_reach else not reached, (path, reached)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, at its top or inside a function (relative imports made absolute)."""
    package = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            names.add(node.module or "" if node.level == 0 else ".".join(filter(None, [base, node.module])))
    return names


def test_the_stand_in_github_is_apart_from_baton_and_only_the_demo_imports_it() -> None:
    for path in sorted((ROOT / "src/github_standin").rglob("*.py")):
        assert not {n for n in _imports(path) if n.split(".")[0] == "baton"}, f"{path} imports Baton"
    importers = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "src/baton").rglob("*.py")
        if any(n.split(".")[0] == "github_standin" for n in _imports(path))
    }
    assert importers and all(name.startswith("src/baton/demo/") for name in importers), importers


# The time Baton acts on comes from the `Clock` it was assembled with (`environment/clock.py`), never from the wall
# clock read in place: a test moves that clock by hand, and every stored time and decision follows it. Durations
# measured for logs and metrics use `time.monotonic()`/`time.perf_counter()`, which are not the time of day.
WALL_CLOCK = {"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today",
              "time.time", "time.time_ns"}  # fmt: skip
# Modules that may read the wall clock, each with its reason; keep it to the clock itself.
READS_THE_WALL_CLOCK = {"src/baton/environment/clock.py": "the system clock, and a manual clock's default start"}


def _wall_clock_reads(source: str) -> list[str]:
    """Where `source` reads the wall clock: `datetime.now`, `datetime.utcnow`, `datetime.today`, `date.today`,
    `time.time`, `time.time_ns`, called or passed along, under whatever names they were imported as."""
    tree = ast.parse(source)
    # a local name -> what it stands for: "datetime" or "time" (the modules), "datetime.datetime", "time.time", …
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("datetime", "time"):
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in ("datetime", "time"):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def meaning(node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return names.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = meaning(node.value)
            return f"{owner}.{node.attr}" if owner else None
        return None

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute) and (what := meaning(node)) in WALL_CLOCK:
            found.append(f"{node.lineno}: {what}")
    return found


@pytest.mark.parametrize(
    ("source", "reads"),
    [
        ("from datetime import UTC, datetime\nx = datetime.now(UTC)", True),
        ("import datetime as dt\nx = dt.datetime.utcnow()", True),
        ("from datetime import date\nx = date.today()", True),
        ("import time\nx = time.time()", True),
        ("from time import time as wall\nx = wall()", True),
        ("from datetime import datetime\nfrom dataclasses import field\nx = field(default_factory=datetime.now)", True),
        ("import time\nx = time.monotonic(), time.perf_counter()", False),
        ("from datetime import datetime\nx = datetime.fromisoformat('2025-01-01'), clock.now()", False),
    ],
)
def test_the_wall_clock_check_finds_each_way_of_reading_it(source: str, reads: bool) -> None:
    assert bool(_wall_clock_reads(source)) == reads


def test_nothing_reads_the_wall_clock_but_the_clock() -> None:
    """Everything that reads the time takes a `Clock`: stored times, due times, leases, windows, expiries."""
    found = {
        name: reads
        for path in sorted((ROOT / "src/baton").rglob("*.py"))
        if (name := str(path.relative_to(ROOT))) not in READS_THE_WALL_CLOCK
        and (reads := _wall_clock_reads(path.read_text(encoding="utf-8")))
    }
    assert not found, f"read the time from the Clock passed in, not the wall clock: {found}"
    for name in READS_THE_WALL_CLOCK:
        assert _wall_clock_reads((ROOT / name).read_text(encoding="utf-8")), f"{name} no longer needs its exception"


def test_serving_baton_loads_neither_the_stand_in_nor_the_demo() -> None:
    code = "import sys, baton.cli, baton.web, baton.process.runtime; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert not [name for name in loaded if name.startswith(("github_standin", "baton.demo"))]
    # the board's templates load at its first page, not when serving starts
    assert "jinja2" not in loaded


def test_importing_the_core_loads_no_io_library() -> None:
    code = "import sys, baton.domain, baton.reading.commands; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert not {name.split(".")[0] for name in loaded} & (IO_LIBRARIES - {"os", "threading"})


def test_importing_the_readers_loads_no_io_library_but_yaml() -> None:
    modules = ", ".join(f"baton.reading.{path.stem}" for path in sorted(READING.glob("[!_]*.py")))
    code = f"import sys, {modules}; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert not {name.split(".")[0] for name in loaded} & (IO_LIBRARIES - {"os", "threading", "yaml"})


@pytest.mark.parametrize("name", ["commands.md", "state-machine.md"])
def test_generated_docs_are_current(name: str) -> None:
    assert (ROOT / "docs" / name).read_text(encoding="utf-8") == documents()[name], (
        f"docs/{name} is out of date: run `baton docs`"
    )


def test_state_machine_doc_has_every_transition_of_the_registry() -> None:
    doc = state_machine_markdown()
    arrows = {line.strip() for line in doc.splitlines() if "-->" in line}
    for rule in RULES.values():
        for source in rule.sources:
            assert f"{source.value} --> {rule.target.value if rule.target else ''}: /{rule.name}" in arrows
    transitions = sum(len(rule.sources) for rule in RULES.values() if rule.target)
    assert len([a for a in arrows if not a.startswith("[*]") and not a.endswith("[*]")]) == transitions


def test_the_app_manifest_subscribes_every_event_baton_handles_with_the_permissions_it_needs() -> None:
    import yaml

    from baton.intake import HANDLERS
    from baton.intake.offering import BACKFILL

    manifest = yaml.safe_load((ROOT / "app.yml").read_text())
    assert {"name", "url", "hook_attributes", "default_events", "default_permissions"} <= set(manifest)
    assert manifest["hook_attributes"]["url"].endswith("/webhooks/github")
    # GitHub sends installation events to every App; they cannot be (and need not be) subscribed.
    always_sent = {"installation", "installation_repositories"}
    own = {BACKFILL}  # deliveries Baton stores for itself; GitHub never sends them
    assert {event for event, _ in HANDLERS} - always_sent - own <= set(manifest["default_events"])
    permissions = manifest["default_permissions"]
    assert {k: permissions[k] for k in ("issues", "pull_requests", "checks", "contents", "metadata")} == {
        "issues": "write", "pull_requests": "write", "checks": "write", "contents": "read", "metadata": "read",
    }  # fmt: skip
    assert permissions["members"] == "read"  # teams named in reviewers, runners and maintainers
