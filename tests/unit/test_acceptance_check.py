"""The `baton/acceptance` check and the status comment's rail lines, as pure functions of the rails."""

from __future__ import annotations

from dataclasses import replace

import pytest

from baton.domain import Evidence, Ticket, TicketKey, WorkState
from baton.domain.evidence import DeliveryReport, EvidenceRail, Fact, PullRequestFact, accepted_heads, apply
from baton.domain.status import Acceptance, CheckView, Review, acceptance_check, view

HEAD = "1a2b3c4" + "d" * 33
NEWER = "5e6f7a8" + "b" * 33


def ticket(number: int, state: WorkState, runner: str | None = "agent-a") -> Ticket:
    return Ticket(TicketKey(1, 2, number), "octo/shop", state, 5, "olivia", runner=runner, attempt=1, deliveries=1)


MARIA = Review("maria", independent=True)


def apply_all(rail: EvidenceRail, facts: list[Fact]) -> EvidenceRail:
    for fact in facts:
        rail = apply(rail, fact)
    return rail


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([Acceptance(ticket(42, WorkState.CLAIMED))],
         ("in_progress", None, "Waiting for acceptance of #42")),
        ([Acceptance(ticket(42, WorkState.OPEN, None))],
         ("in_progress", None, "Waiting for acceptance of #42")),
        ([Acceptance(ticket(42, WorkState.ACCEPTED), MARIA, (HEAD,))],
         ("completed", "success", "Accepted at 1a2b3c4")),
        ([Acceptance(ticket(42, WorkState.ACCEPTED), MARIA, ("1A2B3C4",))],  # a reported, abbreviated commit
         ("completed", "success", "Accepted at 1a2b3c4")),
        ([Acceptance(ticket(42, WorkState.ACCEPTED), MARIA, (NEWER,))],
         ("completed", "neutral", "Head 1a2b3c4 moved after the acceptance")),
        ([Acceptance(ticket(42, WorkState.ACCEPTED), MARIA, (HEAD,)), Acceptance(ticket(43, WorkState.DELIVERED))],
         ("in_progress", None, "Waiting for acceptance of #43")),
        ([Acceptance(ticket(42, WorkState.ACCEPTED), MARIA, (HEAD,)), Acceptance(ticket(43, WorkState.WITHDRAWN))],
         ("completed", "success", "Accepted at 1a2b3c4")),
        ([Acceptance(ticket(43, WorkState.WITHDRAWN, None))],
         ("completed", "neutral", "Withdrawn: nothing awaits acceptance")),
    ],
    ids=["claimed", "open", "accepted-here", "accepted-by-report", "head-moved", "one-of-two-waits",
         "accepted-and-withdrawn", "withdrawn"],
)  # fmt: skip
def test_the_check_on_a_head(parts: list[Acceptance], expected: tuple[str, str | None, str]) -> None:
    check = acceptance_check(HEAD, parts)
    assert (check.status, check.conclusion, check.title) == expected


def test_the_summary_says_what_changed_and_that_the_work_stays_accepted() -> None:
    self_verified = Review("agent-a", independent=False)
    check = acceptance_check(NEWER, [Acceptance(ticket(42, WorkState.ACCEPTED), self_verified, (HEAD,)),
                                     Acceptance(ticket(43, WorkState.ACCEPTED), MARIA, ())])  # fmt: skip
    assert check.summary == (
        "#42: accepted by @agent-a (self-verified) at 1a2b3c4. The head has moved to 5e6f7a8 since, and the "
        "commits after 1a2b3c4 were not part of the acceptance. The work state stays accepted; a maintainer can "
        "/reopen the issue if they need another look.\n\n"
        "#43: accepted by @maria before GitHub showed any commit of it, so 5e6f7a8 was not part of the "
        "acceptance. The work state stays accepted; a maintainer can /reopen the issue if they need another look."
    )
    assert CheckView(**check.to_dict()) == check


def test_an_acceptance_covers_the_heads_of_open_and_merged_pull_requests_and_the_reported_commit() -> None:
    def pr(number: int, sha: str, **changes: object) -> PullRequestFact:
        fact = PullRequestFact(number, f"x-{number}", sha, "main", "open", "2024-05-01T10:00Z", links=frozenset({42}))
        return replace(fact, **changes)  # type: ignore[arg-type]

    rail = apply_all(EvidenceRail(42), [
        pr(57, HEAD), pr(58, NEWER, state="closed", merged=True, merge_commit_sha="9" * 40),
        pr(59, "3" * 40, state="closed"), DeliveryReport(Evidence(commit="0c0ffee"), "2024-05-01T09:00:00Z"),
    ])  # fmt: skip
    assert accepted_heads(rail) == ("0c0ffee", HEAD, NEWER)


def test_the_status_comment_shows_the_three_rails_and_a_mismatch_only_when_there_is_one() -> None:
    delivered = ticket(42, WorkState.DELIVERED)
    assert view(delivered).comment.splitlines()[1:4] == [
        "**Work:** Delivered — attempt 1 by @agent-a, awaiting review",
        "**Repository:** Unreported",
        "**Deployment:** Not deployed",
    ]
    rail = apply_all(EvidenceRail(42), [
        DeliveryReport(Evidence(commit="0c0ffee"), "2024-05-01T09:00:00Z"),
        PullRequestFact(57, "42-x", HEAD, "main", "open", "2024-05-01T10:00:00Z", links=frozenset({42})),
    ])  # fmt: skip
    assert view(delivered, rail=rail).comment.splitlines()[1:5] == [
        "**Work:** Delivered — attempt 1 by @agent-a, awaiting review",
        "**Repository:** Pull request #57 open (head 1a2b3c4, verified)",
        "**Mismatch:** Reported commit 0c0ffee is not the head of pull request #57 (1a2b3c4)",
        "**Deployment:** Not deployed",
    ]
