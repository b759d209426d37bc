"""The payloads the webhook route parsed, kept a moment for the decide lane (`baton.intake.envelope.Parsed`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from baton.intake.envelope import Envelope, Parsed
from baton.store.inbox import Hook

TEXT = json.dumps({"action": "created", "installation": {"id": 7}, "repository": {"id": 9, "full_name": "octo/shop"},
                   "sender": {"login": "agent-a", "type": "User"}})  # fmt: skip


def hook(hook_id: str, text: str = TEXT) -> Hook:
    return Hook(hook_id, "issue_comment", "created", 7, text, 1, datetime(2026, 12, 6, tzinfo=UTC))


def test_a_payload_kept_is_given_once_for_its_own_text_and_the_envelope_reads_it() -> None:
    parsed = Parsed()
    payload = json.loads(TEXT)
    parsed.keep("d-1", TEXT, payload)
    envelope = Envelope.open(hook("d-1"), parsed)
    assert envelope is not None and envelope.payload is payload  # not parsed again
    assert (envelope.installation_id, envelope.repository, envelope.sender) == (7, "octo/shop", "agent-a")
    assert len(parsed) == 0
    again = Envelope.open(hook("d-1"), parsed)  # given once: a second opening parses the text
    assert again is not None and again.payload == payload and again.payload is not payload


def test_a_payload_kept_for_another_text_is_not_given() -> None:
    parsed = Parsed()
    parsed.keep("d-1", TEXT, {"action": "deleted"})
    assert parsed.take("d-1", TEXT.replace("created", "edited")) is None
    assert len(parsed) == 0  # and not kept either


def test_at_most_so_many_are_kept_the_oldest_forgotten_first() -> None:
    parsed = Parsed(most=3)
    for n in range(5):
        parsed.keep(f"d-{n}", TEXT, {"n": n})
    assert len(parsed) == 3
    assert [parsed.take(f"d-{n}", TEXT) for n in range(5)] == [None, None, {"n": 2}, {"n": 3}, {"n": 4}]
