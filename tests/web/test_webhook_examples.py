"""GitHub's own example payloads (`@octokit/webhooks-examples`) through the real app, on both engines.

Every example of every event must be answered 202 and end `done` or `ignored` in the inbox, never
`failed`; the routed ones must create tickets only from real command lines; a replay of everything
with the same delivery ids must be recognised as duplicates and change nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from baton.domain import Permission, TicketKey, WorkState
from baton.github.webhooks import dig, number, text
from baton.intake import HANDLERS
from baton.reading.commands import parse
from baton.store import tables as t
from support.corpus import corpus_event_names, webhook_examples
from support.webhook_hub import FakeDirectory, Hub, open_hub, settings

# The events Baton acts on today, and where each keeps the text its commands are read from.
COMMAND_TEXT: dict[tuple[str, str], tuple[str, str]] = {
    ("issue_comment", "created"): ("comment", "body"),
    ("issues", "opened"): ("issue", "body"),
}
ROUTED_INSTALLATION = 4242  # for the /claim variants of examples sent without an installation
CLAIM_IDS = 9_000_000_000  # comment and issue ids of the /claim variants, far from the corpus's own


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    directory = FakeDirectory({"octocat": Permission.MAINTAIN})  # one login maintains, everyone else reads
    with open_hub(settings(database_url, credentials=False), directory, utf8=True) as made:
        yield made


def _key(event: str, example: dict[str, Any]) -> tuple[str, str]:
    action = example.get("action")
    return event, action if isinstance(action, str) else ""


def _routed() -> list[tuple[str, int, dict[str, Any]]]:
    """(event, index, example) for every example of an event and action Baton acts on."""
    found = [
        (event, index, example)
        for event, examples in sorted(webhook_examples().items())
        for index, example in enumerate(examples)
        if _key(event, example) in COMMAND_TEXT
    ]
    assert found, f"the corpus has no example of {sorted(COMMAND_TEXT)}: has its layout changed?"
    return found


def _with_claim(event: str, index: int, example: dict[str, Any]) -> dict[str, Any]:
    """The example with a `/claim` line added to its command text, as a delivery of its own to the App.

    The corpus repeats one comment (and one issue) across examples, ids included, while GitHub's ids are
    unique and Baton keys its operations by them: each variant gets an id of its own, and an installation
    where the example has none (a GitHub App's deliveries always carry one).
    """
    payload = copy.deepcopy(example)
    where, key = COMMAND_TEXT[_key(event, example)]
    payload[where][key] = (text(payload, where, key) + "\n\n/claim").lstrip()
    payload[where]["id"] = CLAIM_IDS + 1000 * sorted(COMMAND_TEXT).index(_key(event, example)) + index
    if number(payload, "installation", "id") is None:
        payload["installation"] = {"id": ROUTED_INSTALLATION}
    return payload


def _failures(hub: Hub, sent: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """What went wrong for each (event, delivery, payload) sent, as readable lines; empty when all is well."""
    problems = []
    for event, delivery, payload in sent:
        status, attempts, error = hub.inbox(delivery)
        expected = "done" if _key(event, payload) in HANDLERS else "ignored"
        if (status, attempts, error) != (expected, 1, None):
            problems.append(
                f"{delivery} ({event}, action={payload.get('action')!r}): {status} after {attempts} attempt(s), "
                f"expected {expected}; error: {error}"
            )
    return problems


@pytest.mark.parametrize("event", corpus_event_names())
def test_every_example_is_answered_202_and_processed_without_failure(hub: Hub, event: str) -> None:
    examples = webhook_examples()[event]
    sent = []
    for index, example in enumerate(examples):
        delivery = f"{event}-{index}"
        response = hub.post(event, example, delivery)
        assert response.status_code == 202, f"{delivery}: {response.status_code} {response.text}"
        assert response.json() == {"delivery": delivery, "received": "new"}
        sent.append((event, delivery, example))
    problems = _failures(hub, sent)
    assert not problems, "\n".join(problems)


def test_routed_examples_create_tickets_only_from_real_command_lines(hub: Hub) -> None:
    for event, index, example in _routed():
        delivery = f"{event}-{index}"
        where, key = COMMAND_TEXT[_key(event, example)]
        has_commands = bool(parse(text(example, where, key)))
        before = (hub.count(t.tickets), hub.count(t.events), len(hub.directory.asked))
        assert hub.post(event, example, delivery).status_code == 202
        assert hub.inbox(delivery) == ("done", 1, None), delivery
        after = (hub.count(t.tickets), hub.count(t.events), len(hub.directory.asked))
        if not has_commands:
            assert after == before, f"{delivery} has no command line, yet tickets/events/lookups changed"


def test_routed_examples_with_a_claim_line_create_a_claimed_ticket(hub: Hub) -> None:
    """The positive side on GitHub's real payload shapes (the corpus itself holds no command line)."""
    for event, index, example in _routed():
        delivery = f"{event}-{index}-claim"
        payload = _with_claim(event, index, example)
        assert hub.post(event, payload, delivery).status_code == 202
        assert hub.inbox(delivery) == ("done", 1, None), delivery
        installation, repository, issue = (
            number(payload, "installation", "id"),
            number(payload, "repository", "id"),
            number(payload, "issue", "number"),
        )
        assert installation is not None and repository is not None and issue is not None, delivery
        if dig(payload, "issue", "pull_request") is not None:
            continue  # commands on pull requests do not act on tickets yet
        ticket = hub.app.state.work.ticket(TicketKey(installation, repository, issue))
        assert ticket is not None, f"{delivery}: no ticket after /claim"
        assert ticket.state is WorkState.CLAIMED, delivery
        assert ticket.runner == text(payload, "sender", "login"), delivery
    assert hub.count(t.tickets) >= 1


@pytest.mark.both_engines
@pytest.mark.long
def test_replaying_the_whole_corpus_is_recognised_and_changes_nothing(hub: Hub) -> None:
    deliveries: list[tuple[str, str, dict[str, Any]]] = [
        (event, f"{event}-{index}", example)
        for event, examples in sorted(webhook_examples().items())
        for index, example in enumerate(examples)
    ]
    # The corpus alone creates no ticket; its /claim variants make "changes no row" mean something.
    deliveries += [
        (event, f"{event}-{index}-claim", _with_claim(event, index, example)) for event, index, example in _routed()
    ]

    for event, delivery, payload in deliveries:
        response = hub.post(event, payload, delivery)
        assert (response.status_code, response.json()["received"]) == (202, "new"), delivery
    problems = _failures(hub, deliveries)
    assert not problems, "\n".join(problems)
    assert hub.count(t.tickets) >= 1
    before = (hub.rows(t.tickets), hub.rows(t.events), hub.rows(t.webhook_deliveries))

    answers = {}
    for event, delivery, payload in deliveries:
        response = hub.post(event, payload, delivery)
        assert response.status_code == 202, delivery
        answers[delivery] = response.json()["received"]
    assert {delivery for delivery, received in answers.items() if received != "duplicate"} == set()
    assert len(answers) == len(deliveries)
    assert (hub.rows(t.tickets), hub.rows(t.events), hub.rows(t.webhook_deliveries)) == before
