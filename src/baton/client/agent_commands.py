"""`baton`'s commands for agents and reviewers: they talk to a running Baton over HTTP (`baton.client.agent`)
and touch no database; and `baton mcp`, the same as MCP tools. Exit 0 done, 1 refused, 2 usage, auth or network
errors, or an address that does not answer as Baton."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from baton.client.verbs import FLAG, LINES, LOGIN, NUMBER, VERBS, Argument, Verb

if TYPE_CHECKING:
    from baton.client.agent import AgentClient, Response

AGENT_EPILOG = """\
reads BATON_URL (Baton's address, e.g. http://127.0.0.1:8000) and your token from BATON_TOKEN (your GitHub
token, or in a GitHub Actions job the run's OIDC token), else GITHUB_TOKEN, else GH_TOKEN, else `gh auth token`
(the GitHub CLI); the token is sent to Baton and never printed.

exit status: 0 done; 1 refused (taken by someone else, changed since the revision named, not allowed, not
found, a request Baton cannot take, delivery lacking evidence: Baton's reason on stderr); 2 usage error, token
not accepted (401), rate limited (429: stderr says when to retry), Baton unreachable or failing (5xx), or
BATON_URL answering as something other than Baton."""

WRITING_EPILOG = """

--key: Baton answers a request sent again with the same key (by the same login) as it answered the first, and
does it once; without --key each run sends a fresh key, which --json prints as "idempotency_key"."""

# The commands' groups, as `baton --help` lists them: the agents', with the verbs agents send (`VERBS`), and
# the reviewers' and maintainers', with the others.
GROUPS = {
    "agents": ("tasks", "next", *(verb.name for verb in VERBS if verb.role == "agents"), "new", "status", "mcp"),
    "reviewers and maintainers": tuple(verb.name for verb in VERBS if verb.role != "agents"),
}

_REFUSALS = {403, 404, 409, 412, 422}
# A refusal's hint in a comment's syntax (`rev=19`), said as these commands take it.
_COMMENT_REV = re.compile(r"\brev=(\d+)")


class _Agent:
    """What one command prints: human lines, or with --json the answer's body (and the Idempotency-Key sent);
    never the token."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json: bool = args.json
        self.secret: str | None = None
        self.url = ""
        self.key: str | None = None  # the Idempotency-Key a writing command sent

    def _scrubbed(self, text: str) -> str:
        return text.replace(self.secret, "[token]") if self.secret else text

    def out(self, text: str) -> None:
        print(self._scrubbed(text), flush=True)

    def err(self, text: str) -> None:
        print(self._scrubbed(text), file=sys.stderr, flush=True)

    def body(self, body: dict[str, Any]) -> None:
        if self.json:
            import json

            self.out(json.dumps(body if self.key is None else {**body, "idempotency_key": self.key}))

    def failed(self, code: int, error: str, message: str) -> int:
        """A failure with no answer from Baton behind it (usage, network, not Baton)."""
        self.body({"error": error, "message": message})
        self.err(f"baton: {message}")
        return code

    def answered(self, answer: Response, token_source: str, line: Callable[[dict[str, Any]], str]) -> int:
        """The exit status for Baton's answer, having printed it."""
        if not answer.from_baton:
            return self.failed(2, "not_baton", not_baton(self.url, answer))
        self.body(answer.body)
        said = _hint(answer.message or _detail(answer.body))
        if answer.ok:
            text = line(answer.body)
            if text and not self.json:
                self.out(text + (f": {said}" if said else ""))
            return 0
        if answer.body.get("error") in _NO_ROUTE:  # this Baton lacks the route: older than this client
            self.err(f"baton: {said or f'HTTP {answer.status}'}")
            return 2
        if answer.status in _REFUSALS:
            self.err(f"baton: {said or f'refused (HTTP {answer.status})'}")
            for problem in _problems(answer.body):
                self.err(f"  {problem}")
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

    def unexpected(self, answer: Response, what: str) -> int:
        """A 200 whose body is not what the contract promises."""
        if not answer.from_baton:
            return self.failed(2, "not_baton", not_baton(self.url, answer))
        self.body(answer.body)
        self.err(f"baton: Baton's answer holds no {what}")
        return 2


# The errors of a route this Baton does not serve: nothing was decided (exit 2, not a refusal).
_NO_ROUTE = frozenset({"no_route", "method_not_allowed"})


def not_baton(url: str, answer: Response) -> str:
    """One line for an answer that is not Baton's: BATON_URL names something else."""
    what = "a JSON object without Baton's fields" if answer.json_object else answer.content_type
    return f"BATON_URL {url} does not answer as Baton: HTTP {answer.status} with {what}"


def _hint(message: str | None) -> str | None:
    return _COMMENT_REV.sub(r"--rev \1", message) if message else message


def _detail(body: dict[str, Any]) -> str | None:
    """FastAPI's `detail` when it is a sentence (the read API's refusals)."""
    detail = body.get("detail")
    return detail if isinstance(detail, str) and detail else None


def _problems(body: dict[str, Any]) -> list[str]:
    """Each problem of a request Baton could not take: Baton's `problems` (field and message), else FastAPI's
    `detail` list (where and what)."""
    listed = body.get("problems")
    if isinstance(listed, list):
        return [f"{one.get('field')}: {one.get('message')}" for one in listed if isinstance(one, dict)]
    detail = body.get("detail")
    if isinstance(detail, list):
        return [
            f"{'.'.join(str(part) for part in one.get('loc', ()))}: {one.get('msg')}" if isinstance(one, dict)
            else str(one)
            for one in detail
        ]  # fmt: skip
    return []


def _agent(args: argparse.Namespace, act: Callable[[_Agent, AgentClient, str], int]) -> int:
    """Run `act` with a client for BATON_URL and the agent's token; usage and network failures exit 2."""
    from baton.client.agent import AgentClient, Unreachable, UsageError, base_url, find_token

    shown = _Agent(args)
    try:
        url = base_url()
        token = find_token()
    except UsageError as error:
        return shown.failed(2, "usage", str(error))
    shown.secret, shown.url = token.value, url
    if hasattr(args, "key"):  # a command that changes a task: it sends an Idempotency-Key
        from baton.client.agent import new_key

        shown.key = args.key or new_key()
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


def _verb(verb: Verb) -> Callable[[argparse.Namespace], int]:
    """A verb's subcommand: its arguments sent as the body of its route on OWNER/REPO#N, the answer said in one
    line (`Verb.done`)."""

    def run(args: argparse.Namespace) -> int:
        repo, number = args.issue
        values = {argument.name: getattr(args, argument.name) for argument in verb.arguments}
        done = _held(verb.done.format(**values), repo, number)

        def act(shown: _Agent, client: AgentClient, token: str) -> int:
            answer = client.command(repo, number, verb.name, verb.sent(values), rev=args.rev, idempotency_key=shown.key)
            return shown.answered(answer, token, done)

        return _agent(args, act)

    return run


def _login_argument(text: str) -> str:
    login = text.strip().removeprefix("@")
    from baton.client.agent import LOGIN

    if not re.fullmatch(LOGIN, login):
        raise argparse.ArgumentTypeError(f"{text!r} is not a GitHub login")
    return login


def _new(args: argparse.Namespace) -> int:
    repo = args.repository
    try:
        body = _read_text(args.body_file) if args.body_file else ""
    except OSError as error:  # before anything is sent
        return _Agent(args).failed(2, "usage", f"cannot read --body-file {args.body_file}: {error.strerror or error}")

    def act(shown: _Agent, client: AgentClient, token: str) -> int:
        answer = client.create_and_claim(repo, args.title, body, idempotency_key=shown.key)
        return shown.answered(answer, token, _held("opened and claimed", repo, 0))

    return _agent(args, act)


def _read_text(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    with open(name, encoding="utf-8") as file:
        return file.read()


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


def _next(args: argparse.Namespace) -> int:
    repo, org = args.repository, args.org
    if (repo is None) == (org is None):
        return _Agent(args).failed(2, "usage", "name a repository (OWNER/REPO) or an organisation (--org ORG), "
                                   "one of the two")  # fmt: skip

    def act(shown: _Agent, client: AgentClient, token: str) -> int:
        answer = client.claim_next(repo, org=org, labels=args.labels, idempotency_key=shown.key)

        def line(body: dict[str, Any]) -> str:
            title = body.get("title")
            return _held("claimed", repo or "", 0)(body) + (f"  {title}" if isinstance(title, str) and title else "")

        return shown.answered(answer, token, line)

    return _agent(args, act)


def _issue_argument(text: str) -> tuple[str, int]:
    from baton.client.agent import UsageError, parse_issue

    try:
        return parse_issue(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _organisation_argument(text: str) -> str:
    from baton.client.agent import UsageError, parse_owner

    try:
        return parse_owner(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _repository_argument(text: str) -> str:
    from baton.client.agent import UsageError, parse_repository

    try:
        return parse_repository(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _pull_request_argument(text: str) -> int:
    number = text.strip().removeprefix("#")
    if not number.isdigit() or int(number) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pull request number")
    return int(number)


def add_agent_commands(commands: Any) -> None:
    """The agents' and reviewers' subcommands of `baton`, and `baton mcp`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print Baton's answer as JSON on stdout")
    writing = argparse.ArgumentParser(add_help=False)
    writing.add_argument("--key", metavar="KEY", help="the Idempotency-Key to send (default: a fresh one)")

    def add(
        name: str, summary: str, description: str, *, writes: bool = False, rev: str = ""
    ) -> argparse.ArgumentParser:
        import textwrap

        made: argparse.ArgumentParser = commands.add_parser(
            name, help=summary, description=textwrap.fill(description, 100),
            epilog=AGENT_EPILOG + (WRITING_EPILOG if writes else ""), parents=[common, *([writing] if writes else [])],
            formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        if rev:
            made.add_argument("--rev", type=int, metavar="N", help=f"{rev} only if the task is still at revision N")
        return made

    def on_issue(name: str, summary: str, description: str, verb: str) -> argparse.ArgumentParser:
        made = add(name, summary, description, writes=True, rev=verb)
        made.add_argument("issue", metavar="OWNER/REPO#N", type=_issue_argument)
        return made

    tasks = add("tasks", "list a repository's open tasks, highest priority first, then oldest (agents; HTTP)",
                "List OWNER/REPO's tasks in a state (open unless --state says otherwise), highest priority first, "
                "then oldest, one a line: OWNER/REPO#N, its revision, its title.")  # fmt: skip
    tasks.add_argument("repository", metavar="OWNER/REPO", type=_repository_argument)
    tasks.add_argument("--state", default="open", help="the work state to list (default open)")
    tasks.set_defaults(run=_tasks)

    next_ = add("next", "claim the first ready task you may claim, by priority then age (agents; HTTP)",
                "Claim the first ready task you may claim in OWNER/REPO (or, with --org, in any repository of the "
                "organisation ORG), highest priority first, then oldest: Baton picks it and claims it in one "
                "request, so agents asking at once each get a different task. Print it. Exit 1 when none is ready "
                "for you (or your claim is refused: you hold as many as the repository allows, say).",
                writes=True)  # fmt: skip
    next_.add_argument("repository", metavar="OWNER/REPO", nargs="?", type=_repository_argument)
    next_.add_argument("--org", metavar="ORG", type=_organisation_argument,
                       help="any repository of this organisation where you may run tasks")  # fmt: skip
    next_.add_argument("--label", dest="labels", action="append", default=[], metavar="LABEL",
                       help="only tasks whose issue carries this label (repeatable: every one)")  # fmt: skip
    next_.set_defaults(run=_next)

    for verb in VERBS:
        made = on_issue(verb.name, f"{verb.help} ({verb.role}; HTTP)", verb.about, verb.guard)
        for argument in verb.arguments:
            _add_argument(made, argument)
        made.set_defaults(run=_verb(verb))

    new = add("new", "open an issue and claim it at once (agents; HTTP)",
              "Open an issue in OWNER/REPO with --title (and the body in --body-file) and claim it: it is never "
              "open for anyone else. Sent again with the same --key, it claims the issue the first run opened "
              "rather than open a second.", writes=True)  # fmt: skip
    new.add_argument("repository", metavar="OWNER/REPO", type=_repository_argument)
    new.add_argument("--title", required=True, metavar="TEXT", help="the issue's title")
    new.add_argument("--body-file", metavar="FILE", help="the issue's body, read from FILE (- for stdin)")
    new.set_defaults(run=_new)

    status = add("status", "show a task's state, holder and revision (agents; HTTP)",
                 "Show OWNER/REPO#N as Baton knows it: its work state, who holds it, its revision and "
                 "attempt.")  # fmt: skip
    status.add_argument("issue", metavar="OWNER/REPO#N", type=_issue_argument)
    status.set_defaults(run=_status)

    mcp = commands.add_parser(
        "mcp",
        help="serve the agent API's tools to a coding assistant over MCP (stdio)",
        description="Serve Baton's agent API as MCP tools on stdin and stdout (list_tasks, create_and_claim, "
        f"task_status, {', '.join(verb.tool for verb in VERBS)}) "
        "and each task's brief as a resource (baton://OWNER/REPO/issues/N), for a coding assistant that starts "
        "this command. "
        "Reads Baton's address from BATON_URL and the agent's token from BATON_TOKEN, else GITHUB_TOKEN, else "
        "GH_TOKEN, else `gh auth token`.",
    )
    mcp.add_argument("--repo", dest="repositories", action="append", default=[], metavar="OWNER/REPO",
                     type=_repository_argument,
                     help="list this repository's open tasks as resources (repeatable)")  # fmt: skip
    mcp.set_defaults(run=_mcp)


def _add_argument(parser: argparse.ArgumentParser, argument: Argument) -> None:
    """A verb's argument as its subcommand's option (or positional argument), said in its `description`."""
    said = argument.description[0].lower() + argument.description[1:].removesuffix(".")
    options: dict[str, Any] = {"metavar": argument.metavar, "help": said}
    if argument.kind == FLAG:
        options = {"action": "store_true", "help": said}
    elif argument.kind == LINES:
        options.update(action="append", default=[], help=f"{said} (repeatable)")
    else:
        types = {LOGIN: _login_argument, NUMBER: _pull_request_argument}
        options.update(type=types.get(argument.kind, str), default=argument.default)
        if argument.required and argument.flag is not None:
            options["required"] = True
    if argument.flag is None:
        parser.add_argument(argument.name, **options)
    else:
        parser.add_argument(argument.flag, dest=argument.name, **options)


def _mcp(args: argparse.Namespace) -> int:
    """The agent API as an MCP server on stdin and stdout (imported here: `baton serve` does not load it)."""
    from baton.client.agent import UsageError, base_url, find_token
    from baton.client.mcp import serve

    try:
        url, token = base_url(), find_token()
    except UsageError as error:
        print(f"baton mcp: {error}", file=sys.stderr)
        return 2
    serve(url, token.value, args.repositories)
    return 0
