"""The pure rules of offering (`baton.domain.offering`): which issues are offered, and the events that take
a ticket off the board and put it back."""

from __future__ import annotations

from baton.domain import Event, Policy, Role, Ticket, TicketKey, WorkState, create, replay
from baton.domain.offering import offered, reoffer, withdrawal, withdrawn_by_offering

KEY = TicketKey(1, 2, 3)


def _ticket(state: WorkState, runner: str | None = None, attempt: int = 0) -> Ticket:
    return Ticket(KEY, "octo/shop", state, 4, "olivia", runner=runner, attempt=attempt)


def test_offer_all_offers_every_issue_and_labeled_only_those_with_the_label_in_any_case() -> None:
    assert offered(Policy(), [])
    labeled = Policy(offer="labeled", offer_label="Agents")
    assert not offered(labeled, [])
    assert not offered(labeled, ["bug", "agents-later"])
    assert offered(labeled, ["bug", "agents"])


def test_withdrawing_an_open_ticket_records_why_and_who() -> None:
    applied = withdrawal(_ticket(WorkState.OPEN), "maria", "unlabeled", label="agents")
    assert applied.ticket.state is WorkState.WITHDRAWN and applied.ticket.revision == 5
    event = applied.event
    assert (event.type, event.actor, event.revision) == ("withdrawn", "maria", 5)
    assert event.data == {
        "reason": "the label `agents` was removed, so the issue is no longer offered",
        "ended": None,
        "offering": "unlabeled",
    }


def test_withdrawing_a_claimed_ticket_ends_its_attempt() -> None:
    applied = withdrawal(_ticket(WorkState.CLAIMED, "agent-a", 2), "octo-admin", "deleted")
    assert applied.ticket.runner is None
    assert applied.event.data["ended"] == {"attempt": 2, "reason": "withdrawn"}
    assert applied.event.data["reason"] == "the issue was deleted"


def test_only_a_withdrawn_ticket_is_put_back_and_replay_rebuilds_both_changes() -> None:
    assert reoffer(_ticket(WorkState.OPEN), "maria") is None
    assert reoffer(_ticket(WorkState.CLAIMED, "agent-a", 1), "maria") is None
    ticket, created = create(KEY, "octo/shop", "olivia")
    out = withdrawal(ticket, "maria", "unlabeled", label="agents")
    back = reoffer(out.ticket, "maria")
    assert back is not None and back.ticket.state is WorkState.OPEN and back.event.type == "reopened"
    assert replay(KEY, "octo/shop", [created, out.event, back.event]) == back.ticket


def test_a_withdraw_command_is_told_apart_from_offering() -> None:
    by_hand = Event("withdrawn", "maria", Role.REPOSITORY_MAINTAINER, 2, 0, {"reason": "duplicate", "ended": None})
    by_offering = withdrawal(_ticket(WorkState.OPEN), "maria", "unlabeled", label="agents").event
    assert not withdrawn_by_offering([by_hand])
    assert withdrawn_by_offering([by_hand, by_offering])
    assert not withdrawn_by_offering([by_offering, by_hand])
    assert not withdrawn_by_offering([])
