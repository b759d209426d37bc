"""One description of each agent-facing verb (`baton.client.verbs.VERBS`) makes its route in the agent API (as
/openapi.json describes it), its `baton` subcommand and its MCP tool: each verb is a rule of the registry, and
the three take the same arguments, under the same names, with the same required ones."""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.types import Tool

from baton.cli.main import build_parser
from baton.client.mcp import build_server
from baton.client.verbs import LOGIN, VERBS, Verb
from baton.domain import RULES
from baton.environment.settings import Settings
from baton.web import create_app
from baton.web.agent_api import BODIES, command_of

ISSUE = "/api/v1/repos/{owner}/{repo}/issues/{number}/"
# What each subcommand and tool of a verb takes beside the verb's own arguments.
CLI_OWN = {"help", "json", "key", "rev", "issue"}
MCP_OWN = {"repo", "number", "revision", "idempotency_key"}


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The agent API's description, as Baton serves it at /openapi.json."""
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path_factory.mktemp('verbs') / 'baton.db'}"))
    try:
        described: dict[str, Any] = TestClient(app).get("/openapi.json").json()
        yield described
    finally:
        app.state.work.units.engine.dispose()


@pytest.fixture(scope="module")
def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    chosen: dict[str, argparse.ArgumentParser] = found.choices
    return chosen


@pytest.fixture(scope="module")
def tools() -> dict[str, Tool]:
    listed = asyncio.run(build_server(lambda _: nullcontext()).list_tools())  # lists only: no call reaches Baton
    return {tool.name: tool for tool in listed}


def test_every_verb_is_a_rule_of_the_registry_once() -> None:
    assert all(verb.name in RULES for verb in VERBS)
    for made in ([verb.name for verb in VERBS], [verb.tool for verb in VERBS], [verb.body for verb in VERBS]):
        assert len(set(made)) == len(made), made


def test_the_agent_api_serves_exactly_the_verbs_on_an_issue(spec: dict[str, Any]) -> None:
    served = {path.removeprefix(ISSUE) for path, methods in spec["paths"].items()
              if path.startswith(ISSUE) and "post" in methods}  # fmt: skip
    assert served == {verb.name for verb in VERBS}


@pytest.mark.parametrize("verb", VERBS, ids=lambda verb: verb.name)
def test_a_verbs_route_subcommand_and_tool_take_its_arguments(
    verb: Verb, spec: dict[str, Any], subcommands: dict[str, argparse.ArgumentParser], tools: dict[str, Tool]
) -> None:
    names = [argument.name for argument in verb.arguments]
    required = {argument.name for argument in verb.arguments if argument.required}

    operation = spec["paths"][ISSUE + verb.name]["post"]
    assert operation["summary"] == verb.summary
    assert operation["requestBody"].get("required", False) == verb.takes_body
    body = spec["components"]["schemas"][verb.body]
    assert list(body["properties"]) == names and set(body.get("required", [])) == required
    assert body["additionalProperties"] is False
    for argument in verb.arguments:
        assert body["properties"][argument.name]["description"] == argument.description

    subcommand = subcommands[verb.name]
    options = {action.dest: action for action in subcommand._actions if action.dest not in CLI_OWN}
    assert list(options) == names
    for argument in verb.arguments:
        action = options[argument.name]
        assert action.option_strings == ([argument.flag] if argument.flag else [])
        assert action.required == (argument.required or argument.flag is None)
    assert subcommand.get_default("run") is not None

    tool = tools[verb.tool]
    assert tool.description == verb.tool_about
    properties = tool.input_schema["properties"]
    assert set(properties) == MCP_OWN | set(names)
    assert set(tool.input_schema["required"]) - {"repo", "number"} == required
    for argument in verb.arguments:
        assert properties[argument.name]["description"] == argument.description
    assert tool.output_schema is not None and "revision" in tool.output_schema["properties"]


@pytest.mark.parametrize("verb", VERBS, ids=lambda verb: verb.name)
def test_a_verbs_body_makes_the_command_of_its_rule(verb: Verb) -> None:
    command, sent = command_of(verb.name, None if not verb.takes_body else _least_body(verb))
    assert command.name == verb.name and set(sent) <= {argument.name for argument in verb.arguments}


def _least_body(verb: Verb) -> Any:
    given = {argument.name: "agent-b" if argument.kind == LOGIN else "Done." for argument in verb.arguments
             if argument.required}  # fmt: skip
    return BODIES[verb.name].model_validate(given)


def test_the_mcp_server_says_every_verbs_tool() -> None:
    helped = build_parser()
    found = next(action for action in helped._actions if isinstance(action, argparse._SubParsersAction))
    described = found.choices["mcp"].description or ""
    assert all(re.search(rf"\b{verb.tool}\b", described) for verb in VERBS)
