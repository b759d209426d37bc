"""GitHub's example payloads with fields replaced by extreme values, through the real app, on both engines.

Each example is signed as GitHub signs it, so it passes every check a forger would fail; then some of its
fields (the ones Baton reads most among them) are replaced by values GitHub never sends: ids past 64 bits,
negative and zero numbers, very long strings, NUL and other control characters, a byte-order mark, wrong
types, empty objects, or the field removed. Whatever the mix, Baton must answer 202 (stored, and then
decided or ignored, in one attempt) or 400 (nothing stored), never 500; and it never keeps a ticket whose
number GitHub could not have given.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from sqlalchemy import select

from baton.domain import Permission
from baton.environment.settings import Settings
from baton.github.webhooks import signature
from baton.store import tables as t
from baton.web import create_app
from support.corpus import corpus_installed, webhook_examples
from support.webhook_hub import SECRET, FakeDirectory

pytestmark = pytest.mark.both_engines  # by default on both databases: what each database refuses to store

# The fields Baton reads first: where a delivery happened, who sent it, what it says.
READ_FIRST = (
    ("installation", "id"), ("repository", "id"), ("repository", "full_name"), ("repository", "name"),
    ("repository", "owner", "login"), ("sender", "login"), ("sender", "type"), ("issue", "number"),
    ("issue", "id"), ("issue", "body"), ("issue", "user", "login"), ("comment", "id"), ("comment", "body"),
    ("comment", "user", "login"), ("pull_request", "number"), ("pull_request", "head", "ref"),
    ("pull_request", "head", "sha"), ("action",),
)  # fmt: skip
EXTREMES: list[Any] = [
    2**31, 2**63 - 1, 2**63, 2**64, 2**70, -(2**63) - 1, -1, 0, 10**30, 1.5, 1e308, -0.0, True, False, None,
    "", " ", "x" * 300, "y" * 70_000, "a\u0000b", "\u0000", "\ufeff/claim", "/claim\u0000", "\x1b[31m", "‮/claim",
    "😀" * 50, "/claim\n" * 50, "<pre>\n/claim\n</pre>", "../../etc/passwd", "a%00b", [], {}, [[[[[]]]]], {"id": 1},
    ["/claim"],
]  # fmt: skip


def _examples() -> list[tuple[str, dict[str, Any]]]:
    """Every example, and for each one that carries text Baton reads commands from, a copy saying /claim
    from an installation, so that the mutations reach deciding too."""
    found: list[tuple[str, dict[str, Any]]] = []
    for event, examples in sorted(webhook_examples().items()):
        for example in examples:
            found.append((event, example))
            if event in ("issue_comment", "issues") and isinstance(example.get(event.removesuffix("s")), dict):
                claiming = copy.deepcopy(example)
                claiming[event.removesuffix("s")]["body"] = "/claim"
                claiming.setdefault("installation", {"id": 4242})
                found.append((event, claiming))
    return found


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into the payload, containers included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:3]):
            yield (*prefix, index)
            yield from _paths(value, (*prefix, index))


def _replace(payload: Any, path: tuple[Any, ...], value: Any, remove: bool) -> None:
    parent = payload
    for step in path[:-1]:
        if (isinstance(parent, dict) and step in parent) or (
            isinstance(parent, list) and isinstance(step, int) and step < len(parent)
        ):
            parent = parent[step]
        else:
            return
    last = path[-1]
    if isinstance(parent, dict):
        if remove:
            parent.pop(last, None)
        else:
            parent[last] = value
    elif isinstance(parent, list) and isinstance(last, int) and last < len(parent) and not remove:
        parent[last] = value


@st.composite
def hostile(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    event, example = draw(st.sampled_from(EXAMPLES))
    payload = copy.deepcopy(example)
    anywhere = list(_paths(example))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(READ_FIRST) | st.sampled_from(anywhere)) if anywhere else READ_FIRST[0]
        remove = draw(st.integers(0, 9)) == 0
        # a copy: a value put in twice must not become part of itself, nor change EXTREMES for later cases
        _replace(payload, path, copy.deepcopy(draw(st.sampled_from(EXTREMES))), remove)
    return event, payload


# Built at import only when the corpus is there; without it the tests skip through their `examples` fixture.
EXAMPLES = _examples() if corpus_installed() else []
DELIVERIES = itertools.count()


@pytest.fixture
def examples() -> list[tuple[str, dict[str, Any]]]:
    """EXAMPLES, or a skip (a failure under BATON_REQUIRE_CORPUS=1) that names the install command."""
    webhook_examples()
    return EXAMPLES


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    settings_ = Settings(database_url=database_url, webhook_secret=SecretStr(SECRET))
    app = create_app(settings_, directory=FakeDirectory({"octocat": Permission.MAINTAIN}), lanes=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client
    app.state.work.units.engine.dispose()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=hostile())
def test_extreme_values_in_real_payloads_never_answer_500_and_never_fail_later(
    examples: list[tuple[str, dict[str, Any]]], client: TestClient, case: tuple[str, dict[str, Any]]
) -> None:
    event, payload = case
    delivery = f"hostile-{next(DELIVERIES)}"
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
    response = client.post("/webhooks/github", content=body, headers={
        "X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
        "X-Hub-Signature-256": signature(SECRET.encode(), body),
    })  # fmt: skip
    assert response.status_code in (202, 400), (response.status_code, response.text)
    engine = client.app.state.work.units.engine  # type: ignore[attr-defined]
    c = t.webhook_deliveries.c
    with engine.connect() as connection:
        stored = connection.execute(select(c.status, c.attempts, c.error).where(c.id == delivery)).one_or_none()
        numbers = [n for (n,) in connection.execute(select(t.tickets.c.number))]
    if response.status_code == 400:
        assert stored is None, "a refused delivery must leave nothing stored"
    else:
        assert stored is not None and stored.status in ("done", "ignored"), stored
        assert stored.attempts == 1, stored
    assert all(n > 0 for n in numbers), numbers


@pytest.mark.parametrize("value", [2_147_483_648, "README.md", None, {"path": ".github/baton.yml"}])
def test_a_push_whose_file_lists_are_not_lists_is_decided(
    examples: list[tuple[str, dict[str, Any]]], client: TestClient, value: Any
) -> None:
    """A push to the default branch is read for a changed `.github/baton.yml`; a commit's `added`,
    `modified` or `removed` that is not a list of paths is no such change, and no failure."""
    pushes = [p for e, p in examples if e == "push" and p["ref"] == f"refs/heads/{p['repository']['default_branch']}"]
    assert pushes, "the corpus has no push to a default branch: has its layout changed?"
    for kind in ("added", "modified", "removed"):
        payload = copy.deepcopy(pushes[0])
        payload["commits"][0][kind] = value
        delivery = f"push-{kind}-{next(DELIVERIES)}"
        body = json.dumps(payload).encode()
        response = client.post("/webhooks/github", content=body, headers={
            "X-GitHub-Event": "push", "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
            "X-Hub-Signature-256": signature(SECRET.encode(), body),
        })  # fmt: skip
        assert response.status_code == 202, response.text
        c = t.webhook_deliveries.c
        with client.app.state.work.units.engine.connect() as connection:  # type: ignore[attr-defined]
            stored = connection.execute(select(c.status, c.error).where(c.id == delivery)).one()
        assert stored.status in ("done", "ignored"), (kind, stored)
