"""The documentation stands on its own: nothing cites a document the repository does not hold or points to a
place outside it, every relative link in the Markdown docs reaches a file (and a heading, when it names one),
and every `docs/design.md §N` names a section that exists."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the checks cover: the sources, the tests, the docs and the files that ship or deploy Baton.
COVERED = ("src", "tests", "docs", "bench", "deploy", "README.md", "app.yml", "pyproject.toml", "CHANGELOG.md",
           "CONTRIBUTING.md", ".github", ".ci")  # fmt: skip
SKIPPED_DIRECTORIES = {"node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache"}

# Built from parts, so that this file does not hold the strings it looks for.
SECTION_SIGN = "\N{SECTION SIGN}"
FORBIDDEN = {
    "SPEC " + SECTION_SIGN: "cites a design document that is not in the repository",
    ".." + "/shared": "points to a directory outside the repository",
    "/" + "work/": "points to a path on a particular machine, outside the repository",
}

MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "deploy" / "README.md",
            ROOT / "CHANGELOG.md", ROOT / "CONTRIBUTING.md"]  # fmt: skip
DESIGN = ROOT / "docs" / "design.md"

_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CITATION = re.compile(r"design\.md\)?((?:\s*(?:,|and)?\s*" + SECTION_SIGN + r"\d+)+)")
_SECTION = re.compile(r"^## (\d+)\. ", re.MULTILINE)


@cache
def covered_files() -> tuple[Path, ...]:
    """The covered text files git tracks, and new ones it does not ignore; outside a git checkout, the covered
    files on disk."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *COVERED],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        paths = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for name in COVERED:
            top = ROOT / name
            paths.extend([top] if top.is_file() else (p for p in top.rglob("*") if p.is_file()))
    found = []
    for path in paths:
        relative = path.relative_to(ROOT)
        if SKIPPED_DIRECTORIES & set(relative.parts) or not path.is_file():
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # not text
        found.append(path)
    return tuple(sorted(found))


def _prose(markdown: str) -> str:
    """Markdown without its code blocks and code spans, where a bracket is not a link."""
    return _CODE_SPAN.sub("", _FENCE.sub("", markdown))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = _CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(heading) for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8")))}


def test_the_checks_cover_the_repository() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in covered_files()}
    assert {"README.md", "app.yml", "pyproject.toml", "docs/design.md", "src/baton/cli/main.py"} <= names
    assert Path(__file__).resolve() in covered_files()
    assert not any("node_modules" in name for name in names)


@pytest.mark.parametrize("needle", FORBIDDEN)
def test_no_file_cites_or_points_outside_the_repository(needle: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in covered_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if needle in line
    ]
    assert not found, f"{FORBIDDEN[needle]}; point to a file in the repository instead:\n" + "\n".join(found)


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_in_the_repository(page: Path) -> None:
    broken = []
    for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if _SCHEME.match(target):
            continue  # a web address
        name, _, fragment = target.partition("#")
        destination = (page.parent / name).resolve() if name else page
        if not destination.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading #{fragment} in {destination.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)} has broken links:\n" + "\n".join(broken)


def test_every_section_of_the_design_that_is_cited_exists() -> None:
    sections = {int(n) for n in _SECTION.findall(DESIGN.read_text(encoding="utf-8"))}
    assert sections == set(range(1, len(sections) + 1)), "docs/design.md's sections are numbered 1, 2, 3, …"
    cited = []
    for path in covered_files():
        text = path.read_text(encoding="utf-8")
        groups = [re.findall(r"\d+", group) for group in _CITATION.findall(text)]
        if path == DESIGN:
            groups.append(re.findall(SECTION_SIGN + r"(\d+)", text))  # its references to its own sections
        cited += [(path, int(n)) for group in groups for n in group]
    assert cited, "nothing cites docs/design.md"
    missing = sorted(f"{path.relative_to(ROOT)}: {SECTION_SIGN}{n}" for path, n in cited if n not in sections)
    assert not missing, "docs/design.md has no such section:\n" + "\n".join(missing)
