"""`baton config check [FILE]`: a `.github/baton.yml` read by the parser the App reads it with, through the real
command. Each problem is printed with its key and the command exits 1; a valid file prints the settings in force
(as a file that reads back the same, or as JSON) and exits 0. The sample docs/examples/baton.yml passes and
shows every key, each with a comment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from baton.reading.config import KEYS, ConfigError, effective, parse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "baton.yml"
BAD = """\
offer: labelled
max_active_claims: 0
colour: blue
stale_after: 2d
auto_release_after: 1d
required_evidence: {screenshot: 2, pr: 3}
priority_labels: {P0: urgent}
"""


def check(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    return subprocess.run([sys.executable, "-m", "baton.cli", "config", "check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_each_problem_is_printed_with_its_key_and_the_check_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "baton.yml"
    path.write_text(BAD)
    done = check(str(path))
    assert done.returncode == 1, done
    lines = done.stdout.splitlines()
    keys = [line.removeprefix(f"{path}: ").partition(":")[0] for line in lines]
    assert sorted(keys) == sorted(["offer", "max_active_claims", "colour", "auto_release_after", "required_evidence",
                                   "priority_labels"])  # fmt: skip
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    assert any("`offer` must be `all` or `labeled`, not 'labelled'" in line for line in lines), lines
    assert any("`required_evidence.pr` must be 1" in line for line in lines), lines
    assert done.stderr == ""


def test_the_problems_as_json(tmp_path: Path) -> None:
    path = tmp_path / "baton.yml"
    path.write_text(BAD)
    done = check("--json", str(path))
    assert done.returncode == 1, done
    said = json.loads(done.stdout)
    assert said["valid"] is False and said["file"] == str(path)
    with pytest.raises(ConfigError) as raised:
        parse(BAD)
    assert [p["problem"] for p in said["problems"]] == raised.value.problems
    assert {p["key"] for p in said["problems"]} == {"offer", "max_active_claims", "colour", "auto_release_after",
                                                    "required_evidence", "priority_labels"}  # fmt: skip


def test_a_file_that_is_not_yaml_is_one_problem_about_the_file(tmp_path: Path) -> None:
    path = tmp_path / "baton.yml"
    path.write_text("offer: [all\n")
    done = check("--json", str(path))
    assert done.returncode == 1
    [problem] = json.loads(done.stdout)["problems"]
    assert problem["key"] is None and "not valid YAML" in problem["problem"]
    assert check(str(path)).stdout.startswith(f"{path}: (file): the file is not valid YAML")


def test_a_valid_file_prints_the_settings_in_force_as_a_file_that_reads_back_the_same(tmp_path: Path) -> None:
    text = (
        "max_active_claims: 2\nrunners: [alice, '@org/agents', 'workflow:org/shop/.github/workflows/agent.yml']\n"
        "required_evidence: {tests: 1, screenshot: 2}\n"
    )
    path = tmp_path / "baton.yml"
    path.write_text(text)
    done = check(str(path))
    assert done.returncode == 0, done
    printed = yaml.safe_load(done.stdout)
    assert list(printed) == list(KEYS)  # every key, the defaults included
    assert printed["max_active_claims"] == 2 and printed["offer"] == "all" and printed["stale_after"] == "3d"
    assert parse(done.stdout) == parse(text)
    assert "workflow:org/shop/.github/workflows/agent.yml" in printed["runners"]


def test_the_settings_as_json_and_the_default_file(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "baton.yml").write_text("offer: labeled\nauto_release_after: 14d\nrunners: anyone\n")
    done = check("--json", cwd=tmp_path)
    assert done.returncode == 0, done
    said = json.loads(done.stdout)
    assert said["valid"] is True and said["file"] == ".github/baton.yml"
    assert said["settings"]["offer"] == "labeled" and said["settings"]["auto_release_after"] == "2w"
    assert said["settings"]["runners"] == "anyone" and said["settings"]["reviewers"] == []
    assert said["settings"] == effective(parse("offer: labeled\nauto_release_after: 14d\nrunners: anyone\n"))


def test_a_file_that_is_not_there_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = check(cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert re.fullmatch(r"baton: cannot read \.github/baton\.yml: [^\n]+\n", done.stderr), done.stderr


def test_the_effective_settings_name_every_key_in_order_and_read_back_equal() -> None:
    for text in ("", "runners: [b, a]\nrequired_evidence: [tests, branch]\nauto_release_after: 90m\nstale_after: 1h"):
        shown = effective(parse(text))
        assert tuple(shown) == KEYS
        assert parse(yaml.safe_dump(shown)) == parse(text)


def test_the_sample_file_passes_and_shows_every_key_with_a_comment() -> None:
    done = check(str(EXAMPLE.relative_to(ROOT)))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    for key in KEYS:
        [at] = [i for i, line in enumerate(lines) if line.startswith(f"{key}:")]
        assert at > 0 and lines[at - 1].startswith("# "), f"{key} has no comment above it"
    written = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    assert list(written) == list(KEYS)
