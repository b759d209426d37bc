"""The tests' own shape: each test module sits in the folder that says what it needs (`unit`: no database, no
server; `store`: a database, no HTTP server; `web`: the app in-process; `system`: real processes and ports), what
modules share is in `tests/support`, and no module under tests/ imports a test module. GitHub is faked one way,
by the stand-in (`src/github_standin`), and Baton's directory of permissions and the webhook hub once, in
tests/support; respx stands in for HTTP only in the unit tests of the two HTTP clients."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
FOLDERS = ("unit", "store", "web", "system")

# What starts a server, a stand-in GitHub or a process, or opens a database, by the module or name imported.
SERVERS = ("uvicorn", "baton.demo", "github_standin.server", "support.processes", "support.standin_scene",
           "support.board_scene", "support.lanes", "support.local_http")  # fmt: skip
APP = ("fastapi.testclient", "support.webhook_hub", "support.read_api")
DATABASE = ("sqlalchemy", "alembic", "psycopg", "support.databases", "support.row_counts")
SERVER_NAMES = {"Stage", "StandIn"}
APP_NAMES = {"TestClient", "create_app"}
DATABASE_NAMES = {"make_engine", "create_engine", "upgrade", "scratch_database", "scratch_postgres"}
# The fixtures of tests/conftest.py that give a migrated database.
DATABASE_FIXTURES = {"database_url", "sqlite_url", "postgres_url", "postgres_database", "store", "migrated_sqlite_file"}

# The fakes of Baton's ports and of GitHub's side of the webhooks, each defined once, in tests/support.
FAKES = {"FakeDirectory", "Hub"}
# The HTTP clients' own unit tests, the only modules that fake HTTP with respx: GitHub's and the agent's.
RESPX_MODULES = {"tests/web/test_github_client.py", "tests/unit/test_agent_cli.py"}

# What each folder's modules may not reach for.
NOT_IN = {
    "unit": (SERVERS + APP + DATABASE, SERVER_NAMES | APP_NAMES | DATABASE_NAMES),
    "store": (SERVERS + APP, SERVER_NAMES | APP_NAMES),
    "web": (SERVERS, SERVER_NAMES),
}


def _python_files() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "node_modules" not in path.relative_to(TESTS).parts)


def _name(path: Path) -> str:
    return str(path.relative_to(TESTS.parent))


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The modules `path` imports (at its top or inside a function; `from support import x` counts as
    `support.x`) and the names it imports from them."""
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{_name(path)}: a relative import"
            module = node.module or ""
            modules.add(module)
            modules.update(f"{module}.{alias.name}" for alias in node.names if module == "support")
            names.update(alias.name for alias in node.names)
    return modules, names


def _classes(path: Path) -> set[str]:
    """The names of the classes `path` defines (at its top or inside a function) and of the classes they extend."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            found.add(node.name)
            found.update(base.id if isinstance(base, ast.Name) else ast.unparse(base) for base in node.bases)
    return found


def _arguments(path: Path) -> set[str]:
    """Every argument name of every function in `path`: the fixtures its tests and fixtures ask for."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.update(a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))
    return found


def _test_modules(folder: str) -> list[Path]:
    return sorted((TESTS / folder).glob("test_*.py"))


def test_every_test_module_is_in_one_of_the_four_folders_and_the_rest_is_support() -> None:
    for path in _python_files():
        parts = path.relative_to(TESTS).parts
        if path.name.startswith("test_"):
            assert len(parts) == 2 and parts[0] in FOLDERS, f"{_name(path)} is not in tests/{{{','.join(FOLDERS)}}}"
        else:
            assert parts == ("conftest.py",) or parts[0] == "support", f"{_name(path)}: helpers go in tests/support"
    for folder in FOLDERS:
        assert _test_modules(folder), f"tests/{folder} holds no test module"
        assert not (TESTS / folder / "conftest.py").exists(), "one conftest.py, at tests/"


@pytest.mark.parametrize("path", _python_files(), ids=_name)
def test_no_module_under_tests_imports_a_test_module(path: Path) -> None:
    modules, _ = _imports(path)
    for module in modules:
        parts = module.split(".")
        assert not any(part.startswith("test_") for part in parts), f"{_name(path)} imports {module}"
        assert parts[0] not in {"tests", "conftest"}, f"{_name(path)} imports {module}: use tests/support"


@pytest.mark.parametrize("path", _python_files(), ids=_name)
def test_the_fakes_are_defined_in_tests_support_only(path: Path) -> None:
    if path.relative_to(TESTS).parts[0] != "support":
        defined = _classes(path) & FAKES
        assert not defined, f"{_name(path)} defines or extends {sorted(defined)}: use the one in tests/support"


@pytest.mark.parametrize("path", _python_files(), ids=_name)
def test_only_the_http_clients_unit_tests_use_respx(path: Path) -> None:
    if _name(path) not in RESPX_MODULES:
        modules, _ = _imports(path)
        used = sorted(m for m in modules if m == "respx" or m.startswith("respx."))
        assert not used, f"{_name(path)} imports {used}: fake GitHub with the stand-in"


def test_the_respx_modules_exist() -> None:
    for name in RESPX_MODULES:
        assert (TESTS.parent / name).is_file(), f"{name} is gone: update RESPX_MODULES"


@pytest.mark.parametrize(
    "path", [path for folder in NOT_IN for path in _test_modules(folder)], ids=_name
)  # fmt: skip
def test_a_module_needs_no_more_than_its_folder_says(path: Path) -> None:
    folder = path.parent.name
    forbidden_modules, forbidden_names = NOT_IN[folder]
    modules, names = _imports(path)
    reached = sorted(m for m in modules if any(m == f or m.startswith(f"{f}.") for f in forbidden_modules))
    assert not reached, f"{_name(path)} is in tests/{folder} but imports {reached}"
    assert not names & forbidden_names, f"{_name(path)} is in tests/{folder} but imports {names & forbidden_names}"
    if folder == "unit":
        fixtures = _arguments(path) & DATABASE_FIXTURES
        assert not fixtures, f"{_name(path)} is in tests/unit but asks for a database: {fixtures}"


def test_the_checks_see_what_a_module_must_not_do(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "from support import standin_scene\nfrom support.webhook_hub import hub\nimport test_api\n"
        "from respx import MockRouter\nclass Hub:\n    pass\n"
        "def test_x(database_url):\n    from sqlalchemy import create_engine\n    import respx.models\n"
        "    class Directory(FakeDirectory):\n        pass\n",
        encoding="utf-8",
    )
    modules, names = _imports(sample)
    assert {"support.standin_scene", "support.webhook_hub", "test_api", "sqlalchemy"} <= modules
    assert {"respx", "respx.models"} <= modules
    assert "create_engine" in names
    assert _arguments(sample) & DATABASE_FIXTURES == {"database_url"}
    assert _classes(sample) & FAKES == {"Hub", "FakeDirectory"}  # defined, and extended
