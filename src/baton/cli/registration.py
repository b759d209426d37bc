"""`baton setup`: Baton's GitHub App registered through GitHub's App-manifest flow, its credentials written.

A small page on this machine holds a form that posts app.yml's manifest (with this Baton's addresses in it)
and a random `state` to GitHub. GitHub shows the operator the App it is about to create; once they create
it, GitHub sends the browser back to this command's callback with a one-time `code`, which is exchanged
(`POST /app-manifests/{code}/conversions`) for the App's id, private key, webhook secret and OAuth client.
Those go to a `.env` file and a key file, each readable by its owner only; nothing is written unless all
of it can be, and no secret is ever printed.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import secrets
import socket
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import yaml

from baton.web.github_sign_in import CALLBACK as SIGN_IN_CALLBACK

GITHUB = "https://github.com"
GITHUB_API = "https://api.github.com"
API_VERSION = "2026-03-10"  # the REST API version Baton's GitHub client speaks (githubkit 0.16)
CALLBACK = "/callback"

# What a registration drops from the .env: a private key held in the file itself would be read before the key
# file named by BATON_PRIVATE_KEY_PATH.
_DROPS = ("PRIVATE_KEY",)
_APP_KEYS = ("APP_ID", "WEBHOOK_SECRET", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "CLIENT_ID", "CLIENT_SECRET")


class SetupError(Exception):
    """What stops a registration, in one line for the operator (never holding a secret)."""


def app_manifest() -> dict[str, Any]:
    """app.yml, as the package carries it."""
    loaded = yaml.safe_load(files("baton").joinpath("app.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def manifest_for(public_url: str, redirect_url: str) -> dict[str, Any]:
    """The manifest posted to GitHub: app.yml with this Baton's homepage, webhook endpoint and sign-in
    callback, and the callback of the `baton setup` the browser is talking to."""
    manifest = app_manifest()
    manifest["url"] = f"{public_url}/"
    manifest["hook_attributes"] = {**manifest["hook_attributes"], "url": f"{public_url}/webhooks/github"}
    manifest["redirect_url"] = redirect_url
    manifest["callback_urls"] = [f"{public_url}{SIGN_IN_CALLBACK}"]
    return manifest


def public_address(text: str) -> str:
    """Baton's public address, as given: an http(s) URL with a host and no query; no trailing slash."""
    url = text.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise SetupError(f"{text!r} is not an http(s) address such as https://baton.example.org")
    return url


def api_url_for(github_url: str) -> str:
    """GitHub's REST API for a GitHub web address: api.github.com for github.com, HOST/api/v3 for a GitHub
    Enterprise Server."""
    web = github_url.rstrip("/")
    return GITHUB_API if web == GITHUB else f"{web}/api/v3"


def registration_url(github_url: str, org: str | None) -> str:
    """Where the manifest is posted: the user's settings, or an organisation's."""
    web = github_url.rstrip("/")
    return f"{web}/organizations/{quote(org, safe='')}/settings/apps/new" if org else f"{web}/settings/apps/new"


# -- the .env file ------------------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)")


def _entries(text: str) -> list[tuple[str | None, str, list[str]]]:
    """The file's lines grouped as (variable or None, its value, its lines): a quoted value may span lines
    (a PEM pasted in), and comments and blank lines belong to no variable."""
    entries: list[tuple[str | None, str, list[str]]] = []
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        line = lines[index]
        found = _ASSIGNMENT.fullmatch(line.rstrip("\r\n"))
        if found is None or line.lstrip().startswith("#"):
            entries.append((None, "", [line]))
            index += 1
            continue
        value, held = found.group(2).rstrip(), [line]
        quote_mark = value[:1] if value[:1] in ("'", '"') else ""
        if quote_mark and (len(value) == 1 or not value.endswith(quote_mark)):  # it goes on below
            while index + 1 < len(lines):
                index += 1
                held.append(lines[index])
                value += "\n" + lines[index].rstrip()
                if value.endswith(quote_mark):
                    break
        entries.append((found.group(1).upper(), value.strip().strip("'\""), held))
        index += 1
    return entries


def existing_app(env_file: Path, key_file: Path) -> str | None:
    """What says an App is set up here already (its variables in the .env, or the key file), or None."""
    if env_file.exists():
        ours = {f"BATON_{name}" for name in _APP_KEYS}
        named = [name for name, value, _ in _entries(env_file.read_text(encoding="utf-8")) if name in ours and value]
        if named:
            return f"{env_file} sets {', '.join(dict.fromkeys(named))} already"
    if key_file.exists():
        return f"{key_file} exists already"
    return None


def updated_env(text: str, values: Mapping[str, str]) -> str:
    """The .env's text with Baton's `values` (BATON_ names) set in place or added at its end, the variables
    they supersede removed, and every other line as it was."""
    kept: list[str] = []
    written: set[str] = set()
    dropped = {f"BATON_{name}" for name in _DROPS}
    for name, _, lines in _entries(text):
        if name is not None and name in values:
            if name not in written:
                kept.append(f"{name}={values[name]}\n")
                written.add(name)
        elif name not in dropped:
            kept.extend(lines)
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    missing = [f"{name}={value}\n" for name, value in values.items() if name not in written]
    if missing:
        kept.extend(["# Baton's GitHub App, registered by `baton setup`\n", *missing])
    return "".join(kept)


def _staged(path: Path, text: str) -> Path:
    """`text` in a new file beside `path`, readable and writable by its owner only."""
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as staged:
            staged.write(text)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return Path(name)


# -- the registration ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Registered:
    """The App GitHub created; its secrets stay in `credentials`, which is never shown."""

    id: int
    slug: str
    name: str
    html_url: str
    credentials: Mapping[str, str] = field(repr=False)


def _message(response: httpx.Response) -> str:
    """GitHub's words for a refusal (its JSON `message`), short, or the status alone."""
    with contextlib.suppress(ValueError):
        said = response.json().get("message")
        if isinstance(said, str) and said:
            return said[:200].splitlines()[0]
    return response.reason_phrase or "no reason given"


def convert(api_url: str, code: str, timeout: float = 10.0) -> Registered:
    """The App created from the manifest, for the one-time `code` GitHub handed the browser."""
    url = f"{api_url.rstrip('/')}/app-manifests/{quote(code, safe='')}/conversions"
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
    try:
        response = httpx.post(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise SetupError(f"cannot reach GitHub's API at {api_url} ({type(error).__name__}); nothing written") from None
    if response.status_code == 404:
        raise SetupError("GitHub does not know this code (it was used already, or is over an hour old): run "
                         "`baton setup` again; nothing written")  # fmt: skip
    if response.status_code != 201:
        raise SetupError(f"GitHub answered {response.status_code} to the code's exchange ({_message(response)}); "
                         "nothing written")  # fmt: skip
    try:
        body = response.json()
        app_id, slug, name, html_url = int(body["id"]), str(body["slug"]), str(body["name"]), str(body["html_url"])
        credentials = {key: body[key] for key in ("pem", "webhook_secret", "client_id", "client_secret")}
    except (ValueError, KeyError, TypeError):
        raise SetupError("GitHub's answer to the code's exchange lacks the App's id or credentials; "
                         "nothing written") from None  # fmt: skip
    if not all(isinstance(value, str) and value for value in credentials.values()):
        raise SetupError("GitHub's answer holds no webhook secret or no key; nothing written")
    return Registered(app_id, slug, name, html_url, credentials)


def write_credentials(registered: Registered, env_file: Path, key_file: Path, api_url: str) -> list[str]:
    """The key file and the .env, both written or neither; the names set in the .env."""
    key_path = key_file.resolve()
    values = {
        "BATON_APP_ID": str(registered.id),
        "BATON_WEBHOOK_SECRET": registered.credentials["webhook_secret"],
        "BATON_CLIENT_ID": registered.credentials["client_id"],
        "BATON_CLIENT_SECRET": registered.credentials["client_secret"],
        "BATON_PRIVATE_KEY_PATH": str(key_path),
    }
    if api_url != GITHUB_API:
        values["BATON_GITHUB_API_URL"] = api_url
    before = env_file.read_text(encoding="utf-8") if env_file.exists() else ""
    key = _staged(key_path, registered.credentials["pem"].strip() + "\n")
    try:
        env = _staged(env_file, updated_env(before, values))
    except BaseException:
        key.unlink()
        raise
    key_existed = key_path.exists()
    try:
        os.replace(key, key_path)
        os.replace(env, env_file)
    except BaseException:
        for left in (key, env):
            with contextlib.suppress(OSError):
                left.unlink()
        if not key_existed:
            with contextlib.suppress(OSError):
                key_path.unlink()
        raise
    return list(values)


# -- the pages ----------------------------------------------------------------------------------------------

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Baton setup</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; line-height: 1.5">
<h1>{title}</h1>
{body}
</body></html>
"""


def page(title: str, body: str) -> str:
    """A page; `body` is HTML the caller escaped."""
    return _PAGE.format(title=escape(title), body=body)


@dataclass
class Setup:
    """One registration: the form it serves, the state it expects back, and how it ended."""

    public_url: str
    github_url: str
    api_url: str
    org: str | None
    env_file: Path
    key_file: Path
    force: bool
    say: Callable[[str], None]  # what the operator is told on stdout
    warn: Callable[[str], None]  # and on stderr
    state: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    outcome: int | None = None  # the exit status, once GitHub's answer was dealt with
    _one: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def form(self, base_url: str) -> str:
        manifest = manifest_for(self.public_url, f"{base_url.rstrip('/')}{CALLBACK}")
        action = f"{registration_url(self.github_url, self.org)}?state={quote(self.state, safe='')}"
        where = f"the organisation {self.org}" if self.org else "your account"
        return page("Register Baton's GitHub App", (
            f"<p>This creates the GitHub App <b>{escape(manifest['name'])}</b> on {escape(where)} at "
            f"{escape(self.github_url)}, sending its webhooks to <code>{escape(manifest['hook_attributes']['url'])}"
            "</code>. GitHub shows what it will create before it does.</p>"
            f'<form method="post" action="{escape(action)}">'
            f'<input type="hidden" name="manifest" value="{escape(json.dumps(manifest))}">'
            '<button type="submit">Create the GitHub App</button></form>'
        ))  # fmt: skip

    def callback(self, code: str | None, state: str | None) -> tuple[int, str]:
        """The answer to GitHub's redirect: (HTTP status, page). Sets `outcome` unless the state is wrong."""
        with self._one:  # a code is exchanged once, and the files written once
            if self.outcome is not None:
                return 409, page("Already done", "<p>This registration has ended; see <code>baton setup</code>'s "
                                 "output.</p>")  # fmt: skip
            return self._callback(code, state)

    def _callback(self, code: str | None, state: str | None) -> tuple[int, str]:
        if not state or not hmac.compare_digest(state.encode(), self.state.encode()):
            self.warn("baton setup: refused a callback whose state is not this registration's; still waiting")
            return 400, page("Not this registration", "<p>This address was not reached from the form "
                             "<code>baton setup</code> served (its <code>state</code> does not match). Nothing was "
                             "written. Start from the setup page.</p>")  # fmt: skip
        if not code:
            return self._failed("GitHub sent no code back")
        blocked = None if self.force else existing_app(self.env_file, self.key_file)
        if blocked:
            return self._failed(f"{blocked} (--force replaces it); nothing written")
        try:
            registered = convert(self.api_url, code)
            names = write_credentials(registered, self.env_file, self.key_file, self.api_url)
        except SetupError as error:
            return self._failed(str(error))
        except OSError as error:
            return self._failed(f"cannot write {error.filename or self.env_file}: {error.strerror}; nothing written")
        install = f"{registered.html_url}/installations/new"
        self.say(f"baton setup: registered the GitHub App {registered.name!r} (id {registered.id}, "
                 f"{registered.html_url})")  # fmt: skip
        self.say(f"wrote {', '.join(names)} to {self.env_file.resolve()} (mode 0600)")
        self.say(f"wrote the App's private key to {self.key_file.resolve()} (mode 0600)")
        self.say("next:")
        self.say(f"  1. install the App on the repositories it should serve: {install}")
        self.say(f"  2. run `baton serve` where it reads {self.env_file.name}, answering at {self.public_url}")
        self.outcome = 0
        return 200, page("Baton's GitHub App is registered", (
            f"<p>GitHub created <b>{escape(registered.name)}</b> (id {registered.id}). Its credentials are in "
            f"<code>{escape(str(self.env_file))}</code> and <code>{escape(str(self.key_file))}</code>.</p>"
            f'<p>Next, <a href="{escape(install)}">install it</a> on the repositories it should serve, and run '
            "<code>baton serve</code>. You can close this page.</p>"
        ))  # fmt: skip

    def _failed(self, reason: str) -> tuple[int, str]:
        self.warn(f"baton setup: {reason}")
        self.outcome = 1
        return 502, page("Baton's GitHub App was not registered", f"<p>{escape(reason)}.</p>")


def serve(setup: Setup, host: str, port: int) -> int:
    """Serve the setup page until GitHub's answer was dealt with; the exit status."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.requests import Request
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    listening = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
        listening.listen(16)  # a browser that comes before the server runs waits in the queue
    except OSError as error:
        listening.close()
        raise SetupError(f"cannot serve on {host}:{port}: {error.strerror}; choose another --port") from None
    # The code in the callback's address is a credential until it is used: no access log.
    server = uvicorn.Server(uvicorn.Config(Starlette(), log_level="warning", access_log=False))

    def stop() -> None:
        server.should_exit = True

    def home(request: Request) -> HTMLResponse:
        return HTMLResponse(setup.form(str(request.base_url)))

    def callback(request: Request) -> HTMLResponse:
        status, shown = setup.callback(request.query_params.get("code"), request.query_params.get("state"))
        done = BackgroundTask(stop) if setup.outcome is not None else None
        return HTMLResponse(shown, status_code=status, background=done)

    server.config.app = Starlette(routes=[Route("/", home), Route(CALLBACK, callback)])
    bound = listening.getsockname()[1]
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
    setup.say(f"baton setup: open http://{shown_host}:{bound}/ in a browser to register Baton's GitHub App "
              f"on {setup.github_url} (Ctrl-C to stop)")  # fmt: skip
    server.run(sockets=[listening])
    if setup.outcome is None:
        setup.warn("baton setup: stopped before GitHub answered; nothing written")
        return 1
    return setup.outcome


def _say(line: str) -> None:
    print(line, flush=True)


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: Any, environ: Mapping[str, str]) -> int:
    """`baton setup` with its parsed arguments."""
    try:
        url = args.url
        if not url:
            if not sys.stdin.isatty():
                raise SetupError("give Baton's public address with --url (e.g. --url https://baton.example.org)")
            url = input("Baton's public address (where GitHub will send webhooks), e.g. https://baton.example.org: ")
        public_url = public_address(url)
        github_url = public_address(args.github_url)
        api_url = (args.github_api_url or environ.get("BATON_GITHUB_API_URL") or api_url_for(github_url)).rstrip("/")
        env_file, key_file = Path(args.env_file), Path(args.key_file)
        for path in (env_file, key_file):
            if not path.resolve().parent.is_dir():
                raise SetupError(f"there is no folder {str(path.resolve().parent)!r} for {path}")
        blocked = None if args.force else existing_app(env_file, key_file)
        if blocked:
            raise SetupError(f"{blocked}: an App is set up here; --force registers a new one and replaces it")
        setup = Setup(public_url, github_url, api_url, args.org, env_file, key_file, args.force, _say, _warn)
        return serve(setup, args.host, args.port)
    except SetupError as error:
        print(f"baton setup: {error}", file=sys.stderr)
        return 2
