"""The `baton` command."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import socket
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from baton.client.agent_commands import GROUPS, add_agent_commands
from baton.environment.clock import SYSTEM
from baton.environment.settings import Settings

if TYPE_CHECKING:
    from baton.process.wiring import Parts


def _serve(args: argparse.Namespace) -> int:
    from baton.process.logs import configure

    settings = Settings()
    configure(settings)
    host, port = args.host or settings.host, settings.port if args.port is None else args.port
    # The port first: taken, or an address not this machine's, is one line before anything else is done or said.
    try:
        listening = _listening(host, port)
    except OSError as error:
        unknown = isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL
        advice = "use an address of this machine in --host or BATON_HOST" if unknown else (
            "choose another --port or BATON_PORT")  # fmt: skip
        return _cannot_listen(host, port, error, advice)
    try:
        return _serve_on(listening, host, port, settings, args)
    finally:
        listening.close()


def _serve_on(listening: socket.socket, host: str, port: int, settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from baton.environment.settings import SettingsError
    from baton.github.client import app_credentials
    from baton.web import create_app
    from baton.web.wire import protocol

    try:
        credentials = app_credentials(settings)
        if settings.webhook_secret is not None and credentials is None:
            raise SettingsError(
                "BATON_WEBHOOK_SECRET is set but the App is not: set BATON_APP_ID and BATON_PRIVATE_KEY "
                "(or BATON_PRIVATE_KEY_PATH), or unset the secret to run without GitHub."
            )
        if credentials is not None and settings.webhook_secret is None:
            raise SettingsError(
                "the App is set but BATON_WEBHOOK_SECRET is not: set it to the App's webhook secret (GitHub signs "
                "every webhook with it, and Baton takes none it cannot check)."
            )
        app = create_app(settings)
        if credentials is None:
            unset = "BATON_APP_ID, BATON_PRIVATE_KEY or BATON_PRIVATE_KEY_PATH, BATON_WEBHOOK_SECRET"
            print(f"baton: no GitHub App is set ({unset}): webhooks are off, and commands cannot be decided",
                  file=sys.stderr)  # fmt: skip
    except SettingsError as error:
        print(f"baton: {error}", file=sys.stderr)
        return 2
    # The in-process lanes share the interpreter with the event loop that answers webhooks:
    # handing the interpreter over every 0.5 ms instead of 5 ms keeps an ack from waiting behind it.
    sys.setswitchinterval(0.0005)
    # Everything loaded so far (the GitHub models are most of it) lives as long as the process: a
    # full garbage collection that walks it all would stall every request for tens of milliseconds.
    _loaded()
    # A line per request costs a sixth of a webhook's acknowledgement; it is there when asked for.
    # No log_config: uvicorn's lines go through Baton's handler (`baton.process.logs`), in its format.
    # The socket bound at start is handed over; host and port only name it in uvicorn's "running on" line.
    # Each response's head and body leave in one write (`web/wire.py`).
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=settings.log_level.lower(),
                            access_log=args.access_log, proxy_headers=True, http=protocol(),
                            forwarded_allow_ips=settings.forwarded_allow_ips)  # fmt: skip
    server = _bound_server()(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[listening])
    return 0 if server.started else 3  # 3: the application did not start (uvicorn's own status for it)


def _bound_server() -> type[Any]:
    import uvicorn

    class BoundServer(uvicorn.Server):
        """uvicorn's server on a socket bound beforehand, saying "Uvicorn running on ..." once it listens, as it
        does on a socket it binds itself (it leaves that line out for sockets handed to it)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if sockets is not None and self.started:
                self._log_started_message(sockets)

    return BoundServer


def _listening(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (0: any free port), as uvicorn would bind it; OSError if it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    made = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        made.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        made.bind((host, port))
    except OSError:
        made.close()
        raise
    return made


def _cannot_listen(host: str, port: int, error: OSError, advice: str) -> int:
    """What `baton serve`, `baton worker` (its metrics) and `baton demo` say when they cannot listen on a port
    (taken, or an address not this machine's): one line on stderr; the exit status 2."""
    print(f"baton: cannot serve on {host}:{port}: {error.strerror or error}; {advice}", file=sys.stderr)
    return 2


def _assembled(settings: Settings) -> Parts | None:
    """Baton's parts, or None after saying on stderr which setting to fix."""
    from baton.environment.settings import SettingsError
    from baton.process.wiring import assemble

    try:
        return assemble(settings)
    except SettingsError as error:
        print(f"baton: {error}", file=sys.stderr)
        return None


def _worker(args: argparse.Namespace) -> int:
    import logging
    import signal
    import threading

    from baton.process.logs import configure
    from baton.process.runtime import Lane, Runtime

    settings = Settings()
    configure(settings)
    log = logging.getLogger("baton.worker")
    parts = _assembled(settings)
    if parts is None:
        return 2
    if parts.writer is None:
        print("baton: the worker needs the App: set BATON_APP_ID and BATON_PRIVATE_KEY.", file=sys.stderr)
        parts.engine.dispose()
        return 2
    metrics_server = None
    if settings.metrics_port is not None:
        try:
            metrics_server = parts.metrics.serve(settings.host, settings.metrics_port)
        except OSError as error:
            parts.engine.dispose()
            return _cannot_listen(settings.host, settings.metrics_port, error, "choose another BATON_METRICS_PORT")
        port = metrics_server.server_port
        log.info("metrics at http://%s:%d/metrics", settings.host, port, extra={"host": settings.host, "port": port})
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    lanes = Runtime(parts, writers=settings.writers)
    # The App's installations, as the worker starts and every hour (one process at a time, `baton serve` too).
    sweep = parts.installation_sweep
    installations = Lane("baton-installations", sweep.step, lanes.outage) if sweep is not None else None
    _loaded()
    log.info("deciding webhook deliveries; %d threads writing to GitHub; sweeping quiet claims", settings.writers)
    lanes.start()
    if installations is not None:
        installations.start()
    stop.wait()
    if installations is not None:
        installations.stop()
    lanes.stop()
    if metrics_server is not None:
        metrics_server.shutdown()
    parts.engine.dispose()
    return 0


def _as_json(found: Any) -> dict[str, Any]:
    """A stored row (a dataclass) as JSON: its fields, times in ISO 8601."""
    import dataclasses
    from datetime import datetime

    return {key: value.isoformat() if isinstance(value, datetime) else value
            for key, value in dataclasses.asdict(found).items()}  # fmt: skip


def _print_json(value: Any) -> None:
    import json

    print(json.dumps(value, ensure_ascii=False))


def _deliveries(args: argparse.Namespace) -> int:
    from baton.store import make_engine
    from baton.store.inbox import Inbox
    from baton.store.outbox.writing import Outbox

    engine = make_engine(Settings().database_url)
    try:
        listed = Inbox(engine, SYSTEM).listed("failed" if args.failed else args.status, args.limit)
        waiting = Outbox(engine, SYSTEM).oldest_answer()
    finally:
        engine.dispose()
    if args.json:
        _print_json({"oldest_answer_waiting": None if waiting is None else _as_json(waiting),
                     "deliveries": [_as_json(stored) for stored in listed]})  # fmt: skip
        return 0
    if waiting is not None:  # what people wait for on GitHub, first
        waited = _duration((SYSTEM.now() - waiting.since).total_seconds())
        line = f"oldest answer not yet on GitHub: a {'👍' if waiting.what == 'reaction' else 'reply'} on "
        print(line + f"{waiting.repository}#{waiting.number}, waiting {waited}")
        if waiting.error:
            print(f"    last failure: {waiting.error}")
    if not listed:
        print("no failed deliveries" if args.failed else "no deliveries")
        return 0
    for stored in listed:
        kind = f"{stored.event}.{stored.action}" if stored.action else stored.event
        line = f"{stored.id}  {kind:<28} {stored.status:<10} attempts {stored.attempts}  "
        line += f"{stored.received_at:%Y-%m-%d %H:%M:%S}"
        if stored.next_attempt_at is not None and stored.status == "pending":
            line += f"  next try {stored.next_attempt_at:%H:%M:%S}"
        print(line)
        if stored.error:
            print(f"    {stored.error}")
    return 0


def _refused(args: argparse.Namespace) -> int:
    from baton.store import make_engine
    from baton.store.outbox.writing import Outbox

    engine = make_engine(Settings().database_url)
    try:
        given_up = Outbox(engine, SYSTEM).given_up(args.limit)
    finally:
        engine.dispose()
    if args.json:
        _print_json({"refused": [_as_json(found) for found in given_up]})
        return 0
    if not given_up:
        print("nothing refused: GitHub was shown every answer and every issue")
        return 0
    for found in given_up:
        when = f"  {found.at:%Y-%m-%d %H:%M:%S}" if found.at is not None else ""
        print(f"{found.repository}#{found.number}  {found.what:<8}{when}".rstrip())
        print(f"    {found.reason}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    import time

    from baton.intake import process
    from baton.store.leases import LEASE

    parts = _assembled(Settings())
    if parts is None:
        return 2
    try:
        if not parts.inbox.replay(args.hook):
            print(f"baton: no delivery {args.hook} to replay (unknown, being processed now, "
                  "or processed so long ago that its payload was pruned)", file=sys.stderr)  # fmt: skip
            return 2
        process(parts.inbox, parts.intake, args.hook)
        found = parts.inbox.status(args.hook)
        # A running Baton may have taken it first (on PostgreSQL its lane is woken as it turns pending): its result
        # is waited for, as long as a lease lasts, rather than reported as still being processed.
        deadline = time.monotonic() + LEASE.total_seconds()
        while found is not None and found[0] in ("pending", "processing") and time.monotonic() < deadline:
            time.sleep(0.1)
            found = parts.inbox.status(args.hook)
    finally:
        parts.engine.dispose()
    status, _, reason = found or ("unknown", 0, None)
    if args.json:
        _print_json({"delivery": args.hook, "status": status, "reason": reason})
    else:
        print(f"{args.hook}: {status}" + (f" ({reason})" if reason else ""))
    return 0 if status in ("done", "ignored") else 1


def _demo(args: argparse.Namespace) -> int:
    import secrets
    import signal
    import tempfile
    import threading
    from contextlib import ExitStack

    from baton.demo.stage import Stage
    from baton.demo.story import leave_open, play

    with ExitStack() as stack:
        database = args.database
        if not database:  # a temporary file, gone when the demo stops (the last thing the stack undoes)
            database = f"sqlite:///{stack.enter_context(tempfile.TemporaryDirectory(prefix='baton-demo-'))}/baton.db"
        token = secrets.token_urlsafe(12)
        print(f"Baton demo: a stand-in GitHub and Baton on 127.0.0.1, database {database}", flush=True)
        try:
            stage = stack.enter_context(Stage.open(database, api_token=token, baton_port=args.port, oauth=True))
        except OSError as error:
            return _cannot_listen("127.0.0.1", args.port, error, "choose another --port")
        checked = "every call checked against GitHub's REST description" if stage.hub.contract else (
            "calls not checked: GitHub's description is not installed (npm ci --prefix tests)")  # fmt: skip
        print(f"GitHub stand-in at {stage.github_url} ({checked}); Baton at {stage.baton_url}\n", flush=True)
        after = play(stage, lambda line: print(line, flush=True))
        print("\nThe status comment on octo/shop#1 now reads:\n")
        print("\n".join(f"    {line}" for line in (after["accepted"].status or "").splitlines()), flush=True)
        problems = stage.hub.all_problems()
        if problems:
            print(f"\n{len(problems)} call(s) strayed from GitHub's descriptions:", *problems, sep="\n  ")
            return 1
        if args.once:
            return 0
        api, auth = f"{stage.baton_url}/api/v1", f"-H 'Authorization: Bearer {token}'"
        # A link that signs its first visitor in, once, within ten minutes: the token never goes in a URL.
        print(f"\nBoard: {stage.baton_url}/sign-in/{stage.app.state.board.sessions.link()}")
        # The stand-in's pages take @maria as signed in: "Sign in with GitHub" on the board signs her in.
        with stage.hub.world.lock:
            stage.hub.world.web_login = "maria"
        print(f"Or open {stage.baton_url}/ and sign in with GitHub: the stand-in signs you in as @maria.")
        print("Still serving. Read what Baton knows (Ctrl-C to stop):")
        for path in ("/repos/octo/shop/issues/1", "/repos/octo/shop/issues/1/events", "/tickets?repo=octo/shop"):
            print(f"    curl {auth} '{api}{path}'", flush=True)
        # Tasks left open, and the tokens GitHub gave two people who may run them: a newcomer works as either.
        first, *others = leave_open(stage)
        shown = ", ".join([f"{stage.full_name}#{first}", *(f"#{number}" for number in others)])
        print(f"\nTry it as an agent: {shown} are open. Paste one line in each of two terminals:")
        for login in ("agent-a", "agent-b"):
            print(f"    export BATON_URL={stage.baton_url} GITHUB_API_URL={stage.github_url} "
                  f"GITHUB_TOKEN={stage.person(login, 'write').token()}   # @{login}")  # fmt: skip
        print(f"then `baton tasks {stage.full_name}`, `baton next {stage.full_name}`, `baton deliver …`, or comment "
              "/claim through $GITHUB_API_URL: docs/agents.md, \"Trying it on baton demo\".", flush=True)  # fmt: skip
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from baton.store import make_engine, upgrade
    from baton.store.migrate import current

    engine = make_engine(Settings().database_url)
    upgrade(engine)
    print(f"database at revision {current(engine)}")
    return 0


def _db_prune(args: argparse.Namespace) -> int:
    """Prune now what is kept only for a while (`baton.store.retention`), and say what went, by kind."""
    import json
    from datetime import timedelta

    from baton.reading.config import shown_duration
    from baton.store import make_engine
    from baton.store.retention import Keep, Retention

    settings = Settings()
    keep = Keep.of(settings)
    if args.older_than is not None:
        keep = keep.older_than(timedelta(seconds=args.older_than))
    engine = make_engine(settings.database_url)
    try:
        pruned = Retention(engine, SYSTEM).prune(keep)
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps(pruned.counts()))
        return 0

    def shown(age: timedelta) -> str:
        return shown_duration(int(age.total_seconds()))

    print(f"webhook deliveries: {pruned.payloads} payloads emptied (processed more than "
          f"{shown(keep.payloads)} ago), {pruned.hooks} removed (more than "
          f"{shown(keep.hooks)} ago)")  # fmt: skip
    print(f"redeliveries asked for: {pruned.redeliveries} removed")
    print(f"idempotency keys: {pruned.keys} removed (older than {shown(keep.keys)})")
    print(f"board sessions: {pruned.sessions} removed (expired)")
    return 0


def _age(text: str) -> float:
    """`--older-than`: a duration as `.github/baton.yml` writes one (`7d`, `36h`, `2w`), in seconds."""
    from baton.reading.config import duration

    try:
        return float(duration(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 7d, 36h or 2w") from None


def _backfill(args: argparse.Namespace) -> int:
    """Offer a repository's open issues that have no ticket yet, as installing the App does."""
    from baton.intake.offering import backfill
    from baton.store.budget import Limits

    repository = args.repository.strip()
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        print(f"baton: {args.repository!r} is not OWNER/REPO", file=sys.stderr)
        return 2
    settings = Settings()
    parts = _assembled(settings)
    if parts is None:
        return 2
    intake = parts.intake
    if intake.issues is None or intake.offering is None or intake.installations is None:
        print("baton: backfill reads the issues from GitHub: set BATON_APP_ID and BATON_PRIVATE_KEY.", file=sys.stderr)
        return 2
    found = intake.installations.find(repository)
    if found is None:
        print(
            f"baton: no installation of the App holds {repository} as far as Baton was told: install the App on "
            "it (GitHub then tells Baton, and its open issues are offered by themselves).",
            file=sys.stderr,
        )
        return 2
    installation_id, repository_id = found
    if not intake.installations.active(installation_id):
        print(f"baton: the App's installation on {owner} is {intake.installations.status(installation_id)}.",
              file=sys.stderr)  # fmt: skip
        return 2
    progress = _Progress(repository, sys.stderr)
    counts = backfill(
        intake.offering, intake.issues, intake.resolver.configs, installation_id, repository_id, repository,
        progress=progress,
    )  # fmt: skip
    progress.end()
    words = {"created": "offered", "reoffered": "offered again", "tracked": "already tracked",
             "not offered": "not offered"}  # fmt: skip
    if args.json:
        _print_json({"repository": repository,
                     **{word.replace(" ", "_"): counts.get(what, 0) for what, word in words.items()}})  # fmt: skip
        return 0
    said = ", ".join(f"{counts[what]} {word}" for what, word in words.items() if counts.get(what))
    print(f"{repository}: {said or 'no open issues'}")
    to_show = counts.get("created", 0) + counts.get("reoffered", 0)
    if to_show:
        limits = Limits(settings.write_interval, settings.writes_per_minute, settings.writes_per_hour)
        print(
            f"{repository}: GitHub shows their labels within offering's share of the write budget "
            f"({limits.offering_per_minute} a minute, {limits.offering_per_hour} an hour), in about "
            f"{_duration(limits.offering_seconds(to_show))}; answers to commands go first"
        )
    return 0


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{round(seconds)} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


class _Progress:
    """A backfill's progress on `stream`: a bar redrawn in place on a terminal, else a line per `EVERY` issues
    (a log keeps every line)."""

    EVERY = 100
    WIDTH = 30

    def __init__(self, repository: str, stream: TextIO) -> None:
        self.repository = repository
        self.stream = stream
        self.bar = stream.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if self.bar:
            filled = self.WIDTH * done // max(1, total)
            line = f"\r{self.repository} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} issues offered"
            self.stream.write(line)
            self.stream.flush()
            self.drawn = True
        elif done % self.EVERY == 0 or (done == total and done >= self.EVERY):
            print(f"{self.repository}: {done} of {total} issues offered", file=self.stream, flush=True)

    def end(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _setup(args: argparse.Namespace) -> int:
    import os

    from baton.cli.registration import run

    return run(args, os.environ)


def _config_check(args: argparse.Namespace) -> int:
    """Read a `.github/baton.yml` as the App reads it: its problems, each with its key (exit 1), or the settings
    it puts in force (exit 0)."""
    import json
    from pathlib import Path

    import yaml

    from baton.reading.config import ConfigError, effective, parse, problem_key

    path = Path(args.file)
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")  # as the App decodes the file GitHub gives it
    except OSError as error:
        print(f"baton: cannot read {path}: {error.strerror or error}", file=sys.stderr)
        return 2
    try:
        policy = parse(text)
    except ConfigError as error:
        if args.json:
            problems = [{"key": problem_key(problem), "problem": problem} for problem in error.problems]
            print(json.dumps({"file": str(path), "valid": False, "problems": problems}, indent=2))
        else:
            for problem in error.problems:
                print(f"{path}: {problem_key(problem) or '(file)'}: {problem}")
        return 1
    settings = effective(policy)
    if args.json:
        print(json.dumps({"file": str(path), "valid": True, "settings": settings}, indent=2))
    else:
        print(f"# {path} is valid; the settings in force (defaults for the keys it does not set):")
        print(yaml.safe_dump(settings, sort_keys=False, default_flow_style=False), end="")
    return 0


def _docs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from baton.cli.docs import write_docs

    if not Path(args.directory).is_dir():
        print(f"baton docs: there is no folder {args.directory!r} here: run it at the top of Baton's repository, "
              "or name the docs folder (`baton docs path/to/docs`)", file=sys.stderr)  # fmt: skip
        return 2
    for path in write_docs(args.directory):
        print(f"wrote {path}")
    return 0


# The settings each operator's command reads (as BATON_<NAME>, or from a `.env` file).
APP_READS = ("DATABASE_URL", "APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "GITHUB_API_URL", "GITHUB_TIMEOUT")
WORKER_READS = (*APP_READS, "ANSWER_DELAY", "WRITE_INTERVAL", "WRITES_PER_MINUTE", "WRITES_PER_HOUR", "WRITERS",
                "LOG_LEVEL", "LOG_FORMAT", "INSTALLATIONS_EVERY", "KEEP_PAYLOADS", "KEEP_DELIVERIES")  # fmt: skip
# `baton worker` alone: where it serves its metrics (`baton serve` has them at its own /metrics).
WORKER_COMMAND_READS = (*WORKER_READS, "METRICS_PORT", "HOST")
SERVE_READS = (*WORKER_READS, "WEBHOOK_SECRET", "API_TOKEN", "API_REQUESTS_PER_MINUTE", "WORKER", "SPOOL_DIR",
               "REDELIVER_EVERY", "CLIENT_ID", "CLIENT_SECRET", "HOST", "PORT", "FORWARDED_ALLOW_IPS", "OIDC_AUDIENCE",
               "OIDC_ISSUER")  # fmt: skip
# `baton setup` writes these to a .env (GITHUB_API_URL only for a GitHub Enterprise Server).
SETUP_WRITES = ("APP_ID", "WEBHOOK_SECRET", "CLIENT_ID", "CLIENT_SECRET", "PRIVATE_KEY_PATH", "GITHUB_API_URL")


def _operator(commands: Any, name: str, does: str, reads: Sequence[str]) -> argparse.ArgumentParser:
    """A command for the people who run Baton: its help says what it does and which settings it reads."""
    said = ", ".join(f"BATON_{variable}" for variable in reads)
    epilog = f"reads {said} (or a .env file)" if reads else "reads no setting"
    made: argparse.ArgumentParser = commands.add_parser(
        name, help=does, description=does[0].upper() + does[1:] + ".", epilog=epilog
    )
    return made


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="baton", description="One agent per task; delivered is not accepted.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--version", action="version", version=f"baton {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     help="one of the commands below; `baton COMMAND --help` tells more")  # fmt: skip

    serve = _operator(commands, "serve", "run the web service (migrations are applied at start)", SERVE_READS)
    serve.add_argument("--host", help="bind address (default BATON_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default BATON_PORT or 8000)")
    serve.add_argument("--access-log", action="store_true", help="log a line for every HTTP request")
    serve.set_defaults(run=_serve)

    worker = _operator(commands, "worker", "decide webhook deliveries and write to GitHub (with "
                       "BATON_WORKER=external)", WORKER_COMMAND_READS)  # fmt: skip
    worker.set_defaults(run=_worker)

    deliveries = _operator(commands, "deliveries", "list stored webhook deliveries, newest first", ("DATABASE_URL",))
    deliveries.add_argument("--failed", action="store_true", help="only those that failed for good")
    deliveries.add_argument("--status", choices=["pending", "processing", "done", "ignored", "failed"])
    deliveries.add_argument("--limit", type=int, default=50)
    deliveries.add_argument("--json", action="store_true", help="print the oldest answer waiting and the deliveries "
                            "as one JSON object")  # fmt: skip
    deliveries.set_defaults(run=_deliveries)

    refused = _operator(commands, "refused", "list what GitHub was never shown: answers dropped, issues waiting "
                        "for their next change", ("DATABASE_URL",))  # fmt: skip
    refused.add_argument("--limit", type=int, default=50)
    refused.add_argument("--json", action="store_true", help="print what was refused as one JSON object")
    refused.set_defaults(run=_refused)

    replay = _operator(commands, "replay", "process one stored webhook delivery again, now", WORKER_READS)
    replay.add_argument("hook", metavar="delivery", help="its X-GitHub-Delivery id, as `baton deliveries` lists it")
    replay.add_argument("--json", action="store_true", help="print the delivery's status as one JSON object")
    replay.set_defaults(run=_replay)

    backfill = _operator(commands, "backfill", "offer a repository's open issues that have no ticket yet (as "
                         "installing the App does)", WORKER_READS)  # fmt: skip
    backfill.add_argument("repository", metavar="OWNER/REPO")
    backfill.add_argument("--json", action="store_true", help="print the counts as one JSON object (progress stays "
                          "on stderr)")  # fmt: skip
    backfill.set_defaults(run=_backfill)

    demo = _operator(commands, "demo", "play the reference story against a stand-in GitHub, then keep serving, "
                     "with tasks left open to try as an agent", ())  # fmt: skip
    demo.epilog = ("reads the settings baton serve reads (or a .env file), but those it chooses itself: the "
                   "database, the App and its webhook secret, GitHub's address, the read token, the answer delay "
                   "and the write interval")  # fmt: skip
    demo.add_argument("--once", action="store_true", help="exit after the story")
    demo.add_argument("--port", type=int, default=8000, help="Baton's port on 127.0.0.1 (default 8000; 0: any)")
    demo.add_argument("--database", help="database URL (default: a new SQLite file in a temporary directory)")
    demo.set_defaults(run=_demo)

    db = commands.add_parser(
        "db",
        help="database maintenance",
        description="Database maintenance.",
        epilog="reads BATON_DATABASE_URL (or a .env file)",
    )
    db_commands = db.add_subparsers(dest="db_command", required=True)
    _operator(db_commands, "upgrade", "apply migrations", ("DATABASE_URL",)).set_defaults(run=_db_upgrade)
    prune = _operator(db_commands, "prune", "remove now what is kept only for a while, as the daily prune of `baton "
                      "serve` and `baton worker` does: processed webhook deliveries' payloads and, later, their rows; "
                      "idempotency keys; expired board sessions. Events are kept.",
                      ("DATABASE_URL", "KEEP_PAYLOADS", "KEEP_DELIVERIES"))  # fmt: skip
    prune.add_argument("--older-than", type=_age, metavar="DURATION",
                       help="prune what is older than this (7d, 36h, 2w) where the settings keep it longer; webhook "
                       "deliveries' rows are kept at least 3 days, GitHub's redelivery window")  # fmt: skip
    prune.add_argument("--json", action="store_true", help="print what was removed as one JSON object")
    prune.set_defaults(run=_db_prune)

    setup = _operator(commands, "setup", "register Baton's GitHub App through GitHub's App-manifest flow: serve a "
                      "page whose form creates the App on GitHub, then write its id, webhook secret and OAuth client "
                      "to a .env file and its private key to a key file", ())  # fmt: skip
    written = ", ".join(f"BATON_{name}" for name in SETUP_WRITES)
    setup.epilog = ("reads BATON_GITHUB_API_URL from the environment (GitHub's REST API, without --github-api-url); "
                    f"writes {written} to the .env file (the last for GitHub Enterprise Server only)")  # fmt: skip
    setup.add_argument("--url", help="Baton's public address, where GitHub sends webhooks (asked for if not given)")
    setup.add_argument("--org", help="register the App for this organisation (default: your own account)")
    setup.add_argument("--github-url", default="https://github.com",
                       help="GitHub's web address (default https://github.com), or a GHES one")  # fmt: skip
    setup.add_argument("--github-api-url", help="GitHub's REST API (default: api.github.com, or GHES's /api/v3)")
    setup.add_argument("--env-file", default=".env", help="the .env file to add the App to (default ./.env)")
    setup.add_argument("--key-file", default="baton-app.private-key.pem",
                       help="where the App's private key goes (default ./baton-app.private-key.pem)")  # fmt: skip
    setup.add_argument("--force", action="store_true", help="replace the App already set up in those files")
    setup.add_argument("--host", default="127.0.0.1", help="bind address of the setup page (default 127.0.0.1)")
    setup.add_argument("--port", type=int, default=8001, help="its port (default 8001; 0: any)")
    setup.set_defaults(run=_setup)

    config = commands.add_parser(
        "config", help="a repository's .github/baton.yml", description="A repository's .github/baton.yml."
    )
    config_commands = config.add_subparsers(dest="config_command", required=True)
    check = _operator(config_commands, "check", "check a .github/baton.yml as the App reads it: print each problem "
                      "with its key (exit 1), or the settings it puts in force (exit 0)", ())  # fmt: skip
    check.add_argument("file", nargs="?", default=".github/baton.yml", metavar="FILE",
                       help="the file (default .github/baton.yml)")  # fmt: skip
    check.add_argument("--json", action="store_true", help="print the problems or the settings as JSON")
    check.set_defaults(run=_config_check)

    docs = _operator(commands, "docs", "regenerate docs/commands.md and docs/state-machine.md", ())
    docs.add_argument("directory", nargs="?", default="docs")
    docs.set_defaults(run=_docs)

    add_agent_commands(commands)
    parser.epilog = _grouped(commands)
    return parser


def _grouped(commands: Any) -> str:
    """The commands by whom they serve (argparse lists subcommands in one list): agents', reviewers', and the
    rest, for the people who run Baton."""
    import re
    import textwrap

    # the help without its "(agents; HTTP)": the group says it
    said = {action.dest: re.sub(r" \((agents|reviewers|maintainers); HTTP\)$", "", action.help or "")
            for action in commands._choices_actions}  # fmt: skip
    commands._choices_actions.clear()  # listed here, by group, instead
    groups = {**GROUPS, "operators": tuple(name for name in said if not any(name in g for g in GROUPS.values()))}
    width = max(len(name) for name in said) + 2
    lines = []
    for group, names in groups.items():
        lines.append(f"commands for {group}:")
        lines.extend(textwrap.fill(said[name], 100, initial_indent=f"  {name:<{width}}",
                                   subsequent_indent=" " * (width + 2)) for name in names)  # fmt: skip
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("baton-github")  # the distribution's name; the package is `baton`
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


# Python's collector thresholds from before `main` (restored when it returns, and once a long-running command
# has loaded: `_loaded`).
_USUAL = gc.get_threshold()


def _loaded() -> None:
    """A long-running command has loaded what it needs: that stays out of every later collection (most of it
    lives as long as the process), and collections run as usual again."""
    gc.freeze()
    gc.set_threshold(*_USUAL)


def main(argv: Sequence[str] | None = None) -> int:
    global _USUAL
    # Loading Baton allocates hundreds of thousands of objects that live as long as the process, and the
    # collector would walk them again and again while they load: a tenth of a short command's CPU. It runs
    # rarely until then.
    _USUAL = gc.get_threshold()
    gc.set_threshold(100_000, 50, 50)
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*_USUAL)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result: int = args.run(args)
    except Exception as error:
        said = _unusable_settings(error)
        if said is None:
            from baton.store.engine import unusable

            said = unusable(error)
        if said is None:
            raise
        print(f"baton: {said}", file=sys.stderr)
        return 2
    return result


def _unusable_settings(error: BaseException) -> str | None:
    """One line naming each setting Baton cannot read (a port that is no number, a choice it does not offer)."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError) or error.title != Settings.__name__:
        return None
    from pydantic import SecretStr

    bad = []
    for problem in error.errors(include_url=False):
        field = Settings.model_fields.get(str(problem["loc"][0])) if problem["loc"] else None
        secret = field is not None and SecretStr in getattr(field.annotation, "__args__", (field.annotation,))
        shown = "" if secret else f"={problem.get('input')!r}"  # a secret's value is never printed
        bad.append(f"BATON_{'_'.join(str(part) for part in problem['loc']).upper()}{shown}: {problem['msg']}")
    return "; ".join(bad)
