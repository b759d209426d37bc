"""The composite action under deploy/github-action/: its declared inputs, outputs and steps, and its `baton` step's
script run as a runner runs it (bash, `-eo pipefail`), against Baton and the stand-in GitHub, which plays the
runner's token service (`Person.actions_job`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.standin_scene import Scene, opened

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "deploy" / "github-action" / "action.yml"
AUDIENCE = "https://baton.example.test"


def _action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return loaded


def _step(step_id: str) -> dict[str, Any]:
    [step] = [step for step in _action()["runs"]["steps"] if step.get("id") == step_id]
    return step


def test_the_action_declares_its_inputs_outputs_and_steps() -> None:
    action = _action()
    inputs = action["inputs"]
    assert set(inputs) == {"baton-url", "command", "args", "audience", "python-version"}
    assert inputs["baton-url"]["required"] and inputs["command"]["required"] and not inputs["args"]["required"]
    assert all(one.get("description") for one in inputs.values())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    ids = {step.get("id") for step in steps}
    outputs = action["outputs"]
    assert set(outputs) == {"issue", "revision", "exit-code"}
    for name, output in outputs.items():
        found = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", output["value"])
        assert found is not None and found.group(1) in ids and found.group(2) == name, output
    for step in steps:
        if "run" in step:
            assert step.get("shell") == "bash", step
            # inputs reach a script through its environment only: never pasted into the script's text
            assert "${{" not in step["run"], step["run"]
    assert any(step.get("uses", "").startswith("actions/setup-python@") for step in steps)
    # it installs the project it is part of: the repository two folders above it
    [install] = [step for step in steps if "pip install" in step.get("run", "")]
    assert '"$GITHUB_ACTION_PATH/../.."' in install["run"]
    project = tomllib.loads((ACTION.parent / ".." / ".." / "pyproject.toml").read_text())["project"]
    assert project["name"] == "baton-github" and "baton" in project["scripts"]
    script = _step("baton")
    assert script["env"]["BATON_URL"] == "${{ inputs.baton-url }}"
    assert "ACTIONS_ID_TOKEN_REQUEST_URL" in script["run"] and "&audience=" in script["run"]
    assert "::add-mask::" in script["run"]


@pytest.fixture
def scene(sqlite_url: str) -> Iterator[Scene]:
    # The action only relays what `baton` answers, which the agent API's tests hold on both engines.
    with opened(sqlite_url, oidc_audience=AUDIENCE) as made:
        made.settle()
        yield made


def _run(tmp_path: Path, job: dict[str, str], **given: str) -> tuple[int, dict[str, str], str]:
    """The `baton` step as a runner runs it, with the action's inputs `given`: its exit status, its outputs and
    what it printed."""
    step, declared = _step("baton"), _action()["inputs"]
    given = {"audience": AUDIENCE, **given}  # Baton's URL in the test is not known in advance
    inputs = {name: given.get(name, str(spec.get("default", ""))) for name, spec in declared.items()}
    env = {name: re.sub(r"\$\{\{ inputs\.([\w-]+) \}\}", lambda m: inputs[m.group(1)], value)
           for name, value in step["env"].items()}  # fmt: skip
    outputs = tmp_path / "outputs"
    outputs.write_text("")
    bin_ = str(Path(sys.executable).parent)  # where `baton` and `python` are
    base = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "GH_", "GITHUB_", "ACTIONS_"))}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env={
        **base, **job, **env, "PATH": f"{bin_}:{base.get('PATH', '')}", "GITHUB_OUTPUT": str(outputs),
        "RUNNER_TEMP": str(tmp_path)}, capture_output=True, text=True, timeout=120)  # fmt: skip
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)
    return done.returncode, said, done.stdout + done.stderr


def test_the_action_claims_with_the_runs_token_and_says_the_issue_revision_and_exit_code(
    scene: Scene, tmp_path: Path
) -> None:
    agent = scene.stage.person("agent-a", "write")
    job = agent.actions_job(scene.full_name, workflow="agent.yml", run_id=31)
    code, outputs, printed = _run(tmp_path, job, **{"baton-url": scene.stage.baton_url, "command": "claim",
                                                    "args": f"{scene.full_name}#{scene.number}"})  # fmt: skip
    assert code == 0, printed
    revision = scene.app.state.work.ticket(scene.key).revision
    assert outputs == {"issue": str(scene.number), "revision": str(revision), "exit-code": "0"}, printed
    claimed = scene.app.state.work.history(scene.key)[-1]
    assert (claimed.actor, claimed.data.get("via"), claimed.data.get("run_id")) == ("agent-a", "actions", "31")
    assert job["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] not in printed

    # Another run's claim is refused: the step goes on (exit-code 1), and the workflow decides.
    other = scene.stage.person("agent-b", "write").actions_job(scene.full_name, workflow="agent.yml")
    code, outputs, printed = _run(tmp_path, other, **{"baton-url": scene.stage.baton_url, "command": "claim",
                                                      "args": f"{scene.full_name}#{scene.number}"})  # fmt: skip
    assert code == 0 and outputs["exit-code"] == "1" and "@agent-a" in printed, printed

    # A delivery's arguments, quoted as a shell quotes them, arrive as they were written.
    args = f"{scene.full_name}#{scene.number} --summary 'The empty state, at last.' --branch {scene.number}-empty"
    code, outputs, printed = _run(tmp_path, job, **{"baton-url": scene.stage.baton_url, "command": "deliver",
                                                    "args": args})  # fmt: skip
    assert (code, outputs["exit-code"]) == (0, "0"), printed
    delivered = scene.app.state.work.history(scene.key)[-1]
    assert delivered.type == "delivered"
    assert delivered.data.get("workflow_ref") == f"{scene.full_name}/.github/workflows/agent.yml@refs/heads/main"


def test_the_action_without_id_token_permission_fails_saying_so(scene: Scene, tmp_path: Path) -> None:
    code, _, printed = _run(tmp_path, {}, **{"baton-url": scene.stage.baton_url, "command": "tasks",
                                             "args": scene.full_name})  # fmt: skip
    assert code == 2 and "id-token: write" in printed
