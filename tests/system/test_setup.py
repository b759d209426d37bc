"""`baton setup`: registering Baton's GitHub App through GitHub's App-manifest flow, against the stand-in GitHub
over real HTTP. An httpx client plays the browser: it reads the setup page's form, posts it to the stand-in's
registration page, and follows GitHub's redirect back to the setup's callback. The credentials written must
then work: a `baton serve` run from the .env accepts the new App's webhooks and mints its installation tokens."""

from __future__ import annotations

import io
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives import serialization

from baton.cli import main
from baton.cli.registration import api_url_for, manifest_for, registration_url, updated_env
from bench.webhook_race import free_port, wait_for
from github_standin.contract import Contract, ContractUnavailable
from github_standin.people import Hub
from github_standin.server import Fault
from github_standin.serving import Served
from github_standin.world import RegisteredApp, World
from support.corpus import missing
from support.keys import app_public_key
from support.local_http import HTTP

ROOT = Path(__file__).resolve().parents[2]
KEPT = "# the operator's own lines stay\nOTHER_TOOL=keep me\n"


@pytest.fixture
def github() -> Iterator[tuple[Hub, str]]:
    """The stand-in GitHub, its REST API and its web pages on one server, checked against GitHub's description."""
    try:
        contract = Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    hub = Hub(World(1, app_public_key()), "not the new App's secret", contract)
    with Served(hub.rest.app) as served:
        hub.api_url = f"{served.url}/api/v3"
        yield hub, served.url
    hub.close()


def _environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form":
            self.action = found.get("action") or ""
        elif tag == "input" and found.get("name"):
            self.fields[str(found["name"])] = found.get("value") or ""


@dataclass
class Run:
    """One `baton setup` process, and the setup page it serves."""

    process: subprocess.Popen[str]
    url: str

    def form(self) -> _Form:
        page = HTTP.get(self.url)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        form = _Form()
        form.feed(page.text)
        return form

    def finished(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


@pytest.fixture
def setups() -> Iterator[list[Run]]:
    started: list[Run] = []
    yield started
    for run in started:
        if run.process.poll() is None:
            run.process.terminate()
            run.process.communicate(timeout=30)


def _start(setups: list[Run], folder: Path, github_url: str, baton_url: str, *extra: str) -> Run:
    folder.mkdir(exist_ok=True)
    files = ["--env-file", str(folder / ".env"), "--key-file", str(folder / "app.pem")]
    command = [sys.executable, "-m", "baton.cli", "setup", "--url", baton_url, "--github-url", github_url,
               "--port", "0", *files, *extra]  # fmt: skip
    process = subprocess.Popen(command, cwd=folder, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert process.stdout is not None
    first = process.stdout.readline()
    found = re.search(r"open (http://127\.0\.0\.1:\d+/) in a browser", first)
    if found is None:
        process.kill()
        raise AssertionError(f"baton setup did not start: {first!r} {process.communicate()}")
    run = Run(process, found.group(1))
    setups.append(run)
    return run


def _register(form: _Form) -> str:
    """The browser posts the form to GitHub; the address GitHub sends it back to."""
    answer = HTTP.post(form.action, data={"manifest": form.fields["manifest"]}, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    return answer.headers["location"]


def _only_app(hub: Hub) -> RegisteredApp:
    with hub.world.lock:
        assert len(hub.world.registered) == 1, hub.world.registered
        return next(iter(hub.world.registered.values()))


def _secrets_of(app: RegisteredApp, pem: str) -> list[str]:
    lines = [line for line in pem.splitlines() if line and not line.startswith("-----")]
    return [app.webhook_secret, app.client_secret, *lines]


def _env_values(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {name: value for name, value in pairs}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.long
def test_the_whole_flow_registers_an_app_whose_credentials_a_baton_serve_then_uses(
    github: tuple[Hub, str], setups: list[Run], tmp_path: Path
) -> None:
    hub, github_url = github
    folder = tmp_path / "baton"
    folder.mkdir()
    env_file, key_file = folder / ".env", folder / "app.pem"
    env_file.write_text(f"{KEPT}BATON_DATABASE_URL=sqlite:///{folder}/baton.db\n")
    before = env_file.read_text()
    port = free_port()
    baton_url = f"http://127.0.0.1:{port}"
    run = _start(setups, folder, github_url, baton_url)

    form = run.form()
    assert form.action.startswith(f"{github_url}/settings/apps/new?state=")
    state = parse_qs(urlsplit(form.action).query)["state"][0]
    assert len(state) >= 32

    # An answer that did not come from this form is refused, and nothing is written.
    forged = HTTP.get(f"{run.url}callback", params={"code": "anything", "state": "not-the-state"})
    assert forged.status_code == 400 and "state" in forged.text
    assert HTTP.get(f"{run.url}callback", params={"code": "anything"}).status_code == 400
    assert env_file.read_text() == before and not key_file.exists()
    assert run.process.poll() is None  # still waiting for the real answer

    back = _register(form)
    assert back.startswith(f"{run.url}callback?") and parse_qs(urlsplit(back).query)["state"] == [state]
    done = HTTP.get(back)
    assert done.status_code == 200 and "registered" in done.text
    status, out, err = run.finished()
    assert status == 0, (out, err)

    app = _only_app(hub)
    assert app.hook_url == f"{baton_url}/webhooks/github" and app.url == f"{baton_url}/"
    assert set(app.app.events) >= {"issue_comment", "issues", "pull_request"}
    assert app.app.permissions["issues"] == "write" and app.app.owner.login == hub.world.web_login
    pem = key_file.read_text()
    assert not [secret for secret in _secrets_of(app, pem) if secret in out + err]  # no secret printed
    assert f"/apps/{app.app.slug}/installations/new" in out and "baton serve" in out

    values = _env_values(env_file)
    assert env_file.read_text().startswith(KEPT)
    assert values["OTHER_TOOL"] == "keep me" and values["BATON_DATABASE_URL"].endswith("/baton.db")
    assert values["BATON_APP_ID"] == str(app.app.id)
    assert values["BATON_WEBHOOK_SECRET"] == app.webhook_secret
    assert values["BATON_CLIENT_ID"] == app.client_id and values["BATON_CLIENT_SECRET"] == app.client_secret
    assert values["BATON_PRIVATE_KEY_PATH"] == str(key_file.resolve())
    assert values["BATON_GITHUB_API_URL"] == f"{github_url}/api/v3"  # not github.com: derived as GHES's
    assert _mode(env_file) == 0o600 and _mode(key_file) == 0o600
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert public.decode() == app.public_key

    # `baton serve`, run where that .env is, is the new App.
    log = (tmp_path / "serve.log").open("wb")
    serving = subprocess.Popen([sys.executable, "-m", "baton.cli", "serve", "--port", str(port)], cwd=folder,
                               env=_environment(), stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        wait_for(f"{baton_url}/readyz", serving, tmp_path / "serve.log")
        home = HTTP.get(f"{baton_url}/")
        # no read token: the board offers only signing in with GitHub, the App's OAuth client, and says what
        # this Baton is
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert "Sign in with GitHub" in home.text and 'name="token"' not in home.text
        assert all(f'href="{path}"' in home.text for path in ("/healthz", "/readyz", "/openapi.json"))
        assert f"GitHub App {app.app.id}" in home.text

        unsigned = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "x", "X-Hub-Signature-256": "sha256=" + "0" * 64}
        assert HTTP.post(f"{baton_url}/webhooks/github", content=b"{}", headers=unsigned).status_code == 401
        with hub.world.lock:
            installation = hub.world.install("octo", app_id=app.app.id)
            shop = hub.world.add_repository(installation, "shop")
            hub.world.add_issue(shop, "A task", hub.world.account("octo"))
        delivered = hub.installed(installation.id, "octo-admin")  # signed with the new App's secret
        assert delivered.status is not None and 200 <= delivered.status < 300, delivered.answer
        deadline = time.monotonic() + 60
        while "baton:open" not in shop.issues[1].labels:  # offered: read and labelled with the new App's tokens
            assert time.monotonic() < deadline and serving.poll() is None, "the issue was never offered"
            time.sleep(0.1)

        # the person signed in at GitHub signs in to the board with the App's OAuth client, and sees the
        # repository they have a role on
        with hub.world.lock:
            shop.permissions[hub.world.web_login] = "read"
        start = HTTP.get(f"{baton_url}/auth/github")
        assert start.headers["location"].startswith(f"{github_url}/login/oauth/authorize?client_id={app.client_id}&")
        back = HTTP.get(start.headers["location"])
        assert back.headers["location"].startswith(f"{baton_url}/auth/github/callback?code=")
        signed = HTTP.get(
            back.headers["location"], headers={"Cookie": f"baton_sign_in={start.cookies['baton_sign_in']}"}
        )
        assert signed.status_code == 303, signed.text
        board = HTTP.get(f"{baton_url}/", headers={"Cookie": f"baton_session={signed.cookies['baton_session']}"})
        assert f"Signed in as @{hub.world.web_login}" in board.text and 'data-ticket="octo/shop#1"' in board.text
        HTTP.cookies.clear()  # the shared client keeps no session for other tests
    finally:
        serving.terminate()
        serving.wait(30)
        log.close()
    minted = [c for c in hub.rest.calls if c.path == f"/app/installations/{installation.id}/access_tokens"]
    assert minted and all(call.status == 201 for call in minted)
    assert hub.all_problems() == []


@pytest.mark.parametrize("failure", ["used", "github-fails", "unreachable"])
def test_a_code_that_cannot_be_exchanged_writes_nothing_and_says_why_in_one_line(
    github: tuple[Hub, str], setups: list[Run], tmp_path: Path, failure: str
) -> None:
    hub, github_url = github
    env_file = tmp_path / "baton" / ".env"
    extra = ["--github-api-url", "http://127.0.0.1:9"] if failure == "unreachable" else []  # nothing answers there
    run = _start(setups, tmp_path / "baton", github_url, "https://baton.example.org", *extra)
    env_file.write_text(KEPT)
    back = _register(run.form())
    if failure == "used":  # someone exchanged the code first
        code = parse_qs(urlsplit(back).query)["code"][0]
        assert HTTP.post(f"{github_url}/api/v3/app-manifests/{code}/conversions").status_code == 201
    if failure == "github-fails":
        hub.rest.inject(Fault("POST", r"/app-manifests/.+/conversions$", status=500))
    shown = HTTP.get(back)
    status, out, err = run.finished()
    assert shown.status_code == 502 and "not registered" in shown.text
    assert status == 1 and "Traceback" not in err and err.count("\n") == 1, err
    words = {"used": "does not know this code", "github-fails": "answered 500", "unreachable": "cannot reach"}
    assert words[failure] in err and "nothing written" in err, err
    assert env_file.read_text() == KEPT and not (tmp_path / "baton" / "app.pem").exists()
    assert sorted(p.name for p in env_file.parent.iterdir()) == [".env"]  # no staged file left behind
    app = _only_app(hub)
    assert not [secret for secret in _secrets_of(app, "") if secret in out + err + shown.text]


def test_an_organisation_registers_the_app_on_its_own_settings_and_force_replaces_an_app_set_up_before(
    github: tuple[Hub, str], setups: list[Run], tmp_path: Path
) -> None:
    hub, github_url = github
    folder = tmp_path / "baton"
    folder.mkdir()
    (folder / ".env").write_text("BATON_APP_ID=5\nBATON_WEBHOOK_SECRET=old\n")  # an App set up before
    (folder / "app.pem").write_text("the old App's key")
    run = _start(setups, folder, github_url, "https://baton.example.org", "--org", "octo-org", "--force")
    form = run.form()
    assert form.action.startswith(f"{github_url}/organizations/octo-org/settings/apps/new?state=")
    assert HTTP.get(_register(form)).status_code == 200
    assert run.finished()[0] == 0
    app = _only_app(hub)
    assert (app.app.owner.login, app.app.owner.type) == ("octo-org", "Organization")
    values = _env_values(folder / ".env")
    assert (values["BATON_APP_ID"], values["BATON_WEBHOOK_SECRET"]) == (str(app.app.id), app.webhook_secret)
    assert (folder / "app.pem").read_text().startswith("-----BEGIN")


def test_an_app_set_up_already_is_kept_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("BATON_APP_ID=5\n")
    assert main(["setup", "--url", "https://baton.example.org"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "sets BATON_APP_ID already" in said and "--force" in said, said
    assert (tmp_path / ".env").read_text() == "BATON_APP_ID=5\n"
    assert main(["setup", "--url", "ftp://baton.example.org"]) == 2
    assert "is not an http(s) address" in capsys.readouterr().err
    assert main(["setup", "--url", "https://baton.example.org", "--env-file", "missing/.env"]) == 2
    assert "there is no folder" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO())  # no terminal to ask on
    assert main(["setup", "--force"]) == 2
    assert "give Baton's public address with --url" in capsys.readouterr().err
    assert (tmp_path / ".env").read_text() == "BATON_APP_ID=5\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        ".env"]  # fmt: skip


def test_the_package_carries_app_yml_itself_and_posts_it_with_this_batons_addresses() -> None:
    carried = files("baton").joinpath("app.yml").read_text(encoding="utf-8")
    assert carried == (ROOT / "app.yml").read_text(encoding="utf-8"), "src/baton/app.yml must be app.yml"
    posted = manifest_for("https://baton.example.org", "http://127.0.0.1:8001/callback")
    assert posted["url"] == "https://baton.example.org/"
    assert posted["hook_attributes"] == {"url": "https://baton.example.org/webhooks/github", "active": True}
    assert posted["redirect_url"] == "http://127.0.0.1:8001/callback"
    assert posted["callback_urls"] == ["https://baton.example.org/auth/github/callback"]
    assert posted["request_oauth_on_install"] is False
    assert api_url_for("https://github.com") == "https://api.github.com"
    assert api_url_for("https://ghe.example.org/") == "https://ghe.example.org/api/v3"
    assert registration_url("https://github.com", "octo") == "https://github.com/organizations/octo/settings/apps/new"


def test_the_env_file_keeps_other_lines_and_replaces_batons_app_in_place() -> None:
    before = (
        "# mine\nexport BATON_APP_ID=1\nOTHER=x\n"
        'BATON_PRIVATE_KEY="-----BEGIN RSA PRIVATE KEY-----\nold\n-----END RSA PRIVATE KEY-----"\nLAST=y'
    )
    after = updated_env(before, {"BATON_APP_ID": "2", "BATON_PRIVATE_KEY_PATH": "/k.pem"})
    assert after == "# mine\nBATON_APP_ID=2\nOTHER=x\nLAST=y\n# Baton's GitHub App, registered by `baton setup`\n" \
        "BATON_PRIVATE_KEY_PATH=/k.pem\n"  # fmt: skip
