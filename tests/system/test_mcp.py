"""The agent API's tools over MCP, driven by the MCP SDK's client: over stdio, where each agent's server is a
`baton mcp` process of its own, and over streamable HTTP at Baton's own `/mcp`, each agent sending its token.
Both call Baton (and Baton the stand-in GitHub) over real sockets."""

from __future__ import annotations

import asyncio
import json
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
TOOLS = {"list_tasks", "claim_next", "claim_task", "deliver_task", "release_task", "task_status", "create_and_claim",
         "accept_task", "send_back_task", "reopen_task", "assign_task"}  # fmt: skip
CHANGING = TOOLS - {"list_tasks", "task_status", "claim_next"}
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
async def baton_mcp(url: str, token: str, transport: str = "stdio", repo: str | None = None) -> AsyncIterator[Client]:
    """A session with Baton's tools: `baton mcp` started as an assistant starts it, with BATON_URL and GITHUB_TOKEN;
    or Baton's `/mcp` at `url`, with the token in every request. `repo`: the repository whose tasks the resources
    list (`--repo`, or `?repo=`)."""
    if transport == "http":
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        address = f"{url}/mcp" + (f"?repo={repo}" if repo else "")
        async with http, Client(streamable_http_client(address, http_client=http)) as client:
            yield client
        return
    server = StdioServerParameters(command=sys.executable, args=["-m", "baton.cli", "mcp",
                                   *(["--repo", repo] if repo else [])], cwd=ROOT,
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


def test_the_tools_with_typed_described_inputs_and_outputs() -> None:
    listed = run(NOWHERE, "ghp_unused", lambda client: client.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS
    assert all(tool.description for tool in tools.values())
    schemas: dict[str, dict[str, Any]] = {name: tool.input_schema for name, tool in tools.items()}
    required = {name: set(schema.get("required", [])) for name, schema in schemas.items()}
    assert required == {"list_tasks": {"repo"}, "claim_task": {"repo", "number"}, "release_task": {"repo", "number"},
                        "task_status": {"repo", "number"}, "deliver_task": {"repo", "number", "summary"},
                        "create_and_claim": {"repo", "title"}, "accept_task": {"repo", "number"},
                        "send_back_task": {"repo", "number"}, "reopen_task": {"repo", "number"},
                        "assign_task": {"repo", "number", "user"}, "claim_next": set()}  # fmt: skip
    for name, schema in schemas.items():
        if name == "claim_next":  # a repository or an organisation: both optional, checked below
            continue
        properties = schema["properties"]
        assert properties["repo"]["type"] == "string" and "owner/name" in properties["repo"]["description"]
        assert "pattern" in properties["repo"]
        if "number" in properties:
            assert properties["number"]["type"] == "integer" and properties["number"]["minimum"] == 1, name
        assert all(field.get("description") for field in properties.values()), name
    for name in CHANGING:  # each guarded by a revision and made safe to retry by a key; each answer typed
        properties = schemas[name]["properties"]
        assert {"type": "string", "minLength": 1, "maxLength": 200} in properties["idempotency_key"]["anyOf"], name
        if name != "create_and_claim":
            assert {"type": "integer", "minimum": 0} in properties["revision"]["anyOf"], name
        output = tools[name].output_schema or {}
        assert {"repository", "issue", "state", "runner", "revision", "url"} <= set(output["required"]), name
        assert output["properties"]["issue"]["type"] == "integer", name
    assert {"note", "feedback", "reason", "title", "body", "user"} == {
        field for name in ("accept_task", "send_back_task", "reopen_task", "create_and_claim", "assign_task",
                           "release_task")
        for field in schemas[name]["properties"] if field not in ("repo", "number", "revision", "idempotency_key")
    }  # fmt: skip
    deliver = schemas["deliver_task"]["properties"]
    assert set(deliver) == {"repo", "number", "summary", "branch", "commit", "pr", "tests", "screenshots", "revision",
                            "idempotency_key"}  # fmt: skip
    assert deliver["tests"]["type"] == "array" and deliver["tests"]["items"]["type"] == "string"
    assert deliver["tests"]["default"] == [] and deliver["screenshots"]["default"] == []
    assert {"type": "integer", "minimum": 0} in schemas["claim_task"]["properties"]["revision"]["anyOf"]
    claim_next = schemas["claim_next"]["properties"]
    assert set(claim_next) == {"repo", "org", "labels", "idempotency_key"}
    assert any("pattern" in one for one in claim_next["repo"]["anyOf"])
    assert claim_next["labels"]["type"] == "array" and claim_next["labels"]["default"] == []
    assert all(field.get("description") for field in claim_next.values())


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


def test_claim_next_hands_out_the_highest_priority_ready_task_then_says_none_is_ready(
    scene: Scene, transport: str
) -> None:
    urgent = scene.person("olivia").open_issue(
        scene.full_name, "Checkout is down", "```yaml\ntask: Bring checkout back\npriority: p0\n```"
    )
    scene.settle()

    async def story(client: Client) -> list[CallToolResult]:
        said = [await client.call_tool("claim_next", {"repo": scene.full_name})]
        said.append(
            await client.call_tool("claim_next", {"org": scene.full_name.split("/")[0], "idempotency_key": "n-2"})
        )
        said.append(await client.call_tool("claim_next", {"repo": scene.full_name}))
        said.append(await client.call_tool("claim_next", {}))
        return said

    first, second, none, nowhere = run(scene.stage.baton_url, token(scene, "agent-a"), story, transport)
    assert not first.is_error, text(first)
    assert (first.structured_content or {})["issue"] == urgent  # p0 before the older task of no priority
    assert text(first).startswith(f"claimed {scene.full_name}#{urgent} (revision ")
    assert text(first).endswith(": Checkout is down")
    assert not second.is_error, text(second)
    assert (second.structured_content or {})["issue"] == scene.number
    assert ((second.structured_content or {})["state"], (second.structured_content or {})["runner"]) == (
        "claimed", "agent-a")  # fmt: skip
    assert none.is_error and (none.structured_content or {})["code"] == "none_ready"
    assert (none.structured_content or {})["counts"] == {"ready": 0, "blocked": 0, "claimed": 2}
    assert "ready for you to claim" in text(none)
    assert nowhere.is_error and "repository (repo) or the organisation (org)" in text(nowhere)


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
    # the call's context is no input
    assert set(claim.input_schema["properties"]) == {"repo", "number", "revision", "idempotency_key", "force"}


EVIDENCE = {"branch": "1-empty-state", "commit": "1a2b3c4", "tests": ["https://ci.example.com/runs/881"],
            "screenshots": ["https://example.com/390.png"]}  # fmt: skip


def test_an_agent_opens_and_delivers_and_a_reviewer_sends_back_accepts_and_reopens(
    scene: Scene, transport: str
) -> None:
    url = scene.stage.baton_url
    agent, maria = token(scene, "agent-a"), token(scene, "maria", "maintain")

    async def story() -> dict[str, CallToolResult]:
        said: dict[str, CallToolResult] = {}
        async with baton_mcp(url, agent, transport) as a, baton_mcp(url, maria, transport) as m:
            made = await a.call_tool("create_and_claim", {"repo": scene.full_name, "title": "Totals in the footer",
                                                          "body": "The footer shows totals.",
                                                          "idempotency_key": "open-1"})  # fmt: skip
            said["made"] = made
            where = {"repo": scene.full_name, "number": (made.structured_content or {})["issue"]}
            said["again"] = await a.call_tool("create_and_claim", {"repo": scene.full_name,
                                              "title": "Totals in the footer", "body": "The footer shows totals.",
                                              "idempotency_key": "open-1"})  # fmt: skip
            said["delivered"] = await a.call_tool("deliver_task", {**where, "summary": "Totals.", **EVIDENCE})
            said["own"] = await a.call_tool("accept_task", where)
            said["sent_back"] = await m.call_tool("send_back_task", {**where, "feedback": "No tax line."})
            revision = (said["sent_back"].structured_content or {})["revision"]
            said["redelivered"] = await a.call_tool("deliver_task", {**where, "summary": "Tax line.", **EVIDENCE,
                                                    "revision": revision})  # fmt: skip
            guarded = {**where, "note": "Right.", "revision": revision + 1, "idempotency_key": "accept-1"}
            said["accepted"] = await m.call_tool("accept_task", guarded)
            said["replayed"] = await m.call_tool("accept_task", guarded)
            said["stale"] = await m.call_tool("reopen_task", {**where, "revision": revision})
            said["reopened"] = await m.call_tool("reopen_task", {**where, "reason": "Wrong tax."})
        return said

    said = asyncio.run(story())
    made = said["made"].structured_content or {}
    assert not said["made"].is_error and (made["state"], made["runner"], made["attempt"]) == ("claimed", "agent-a", 1)
    number = made["issue"]
    assert text(said["made"]) == f"opened and claimed {scene.full_name}#{number} (revision {made['revision']})"
    assert (said["again"].structured_content or {})["issue"] == number  # the same key: no second issue
    assert not said["delivered"].is_error, text(said["delivered"])

    own = said["own"]
    assert own.is_error and (own.structured_content or {})["error"] == "forbidden" and "@agent-a" in text(own)
    back = said["sent_back"].structured_content or {}
    assert not said["sent_back"].is_error and (back["state"], back["attempt"]) == ("claimed", 2)
    assert text(said["sent_back"]).startswith(f"sent {scene.full_name}#{number} back to @agent-a (revision ")
    assert not said["redelivered"].is_error, text(said["redelivered"])
    accepted = said["accepted"].structured_content or {}
    assert not said["accepted"].is_error and accepted["state"] == "accepted", text(said["accepted"])
    assert said["replayed"].structured_content == accepted and text(said["replayed"]) == text(said["accepted"])
    stale = said["stale"]
    assert stale.is_error and (stale.structured_content or {})["error"] == "precondition_failed"
    assert f"revision={accepted['revision']}" in text(stale) and "rev=" not in text(stale)  # the tool's own words
    reopened = said["reopened"].structured_content or {}
    assert not said["reopened"].is_error and reopened["state"] == "open", text(said["reopened"])

    key = scene.key.__class__(scene.key.installation_id, scene.key.repository_id, number)
    history = [event.type for event in scene.app.state.work.history(key)]
    assert history == ["created", "claimed", "delivered", "sent_back", "delivered", "accepted", "reopened"]


def test_a_runner_releases_with_a_revision_and_a_key(scene: Scene, transport: str) -> None:
    where = {"repo": scene.full_name, "number": scene.number}
    revision = scene.app.state.work.ticket(scene.key).revision

    async def story(client: Client) -> list[CallToolResult]:
        claimed = await client.call_tool("claim_task", {**where, "revision": revision, "idempotency_key": "c-1"})
        stale = await client.call_tool("release_task", {**where, "revision": revision})
        released = await client.call_tool("release_task", {**where, "revision": revision + 1})
        replayed = await client.call_tool("claim_task", {**where, "revision": revision, "idempotency_key": "c-1"})
        return [claimed, stale, released, replayed]

    claimed, stale, released, replayed = run(scene.stage.baton_url, token(scene, "agent-a"), story, transport)
    assert not claimed.is_error and stale.is_error and not released.is_error, text(stale)
    assert (released.structured_content or {})["state"] == "open"
    assert replayed.structured_content == claimed.structured_content  # the first answer again, not a new claim
    assert scene.app.state.work.ticket(scene.key).state.value == "open"


def test_each_tasks_brief_is_a_resource_listed_for_the_repositories_named(scene: Scene, transport: str) -> None:
    url, agent = scene.stage.baton_url, token(scene, "agent-a")
    brief = "```yaml\ntask: Show totals in the footer.\nacceptance:\n  - the totals add up\n```\n"
    second = scene.person("olivia").open_issue(scene.full_name, "Totals in the footer", brief)
    scene.settle()

    async def story() -> tuple[Any, Any, Any, Any, str]:
        async with baton_mcp(url, agent, transport, repo=scene.full_name) as client:
            listed = await client.list_resources()
            templates = await client.list_resource_templates()
            read = await client.read_resource(f"baton://{scene.full_name}/issues/{second}")
            try:
                await client.read_resource(f"baton://{scene.full_name}/issues/99999")
            except Exception as error:  # the SDK raises the server's error
                unknown = str(error)
            else:
                unknown = ""
        async with baton_mcp(url, agent, transport) as bare:
            none = await bare.list_resources()
        async with baton_mcp(url, agent, transport, repo="octo/nowhere") as elsewhere:
            try:
                await elsewhere.list_resources()
            except Exception as error:
                unknown += f" | {error}"
        return listed, templates, read, none, unknown

    listed, templates, read, none, unknown = asyncio.run(story())
    uris = [str(resource.uri) for resource in listed.resources]
    assert uris == [f"baton://{scene.full_name}/issues/{scene.number}", f"baton://{scene.full_name}/issues/{second}"]
    assert [resource.title for resource in listed.resources] == ["Empty state for the cart", "Totals in the footer"]
    assert all(resource.mime_type == "application/json" for resource in listed.resources)
    assert [one.uri_template for one in templates.resource_templates] == ["baton://{owner}/{name}/issues/{number}"]
    shown = json.loads(read.contents[0].text)
    assert (shown["repository"], shown["issue"], shown["state"]) == (scene.full_name, second, "open")
    assert shown["brief"]["task"] == "Show totals in the footer."
    assert shown["brief"]["acceptance"] == ["the totals add up"]
    assert none.resources == []  # no repository named: nothing to list
    read_unknown, list_unknown = unknown.split(" | ")
    assert "99999" in read_unknown
    assert "cannot list octo/nowhere's tasks" in list_unknown  # a repository Baton does not serve: said, not empty


def test_a_maintainer_assigns_and_releases_someone_elses_claim(scene: Scene, transport: str) -> None:
    url, where = scene.stage.baton_url, {"repo": scene.full_name, "number": scene.number}
    agent, maria = token(scene, "agent-a"), token(scene, "maria", "maintain")
    token(scene, "agent-b")

    async def story() -> dict[str, CallToolResult]:
        said: dict[str, CallToolResult] = {}
        async with baton_mcp(url, agent, transport) as a, baton_mcp(url, maria, transport) as m:
            said["not_theirs"] = await a.call_tool("assign_task", {**where, "user": "agent-b"})
            said["assigned"] = await m.call_tool("assign_task", {**where, "user": "@agent-b", "idempotency_key": "a1"})
            said["taken"] = await a.call_tool("release_task", {**where, "user": "agent-b"})
            said["released"] = await m.call_tool("release_task", {**where, "user": "agent-b"})
        return said

    said = asyncio.run(story())
    assert said["not_theirs"].is_error and (said["not_theirs"].structured_content or {})["code"] == "not_permitted"
    assigned = said["assigned"].structured_content or {}
    assert not said["assigned"].is_error and (assigned["state"], assigned["runner"]) == ("claimed", "agent-b")
    assert text(said["assigned"]).startswith(f"assigned {scene.full_name}#{scene.number} to @agent-b (revision ")
    assert said["taken"].is_error and "@agent-b" in text(said["taken"])
    released = said["released"].structured_content or {}
    assert not said["released"].is_error and (released["state"], released["runner"]) == ("open", None)
    history = scene.app.state.work.history(scene.key)
    assert [event.type for event in history] == ["created", "assigned", "released"]
    assert history[-1].role == "repository_maintainer"
