"""`baton mcp`: Baton's agent API as a Model Context Protocol server, for a coding assistant (docs/agents.md).

Tools for every role, each one call of the agent API through `AgentClient` with the caller's own GitHub token:
an agent lists the open tasks, claims one (or opens and claims a new one), delivers, releases, reads a task's
status; a reviewer accepts, sends back or reopens. A tool answers with the API's JSON body as its structured
content (typed, for the tools that change a task) and one line saying what happened; a refusal (any answer but
200 or 201) is a tool error carrying Baton's message, which names the holder when someone else holds the task.
Each task's brief is a resource, `baton://owner/repo/issues/N`: read any; listed, the open tasks of the
repositories named (`baton mcp --repo`, or `?repo=` on `/mcp`).

Served over stdio (the assistant starts `baton mcp` and talks to it on its stdin and stdout, and the tools call
BATON_URL with the agent's GITHUB_TOKEN), and by `baton serve` itself at `/mcp` over streamable HTTP
(`baton.web.mcp_http`: each call carries the agent's token, and the tools call the server they arrived at).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, ListResourcesResult, PaginatedRequestParams, Resource, TextContent
from pydantic import BaseModel, Field

from baton.client.agent import AgentClient, Response, Unreachable, UsageError, parse_owner, parse_repository
from baton.client.verbs import VERBS, Verb

INSTRUCTIONS = (
    "Baton makes sure exactly one agent works on a task, and that delivered work waits for a person to accept it."
    " Take the next ready task with claim_next (agents asking together each get a different one), or find work "
    "with list_tasks and claim one with claim_task (exactly one of any number of claimants wins; a refusal names "
    "who holds it: pick another task), do the work, then deliver_task with a summary and evidence. Release a task"
    " you cannot finish with release_task. task_status tells a task's state, holder and revision. "
    "create_and_claim opens a new issue already claimed by you. A reviewer accepts a delivery with accept_task or"
    " sends it back with send_back_task; reopen_task reopens accepted work; a maintainer makes someone the runner"
    " with assign_task. Every tool that changes a named task takes `revision` (decide only if the task is still "
    "at it) and `idempotency_key` (the same key again gets the first answer). Each task's brief is the resource "
    "baton://owner/repo/issues/N."
)

Repository = Annotated[
    str,
    Field(
        description='The repository as "owner/name", for example octo/shop.',
        pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$",
    ),
]
Number = Annotated[int, Field(description="The issue number of the task.", ge=1, le=2_147_483_647)]
Key = Annotated[
    str | None,
    Field(
        description="An Idempotency-Key: sending the same call again with the same key gets the first answer, "
        "and the call is decided once.",
        min_length=1,
        max_length=200,
    ),
]
Text = Annotated[str, Field(max_length=10_000)]
Labels = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=100)]],
    Field(description="Only tasks whose issue carries every one of these labels.", max_length=20),
]


class TaskAnswer(BaseModel):
    """What Baton answers a call that changed (or held) a task."""

    repository: str = Field(description='"owner/name".')
    issue: int = Field(description="The issue number.")
    state: str | None = Field(description="The task's work state now: open, claimed, delivered, accepted, ...")
    runner: str | None = Field(description="Who holds the task, if anyone.")
    revision: int | None = Field(description="The task's revision now: name it to guard the next call.")
    attempt: int | None = Field(None, description="The runner's attempt.")
    url: str = Field(description="The issue on GitHub.")
    message: str | None = Field(None, description="Baton's note, when it has one.")


Changed = Annotated[CallToolResult, TaskAnswer]

LIST_TASKS = (
    "The tasks a repository offers for claiming, highest priority first, then oldest: issue, title, url, "
    "revision, priority (0 to 4) and brief (what to do, its scope, how it is judged, the evidence a delivery needs)."
)
CLAIM_NEXT = (
    "Claim the next ready task you may claim, in one call: Baton picks the first (highest priority, then oldest; "
    "none that open issues block) in `repo`, or in any repository of the organisation `org`, and claims it for you "
    "at once, so agents asking together each get a different task. `labels`: only tasks carrying every one. "
    "When none is ready, the answer says how many are ready, blocked and claimed."
)
CREATE_AND_CLAIM = (
    "Open a new issue in a repository and claim it at once: it is never open for anyone else. With an "
    "idempotency_key, a retry claims the issue the first call opened rather than open a second."
)
BRIEF = (
    "A task's brief: what to do, its scope, how it is judged and the evidence a delivery needs, with the task's "
    "state and revision (JSON)."
)
_COMMENT_REV = re.compile(r"\brev=(\d+)")
TASK_STATUS = "A task's state (open, claimed, delivered, accepted, ...), who holds it, its revision and attempt."


def _text(line: str, body: dict[str, Any] | None, *, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=line)], structured_content=body, is_error=error)


def _said(answer: Response) -> str:
    """Why Baton did not do it: its message, else FastAPI's `detail`, else the status code."""
    if answer.message:
        said = answer.message
    else:
        detail = answer.body.get("detail")
        if isinstance(detail, list):  # a request the API's schema refused: one entry per field
            detail = "; ".join(str(item.get("msg", item)) if isinstance(item, dict) else str(item) for item in detail)
        said = f"Baton answered {answer.status}" + (f": {detail}" if detail else "")
    said = _COMMENT_REV.sub(r"revision=\1", said)  # a comment's `rev=N` is this tool's `revision`
    if answer.status == 429 and answer.retry_after:
        said += f" (Retry-After: {answer.retry_after} s)"
    return said


def _answered(answer: Response, done: str) -> CallToolResult:
    """The API's answer as a tool result: `done` on 200, else a tool error with Baton's message."""
    if not answer.ok:
        return _text(_said(answer), answer.body or None, error=True)
    return _text(done, answer.body)


def _where(body: dict[str, Any], repository: str, number: int) -> str:
    return f"{body.get('repository') or repository}#{body.get('issue') or number}"


def _revision(body: dict[str, Any]) -> str:
    return f"revision {body['revision']}" if body.get("revision") is not None else "no revision"


Clients = Callable[[Context], AbstractContextManager[AgentClient]]
"""The agent API client a tool call uses, for the call's context: the one of `baton mcp`, or one per HTTP call
with that call's token."""


def _asked(ctx: Context) -> list[str]:
    """The repositories an HTTP request names in its `?repo=` (none over stdio)."""
    request: Any = getattr(ctx.request_context, "request", None)
    query = getattr(request, "query_params", None)
    return list(query.getlist("repo")) if query is not None else []


class _Server(MCPServer):
    """An MCP server that lists, as resources, the briefs of the open tasks in the repositories named."""

    def __init__(self, clients: Clients, repositories: Sequence[str]) -> None:
        super().__init__("baton", instructions=INSTRUCTIONS, log_level="WARNING")
        self.clients = clients
        self.repositories = tuple(repositories)

    async def _handle_list_resources(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        context: Context = Context(request_context=ctx, mcp_server=self)
        named = [*self.repositories, *_asked(context)]
        listed = await anyio.to_thread.run_sync(lambda: self._briefs(context, named))
        return ListResourcesResult(resources=[*await self.list_resources(), *listed])

    def _briefs(self, ctx: Context, repositories: Sequence[str]) -> list[Resource]:
        """The open tasks' resources; a repository that cannot be listed is the request's error, saying why."""
        try:
            return self._listed(ctx, [parse_repository(one) for one in repositories])
        except (UsageError, Unreachable, ResourceError) as error:
            raise MCPError(code=INVALID_PARAMS, message=str(error)) from None

    def _listed(self, ctx: Context, repositories: Sequence[str]) -> list[Resource]:
        found: list[Resource] = []
        with self.clients(ctx) as client:
            for name in dict.fromkeys(repositories):
                answer = client.tasks(name, state="open")
                tasks = answer.body.get("tasks") if answer.ok else None
                if not isinstance(tasks, list):
                    raise ResourceError(f"cannot list {name}'s tasks: {_said(answer)}")
                found.extend(
                    Resource(uri=f"baton://{name}/issues/{task['issue']}", name=f"{name}#{task['issue']}",
                             title=task.get("title") or None, description=f"The brief of {name}#{task['issue']} "
                             f"(open, revision {task.get('revision')})", mime_type="application/json")
                    for task in tasks if isinstance(task, dict) and isinstance(task.get("issue"), int)
                )  # fmt: skip
        return found


Told = Callable[[Context, str, Callable[[AgentClient, str], Response], Callable[[str, Response], str]], CallToolResult]


def _tool(verb: Verb, told: Told) -> Callable[..., CallToolResult]:
    """A verb's tool: its route called with the arguments given, guarded by `revision` and made safe to retry by
    `idempotency_key`; on success, `Verb.said` (and Baton's note, when it has one)."""

    def tool(ctx: Context, repo: str, number: int, revision: int | None = None, idempotency_key: str | None = None,
             **values: Any) -> CallToolResult:  # fmt: skip
        def say(repository: str, answer: Response) -> str:
            body = answer.body
            line = verb.said.format(task=_where(body, repository, number), revision=_revision(body),
                                    runner=body.get("runner"))  # fmt: skip
            return line + (f": {answer.message}" if answer.message else "")

        given = {argument.name: values.get(argument.name, argument.unset()) for argument in verb.arguments}
        return told(ctx, repo, lambda client, repository: client.command(
            repository, number, verb.name, verb.sent(given), revision, idempotency_key), say)  # fmt: skip

    guarded = Annotated[int | None, Field(
        description=f"{verb.guard.capitalize()} only if the task is still at this revision (as list_tasks or "
        "task_status gave it); otherwise the call is refused.", ge=0)]  # fmt: skip
    keyword = inspect.Parameter.KEYWORD_ONLY
    typed = {"repo": Repository, "number": Number, **{one.name: one.annotation() for one in verb.arguments},
             "ctx": Context, "revision": guarded, "idempotency_key": Key}  # fmt: skip
    unset = {one.name: one.unset() for one in verb.arguments if not one.required}
    unset.update(revision=None, idempotency_key=None)
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, keyword, annotation=kind, default=unset.get(name, inspect.Parameter.empty))
         for name, kind in typed.items()],
        return_annotation=Changed,
    )  # fmt: skip
    tool.__annotations__ = {**typed, "return": Changed}
    tool.__name__ = verb.tool
    return tool


def build_server(clients: Clients, repositories: Sequence[str] = ()) -> MCPServer:
    """An MCP server whose tools call the agent API through the client `clients` gives each call; its resources
    list the open tasks of `repositories` (and of those an HTTP request names)."""
    server = _Server(clients, repositories)

    def call(
        ctx: Context, repo: str, act: Callable[[AgentClient, str], Response]
    ) -> tuple[str, Response] | CallToolResult:
        """`act(client, repository)` -> its answer, or the error result for a bad name or an unreachable Baton."""
        try:
            repository = parse_repository(repo)
            with clients(ctx) as client:
                return repository, act(client, repository)
        except (UsageError, Unreachable) as error:
            return _text(str(error), None, error=True)

    def told(
        ctx: Context, repo: str, act: Callable[[AgentClient, str], Response], say: Callable[[str, Response], str]
    ) -> CallToolResult:
        """`act`'s answer as a tool result: `say(repository, answer)` when Baton did it, else the error."""
        made = call(ctx, repo, act)
        if isinstance(made, CallToolResult):
            return made
        repository, answer = made
        return _answered(answer, say(repository, answer))

    @server.tool(description=LIST_TASKS)
    def list_tasks(repo: Repository, ctx: Context) -> CallToolResult:
        made = call(ctx, repo, lambda client, repository: client.tasks(repository, state="open"))
        if isinstance(made, CallToolResult):
            return made
        repository, answer = made
        if not answer.ok:
            return _answered(answer, "")
        tasks = answer.body.get("tasks") or []
        if not tasks:
            return _text(f"no open tasks in {repository}", answer.body)
        listed = "; ".join(f"#{task.get('issue')} {task.get('title') or '(no brief)'}" for task in tasks)
        return _text(f"{len(tasks)} open task{'s' if len(tasks) != 1 else ''} in {repository}: {listed}", answer.body)

    @server.tool(description=CLAIM_NEXT)
    def claim_next(
        ctx: Context,
        repo: Annotated[
            Repository | None, Field(description="The repository; with `org`, only this one of its.")
        ] = None,
        org: Annotated[str | None, Field(description="An organisation: any of its repositories Baton serves.")] = None,
        labels: Labels = [],  # noqa: B006
        idempotency_key: Key = None,
    ) -> Changed:
        try:
            repository = parse_repository(repo) if repo is not None else None
            owner = parse_owner(org) if org is not None else None
            if repository is None and owner is None:
                raise UsageError("name the repository (repo) or the organisation (org) to take a task from")
            with clients(ctx) as client:
                answer = client.claim_next(repository, org=owner, labels=labels, idempotency_key=idempotency_key)
        except (UsageError, Unreachable) as error:
            return _text(str(error), None, error=True)
        body = answer.body
        title = f": {body['title']}" if body.get("title") else ""
        return _answered(answer, f"claimed {_where(body, repository or '', 0)} ({_revision(body)}){title}")

    @server.tool(description=CREATE_AND_CLAIM)
    def create_and_claim(
        repo: Repository,
        title: Annotated[str, Field(description="The issue's title.", min_length=1, max_length=256)],
        ctx: Context,
        body: Annotated[Text, Field(description="The issue's body: the task's brief.")] = "",
        idempotency_key: Key = None,
    ) -> Changed:
        return told(
            ctx,
            repo,
            lambda client, repository: client.create_and_claim(repository, title, body, idempotency_key),
            lambda repository, answer: (
                f"opened and claimed {_where(answer.body, repository, 0)} ({_revision(answer.body)})"
            ),
        )

    @server.tool(description=TASK_STATUS)
    def task_status(repo: Repository, number: Number, ctx: Context) -> CallToolResult:
        def say(repository: str, answer: Response) -> str:
            body = answer.body
            holder = f" by @{body['runner']}" if body.get("runner") else ""
            return f"{_where(body, repository, number)} is {body.get('state')}{holder} ({_revision(body)})"

        return told(ctx, repo, lambda client, repository: client.status(repository, number), say)

    for verb in VERBS:
        server.add_tool(_tool(verb, told), name=verb.tool, description=verb.tool_about)

    @server.resource("baton://{owner}/{name}/issues/{number}", name="brief", description=BRIEF,
                     mime_type="application/json")  # fmt: skip
    def brief(owner: str, name: str, number: str, ctx: Context) -> str:
        if not number.isdigit() or not 1 <= int(number) <= 2_147_483_647:
            raise ResourceError(f"{number!r} is not an issue number")
        try:
            repository = parse_repository(f"{owner}/{name}")
            with clients(ctx) as client:
                answer = client.status(repository, int(number))
        except (UsageError, Unreachable) as error:
            raise ResourceError(str(error)) from None
        if not answer.ok:
            raise ResourceError(_said(answer))
        body = answer.body
        shown = {key: body.get(key) for key in ("repository", "issue", "state", "runner", "revision", "brief")}
        return json.dumps(shown, indent=2)

    return server


def serve(url: str, token: str, repositories: Sequence[str] = ()) -> None:
    """Serve the tools over stdio until the client closes stdin; the resources list `repositories`' tasks."""
    with AgentClient(url, token) as client:
        build_server(lambda _: nullcontext(client), repositories).run("stdio")


__all__ = ["Clients", "build_server", "serve"]
