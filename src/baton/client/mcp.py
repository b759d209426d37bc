"""`baton mcp`: Baton's agent API as a Model Context Protocol server, for a coding assistant (docs/agents.md).

Five tools, each one call of the agent API through `AgentClient` with the agent's own GitHub token: list the
open tasks, claim, deliver, release, read a task's status. A tool answers with the API's JSON body as its
structured content and one line saying what happened; a refusal (any answer but 200) is a tool error carrying
Baton's message, which names the holder when someone else holds the task.

Served over stdio (the assistant starts `baton mcp` and talks to it on its stdin and stdout, and the tools call
BATON_URL with the agent's GITHUB_TOKEN), and by `baton serve` itself at `/mcp` over streamable HTTP
(`baton.web.mcp_http`: each call carries the agent's token, and the tools call the server they arrived at).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from baton.client.agent import AgentClient, Response, Unreachable, UsageError, parse_repository

INSTRUCTIONS = (
    "Baton makes sure exactly one agent works on a task, and that delivered work waits for a person to accept "
    "it. Find work with list_tasks, claim one with claim_task (exactly one of any number of claimants wins; "
    "a refusal names who holds it: pick another task), do the work, then deliver_task with a summary and "
    "evidence. Release a task you cannot finish with release_task. task_status tells a task's state, holder "
    "and revision."
)

Repository = Annotated[
    str,
    Field(
        description='The repository as "owner/name", for example octo/shop.',
        pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$",
    ),
]
Number = Annotated[int, Field(description="The issue number of the task.", ge=1, le=2_147_483_647)]
Revision = Annotated[
    int | None,
    Field(
        description="Claim only if the task is still at this revision (as list_tasks or task_status gave it); "
        "otherwise the claim is refused.",
        ge=0,
    ),
]
Summary = Annotated[str, Field(description="What was done, for the reviewer.", min_length=1, max_length=10_000)]
Lines = Annotated[list[str], Field(max_length=20)]

LIST_TASKS = (
    "The tasks a repository offers for claiming, oldest first: issue, title, url, revision and brief (what to "
    "do, its scope, how it is judged, the evidence a delivery needs)."
)
CLAIM_TASK = (
    "Claim a task: exactly one of any number of claimants wins. On success the task is yours (its revision and "
    "attempt are in the answer); a refusal is an error naming who holds it. Claiming a task you already hold is "
    "safe and changes nothing."
)
DELIVER_TASK = (
    "Deliver a task you hold: a summary of what was done and its evidence. The task then waits for a reviewer; "
    "delivered is not accepted. A delivery that lacks evidence the task requires is refused, naming everything "
    "it lacks."
)
RELEASE_TASK = "Release a task you hold and cannot finish: it is open again for anyone to claim."
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


def build_server(clients: Clients) -> MCPServer:
    """An MCP server whose tools call the agent API through the client `clients` gives each call."""
    server: MCPServer = MCPServer("baton", instructions=INSTRUCTIONS, log_level="WARNING")

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

    @server.tool(description=CLAIM_TASK)
    def claim_task(repo: Repository, number: Number, ctx: Context, revision: Revision = None) -> CallToolResult:
        def say(repository: str, answer: Response) -> str:
            line = f"claimed {_where(answer.body, repository, number)} ({_revision(answer.body)})"
            return line + (f": {answer.message}" if answer.ok and answer.message else "")

        return told(ctx, repo, lambda client, repository: client.claim(repository, number, rev=revision), say)

    @server.tool(description=DELIVER_TASK)
    def deliver_task(
        repo: Repository,
        number: Number,
        summary: Summary,
        ctx: Context,
        branch: Annotated[str | None, Field(description="The branch holding the work.")] = None,
        commit: Annotated[str | None, Field(description="The commit SHA (7 to 40 hex digits).")] = None,
        pr: Annotated[int | None, Field(description="The pull request's number.", ge=1)] = None,
        # The lists are copied into each call's argument model, and never changed here.
        tests: Annotated[Lines, Field(description="Test evidence: links to test runs, or test output.")] = [],  # noqa: B006
        screenshots: Annotated[Lines, Field(description="Links to screenshots.")] = [],  # noqa: B006
    ) -> CallToolResult:
        return told(
            ctx,
            repo,
            lambda client, repository: client.deliver(
                repository, number, summary, branch=branch, commit=commit, pr=pr, tests=tests, screenshots=screenshots
            ),
            lambda repository, answer: (
                f"delivered {_where(answer.body, repository, number)} ({_revision(answer.body)}); it waits for review"
            ),
        )

    @server.tool(description=RELEASE_TASK)
    def release_task(repo: Repository, number: Number, ctx: Context) -> CallToolResult:
        return told(
            ctx,
            repo,
            lambda client, repository: client.release(repository, number),
            lambda repository, answer: (
                f"released {_where(answer.body, repository, number)} ({_revision(answer.body)}); it is open again"
            ),
        )

    @server.tool(description=TASK_STATUS)
    def task_status(repo: Repository, number: Number, ctx: Context) -> CallToolResult:
        def say(repository: str, answer: Response) -> str:
            body = answer.body
            holder = f" by @{body['runner']}" if body.get("runner") else ""
            return f"{_where(body, repository, number)} is {body.get('state')}{holder} ({_revision(body)})"

        return told(ctx, repo, lambda client, repository: client.status(repository, number), say)

    return server


def serve(url: str, token: str) -> None:
    """Serve the tools over stdio until the client closes stdin."""
    with AgentClient(url, token) as client:
        build_server(lambda _: nullcontext(client)).run("stdio")


__all__ = ["Clients", "build_server", "serve"]
