"""The agent API's tools over MCP, driven by the MCP SDK's client: over stdio, where each agent's server is a
`baton mcp` process of its own, and over streamable HTTP at Baton's own `/mcp`, each agent sending its token.
Both call Baton (and Baton the stand-in GitHub) over real sockets."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from support.local_http import HTTP
from support.standin_scene import Scene, opened

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {"list_tasks", "claim_task", "deliver_task", "release_task", "task_status"}
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing answers there

T = TypeVar("T")


@pytest.fixture
def scene(sqlite_url: str) -> Iterator[Scene]:
    # The tools only relay the agent API's answers, which tests/system/test_agent_api.py holds on both engines.
    with opened(sqlite_url) as made:
        made.settle()
        yield made


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    """`baton mcp` over stdio, or `baton serve`'s own `/mcp` over streamable HTTP."""
    chosen: str = request.param
    return chosen


@asynccontextmanager
async def baton_mcp(url: str, token: str, transport: str = "stdio") -> AsyncIterator[Client]:
    """A session with Baton's tools: `baton mcp` started as an assistant starts it, with BATON_URL and GITHUB_TOKEN;
    or Baton's `/mcp` at `url`, with the token in every request."""
    if transport == "http":
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            yield client
        return
    server = StdioServerParameters(command=sys.executable, args=["-m", "baton.cli", "mcp"], cwd=ROOT,
                                   env={"BATON_URL": url, "GITHUB_TOKEN": token})  # fmt: skip
    async with Client(server, read_timeout_seconds=30) as client:
        yield client


def run(url: str, token: str, session: Callable[[Client], Awaitable[T]], transport: str = "stdio") -> T:
    async def main() -> T:
        async with baton_mcp(url, token, transport) as client:
            return await session(client)

    return asyncio.run(main())


def text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def token(scene: Scene, login: str, permission: str = "read") -> str:
    made: str = scene.stage.person(login, permission).token()
    return made


def test_the_five_tools_with_typed_described_inputs() -> None:
    listed = run(NOWHERE, "ghp_unused", lambda client: client.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS
    assert all(tool.description for tool in tools.values())
    schemas: dict[str, dict[str, Any]] = {name: tool.input_schema for name, tool in tools.items()}
    required = {name: set(schema.get("required", [])) for name, schema in schemas.items()}
    assert required == {"list_tasks": {"repo"}, "claim_task": {"repo", "number"}, "release_task": {"repo", "number"},
                        "task_status": {"repo", "number"},
                        "deliver_task": {"repo", "number", "summary"}}  # fmt: skip
    for name, schema in schemas.items():
        properties = schema["properties"]
        assert properties["repo"]["type"] == "string" and "owner/name" in properties["repo"]["description"]
        assert "pattern" in properties["repo"]
        if "number" in properties:
            assert properties["number"]["type"] == "integer" and properties["number"]["minimum"] == 1, name
        assert all(field.get("description") for field in properties.values()), name
    deliver = schemas["deliver_task"]["properties"]
    assert set(deliver) == {"repo", "number", "summary", "branch", "commit", "pr", "tests", "screenshots"}
    assert deliver["tests"]["type"] == "array" and deliver["tests"]["items"]["type"] == "string"
    assert deliver["tests"]["default"] == [] and deliver["screenshots"]["default"] == []
    assert {"type": "integer", "minimum": 0} in schemas["claim_task"]["properties"]["revision"]["anyOf"]


def test_one_agent_claims_and_the_other_is_told_who_holds_it(scene: Scene, transport: str) -> None:
    url, where = scene.stage.baton_url, {"repo": scene.full_name, "number": scene.number}
    revision = scene.app.state.work.ticket(scene.key).revision

    async def both() -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        a_token, b_token = token(scene, "agent-a"), token(scene, "agent-b")
        async with baton_mcp(url, a_token, transport) as a, baton_mcp(url, b_token, transport) as b:
            won = await a.call_tool("claim_task", where)
            lost = await b.call_tool("claim_task", where)
            again = await a.call_tool("claim_task", {**where, "revision": revision + 7})
            return won, lost, again

    won, lost, again = asyncio.run(both())
    assert not won.is_error, text(won)
    body = won.structured_content or {}
    assert (body["state"], body["runner"], body["attempt"], body["revision"]) == (
        "claimed", "agent-a", 1, revision + 1)  # fmt: skip
    assert text(won).startswith(f"claimed {scene.full_name}#{scene.number} (revision {revision + 1})")

    assert lost.is_error
    refused = lost.structured_content or {}
    assert (refused["error"], refused["runner"], refused["revision"]) == ("conflict", "agent-a", revision + 1)
    assert "@agent-a" in text(lost) and text(lost) == refused["message"]

    assert not again.is_error, text(again)  # the holder claiming again is safe, whatever revision it names
    assert (again.structured_content or {})["revision"] == revision + 1
    scene.drain()
    assert scene.assignees() == ["agent-a"]


def test_release_then_claim_and_deliver_then_a_second_delivery_is_refused(scene: Scene, transport: str) -> None:
    url, where = scene.stage.baton_url, {"repo": scene.full_name, "number": scene.number}

    async def story(client: Client) -> list[CallToolResult]:
        said = [await client.call_tool("claim_task", where), await client.call_tool("release_task", where)]
        said.append(await client.call_tool("claim_task", where))
        said.append(await client.call_tool("deliver_task", {
            **where, "summary": "The cart shows the approved empty state.", "branch": "1-empty-state",
            "commit": "1a2b3c4", "tests": ["https://ci.example.com/runs/881"],
            "screenshots": ["https://example.com/390.png"]}))  # fmt: skip
        said.append(await client.call_tool("deliver_task", {**where, "summary": "Once more."}))
        said.append(await client.call_tool("release_task", where))
        return said

    claimed, released, claimed_again, delivered, twice, late_release = run(
        url, token(scene, "agent-a"), story, transport
    )
    assert not claimed.is_error and not released.is_error, (text(claimed), text(released))
    assert (released.structured_content or {})["state"] == "open" and "released" in text(released)
    assert (claimed_again.structured_content or {})["attempt"] == 2
    assert not delivered.is_error, text(delivered)
    assert (delivered.structured_content or {})["state"] == "delivered"
    assert text(delivered).startswith(f"delivered {scene.full_name}#{scene.number} (revision ")
    assert twice.is_error and (twice.structured_content or {})["state"] == "delivered"
    assert late_release.is_error and (late_release.structured_content or {})["error"] == "conflict"
    assert text(late_release) == (late_release.structured_content or {})["message"]
    ticket = scene.app.state.work.ticket(scene.key)
    assert ticket.state.value == "delivered" and ticket.runner == "agent-a"
    assert ticket.deliveries == 1
    history = scene.app.state.work.history(scene.key)
    assert history[-1].type == "delivered" and history[-1].data.get("source") == "api"


def test_task_status_tells_the_state_the_holder_and_the_revision(scene: Scene, transport: str) -> None:
    url, where = scene.stage.baton_url, {"repo": scene.full_name, "number": scene.number}
    agent = token(scene, "agent-a")

    async def story(client: Client) -> tuple[CallToolResult, CallToolResult]:
        await client.call_tool("claim_task", where)
        unknown = {**where, "number": 99999}
        return await client.call_tool("task_status", where), await client.call_tool("task_status", unknown)

    status, unknown = run(url, agent, story, transport)
    assert not status.is_error, text(status)
    body = status.structured_content or {}
    assert (body["state"], body["runner"]) == ("claimed", "agent-a")
    assert text(status) == f"{scene.full_name}#{scene.number} is claimed by @agent-a (revision {body['revision']})"
    assert unknown.is_error


def test_list_tasks_lists_the_open_tasks_oldest_first(scene: Scene, transport: str) -> None:
    url = scene.stage.baton_url
    agent = token(scene, "agent-a")
    second = scene.person("olivia").open_issue(scene.full_name, "Totals in the footer")
    scene.settle()

    async def story(client: Client) -> tuple[CallToolResult, CallToolResult]:
        before = await client.call_tool("list_tasks", {"repo": scene.full_name})
        await client.call_tool("claim_task", {"repo": scene.full_name, "number": scene.number})
        return before, await client.call_tool("list_tasks", {"repo": scene.full_name})

    before, after = run(url, agent, story, transport)
    assert not before.is_error, text(before)
    assert [task["issue"] for task in (before.structured_content or {})["tasks"]] == [scene.number, second]
    assert text(before).startswith(f"2 open tasks in {scene.full_name}: #{scene.number} ")
    assert [task["issue"] for task in (after.structured_content or {})["tasks"]] == [second]


def test_a_refused_read_is_a_tool_error_with_batons_message(scene: Scene) -> None:
    where = {"repo": scene.full_name, "number": scene.number}

    async def story(client: Client) -> tuple[CallToolResult, CallToolResult]:
        return await client.call_tool("task_status", where), await client.call_tool("claim_task", where)

    status, claim = run(scene.stage.baton_url, "ghp_no-such-token", story)
    assert status.is_error and status.structured_content is not None and text(status)
    assert claim.is_error and (claim.structured_content or {})["error"] == "unauthorized"
    assert text(claim) == (claim.structured_content or {})["message"]


def test_arguments_the_schema_refuses_and_an_unreachable_baton_are_tool_errors() -> None:
    async def story(client: Client) -> list[CallToolResult]:
        return [
            await client.call_tool("claim_task", {"repo": "not a repository", "number": 1}),
            await client.call_tool("deliver_task", {"repo": "octo/shop", "number": 1, "summary": ""}),
            await client.call_tool("claim_task", {"repo": "octo/shop", "number": 1}),
        ]

    bad_name, no_summary, unreachable = run(NOWHERE, "ghp_unused", story)
    assert bad_name.is_error and no_summary.is_error
    assert unreachable.is_error and "cannot reach Baton at http://127.0.0.1:9" in text(unreachable)
    assert "ghp_unused" not in text(unreachable)


def test_baton_mcp_says_what_it_lacks_and_serving_does_not_load_it() -> None:
    bare = {"PATH": "/nonexistent", "GITHUB_TOKEN": "ghp_x"}  # no BATON_URL
    lacking = subprocess.run([sys.executable, "-m", "baton.cli", "mcp"], capture_output=True, text=True, timeout=30,
                             env=bare, stdin=subprocess.DEVNULL)  # fmt: skip
    assert lacking.returncode == 2 and "BATON_URL is not set" in lacking.stderr
    helped = subprocess.run([sys.executable, "-m", "baton.cli", "mcp", "--help"], capture_output=True, text=True,
                            check=True, timeout=30).stdout  # fmt: skip
    assert "BATON_URL" in helped and "GITHUB_TOKEN" in helped and "GH_TOKEN" in helped
    code = "import sys, baton.cli, baton.web; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert not [
        name for name in loaded if name.split(".")[0] == "mcp" or name in ("baton.client.mcp", "baton.client.agent")
    ]


def test_baton_serves_mcp_at_slash_mcp_only_to_a_token_github_accepts(scene: Scene) -> None:
    url = scene.stage.baton_url
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "1"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream"}
    missing = HTTP.post(f"{url}/mcp", json=initialize, headers=headers)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"] == "unauthorized" and "Authorization: Bearer" in missing.json()["message"]
    refused = HTTP.post(f"{url}/mcp", json=initialize, headers={**headers, "Authorization": "Bearer ghp_no-such"})
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    assert "ghp_no-such" not in refused.text

    listed = run(url, token(scene, "agent-a"), lambda client: client.list_tools(), "http")
    assert {tool.name for tool in listed.tools} == TOOLS
    claim = next(tool for tool in listed.tools if tool.name == "claim_task")
    assert set(claim.input_schema["properties"]) == {"repo", "number", "revision"}  # the call's context is no input
