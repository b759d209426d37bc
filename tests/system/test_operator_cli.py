"""The `baton` commands for the people who run Baton. Each one's help says what it does and which settings it
reads. Given a database it cannot use (a URL that is not one, a database Baton does not use, a server that does
not answer, a database or a folder that does not exist, one never migrated) or a setting it cannot read, it says
so in one line and exits 2, with no traceback. `baton --version` tells the version."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.cli.main import SERVE_READS, SETUP_WRITES, WORKER_COMMAND_READS, build_parser, main
from baton.environment.settings import Settings
from support.databases import scratch_database
from support.keys import app_key

ROOT = Path(__file__).resolve().parents[2]


def _said(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str) -> tuple[int, str]:
    monkeypatch.setenv("BATON_DATABASE_URL", url)
    status = main(["refused"])
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("url", "words"),
    [("notaurl", "is not a database URL"),
     ("mysql://baton@127.0.0.1/baton", "names a database Baton does not use"),
     ("frobdb://somewhere/baton", "names a database Baton does not use"),
     ("sqlite:////nonexistent/folder/baton.db", "does its folder exist"),
     ("postgresql://postgres@127.0.0.1:9/baton", "Connection refused")],  # the discard port: nothing answers
    ids=["not-a-url", "mysql", "unknown-scheme", "missing-folder", "unreachable"],
)  # fmt: skip
def test_a_database_baton_cannot_use_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str, words: str
) -> None:
    status, said = _said(capsys, monkeypatch, url)
    assert status == 2
    assert said.startswith("baton: ") and said.count("\n") == 1 and words in said, said
    assert "sqlite:///./baton.db or postgresql://" in said or "cannot use the database" in said


@pytest.mark.postgres
def test_a_postgresql_database_that_does_not_exist_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with scratch_database("baton_cli") as (admin, _):  # the server answers (or the test says why not)
        missing = admin.url.set(database="baton_no_such_database").render_as_string(hide_password=False)
        status, said = _said(capsys, monkeypatch, missing)
    assert status == 2 and said.count("\n") == 1
    assert 'database "baton_no_such_database" does not exist' in said, said


def test_baton_serve_with_a_missing_sqlite_folder_says_so_in_one_line(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env["BATON_DATABASE_URL"] = f"sqlite:///{tmp_path}/missing/baton.db"
    done = subprocess.run([sys.executable, "-m", "baton.cli", "serve", "--port", "0"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.startswith("baton: cannot use the database"), done.stderr
    assert done.stderr.strip().count("\n") == 0


def test_baton_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == "baton 0.1.0"


def test_a_setting_baton_cannot_read_is_named_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_PORT", "eighty")
    monkeypatch.setenv("BATON_WORKER", "sometimes")
    monkeypatch.setenv("BATON_REDELIVER_EVERY", "-5")  # 0 turns the sweep off; below it means nothing
    assert main(["refused"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith("baton: "), said
    assert "BATON_PORT='eighty': Input should be a valid integer" in said
    assert "BATON_WORKER='sometimes': Input should be 'inprocess' or 'external'" in said
    assert "BATON_REDELIVER_EVERY='-5': Input should be greater than or equal to 0" in said


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [("BATON_PORT", "70000", "Input should be less than or equal to 65535"),
     ("BATON_PORT", "-1", "Input should be greater than or equal to 0"),
     ("BATON_WRITERS", "0", "Input should be greater than or equal to 1"),
     ("BATON_WRITES_PER_MINUTE", "0", "Input should be greater than or equal to 1"),
     ("BATON_GITHUB_TIMEOUT", "0", "Input should be greater than 0"),
     ("BATON_ANSWER_DELAY", "-1", "Input should be greater than or equal to 0"),
     ("BATON_API_REQUESTS_PER_MINUTE", "0", "Input should be greater than or equal to 1"),
     ("BATON_KEEP_DELIVERIES", "2d", "Input should be at least 3d, GitHub's window of redeliveries"),
     ("BATON_KEEP_PAYLOADS", "soon", "Input should be a duration such as 14d, 36h or 2w, or seconds")],
)  # fmt: skip
def test_a_number_out_of_its_range_is_named_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, variable: str, value: str, words: str
) -> None:
    """No writer threads, a port the system would wrap round, a timeout of nothing: refused at start, not run."""
    monkeypatch.setenv(variable, value)
    assert main(["refused"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and f"{variable}='{value}': {words}" in said, said


def _serving(env: dict[str, str], *arguments: str) -> tuple[subprocess.Popen[str], int, list[str]]:
    """A real `baton serve`, up: the process, the port uvicorn says it bound, and what it said until then."""
    serving = subprocess.Popen([sys.executable, "-m", "baton.cli", "serve", *arguments], env=env, cwd=ROOT,
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)  # fmt: skip
    assert serving.stderr is not None
    lines = []
    for line in serving.stderr:  # uvicorn says it runs once it is up, after Baton's own lines
        lines.append(line)
        if "Uvicorn running on" in line:
            return serving, int(line.rsplit(":", 1)[1].split()[0]), lines
    serving.wait(30)
    raise AssertionError(f"baton serve never came up: {lines}")


def test_the_callback_named_to_github_follows_the_proxy_baton_is_told_to_believe(tmp_path: Path) -> None:
    """Behind a reverse proxy that terminates TLS, the sign-in's callback is https at the proxy's host. Baton
    believes X-Forwarded-Proto from BATON_FORWARDED_ALLOW_IPS only (127.0.0.1 unless set), so a proxy in
    another container must be named there, or the callback GitHub is sent is plain http."""
    import httpx

    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env.update(BATON_DATABASE_URL=f"sqlite:///{tmp_path}/baton.db", BATON_CLIENT_ID="Iv1.proxy",
               BATON_CLIENT_SECRET="proxied")  # fmt: skip
    proxied = {"Host": "baton.example.com", "X-Forwarded-Proto": "https"}
    for believed, scheme in (("127.0.0.1", "https"), ("10.9.8.7", "http")):
        serving, port, _ = _serving({**env, "BATON_FORWARDED_ALLOW_IPS": believed}, "--port", "0")
        try:
            start = httpx.get(f"http://127.0.0.1:{port}/auth/github", headers=proxied)
        finally:
            serving.terminate()
            serving.wait(30)
        assert start.status_code == 303, start.text
        callback = f"redirect_uri={scheme}%3A%2F%2Fbaton.example.com%2Fauth%2Fgithub%2Fcallback"
        assert callback in start.headers["location"], (believed, start.headers["location"])


def test_the_access_log_leaves_out_the_sign_in_callbacks_code_and_state(tmp_path: Path) -> None:
    """With every log on (`--access-log`, `BATON_LOG_LEVEL=DEBUG`), `baton serve` writes a line per request, but
    never the one-time code GitHub hands the sign-in callback, nor its state; other query parameters
    stay as they were."""
    import httpx

    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env.update(BATON_DATABASE_URL=f"sqlite:///{tmp_path}/baton.db", BATON_CLIENT_ID="Iv1.logged",
               BATON_CLIENT_SECRET="logged", BATON_LOG_LEVEL="DEBUG")  # fmt: skip
    serving, port, _ = _serving(env, "--port", "0", "--access-log")
    try:
        httpx.get(f"http://127.0.0.1:{port}/auth/github/callback?code=0ne7imec0de&state=br0wserb1nding")
        httpx.get(f"http://127.0.0.1:{port}/api/v1/tasks?labels=frontend&Code=0ne7imec0de")
    finally:
        serving.terminate()
        assert serving.stderr is not None
        said = serving.stderr.read()
        serving.wait(30)
    assert "0ne7imec0de" not in said and "br0wserb1nding" not in said, said
    assert '"GET /auth/github/callback?code=[redacted]&state=[redacted] HTTP/1.1"' in said, said
    assert '"GET /api/v1/tasks?labels=frontend&Code=[redacted] HTTP/1.1"' in said, said


def test_a_database_never_migrated_is_told_how_to_migrate(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    status, said = _said(capsys, monkeypatch, f"sqlite:///{tmp_path}/new.db")
    assert status == 2 and said.count("\n") == 1 and "`baton db upgrade`" in said, said


def test_baton_docs_where_there_is_no_docs_folder_says_where_to_run_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["docs"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "there is no folder 'docs' here" in said, said
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_baton_serve_without_an_app_starts_and_says_once_that_webhooks_are_off(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env["BATON_DATABASE_URL"] = f"sqlite:///{tmp_path}/baton.db"
    serving, port, lines = _serving(env, "--port", "0")
    serving.terminate()
    serving.wait(30)
    ours = [line for line in lines if line.startswith("baton:")]
    assert len(ours) == 1 and "webhooks are off" in ours[0], lines
    assert port not in (0, 8000), lines  # --port 0: a free port the system chose, not BATON_PORT's default
    # BATON_LOG_FORMAT's default, text: time, level, logger, message (docs/operations.md)
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d{{3}} INFO uvicorn\.error: Uvicorn running on "
        rf"http://127\.0\.0\.1:{port} \(Press CTRL\+C to quit\)\n",
        lines[-1],
    ), lines


def test_each_operators_command_says_what_it_does_and_which_settings_it_reads() -> None:
    parser = build_parser()
    commands = next(action for action in parser._actions if action.dest == "command").choices
    operators = ["serve", "worker", "deliveries", "refused", "replay", "backfill", "demo", "docs", "setup"]
    fields = {name.upper() for name in Settings.model_fields}
    # Every setting is read by `baton serve` or `baton worker` (the App's OAuth client by serve, for the board),
    # and their help says so: a setting added without saying who reads it fails here.
    assert fields == set(SERVE_READS) | set(WORKER_COMMAND_READS)
    assert set(SETUP_WRITES) <= fields
    for name in operators:
        helped = commands[name].format_help()
        description, epilog = commands[name].description, commands[name].epilog
        assert description and description in " ".join(helped.split()), name
        assert epilog is not None and epilog.startswith("reads "), name
        named = {word.removeprefix("BATON_").strip(",") for word in epilog.split() if word.startswith("BATON_")}
        assert named <= fields, (name, named - fields)
    upgrade = next(action for action in commands["db"]._actions if action.dest == "db_command").choices["upgrade"]
    assert upgrade.epilog == "reads BATON_DATABASE_URL (or a .env file)"
    check = next(action for action in commands["config"]._actions if action.dest == "config_command").choices["check"]
    assert check.description and check.epilog == "reads no setting"


@pytest.mark.parametrize("command", [["db", "upgrade"], ["serve", "--port", "0"], ["worker"]])
def test_a_database_a_newer_baton_migrated_is_one_line_and_left_as_it_is(tmp_path: Path, command: list[str]) -> None:
    """Rolling Baton back without its database (deploy/README.md): the older Baton refuses to start, says why in
    one line and changes nothing, rather than failing inside the migrations with a traceback."""
    import sqlite3

    url = f"sqlite:///{tmp_path}/baton.db"
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env["BATON_DATABASE_URL"] = url
    subprocess.run([sys.executable, "-m", "baton.cli", "db", "upgrade"], env=env, cwd=tmp_path, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    with sqlite3.connect(tmp_path / "baton.db") as database:  # as a newer Baton's next migration leaves it
        database.execute("UPDATE alembic_version SET version_num = '9999'")
    done = subprocess.run([sys.executable, "-m", "baton.cli", *command], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("baton: the database in BATON_DATABASE_URL is at migration 9999, newer than"), (
        done.stderr
    )
    assert "restore the backup taken before the upgrade" in done.stderr
    with sqlite3.connect(tmp_path / "baton.db") as database:
        assert database.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]


# --- one line and exit 2 for what keeps `baton serve`, `baton worker` and `baton demo` from starting ---------------


def _baton(tmp_path: Path, *argv: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """`baton ARGV` in a process of its own, with only the BATON_ settings given (cwd: tmp_path, so no .env)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env |= {f"BATON_{name.upper()}": value for name, value in settings.items()}
    return subprocess.run([sys.executable, "-m", "baton.cli", *argv], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.startswith("baton: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another socket listens on."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def test_baton_serve_on_a_busy_port_says_so_in_one_line_before_doing_anything(tmp_path: Path, taken_port: int) -> None:
    database = tmp_path / "baton.db"
    said = _one_line(_baton(tmp_path, "serve", "--port", str(taken_port), database_url=f"sqlite:///{database}"))
    assert said == (f"baton: cannot serve on 127.0.0.1:{taken_port}: Address already in use; "
                    "choose another --port or BATON_PORT\n")  # fmt: skip
    assert not database.exists(), "the port is tried before the database is touched"
    # BATON_PORT says the same
    said = _one_line(_baton(tmp_path, "serve", database_url=f"sqlite:///{database}", port=str(taken_port)))
    assert f"127.0.0.1:{taken_port}: Address already in use" in said


def test_baton_serve_on_an_address_that_is_not_this_machines_says_so_in_one_line(tmp_path: Path) -> None:
    said = _one_line(_baton(tmp_path, "serve", "--host", "192.0.2.1", "--port", "0"))  # TEST-NET-1: nobody's
    assert said.startswith("baton: cannot serve on 192.0.2.1:0: ") and "--host or BATON_HOST" in said, said


@pytest.mark.parametrize("busy", [False, True], ids=["played", "port-taken"])
def test_baton_demo_leaves_no_database_behind(tmp_path: Path, taken_port: int, busy: bool) -> None:
    # Without --database its SQLite file is temporary: gone when the demo stops (docs/agents.md), also when it cannot
    # start.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env["TMPDIR"] = str(scratch)
    port = str(taken_port) if busy else "0"
    done = subprocess.run([sys.executable, "-m", "baton.cli", "demo", "--once", "--port", port], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == (2 if busy else 0), done.stderr
    assert f"database sqlite:///{scratch}/baton-demo-" in done.stdout
    assert list(scratch.iterdir()) == []


def test_baton_demo_and_a_workers_metrics_on_a_busy_port_say_so_the_same_way(tmp_path: Path, taken_port: int) -> None:
    said = _one_line(_baton(tmp_path, "demo", "--once", "--port", str(taken_port)))
    assert said == f"baton: cannot serve on 127.0.0.1:{taken_port}: Address already in use; choose another --port\n"
    database = f"sqlite:///{tmp_path}/baton.db"
    assert _baton(tmp_path, "db", "upgrade", database_url=database).returncode == 0
    said = _one_line(_baton(tmp_path, "worker", database_url=database, app_id="1", private_key=app_key(),
                            metrics_port=str(taken_port)))  # fmt: skip
    assert said == (f"baton: cannot serve on 127.0.0.1:{taken_port}: Address already in use; "
                    "choose another BATON_METRICS_PORT\n")  # fmt: skip


def _not_text(path: Path) -> Path:
    path.write_bytes(b"\xff\xfe-----BEGIN RSA PRIVATE KEY-----\x00")
    return path


def _unreadable(path: Path) -> Path:
    path.write_text(app_key())
    path.chmod(0)
    return path


KEYS = {
    "not-text": (_not_text, "is not a PEM key (it is not text)"),
    "missing": (lambda path: path, "is not a readable file"),
    "a-folder": (lambda path: path.mkdir() or path, "is not a readable file"),
}
if os.geteuid() != 0:  # a file's mode keeps no one but root out
    KEYS["no-permission"] = (_unreadable, "cannot be read: Permission denied")


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_baton_serve_with_a_key_it_cannot_read_says_so_in_one_line(tmp_path: Path, kind: str) -> None:
    make, words = KEYS[kind]
    key = make(tmp_path / "app.pem")
    said = _one_line(_baton(tmp_path, "serve", "--port", "0", database_url=f"sqlite:///{tmp_path}/baton.db",
                            app_id="1", private_key_path=str(key), webhook_secret="s3cret"))  # fmt: skip
    assert said.startswith(f"baton: BATON_PRIVATE_KEY_PATH={key} ") and words in said, said
    assert "s3cret" not in said


@pytest.mark.parametrize(
    "url",
    ["postgresql://postgres@127.0.0.1:9/baton", "postgresql://baton_no_such_role@127.0.0.1:5432/baton"],
    ids=["nothing-answers", "the-server-refuses-the-login"],
)
def test_baton_serve_on_a_database_that_refuses_says_so_in_one_line(tmp_path: Path, url: str) -> None:
    said = _one_line(_baton(tmp_path, "serve", "--port", "0", database_url=url))
    assert said.startswith("baton: cannot use the database in BATON_DATABASE_URL: "), said
