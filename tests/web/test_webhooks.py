"""`POST /webhooks/github` through the real app: signatures, bad input, the inbox, redelivery, routing."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from baton.domain import TicketKey, WorkState
from baton.environment.settings import Settings
from baton.github.configs import DefaultConfigs
from baton.github.webhooks import signature, verify
from baton.store import tables as t
from baton.web import create_app
from baton.web.webhooks import AcksFirst
from support import webhook_hub
from support.webhook_hub import (
    APP_ID,
    INSTALLATION,
    REPOSITORY,
    REPOSITORY_ID,
    SECRET,
    FakeDirectory,
    Hub,
    comment,
    open_hub,
    pr_comment,
    replies_on,
    settings,
)

hub = webhook_hub.hub  # the fixture: Baton with its lanes off, a fake directory


def test_githubs_published_signature_vector() -> None:
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature(SECRET.encode(), b"Hello, World!") == expected
    assert verify(SECRET.encode(), b"Hello, World!", expected)
    assert not verify(SECRET.encode(), b"Hello, World!!", expected)


def test_the_vector_passes_the_signature_check_and_the_body_is_then_refused_as_not_json(hub: Hub) -> None:
    response = hub.post("ping", b"Hello, World!")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("The body is not JSON")
    assert hub.count(t.webhook_deliveries) == 0


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Hub-Signature-256": ""},
        {"X-Hub-Signature-256": "sha256=" + "0" * 64},
        {"X-Hub-Signature-256": signature(b"another secret", b"{}")},
        # SHA-1 only, as GitHub also sends it: not accepted
        {"X-Hub-Signature-256": "", "X-Hub-Signature": "sha1=0e1c2c5c2d6bcd1d23d5c7f0bff5e9c3ddf0b2e0"},
        # the right digest without the sha256= prefix
        {"X-Hub-Signature-256": signature(SECRET.encode(), b"{}").removeprefix("sha256=")},
    ],
    ids=["missing", "wrong", "other-secret", "sha1-only", "no-prefix"],
)
def test_bad_signatures_are_refused_and_nothing_is_stored(hub: Hub, headers: dict[str, str]) -> None:
    response = hub.post("ping", b"{}", **headers)
    assert response.status_code == 401
    assert "X-Hub-Signature-256" in response.json()["detail"]
    assert hub.count(t.webhook_deliveries) == 0


def test_a_signature_over_other_bytes_than_the_body_is_refused(hub: Hub) -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    response = hub.post("ping", body, **{"X-Hub-Signature-256": signature(SECRET.encode(), body + b" ")})
    assert response.status_code == 401


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe{}"], ids=["broken", "array", "not-utf8"])
def test_bodies_that_are_not_a_json_object_are_refused(hub: Hub, body: bytes) -> None:
    response = hub.post("ping", body)
    assert response.status_code == 400
    assert hub.count(t.webhook_deliveries) == 0


def test_an_oversize_body_is_refused(hub: Hub) -> None:
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    response = hub.post("ping", body)
    assert response.status_code == 413
    assert hub.count(t.webhook_deliveries) == 0


def test_a_declared_oversize_body_is_refused_before_reading(hub: Hub) -> None:
    response = hub.post("ping", b"{}", **{"Content-Length": str(25 * 1024 * 1024 + 1)})
    assert response.status_code == 413


def test_githubs_headers_are_required(hub: Hub) -> None:
    response = hub.post("ping", b"{}", **{"X-GitHub-Delivery": ""})
    assert response.status_code == 400
    assert hub.count(t.webhook_deliveries) == 0


def test_without_a_secret_webhooks_are_disabled_with_a_clear_answer(sqlite_url: str) -> None:
    app = create_app(Settings(database_url=sqlite_url))
    with TestClient(app) as client:
        response = client.post("/webhooks/github", content=b"{}", headers={"X-GitHub-Event": "ping"})
    assert response.status_code == 503
    assert "BATON_WEBHOOK_SECRET" in response.json()["detail"]


@pytest.mark.parametrize(
    ("event", "payload"),
    [("ping", {"zen": "Design for failure.", "hook_id": 1}), ("star", {"action": "created"}),
     ("issue_comment", {"action": "deleted"}), ("issues", {"action": "pinned"})],
    ids=["ping", "unknown-event", "unknown-action", "unhandled-action"],
)  # fmt: skip
def test_ping_unknown_events_and_actions_are_answered_and_ignored(hub: Hub, event: str, payload: Any) -> None:
    response = hub.post(event, payload, hook="d-1")
    assert response.status_code == 202
    assert response.json() == {"delivery": "d-1", "received": "new"}
    assert hub.inbox("d-1") == ("ignored", 1, None)
    assert hub.count(t.tickets) == 0


def test_a_claim_comment_is_applied_after_the_answer(hub: Hub) -> None:
    assert hub.post("issue_comment", comment("agent-a", "I'll take it.\n/claim"), hook="d-1").status_code == 202
    assert hub.inbox("d-1") == ("done", 1, None)
    ticket = hub.ticket(42)
    assert (ticket.state, ticket.runner, ticket.revision, ticket.owner) == (WorkState.CLAIMED, "agent-a", 2, "olivia")

    hub.post("issue_comment", comment("agent-b", "/claim", comment_id=2), hook="d-2")
    assert hub.ticket(42).runner == "agent-a"
    assert hub.count(t.events) == 2  # created, claimed
    assert hub.count(t.operations) == 2  # the claim and the refusal


def test_several_commands_in_one_comment_run_in_order(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"), hook="d-1")
    body = "/deliver\nThe empty state is in.\nbranch: 42-empty-state\n\n/status"
    hub.post("issue_comment", comment("agent-a", body, comment_id=2), hook="d-2")
    hub.post("issue_comment", comment("maria", "/accept looks right", comment_id=3), hook="d-3")
    ticket = hub.ticket(42)
    assert (ticket.state, ticket.revision, ticket.deliveries) == (WorkState.ACCEPTED, 4, 1)


def test_a_redelivery_changes_nothing(hub: Hub) -> None:
    payload = comment("agent-a", "/claim")
    hub.post("issue_comment", payload, hook="d-1")
    before = (hub.count(t.events), hub.count(t.operations), hub.ticket(42))
    again = hub.post("issue_comment", payload, hook="d-1")
    assert again.status_code == 202
    assert again.json() == {"delivery": "d-1", "received": "duplicate"}
    assert (hub.count(t.events), hub.count(t.operations), hub.ticket(42)) == before
    assert hub.inbox("d-1") == ("done", 1, None)


def test_a_delivery_that_failed_for_a_passing_reason_is_processed_at_once_when_redelivered(hub: Hub) -> None:
    hub.directory.down = True
    payload = comment("agent-a", "/claim")
    hub.post("issue_comment", payload, hook="d-1")
    status, attempts, error = hub.inbox("d-1")
    assert (status, attempts) == ("pending", 1)  # to be tried again after a backoff
    assert error == "DirectoryUnavailable: GitHub did not answer"
    assert hub.ticket(42) is None

    hub.directory.down = False
    response = hub.post("issue_comment", payload, hook="d-1")
    assert response.json()["received"] == "retry"
    assert hub.inbox("d-1") == ("done", 2, None)
    assert hub.ticket(42).runner == "agent-a"


def test_an_issue_opened_with_claim_is_created_claimed_by_its_author(hub: Hub) -> None:
    payload = {
        "action": "opened",
        "issue": {"number": 7, "id": 777, "body": "Fix the flaky test.\n\n/claim", "user": {"login": "agent-a"}},
        "repository": {"id": REPOSITORY_ID, "full_name": REPOSITORY},
        "installation": {"id": INSTALLATION},
        "sender": {"login": "agent-a", "type": "User"},
    }
    hub.post("issues", payload, hook="d-1")
    ticket = hub.ticket(7)
    assert (ticket.state, ticket.runner, ticket.owner) == (WorkState.CLAIMED, "agent-a", "agent-a")


def test_commands_in_quotes_and_code_do_nothing(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "> /claim\n```\n/claim\n```\nuse `/claim`"), hook="d-1")
    assert hub.inbox("d-1")[0] == "done"
    assert hub.ticket(42) is None
    assert hub.directory.asked == []


def test_batons_own_comments_are_ignored_but_other_bots_are_actors(hub: Hub) -> None:
    hub.post("issue_comment", comment("baton[bot]", "/claim", via_app=APP_ID), hook="d-1")
    assert hub.ticket(42) is None
    hub.post("issue_comment", comment("helper[bot]", "/claim", comment_id=2, via_app=1234), hook="d-2")
    assert hub.ticket(42).runner == "helper[bot]"


def test_a_comment_on_a_pull_request_does_not_touch_the_issue_of_the_same_number(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim", on_pr=True), hook="d-1")
    assert hub.inbox("d-1")[0] == "done"
    assert hub.ticket(42) is None


def installation_payload(action: str, **extra: Any) -> dict[str, Any]:
    return {"action": action, "installation": {"id": INSTALLATION, "account": {"login": "octo"}},
            "sender": {"login": "olivia", "type": "User"}, **extra}  # fmt: skip


@pytest.mark.both_engines
def test_installations_and_their_repositories_are_remembered(hub: Hub) -> None:
    from baton.store.installations import Installations

    installations = Installations(hub.app.state.work.units.engine, hub.app.state.work.units.clock)
    repositories = [{"id": REPOSITORY_ID, "full_name": REPOSITORY}, {"id": 5, "full_name": "octo/docs"}]
    hub.post("installation", installation_payload("created", repositories=repositories))
    assert installations.status(INSTALLATION) == "active"
    assert installations.present(INSTALLATION) == {REPOSITORY: True, "octo/docs": True}
    hub.post("installation_repositories", installation_payload(
        "removed", repositories_added=[], repositories_removed=[{"id": 5, "full_name": "octo/docs"}]))  # fmt: skip
    assert installations.present(INSTALLATION) == {REPOSITORY: True, "octo/docs": False}


def test_an_uninstall_stops_work_without_deleting_history(hub: Hub) -> None:
    from baton.store.outbox.writing import Outbox

    hub.post("issue_comment", comment("agent-a", "/claim"))
    hub.post("installation", installation_payload("deleted"))
    hub.post("issue_comment", comment("agent-a", "/release", comment_id=2))
    assert hub.ticket(42).state is WorkState.CLAIMED  # the release was not applied; the claim is kept
    assert hub.count(t.events) == 2
    later = datetime.now(UTC) + timedelta(minutes=5)  # past the coalescing delay
    assert (
        Outbox(hub.app.state.work.units.engine, hub.app.state.work.units.clock).due(now=later) == []
    )  # nothing is written to GitHub for it

    hub.post("installation", installation_payload("unsuspend"))
    hub.post("issue_comment", comment("agent-a", "/release", comment_id=3))
    assert hub.ticket(42).state is WorkState.OPEN
    assert len(Outbox(hub.app.state.work.units.engine, hub.app.state.work.units.clock).due(now=later)) == 1


def test_a_delivery_whose_processing_died_is_processed_again_when_redelivered(hub: Hub) -> None:
    from sqlalchemy import update

    payload = comment("agent-a", "/claim")
    hub.directory.down = True
    hub.post("issue_comment", payload, hook="d-1")
    with hub.app.state.work.units.engine.begin() as connection:  # as if the process died mid-way
        connection.execute(
            update(t.webhook_deliveries).values(
                status="processing", processed_at=datetime.now(UTC) - timedelta(hours=1)
            )
        )
    hub.directory.down = False
    assert hub.post("issue_comment", payload, hook="d-1").json()["received"] == "retry"
    assert hub.ticket(42).runner == "agent-a"


def test_a_delivery_being_processed_right_now_is_not_taken_twice(hub: Hub) -> None:
    from sqlalchemy import update

    payload = comment("agent-a", "/claim")
    hub.directory.down = True
    hub.post("issue_comment", payload, hook="d-1")
    with hub.app.state.work.units.engine.begin() as connection:
        connection.execute(update(t.webhook_deliveries).values(status="processing", processed_at=datetime.now(UTC)))
    assert hub.post("issue_comment", payload, hook="d-1").json()["received"] == "duplicate"


def test_a_command_on_a_pull_request_acts_on_the_issue_it_links(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"))
    hub.post("issue_comment", comment("agent-a", "/deliver done", comment_id=2))
    hub.post("issue_comment", pr_comment("agent-a", "/accept", "Fixes #42", comment_id=3))
    assert hub.ticket(42).state is WorkState.DELIVERED  # the runner may not accept it
    assert replies_on(hub, 57)[0][1].startswith("@agent-a cannot /accept #42: that needs a reviewer")
    hub.post("issue_comment", pr_comment("maria", "/accept", "Fixes #42", comment_id=4))
    assert hub.ticket(42).state is WorkState.ACCEPTED


def test_a_review_body_carries_commands(hub: Hub) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"))
    hub.post("issue_comment", comment("agent-a", "/deliver done", comment_id=2))
    review = {
        "action": "submitted",
        "review": {"id": 77, "body": "Empty state vanishes on error.\n/send-back handle the error case",
                   "user": {"login": "maria"}},
        "pull_request": {"number": 57, "body": "Closes octo/shop#42", "user": {"login": "agent-a"}},
        "repository": {"id": REPOSITORY_ID, "full_name": REPOSITORY},
        "installation": {"id": INSTALLATION},
        "sender": {"login": "maria", "type": "User"},
    }  # fmt: skip
    hub.post("pull_request_review", review)
    ticket = hub.ticket(42)
    assert (ticket.state, ticket.attempt) == (WorkState.CLAIMED, 2)


@pytest.mark.parametrize(
    ("body", "pr_body", "answer"),
    [
        ("/accept", "No link here", "/accept: this pull request links no issue. Add `Fixes #N` to its "
                                    "description, or comment on the issue."),
        ("/accept", "Fixes #42, fixes #43", "/accept: this pull request links #42, #43: say which, as in "
                                            "`/accept #42`."),
        ("/accept #44", "Fixes #42", "/accept: #44 is not linked from this pull request (it links #42)."),
        ("/accept", "Fixes #99", "/accept: #99 is not tracked by Baton yet: comment on the issue itself first."),
    ],
    ids=["no-link", "ambiguous", "not-linked", "untracked"],
)  # fmt: skip
def test_commands_on_a_pull_request_that_reach_no_ticket_are_answered_on_it(
    hub: Hub, body: str, pr_body: str, answer: str
) -> None:
    hub.post("issue_comment", comment("agent-a", "/claim"))
    hub.post("issue_comment", pr_comment("maria", body, pr_body, comment_id=5), hook="d-pr")
    assert replies_on(hub, 57) == [("maria", answer)]
    assert hub.ticket(42).state is WorkState.CLAIMED
    hub.post("issue_comment", pr_comment("maria", body, pr_body, comment_id=5), hook="d-pr")  # redelivered
    assert replies_on(hub, 57) == [("maria", answer)]


def test_accept_names_one_of_several_linked_issues(hub: Hub) -> None:
    for number in (42, 43):
        hub.post("issue_comment", comment("agent-a", "/claim", number=number, comment_id=number))
        hub.post("issue_comment", comment("agent-a", "/deliver done", number=number, comment_id=100 + number))
    hub.post("issue_comment", pr_comment("maria", "/accept #43", "Fixes #42\nFixes #43", comment_id=7))
    assert hub.ticket(43).state is WorkState.ACCEPTED
    assert hub.ticket(42).state is WorkState.DELIVERED


def test_an_invalid_settings_file_is_explained_once_and_the_last_good_settings_stay(database_url: str) -> None:
    from baton.domain import Policy
    from baton.github.configs import Loaded

    class BrokenFile:
        def load(self, installation_id: int, repository: str) -> Loaded:
            problems = ("`max_active_claims` must be a whole number from 1 to 100, not 'lots'",)
            return Loaded(Policy(max_active_claims=1), "octo/shop:.github/baton.yml", problems)

    with open_hub(settings(database_url), configs=BrokenFile()) as hub:
        hub.post("issue_comment", comment("agent-a", "/claim", number=42, comment_id=1))
        hub.post("issue_comment", comment("agent-a", "/claim", number=43, comment_id=2))  # limit 1 holds
        hub.post("issue_comment", comment("agent-b", "/claim", number=44, comment_id=3))
        assert hub.ticket(42).runner == "agent-a"
        assert hub.ticket(43).state is WorkState.OPEN
        explained = [m for _, m in replies_on(hub, 42) + replies_on(hub, 43) + replies_on(hub, 44) if "baton.yml" in m]
        assert explained == [
            "Baton cannot use `.github/baton.yml`: `max_active_claims` must be a whole number from 1 to 100, "
            "not 'lots'. Until it is fixed, the settings from octo/shop:.github/baton.yml stay in force."
        ]


# How acknowledgements and in-process work share one process


def signed(event: str, payload: Any, delivery: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
               "X-Hub-Signature-256": signature(SECRET.encode(), body), "Content-Type": "application/json"}  # fmt: skip
    return body, headers


def test_deliveries_arriving_together_are_stored_in_fewer_transactions_and_each_answered(
    database_url: str,
) -> None:
    app = create_app(settings(database_url), directory=FakeDirectory(), configs=DefaultConfigs(), lanes=False)
    inbox = app.state.inbox
    batches: list[int] = []
    receive_all = inbox.receive_all

    def counted(batch: list[Any]) -> Any:
        batches.append(len(batch))
        return receive_all(batch)

    inbox.receive_all = counted
    ids = [f"burst-{n}" for n in range(20)] + ["burst-3"]  # one of them twice in the same burst

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://baton") as client:
            return await asyncio.gather(*(
                client.post("/webhooks/github", content=body, headers=headers)
                for body, headers in (signed("ping", {"zen": "x"}, delivery) for delivery in ids)
            ))  # fmt: skip

    answers = asyncio.run(burst())
    assert [answer.status_code for answer in answers] == [202] * 21
    received = sorted(answer.json()["received"] for answer in answers)
    assert received == ["duplicate"] + ["new"] * 20
    assert sum(batches) == 21 and len(batches) < 21, batches  # grouped, and nothing left out
    with app.state.work.units.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(t.webhook_deliveries)).scalar_one() == 20
    app.state.work.units.engine.dispose()


@pytest.mark.both_engines
def test_the_in_process_worker_thread_processes_what_was_acknowledged(database_url: str) -> None:
    # the real background thread
    app = create_app(settings(database_url), directory=FakeDirectory(), configs=DefaultConfigs())
    with TestClient(app) as client:
        for n, login in enumerate(["agent-a", "agent-b"]):
            body, headers = signed("issue_comment", comment(login, "/claim", comment_id=n + 1), f"t-{n}")
            assert client.post("/webhooks/github", content=body, headers=headers).status_code == 202
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ticket = app.state.work.ticket(TicketKey(INSTALLATION, REPOSITORY_ID, 42))
            if ticket is not None and ticket.runner == "agent-a":
                with app.state.work.units.engine.connect() as connection:
                    statuses = connection.execute(select(t.webhook_deliveries.c.status)).scalars().all()
                if statuses == ["done", "done"]:
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("the worker thread did not process both deliveries")
        assert ticket.state is WorkState.CLAIMED
    app.state.work.units.engine.dispose()


def test_in_process_work_waits_while_deliveries_are_being_acknowledged() -> None:
    pacing = AcksFirst(patience=5.0)
    pacing.acking(+1)
    waited: list[float] = []

    def work() -> None:
        start = time.monotonic()
        pacing.wait()
        waited.append(time.monotonic() - start)

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(0.2)
    assert not waited  # still waiting: an ack is in flight
    pacing.acking(-1)
    thread.join(5)
    assert waited and 0.15 < waited[0] < 4.0  # released by the ack finishing, not by patience running out


def test_in_process_work_waits_no_longer_than_its_patience() -> None:
    pacing = AcksFirst(patience=0.1)
    pacing.acking(+1)
    start = time.monotonic()
    pacing.wait()
    assert 0.09 < time.monotonic() - start < 2.0
