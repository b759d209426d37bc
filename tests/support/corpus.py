"""GitHub's example webhook payloads, from the npm package `@octokit/webhooks-examples` (test data only).

The package is pinned in `tests/package.json` / `tests/package-lock.json` and installed into
`tests/node_modules` by `npm ci --prefix tests` (the test session runs it when the folder is missing and npm is
there: tests/conftest.py); `BATON_CORPUS_DIR` names another folder holding the packages. Nothing of them is
copied into the repository. Its
`api.github.com/index.json` is one JSON array with an entry per event: `{"name", "description",
"actions", "properties", "examples": [payload, ...]}`.

Use `webhook_examples()` inside a test (or the `webhook_corpus` fixture): without the package the test
is skipped with the command that installs it, or fails when `BATON_REQUIRE_CORPUS=1` (as in CI). Use
`corpus_event_names()` to parametrize at collection time, and `corpus_installed()` to build anything else at
import time: neither skips or fails by itself, so every module imports and collects without the packages.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, NoReturn

import pytest

from github_standin.contract import corpus_root

PACKAGE = "@octokit/webhooks-examples"
INSTALL_COMMAND = "npm ci --prefix tests"


def corpus_file() -> Path:
    """The corpus's one JSON file, under `corpus_root()` (BATON_CORPUS_DIR, or tests/node_modules)."""
    return corpus_root() / PACKAGE / "api.github.com" / "index.json"


NOT_INSTALLED = "<corpus not installed>"  # the one parameter id used when the package is missing


@functools.cache
def _load() -> dict[str, list[dict[str, Any]]] | None:
    """Event name → its examples, read once per session; None if the package is not installed."""
    path = corpus_file()
    if not path.is_file():
        return None
    entries = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise TypeError(f"{path}: expected a JSON array of events, got {type(entries).__name__}")
    corpus: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        name, examples = entry.get("name"), entry.get("examples")
        if not isinstance(name, str) or not isinstance(examples, list):
            raise TypeError(f"{path}: an entry without a string `name` and a list of `examples`")
        if name in corpus:
            raise ValueError(f"{path}: the event {name!r} is listed twice")
        if not all(isinstance(example, dict) for example in examples):
            raise TypeError(f"{path}: an example of {name!r} is not a JSON object")
        corpus[name] = examples
    return corpus


def corpus_installed() -> bool:
    """Whether the webhook example corpus is there; never skips or fails (for use at import time)."""
    return _load() is not None


def missing(message: str) -> NoReturn:
    """Skip the test for want of an npm test package, or fail it when BATON_REQUIRE_CORPUS=1 (as in CI)."""
    if os.environ.get("BATON_REQUIRE_CORPUS") == "1":
        pytest.fail(f"{message} (BATON_REQUIRE_CORPUS=1 makes it mandatory)", pytrace=False)
    pytest.skip(message)


def webhook_examples() -> dict[str, list[dict[str, Any]]]:
    """Event name (as sent in `X-GitHub-Event`) → its example payloads. Skips or fails without the package.

    The payloads are shared between callers: copy one before changing it.
    """
    corpus = _load()
    if corpus is None:
        missing(f"the webhook example corpus ({PACKAGE}) is not installed: run `{INSTALL_COMMAND}`")
    return corpus


def corpus_event_names() -> list[str]:
    """The corpus's event names for `pytest.mark.parametrize`, or `[NOT_INSTALLED]` without the package.

    With the placeholder, the test still runs once and its call to `webhook_examples()` skips or fails
    with the install command, instead of the whole module vanishing from the run.
    """
    corpus = _load()
    return sorted(corpus) if corpus is not None else [NOT_INSTALLED]


@pytest.fixture
def webhook_corpus() -> dict[str, list[dict[str, Any]]]:
    """`webhook_examples()` as a fixture: import it into a test module (or a conftest) to use it."""
    return webhook_examples()
