"""`baton demo` as a newcomer meets it: a real process, its printed lines pasted, and docs/agents.md's loops run as
written against it — the `baton` command's loop in a shell, the loop over HTTP (each `curl` made with httpx), and
a `/claim` comment posted to the stand-in GitHub with a printed token. The commands come from the page itself, so
the page and what the demo offers cannot part ways."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support import processes

AGENTS_MD = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def block_after(words: str) -> str:
    """The first fenced `sh` block of docs/agents.md after the line holding `words`."""
    text = AGENTS_MD.read_text()
    found = re.search(re.escape(words) + r".*?\n```sh\n(.*?)\n```", text, re.DOTALL)
    assert found is not None, f"docs/agents.md has no sh block after {words!r}"
    return found.group(1)


def commands(block: str) -> list[str]:
    """A shell block's commands: continuation lines joined, comments left out."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def expanded(word: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env[m.group(1)], word)


def curl(words: list[str], env: dict[str, str]) -> httpx.Response:
    """What `curl` does with these arguments (the few the page uses), done with httpx."""
    assert words[0] == "curl", words
    method, headers, data, url = "GET", {}, None, None
    args = iter(expanded(word, env) for word in words[1:])
    for arg in args:
        if arg == "-sS":
            continue
        if arg == "-X":
            method = next(args)
        elif arg == "-H":
            name, _, value = next(args).partition(":")
            headers[name.strip()] = value.strip()
        elif arg == "-d":
            data, method = next(args), "POST" if method == "GET" else method
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")  # as curl sends it
        else:
            assert url is None and not arg.startswith("-"), f"an argument this test cannot read: {arg}"
            url = arg
    assert url is not None, words
    return httpx.request(method, url, headers=headers, content=data, timeout=30)


def run_over_http(block: str, env: dict[str, str]) -> dict[str, Any]:
    """A block of `curl` commands, `> FILE` and `VAR=$(jq -r .FIELD FILE)` as a shell runs them; the files written."""
    files: dict[str, Any] = {}
    for command in commands(block):
        assigned = re.fullmatch(r"(\w+)=\$\(jq -r \.(\w+) (\S+)\)", command)
        if assigned is not None:
            env[assigned.group(1)] = str(files[assigned.group(3)][assigned.group(2)])
            continue
        words = shlex.split(command)
        into = words[words.index(">") + 1] if ">" in words else None
        answer = curl(words[: words.index(">")] if into else words, env)
        assert answer.status_code < 300, (command, answer.status_code, answer.text)
        if into is not None:
            files[into] = answer.json()
    return files


@pytest.fixture
def shell_tools() -> None:
    """docs/agents.md's CLI loop runs in bash with git and jq. Without them the test skips and says so;
    BATON_REQUIRE_SHELL_TOOLS=1 (as in CI, which installs them) makes it fail."""
    missing = [tool for tool in ("bash", "git", "jq") if shutil.which(tool) is None]
    if not missing:
        return
    reason = f"docs/agents.md's loops need {', '.join(missing)}, not found here (apt-get install {' '.join(missing)})"
    if os.environ.get("BATON_REQUIRE_SHELL_TOOLS") == "1":
        pytest.fail(f"{reason} (BATON_REQUIRE_SHELL_TOOLS=1 makes this test mandatory)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, dict[str, str]]]]:
    """`baton demo` running, and the variables of the line it printed for each person (by login)."""
    process = processes.demo(tmp_path)
    try:
        assert process.stdout is not None
        said, people = [], {}
        for line in process.stdout:
            said.append(line)
            printed = re.fullmatch(r"\s*(export .*?)\s+# @([\w-]+)\n", line)
            if printed is not None:
                people[printed.group(2)] = dict(word.split("=", 1) for word in shlex.split(printed.group(1))[1:])
            if line.startswith("then `baton tasks"):
                break
        else:
            raise AssertionError("".join(said))
        assert "Try it as an agent: octo/shop#4, #5, #6 are open." in "".join(said)
        assert set(people) == {"agent-a", "agent-b"}, "".join(said)
        yield process, people
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def ticket(env: dict[str, str], number: int) -> dict[str, Any]:
    answer = httpx.get(f"{env['BATON_URL']}/api/v1/repos/octo/shop/issues/{number}",
                       headers={"Authorization": f"Bearer {env['GITHUB_TOKEN']}"}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.mark.long
@pytest.mark.usefixtures("shell_tools")  # before the demo starts
def test_a_newcomer_works_the_demos_open_tasks_as_docs_agents_md_says(
    demo: tuple[subprocess.Popen[str], dict[str, dict[str, str]]], tmp_path: Path
) -> None:
    _, people = demo
    agent_a, agent_b = people["agent-a"], people["agent-b"]
    assert agent_a["BATON_URL"] == agent_b["BATON_URL"] and agent_a["GITHUB_TOKEN"] != agent_b["GITHUB_TOKEN"]

    # The stand-in takes the printed token as GitHub takes a person's own.
    me = httpx.get(f"{agent_a['GITHUB_API_URL']}/user", headers={"Authorization": f"Bearer {agent_a['GITHUB_TOKEN']}"})
    assert me.status_code == 200 and me.json()["login"] == "agent-a"

    # @agent-a pastes their line and runs the `baton` command's loop, as written, in a checkout of their own.
    work = tmp_path / "checkout"
    work.mkdir()
    git = ["git", "-c", "user.name=agent-a", "-c", "user.email=agent-a@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=work, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "Start"], cwd=work, check=True)
    shell_env = {**os.environ, **agent_a, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    loop = block_after("A loop an agent can copy")
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", loop], cwd=work, env=shell_env, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    listed = ran.stdout.splitlines()
    assert [line.split()[0] for line in listed[:3]] == ["octo/shop#4", "octo/shop#5", "octo/shop#6"], ran.stdout
    assert json.loads((work / "claimed.json").read_text())["issue"] == 4  # the highest priority
    assert "delivered octo/shop#4" in ran.stdout
    four = ticket(agent_a, 4)
    assert (four["state"], four["runner"]) == ("delivered", "agent-a")

    # @agent-b runs the loop over HTTP: the next task is the next one.
    files = run_over_http(block_after("The agent's loop over HTTP"), dict(agent_b))
    claimed = files["claimed.json"]
    assert claimed["issue"] == 5 and claimed["brief"]["task"] == "Sort invoices newest first"
    five = ticket(agent_b, 5)
    assert (five["state"], five["runner"]) == ("delivered", "agent-b")

    # @agent-b claims the last one by comment, posted to the stand-in's REST API; Baton hears it as a webhook.
    comment = commands(block_after("Where you would type `gh issue comment"))
    assert len(comment) == 1
    posted = curl(shlex.split(comment[0]), dict(agent_b))
    assert posted.status_code == 201 and posted.json()["user"]["login"] == "agent-b", posted.text
    deadline = time.monotonic() + 30
    while (six := ticket(agent_b, 6))["state"] != "claimed" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (six["state"], six["runner"]) == ("claimed", "agent-b")

    # A change only the App makes is refused to a person's token.
    labelled = httpx.post(f"{agent_b['GITHUB_API_URL']}/repos/octo/shop/issues/6/labels", json={"labels": ["x"]},
                          headers={"Authorization": f"Bearer {agent_b['GITHUB_TOKEN']}"})  # fmt: skip
    assert labelled.status_code == 403
