"""Validly signed webhook bodies GitHub would never send, and read API requests no client should, through the
real app on SQLite and PostgreSQL: never a 500, nothing stored for a refused body, and every accepted delivery
ends processed or ignored with its reason, never failed and never a ticket #0 or #-1.

`HOSTILE` is the corpus of bodies, named, each with the answer the rule in `baton.web.webhooks` gives it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import select

from baton.domain import Permission, WorkState
from baton.store import tables as t
from support.payloads import Repo
from support.read_api import AUTH, TOKEN
from support.webhook_hub import (
    INSTALLATION,
    REPOSITORY,
    REPOSITORY_ID,
    FakeDirectory,
    Hub,
    comment,
    open_hub,
    settings,
)

pytestmark = [pytest.mark.faults, pytest.mark.both_engines]  # both: what each database refuses to store

DELIVERY = "hostile-1"


def _changed(payload: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`payload` with the dotted paths in `changes` set ("issue.number": 0)."""
    for path, value in changes.items():
        *parents, last = path.split(".")
        place = payload
        for key in parents:
            place = place[key]
        place[last] = value
    return payload


def _claim(comment_id: int = 11, **changes: Any) -> dict[str, Any]:
    """A `/claim` on issue 42, changed."""
    return _changed(comment("agent-a", "/claim", comment_id=comment_id), **changes)


def _evidence(payload: dict[str, Any], **changes: Any) -> bytes:
    """An evidence delivery (`payloads.Repo` builds them), changed."""
    return json.dumps(_changed(payload, **changes)).encode()


SHOP = Repo(INSTALLATION, REPOSITORY_ID, REPOSITORY)


def _json(**changes: Any) -> bytes:
    return json.dumps(_claim(**changes)).encode()  # NUL and other control characters as \u escapes


@dataclass(frozen=True)
class Hostile:
    """A validly signed body GitHub never sends: mostly an `issue_comment` carrying `/claim` on #42, changed.
    `ends`: None when it is refused (400, nothing stored); otherwise it is answered 202 and its delivery ends
    `done` (processed) or `ignored` with a reason that names `reason`."""

    name: str
    body: bytes
    ends: str | None
    reason: str | None = None
    tickets: tuple[int, ...] = ()  # the tickets its `/claim` makes, when it is processed
    event: str = "issue_comment"

    def __str__(self) -> str:
        return self.name


_NESTED = b'{"action": "created", "deep": ' + b"[" * 100_000

HOSTILE: list[Hostile] = [
    # not UTF-8 JSON: GitHub sends nothing else
    Hostile("utf-16", json.dumps(_claim()).encode("utf-16"), ends=None),
    Hostile("utf-16-le-without-bom", json.dumps(_claim()).encode("utf-16-le"), ends=None),
    Hostile("utf-32", json.dumps(_claim()).encode("utf-32"), ends=None),
    Hostile("utf-32-be-without-bom", json.dumps(_claim()).encode("utf-32-be"), ends=None),
    Hostile("latin-1", json.dumps(_claim(**{"sender.login": "agént"}), ensure_ascii=False).encode("latin-1"),
            ends=None),
    Hostile("nested-100000", _NESTED + b"]" * 100_000 + b"}", ends=None),
    Hostile("nested-100000-unclosed", _NESTED, ends=None),
    Hostile("integer-5000-digits", b'{"action": "created", "n": ' + b"7" * 5000 + b"}", ends=None),
    # what the webhook endpoint stores itself, and could not store
    Hostile("installation-id-2^63", _json(**{"installation.id": 2**63}), ends=None),
    Hostile("installation-id-2^70", _json(**{"installation.id": 2**70}), ends=None),
    Hostile("installation-id-0", _json(**{"installation.id": 0}), ends=None),
    Hostile("installation-id-negative", _json(**{"installation.id": -1}), ends=None),
    Hostile("action-with-nul", _json(action="created\u0000"), ends=None),
    Hostile("action-61", _json(action="c" * 61), ends=None),
    # accepted, and then ignored with the reason: values GitHub never sends, in a delivery it stored
    Hostile("issue-number-2^31", _json(**{"issue.number": 2**31}), ends="ignored", reason="issue.number"),
    Hostile("issue-number-2^63", _json(**{"issue.number": 2**63}), ends="ignored", reason="issue.number"),
    Hostile("issue-number-0", _json(**{"issue.number": 0}), ends="ignored", reason="issue.number"),
    Hostile("issue-number-negative", _json(**{"issue.number": -1}), ends="ignored", reason="issue.number"),
    Hostile("repository-id-2^64", _json(**{"repository.id": 2**64}), ends="ignored", reason="repository.id"),
    Hostile("repository-id-0", _json(**{"repository.id": 0}), ends="ignored", reason="repository.id"),
    Hostile("comment-id-2^70", _json(**{"comment.id": 2**70}), ends="ignored", reason="comment.id"),
    Hostile("full-name-201", _json(**{"repository.full_name": "octo/" + "s" * 196}), ends="ignored",
            reason="repository.full_name"),
    Hostile("full-name-141", _json(**{"repository.full_name": "o" * 40 + "/" + "s" * 100}), ends="ignored",
            reason="repository.full_name"),
    Hostile("full-name-with-nul", _json(**{"repository.full_name": "octo/sh\u0000op"}), ends="ignored",
            reason="repository.full_name"),
    Hostile("sender-login-101", _json(**{"sender.login": "a" * 101}), ends="ignored", reason="sender.login"),
    Hostile("sender-login-with-nul", _json(**{"sender.login": "agent\u0000a"}), ends="ignored",
            reason="sender.login"),
    Hostile("issue-author-login-101", _json(**{"issue.user.login": "o" * 101}), ends="ignored",
            reason="issue.user.login"),
    # evidence: branch names and commit ids go into indexed columns
    Hostile("push-branch-300", _evidence(SHOP.push(branch="42-" + "x" * 300)), ends="ignored",
            reason="ref", event="push"),
    Hostile("push-branch-with-nul", _evidence(SHOP.push(branch="42-a\u0000b")), ends="ignored",
            reason="ref", event="push"),
    Hostile("push-sha-1000", _evidence(SHOP.push(sha="a" * 1000)), ends="ignored", reason="after",
            event="push"),
    Hostile("pull-request-head-ref-300", _evidence(SHOP.pull_request("opened", ref="4" * 300)),
            ends="ignored", reason="head.ref", event="pull_request"),
    Hostile("pull-request-head-sha-1000", _evidence(SHOP.pull_request("opened", sha="b" * 1000)),
            ends="ignored", reason="head.sha", event="pull_request"),
    Hostile("pull-request-number-2^31", _evidence(SHOP.pull_request("opened", number=2**31)),
            ends="ignored", reason="number", event="pull_request"),
    Hostile("check-run-sha-1000", _evidence(SHOP.check_run(sha="c" * 1000)), ends="ignored",
            reason="head_sha", event="check_run"),
    Hostile("deployment-id-2^63", _evidence(SHOP.deployment(ident=2**63)), ends="ignored",
            reason="id", event="deployment"),
    Hostile("evidence-repository-id-2^64", _evidence(SHOP.push(), **{"repository.id": 2**64}),
            ends="ignored", reason="repository.id", event="push"),
    Hostile("longest-branch", _evidence(SHOP.push(branch="42-" + "x" * 250)), ends="done", event="push"),
    # read leniently, as ever: a value of another type is absent, and there is nothing to do
    Hostile("issue-number-as-text", _json(**{"issue.number": "42"}), ends="done"),
    Hostile("issue-number-as-float", _json(**{"issue.number": 42.0}), ends="done"),
    Hostile("installation-id-as-text", _json(**{"installation.id": "99"}), ends="done"),
    # RFC 8259 lets a parser ignore a UTF-8 byte order mark: Baton does, and processes the delivery
    Hostile("utf-8-bom", b"\xef\xbb\xbf" + _json(), ends="done", tickets=(42,)),
    # the longest a login and a repository's name are on GitHub: processed
    Hostile("longest-names", _json(**{"sender.login": "a" * 39, "comment.user.login": "a" * 39,
                                      "repository.full_name": "o" * 39 + "/" + "s" * 100}), ends="done",
            tickets=(42,)),
    Hostile("largest-ids", _json(**{"installation.id": 2**63 - 1, "repository.id": 2**63 - 1,
                                    "comment.id": 2**63 - 1, "issue.number": 2**31 - 1}), ends="done",
            tickets=(2**31 - 1,)),
]  # fmt: skip


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    """The real app; a server error is answered 500 instead of being raised into the test."""
    directory = FakeDirectory({"maria": Permission.MAINTAIN})
    with open_hub(settings(database_url, token=TOKEN), directory, raise_server_exceptions=False) as made:
        yield made


def _ticket_numbers(hub: Hub) -> list[int]:
    with hub.app.state.work.units.engine.connect() as connection:
        return sorted(connection.execute(select(t.tickets.c.number)).scalars())


REFUSED = [case for case in HOSTILE if case.ends is None]
ACCEPTED = [case for case in HOSTILE if case.ends is not None]


@pytest.mark.parametrize("case", REFUSED, ids=str)
def test_a_body_github_never_sends_that_could_not_be_stored_is_refused_and_nothing_is_stored(
    hub: Hub, case: Hostile
) -> None:
    response = hub.post(case.event, case.body, hook=DELIVERY)
    assert response.status_code == 400, response.text
    assert response.json()["detail"]
    assert hub.count(t.webhook_deliveries) == 0
    assert hub.count(t.tickets) == 0

    # and the next delivery is taken as ever
    assert hub.post("issue_comment", _claim(), hook="after").status_code == 202
    assert hub.inbox("after") == ("done", 1, None)
    assert hub.ticket(42).state is WorkState.CLAIMED


@pytest.mark.parametrize("case", ACCEPTED, ids=str)
def test_an_accepted_delivery_github_never_sends_is_processed_or_ignored_with_its_reason_never_failed(
    hub: Hub, case: Hostile
) -> None:
    response = hub.post(case.event, case.body, hook=DELIVERY)
    assert response.status_code == 202, response.text
    state, attempts, error = hub.inbox(DELIVERY)
    assert (state, attempts) == (case.ends, 1), error
    if case.reason is None:
        assert error is None
    else:
        assert error is not None and error.startswith("Unreadable: ") and case.reason in error, error
    assert _ticket_numbers(hub) == list(case.tickets)

    # nothing of it is left to fail later: a redelivery is a duplicate, and the next delivery is taken as ever
    assert hub.post(case.event, case.body, hook=DELIVERY).json()["received"] == "duplicate"
    assert hub.post("issue_comment", _claim(comment_id=12), hook="after").status_code == 202
    assert hub.inbox("after") == ("done", 1, None)
    assert 42 in _ticket_numbers(hub) and min(_ticket_numbers(hub)) >= 1


HOSTILE_READS = [
    "/api/v1/repos/octo/shop/issues/2147483648",
    f"/api/v1/repos/octo/shop/issues/{2**63}",
    f"/api/v1/repos/octo/shop/issues/{10**30}",
    "/api/v1/repos/octo/shop/issues/0",
    "/api/v1/repos/octo/shop/issues/2147483648/events",
    f"/api/v1/repos/octo/shop/issues/{2**63}/events",
    f"/api/v1/repos/octo/shop/issues/{10**30}/events",
    "/api/v1/repos/a%00b/shop/issues/42",
    "/api/v1/repos/octo/a%00b/issues/42",
    "/api/v1/repos/octo/a%00b/issues/42/events",
    "/api/v1/tickets?repo=a%00b",
    "/api/v1/tickets?repo=octo/a%00b",
    "/api/v1/tickets?runner=a%00b",
]


@pytest.mark.parametrize("path", HOSTILE_READS)
def test_the_read_api_answers_impossible_numbers_and_nul_characters_with_its_usual_errors(hub: Hub, path: str) -> None:
    hub.post("issue_comment", _claim(), hook="d-1")  # a ticket to find: the database is in use
    response = hub.client.get(path, headers=AUTH)
    assert response.status_code == 422, response.text
    problems = response.json()["detail"]
    assert isinstance(problems, list) and problems[0]["msg"]

    assert hub.client.get("/api/v1/repos/octo/shop/issues/42", headers=AUTH).status_code == 200
