"""Baton's distribution, `baton-github`, as it is built for the index and for the image; and the files people
look for in a project (the licence, the changelog, how to contribute, the CI workflow).

The sdist and the wheel are built from what is committed (`git archive HEAD`), cut down to what the image's build
context keeps (deploy/Dockerfile, .dockerignore), with `python -m build` (no isolation: the `test` extra brings the
build backend, so it needs no network). The wheel must carry the files Baton reads at run time (app.yml, the
board's templates, the migrations) as real files, and `baton setup`, run from the installed wheel alone, must
answer its page.
"""

from __future__ import annotations

import html
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tomllib
import urllib.parse
import zipfile
from collections.abc import Iterator
from email.parser import HeaderParser
from pathlib import Path

import pytest
import yaml

from support.local_http import HTTP

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "baton"
DISTRIBUTION = "baton-github"


def test_the_packaged_app_yml_is_a_file_identical_to_the_top_level_one() -> None:
    """`baton setup` reads app.yml from the package; the repository shows it at the top. One is a copy of the other
    (a symlink would reach neither the sdist's wheel nor the image)."""
    packaged = PACKAGE / "app.yml"
    assert not packaged.is_symlink(), "src/baton/app.yml must be a file, not a symlink"
    assert packaged.read_bytes() == (ROOT / "app.yml").read_bytes(), (
        "src/baton/app.yml differs from app.yml: copy app.yml over it"
    )


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, timeout=60, check=False)


def test_no_symlink_is_committed_under_src() -> None:
    listed = _git("ls-files", "-s", "src")
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.decode().strip()}")
    links = [line.split("\t", 1)[1] for line in listed.stdout.decode().splitlines() if line.startswith("120000 ")]
    assert links == [], f"symlinks under src/ reach no wheel: {links}"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(sdist, wheel) built from `git archive HEAD`, keeping only the image's build context, with no warning."""
    folder = tmp_path_factory.mktemp("packaging")
    archive = _git("archive", "--format=tar", "HEAD")
    if archive.returncode != 0:
        pytest.skip(f"not a git checkout: {archive.stderr.decode().strip()}")
    source = folder / "source"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(source, filter="data")
    kept = {
        line[1:].strip().rstrip("/")
        for line in (source / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.startswith("!")
    }
    for entry in source.iterdir():
        if entry.name not in kept:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    dist = folder / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr  # e.g. a deprecated license table
    [sdist] = dist.glob("*.tar.gz")
    [wheel] = dist.glob("*.whl")
    yield sdist, wheel


def test_the_wheel_holds_app_yml_the_templates_and_the_migrations_as_files(built: tuple[Path, Path]) -> None:
    sdist, wheel = built
    assert wheel.name.startswith("baton_github-0.1.0-py3-none-any"), wheel.name
    with zipfile.ZipFile(wheel) as zipped:
        names = set(zipped.namelist())
        links = [info.filename for info in zipped.infolist() if stat.S_ISLNK(info.external_attr >> 16)]
        assert links == [], links
        assert zipped.read("baton/app.yml") == (ROOT / "app.yml").read_bytes()
        [metadata_name] = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = HeaderParser().parsestr(zipped.read(metadata_name).decode())
        [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        scripts = zipped.read(entry_points).decode()
        assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names), sorted(names)
    # Every file committed under src/baton, the Python modules and the data Baton reads at run time alike.
    committed = _git("ls-files", "src/baton").stdout.decode().split()
    expected = {f"baton/{Path(path).relative_to('src/baton').as_posix()}" for path in committed}
    assert {"baton/app.yml", "baton/store/migrations/script.py.mako", "baton/py.typed"} <= expected
    assert len([n for n in expected if n.startswith("baton/web/templates/")]) > 3
    assert len([n for n in expected if n.startswith("baton/store/migrations/versions/")]) > 10
    assert expected <= names, sorted(expected - names)
    assert metadata["Name"] == DISTRIBUTION
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert re.search(r"^baton = baton\.cli:main$", scripts, re.MULTILINE), scripts
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
    assert [m.name for m in members if m.issym() or m.islnk()] == []
    assert any(m.name.endswith("/src/baton/app.yml") and m.isfile() for m in members)
    assert any(m.name.endswith("/LICENSE") for m in members)


def test_baton_setup_answers_its_page_from_the_installed_wheel(built: tuple[Path, Path], tmp_path: Path) -> None:
    """The wheel installed on its own (its dependencies are this environment's), away from the source tree:
    `baton setup` serves the page that registers the App, which reads app.yml from the installed package."""
    _, wheel = built
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target", str(site),
         str(wheel)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    work = tmp_path / "work"
    work.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("BATON_")}
    env["PYTHONPATH"] = str(site)
    where = subprocess.run(
        [sys.executable, "-c", "import baton; print(baton.__file__)"],
        cwd=work, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(site), where.stdout
    version = subprocess.run(
        [sys.executable, "-m", "baton.cli", "--version"], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )  # fmt: skip
    assert version.stdout.strip() == "baton 0.1.0", (version.stdout, version.stderr)
    command = [sys.executable, "-m", "baton.cli", "setup", "--url", "https://baton.example.org", "--port", "0",
               "--env-file", str(work / ".env"), "--key-file", str(work / "app.pem")]  # fmt: skip
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.search(r"open (http://127\.0\.0\.1:\d+/) in a browser", first)
        assert found is not None, (first, process.stderr.read() if process.poll() is not None else "")
        page = HTTP.get(found.group(1))
        assert page.status_code == 200, page.text[:500]
        assert "https://baton.example.org/webhooks/github" in html.unescape(page.text)  # app.yml's manifest, filled in
    finally:
        process.terminate()
        process.communicate(timeout=30)


# --- the files people look for ----------------------------------------------------------------------------------


def test_the_license_is_mit_as_the_metadata_says() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 The Baton authors\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION and project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert project["scripts"] == {"baton": "baton.cli:main"}


def test_the_changelog_has_an_entry_for_this_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "[Keep a Changelog]" in text and "## [Unreleased]" in text
    entries = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", text, re.MULTILINE)
    assert entries and entries[0][0] == version, entries  # the newest entry is the version being built
    assert re.search(r"^### (Added|Changed|Deprecated|Removed|Fixed|Security)$", text, re.MULTILINE)


def test_contributing_covers_setup_tests_benches_layout_and_proposing_a_change() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings == ["Set-up", "Tests", "Benchmarks", "Layout", "Proposing a change"]
    assert "pip install -e '.[test]'" in text and ".ci/run" in text


def test_the_github_workflow_runs_ci_run_with_postgresql_chromium_and_npm() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))
    assert {"push", "pull_request"} <= set(workflow[True])  # YAML reads the key `on` as true
    [job] = workflow["jobs"].values()
    assert job["services"]["postgres"]["image"] == "postgres:15"
    runs = "\n".join(step.get("run", "") for step in job["steps"])
    assert "bash .ci/run" in runs
    assert all(package in runs for package in ("nodejs", "npm", "chromium", "postgresql-client")), runs
    url = urllib.parse.urlsplit(job["env"]["BATON_TEST_POSTGRES_URL"])
    assert url.hostname == "postgres" and url.port == 5432 and url.path == "/test"  # the service, by its name
    assert job["services"]["postgres"]["env"]["POSTGRES_DB"] == "test"
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for step in (
        "ruff check .",
        "ruff format --check .",
        "mypy",
        "npm ci --prefix tests",
        "BATON_REQUIRE_CORPUS=1",
        "BATON_REQUIRE_POSTGRES=1",
        "BATON_REQUIRE_BROWSER=1",
        "BATON_CORPUS_DIR=",
        "\npytest\n",
    ):
        assert step in script, step
