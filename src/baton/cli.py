"""The `baton` command."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from baton.settings import Settings

if TYPE_CHECKING:
    from baton.agent import AgentClient, Answer
    from baton.wiring import Parts


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from baton.github.client import app_credentials
    from baton.logs import configure
    from baton.settings import SettingsError
    from baton.web import create_app

    settings = Settings()
    configure(settings)
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
    gc.freeze()
    # A line per request costs a sixth of a webhook's acknowledgement; it is there when asked for.
    # No log_config: uvicorn's lines go through Baton's handler (`baton.logs`), in its format.
    uvicorn.run(app, host=args.host or settings.host, port=args.port or settings.port, log_config=None,
                log_level=settings.log_level.lower(), access_log=args.access_log)  # fmt: skip
    return 0


def _assembled(settings: Settings) -> Parts | None:
    """Baton's parts, or None after saying on stderr which setting to fix."""
    from baton.settings import SettingsError
    from baton.wiring import assemble

    try:
        return assemble(settings)
    except SettingsError as error:
        print(f"baton: {error}", file=sys.stderr)
        return None


def _worker(args: argparse.Namespace) -> int:
    import logging
    import signal
    import threading

    from baton.logs import configure
    from baton.runtime import Runtime

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
            print(f"baton: cannot serve metrics on {settings.host}:{settings.metrics_port} (BATON_METRICS_PORT): "
                  f"{error.strerror}", file=sys.stderr)  # fmt: skip
            parts.engine.dispose()
            return 2
        port = metrics_server.server_port
        log.info("metrics at http://%s:%d/metrics", settings.host, port, extra={"host": settings.host, "port": port})
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    lanes = Runtime(parts, writers=settings.writers)
    log.info("deciding webhook deliveries; %d threads writing to GitHub; sweeping quiet claims", settings.writers)
    lanes.start()
    stop.wait()
    lanes.stop()
    if metrics_server is not None:
        metrics_server.shutdown()
    parts.engine.dispose()
    return 0


def _deliveries(args: argparse.Namespace) -> int:
    from baton.store import make_engine
    from baton.store.inbox import Inbox

    engine = make_engine(Settings().database_url)
    try:
        listed = Inbox(engine).listed("failed" if args.failed else args.status, args.limit)
    finally:
        engine.dispose()
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
    from baton.store.outbox import Outbox

    engine = make_engine(Settings().database_url)
    try:
        given_up = Outbox(engine).given_up(args.limit)
    finally:
        engine.dispose()
    if not given_up:
        print("nothing refused: GitHub was shown every answer and every issue")
        return 0
    for found in given_up:
        when = f"  {found.at:%Y-%m-%d %H:%M:%S}" if found.at is not None else ""
        print(f"{found.repository}#{found.number}  {found.what:<8}{when}".rstrip())
        print(f"    {found.reason}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    from baton.intake import process

    parts = _assembled(Settings())
    if parts is None:
        return 2
    try:
        if not parts.inbox.replay(args.delivery):
            print(f"baton: no delivery {args.delivery} to replay (unknown, or being processed now)", file=sys.stderr)
            return 2
        process(parts.inbox, parts.intake, args.delivery)
        found = parts.inbox.status(args.delivery)
    finally:
        parts.engine.dispose()
    status, _, reason = found or ("unknown", 0, None)
    print(f"{args.delivery}: {status}" + (f" ({reason})" if reason else ""))
    return 0 if status in ("done", "ignored") else 1


def _demo(args: argparse.Namespace) -> int:
    import secrets
    import signal
    import tempfile
    import threading
    from contextlib import ExitStack

    from baton.demo.stage import Stage
    from baton.demo.story import play

    database = args.database or f"sqlite:///{tempfile.mkdtemp(prefix='baton-demo-')}/baton.db"
    token = secrets.token_urlsafe(12)
    print(f"Baton demo: a stand-in GitHub and Baton on 127.0.0.1, database {database}", flush=True)
    with ExitStack() as stack:
        try:
            stage = stack.enter_context(Stage.open(database, api_token=token, baton_port=args.port))
        except OSError as error:
            print(f"baton: cannot serve on 127.0.0.1:{args.port}: {error.strerror}; choose another --port",
                  file=sys.stderr)  # fmt: skip
            return 2
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
        print("Still serving. Read what Baton knows (Ctrl-C to stop):")
        for path in ("/repos/octo/shop/issues/1", "/repos/octo/shop/issues/1/events", "/tickets?repo=octo/shop"):
            print(f"    curl {auth} '{api}{path}'", flush=True)
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


def _backfill(args: argparse.Namespace) -> int:
    """Offer a repository's open issues that have no ticket yet, as installing the App does."""
    from baton.intake.offering import backfill

    repository = args.repository.strip()
    owner, _, name = repository.partition("/")
    if not owner or not name or "/" in name:
        print(f"baton: {args.repository!r} is not OWNER/REPO", file=sys.stderr)
        return 2
    parts = _assembled(Settings())
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
    counts = backfill(intake.offering, intake.issues, intake.configs, installation_id, repository_id, repository)
    words = {"created": "offered", "reoffered": "offered again", "tracked": "already tracked",
             "not offered": "not offered"}  # fmt: skip
    said = ", ".join(f"{counts[what]} {word}" for what, word in words.items() if counts.get(what))
    print(f"{repository}: {said or 'no open issues'}")
    return 0


def _setup(args: argparse.Namespace) -> int:
    import os

    from baton.registration import run

    return run(args, os.environ)


def _docs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from baton.docs import write_docs

    if not Path(args.directory).is_dir():
        print(f"baton docs: there is no folder {args.directory!r} here: run it at the top of Baton's repository, "
              "or name the docs folder (`baton docs path/to/docs`)", file=sys.stderr)  # fmt: skip
        return 2
    for path in write_docs(args.directory):
        print(f"wrote {path}")
    return 0


# The agent's commands: they talk to a running Baton over HTTP (baton/agent.py) and touch no database.

AGENT_EPILOG = """\
reads BATON_URL (Baton's address, e.g. http://127.0.0.1:8000) and the agent's own GitHub token from
GITHUB_TOKEN, else GH_TOKEN, else `gh auth token` (the GitHub CLI); the token is sent to Baton and never printed.

exit status: 0 done; 1 refused (taken by someone else, changed since the revision named, not allowed, not
found, delivery lacking evidence: Baton's reason on stderr); 2 usage error, token not accepted (401), rate
limited (429: stderr says when to retry), Baton unreachable or failing (5xx)."""

_REFUSALS = {403, 404, 409, 412, 422}


class _Agent:
    """What one agent command prints: human lines, or with --json the answer's body; never the token."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json: bool = args.json
        self.secret: str | None = None

    def _scrubbed(self, text: str) -> str:
        return text.replace(self.secret, "[token]") if self.secret else text

    def out(self, text: str) -> None:
        print(self._scrubbed(text), flush=True)

    def err(self, text: str) -> None:
        print(self._scrubbed(text), file=sys.stderr, flush=True)

    def body(self, body: dict[str, Any]) -> None:
        if self.json:
            import json

            self.out(json.dumps(body))

    def failed(self, code: int, error: str, message: str) -> int:
        """A failure with no answer from Baton behind it (usage, network)."""
        self.body({"error": error, "message": message})
        self.err(f"baton: {message}")
        return code

    def answered(self, answer: Answer, token_source: str, line: Callable[[dict[str, Any]], str]) -> int:
        """The exit status for Baton's answer, having printed it."""
        self.body(answer.body)
        said = answer.message
        if answer.ok:
            text = line(answer.body)
            if text and not self.json:
                self.out(text + (f": {said}" if said else ""))
            return 0
        if answer.status in _REFUSALS:
            self.err(f"baton: {said or f'refused (HTTP {answer.status})'}")
            return 1
        if answer.status == 401:
            self.err(f"baton: Baton did not accept {token_source}" + (f": {said}" if said else ""))
            return 2
        if answer.status == 429:
            after = (answer.retry_after or "").strip()
            when = f"retry in {after} s" if after.isdigit() else f"retry after {after}" if after else "retry later"
            self.err(f"baton: rate limited{f': {said}' if said else ''}; {when}")
            return 2
        self.err(f"baton: Baton answered HTTP {answer.status}" + (f": {said}" if said else ""))
        return 2

    def unexpected(self, answer: Answer, what: str) -> int:
        """A 200 whose body is not what the contract promises."""
        self.body(answer.body)
        self.err(f"baton: Baton's answer holds no {what}")
        return 2


def _agent(args: argparse.Namespace, act: Callable[[_Agent, AgentClient, str], int]) -> int:
    """Run `act` with a client for BATON_URL and the agent's token; usage and network failures exit 2."""
    from baton.agent import AgentClient, Unreachable, UsageError, base_url, find_token

    shown = _Agent(args)
    try:
        url = base_url()
        token = find_token()
    except UsageError as error:
        return shown.failed(2, "usage", str(error))
    shown.secret = token.value
    try:
        with AgentClient(url, token.value) as client:
            return act(shown, client, str(token))
    except Unreachable as error:
        return shown.failed(2, "unreachable", str(error))


def _ref(body: dict[str, Any], repo: str, number: int) -> str:
    repository, issue = body.get("repository"), body.get("issue")
    return f"{repository}#{issue}" if isinstance(repository, str) and isinstance(issue, int) else f"{repo}#{number}"


def _held(verb: str, repo: str, number: int) -> Callable[[dict[str, Any]], str]:
    def line(body: dict[str, Any]) -> str:
        facts = [f"revision {body.get('revision')}"]
        if body.get("attempt") is not None:
            facts.append(f"attempt {body.get('attempt')}")
        return f"{verb} {_ref(body, repo, number)} ({', '.join(facts)})"

    return line


def _claim(args: argparse.Namespace) -> int:
    repo, number = args.issue
    return _agent(args, lambda shown, client, token: shown.answered(
        client.claim(repo, number, rev=args.rev), token, _held("claimed", repo, number)))  # fmt: skip


def _release(args: argparse.Namespace) -> int:
    repo, number = args.issue
    return _agent(args, lambda shown, client, token: shown.answered(
        client.release(repo, number), token, _held("released", repo, number)))  # fmt: skip


def _deliver(args: argparse.Namespace) -> int:
    repo, number = args.issue

    def act(shown: _Agent, client: AgentClient, token: str) -> int:
        answer = client.deliver(repo, number, args.summary, branch=args.branch, commit=args.commit, pr=args.pr,
                                tests=args.tests, screenshots=args.screenshots)  # fmt: skip
        return shown.answered(answer, token, _held("delivered", repo, number))

    return _agent(args, act)


def _status(args: argparse.Namespace) -> int:
    repo, number = args.issue

    def line(body: dict[str, Any]) -> str:
        runner = body.get("runner")
        words = [_ref(body, repo, number), f"{body.get('state')}" + (f" by @{runner}" if runner else "")]
        words.append(f"r{body.get('revision')}")
        if body.get("attempt"):
            words.append(f"attempt {body.get('attempt')}")
        return "  ".join(words)

    return _agent(args, lambda shown, client, token: shown.answered(client.status(repo, number), token, line))


def _task_line(repo: str, task: dict[str, Any]) -> str:
    line = f"{_ref(task, repo, 0)}  r{task.get('revision')}"
    return f"{line}  {task['title']}" if task.get("title") else line


def _tasks(args: argparse.Namespace) -> int:
    repo = args.repository

    def act(shown: _Agent, client: AgentClient, token: str) -> int:
        answer = client.tasks(repo, state=args.state)
        tasks = answer.body.get("tasks")
        if answer.ok and not isinstance(tasks, list):
            return shown.unexpected(answer, "list of tasks")
        listed = [task for task in tasks or [] if isinstance(task, dict)]
        if answer.ok and not listed and not shown.json:
            shown.err(f"no {args.state} tasks in {repo}")
        return shown.answered(answer, token, lambda _: "\n".join(_task_line(repo, task) for task in listed))

    return _agent(args, act)


# Refusals that concern one task only: `next` goes on to the following task.
_TAKEN = {404, 409, 412}


def _next(args: argparse.Namespace) -> int:
    repo = args.repository

    def act(shown: _Agent, client: AgentClient, token: str) -> int:
        listed = client.tasks(repo, state="open")
        if not listed.ok:
            return shown.answered(listed, token, str)
        if not isinstance(listed.body.get("tasks"), list):
            return shown.unexpected(listed, "list of tasks")
        skipped: list[dict[str, Any]] = []
        for task in listed.body["tasks"]:
            if not isinstance(task, dict) or not isinstance(task.get("issue"), int):
                continue
            number, revision = task["issue"], task.get("revision")
            # The revision listed: the task claimed is the one just read, brief and all, or it is skipped.
            answer = client.claim(repo, number, rev=revision if isinstance(revision, int) else None)
            if answer.status in _TAKEN and answer.body.get("code") != "claim_limit":
                shown.err(f"skipped {repo}#{number}: {answer.message or f'HTTP {answer.status}'}")
                skipped.append(answer.body)
                continue
            won = _held("claimed", repo, number)
            title = f"  {task['title']}" if task.get("title") else ""
            return shown.answered(answer, token, lambda body: won(body) + title)  # noqa: B023 (called at once)
        message = f"no open task left in {repo}" + (f" ({len(skipped)} taken first)" if skipped else "")
        shown.body({"error": "none_left", "message": message, "skipped": skipped})
        shown.err(f"baton: {message}")
        return 1

    return _agent(args, act)


def _issue_argument(text: str) -> tuple[str, int]:
    from baton.agent import UsageError, parse_issue

    try:
        return parse_issue(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _repository_argument(text: str) -> str:
    from baton.agent import UsageError, parse_repository

    try:
        return parse_repository(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _pull_request_argument(text: str) -> int:
    number = text.strip().removeprefix("#")
    if not number.isdigit() or int(number) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pull request number")
    return int(number)


def _add_agent_commands(commands: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print Baton's answer as JSON on stdout")

    def add(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        import textwrap

        return commands.add_parser(  # type: ignore[no-any-return]
            name, help=summary, description=textwrap.fill(description, 100), epilog=AGENT_EPILOG, parents=[common],
            formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip

    claim = add("claim", "claim a task (agents; HTTP)", "Claim the task OWNER/REPO#N for this agent. Exactly one "
                "of any number of agents claiming at once wins. Claiming a task you hold changes nothing.")  # fmt: skip
    claim.add_argument("issue", metavar="OWNER/REPO#N", type=_issue_argument)
    claim.add_argument("--rev", type=int, metavar="N", help="claim only if the task is still at revision N")
    claim.set_defaults(run=_claim)

    next_ = add("next", "claim the oldest open task you can win (agents; HTTP)",
                "List OWNER/REPO's open tasks, oldest first, and claim each in turn, at the revision listed, until "
                "one is won; print it. A task taken (or changed) meanwhile is skipped, said on stderr. Exit 1 "
                "when none is left.")  # fmt: skip
    next_.add_argument("repository", metavar="OWNER/REPO", type=_repository_argument)
    next_.set_defaults(run=_next)

    deliver = add("deliver", "deliver a task you hold, with evidence (agents; HTTP)",
                  "Deliver OWNER/REPO#N: a summary and the evidence. The task then waits for a reviewer; a "
                  "delivery lacking evidence the task requires is refused, naming what it lacks.")  # fmt: skip
    deliver.add_argument("issue", metavar="OWNER/REPO#N", type=_issue_argument)
    deliver.add_argument("--summary", required=True, metavar="TEXT", help="what was done, for the reviewer")
    deliver.add_argument("--branch", metavar="B", help="the branch holding the work")
    deliver.add_argument("--commit", metavar="SHA", help="the commit delivered")
    deliver.add_argument("--pr", type=_pull_request_argument, metavar="N", help="the pull request number")
    deliver.add_argument("--tests", action="append", default=[], metavar="T",
                         help="test evidence: a CI run's address or test output (repeatable)")  # fmt: skip
    deliver.add_argument("--screenshot", dest="screenshots", action="append", default=[], metavar="URL",
                         help="a screenshot's address (repeatable)")  # fmt: skip
    deliver.set_defaults(run=_deliver)

    release = add("release", "give back a task you hold (agents; HTTP)",
                  "Release OWNER/REPO#N: the task is open again for anyone to claim.")  # fmt: skip
    release.add_argument("issue", metavar="OWNER/REPO#N", type=_issue_argument)
    release.set_defaults(run=_release)

    tasks = add("tasks", "list a repository's open tasks, oldest first (agents; HTTP)",
                "List OWNER/REPO's tasks in a state (open unless --state says otherwise), oldest first, one a "
                "line: OWNER/REPO#N, its revision, its title.")  # fmt: skip
    tasks.add_argument("repository", metavar="OWNER/REPO", type=_repository_argument)
    tasks.add_argument("--state", default="open", help="the work state to list (default open)")
    tasks.set_defaults(run=_tasks)

    status = add("status", "show a task's state, holder and revision (agents; HTTP)",
                 "Show OWNER/REPO#N as Baton knows it: its work state, who holds it, its revision and "
                 "attempt.")  # fmt: skip
    status.add_argument("issue", metavar="OWNER/REPO#N", type=_issue_argument)
    status.set_defaults(run=_status)


def _mcp(args: argparse.Namespace) -> int:
    """The agent API as an MCP server on stdin and stdout (imported here: `baton serve` does not load it)."""
    from baton.agent import UsageError, base_url, find_token
    from baton.mcp import serve

    try:
        url, token = base_url(), find_token()
    except UsageError as error:
        print(f"baton mcp: {error}", file=sys.stderr)
        return 2
    serve(url, token.value)
    return 0


# The settings each operator's command reads (as BATON_<NAME>, or from a `.env` file).
APP_READS = ("DATABASE_URL", "APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "GITHUB_API_URL", "GITHUB_TIMEOUT")
WORKER_READS = (*APP_READS, "ANSWER_DELAY", "WRITE_INTERVAL", "WRITES_PER_MINUTE", "WRITES_PER_HOUR", "WRITERS",
                "LOG_LEVEL", "LOG_FORMAT")  # fmt: skip
# `baton worker` alone: where it serves its metrics (`baton serve` has them at its own /metrics).
WORKER_COMMAND_READS = (*WORKER_READS, "METRICS_PORT", "HOST")
SERVE_READS = (*WORKER_READS, "WEBHOOK_SECRET", "API_TOKEN", "API_REQUESTS_PER_MINUTE", "WORKER", "SPOOL_DIR",
               "REDELIVER_EVERY", "HOST", "PORT")  # fmt: skip
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
    parser = argparse.ArgumentParser(prog="baton", description="One agent per task; delivered is not accepted.")
    parser.add_argument("--version", action="version", version=f"baton {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

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
    deliveries.set_defaults(run=_deliveries)

    refused = _operator(commands, "refused", "list what GitHub was never shown: answers dropped, issues waiting "
                        "for their next change", ("DATABASE_URL",))  # fmt: skip
    refused.add_argument("--limit", type=int, default=50)
    refused.set_defaults(run=_refused)

    replay = _operator(commands, "replay", "process one stored webhook delivery again, now", APP_READS)
    replay.add_argument("delivery", help="its X-GitHub-Delivery id, as `baton deliveries` lists it")
    replay.set_defaults(run=_replay)

    backfill = _operator(commands, "backfill", "offer a repository's open issues that have no ticket yet (as "
                         "installing the App does)", APP_READS)  # fmt: skip
    backfill.add_argument("repository", metavar="OWNER/REPO")
    backfill.set_defaults(run=_backfill)

    demo = _operator(commands, "demo", "play the reference story against a stand-in GitHub, then keep serving the "
                     "read API", ())  # fmt: skip
    demo.add_argument("--once", action="store_true", help="exit after the story")
    demo.add_argument("--port", type=int, default=8000, help="Baton's port on 127.0.0.1 (default 8000; 0: any)")
    demo.add_argument("--database", help="database URL (default: a new SQLite file in a temporary directory)")
    demo.set_defaults(run=_demo)

    mcp = commands.add_parser(
        "mcp",
        help="serve the agent API's tools to a coding assistant over MCP (stdio)",
        description="Serve Baton's agent API as MCP tools on stdin and stdout (list_tasks, claim_task, "
        "deliver_task, release_task, task_status), for a coding assistant that starts this command. "
        "Reads Baton's address from BATON_URL and the agent's GitHub token from GITHUB_TOKEN, else GH_TOKEN, "
        "else `gh auth token`.",
    )
    mcp.set_defaults(run=_mcp)

    db = commands.add_parser("db", help="database maintenance", description="Database maintenance.")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    _operator(db_commands, "upgrade", "apply migrations", ("DATABASE_URL",)).set_defaults(run=_db_upgrade)

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

    docs = _operator(commands, "docs", "regenerate docs/commands.md and docs/state-machine.md", ())
    docs.add_argument("directory", nargs="?", default="docs")
    docs.set_defaults(run=_docs)

    _add_agent_commands(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("baton")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
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


if __name__ == "__main__":
    sys.exit(main())
