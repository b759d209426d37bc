"""The evidence webhooks through the real app, on SQLite and PostgreSQL: each handler, linking end to end,
reported against verified, late, repeated and shuffled deliveries. Work rows never change."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from baton.domain import DeploymentState, Permission, RepositoryKey, RepositoryState, TicketKey, WorkState
from baton.domain.evidence import EvidenceRail, deployment_text, mismatch_text, repository_text
from baton.environment.clock import SYSTEM
from baton.store import tables as t
from support.payloads import HEAD, MERGE, NEWER, OLDER, Repo
from support.read_api import TOKEN
from support.webhook_hub import APP_ID, FakeDirectory, Hub, open_hub, settings

SHOP = Repo()

U, B, O, M, X = (
    RepositoryState.UNREPORTED,
    RepositoryState.BRANCH_REPORTED,
    RepositoryState.PULL_REQUEST_OPEN,
    RepositoryState.MERGED,
    RepositoryState.BLOCKED,
)


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    with open_hub(settings(database_url, token=TOKEN), FakeDirectory({"maria": Permission.MAINTAIN})) as made:
        made.app.state.parts.intake.issues = None  # no GitHub here to read an issue's timeline from
        yield made


# ---------------------------------------------------------------------------------------------- each handler


@dataclass(frozen=True)
class Case:
    id: str
    deliveries: tuple[tuple[str, dict[str, Any]], ...]
    repository: RepositoryState
    text: str
    deployment: DeploymentState = DeploymentState.NOT_DEPLOYED
    deployed: str = "Not deployed"


def pr(action: str, repo: Repo = SHOP, **changes: Any) -> tuple[str, dict[str, Any]]:
    return "pull_request", repo.pull_request(action, **changes)


def merged(repo: Repo = SHOP, minute: int = 5, **changes: Any) -> tuple[str, dict[str, Any]]:
    return pr("closed", repo, merged=True, minute=minute, **changes)


CASES = [
    Case("opened", (pr("opened"),), O, "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("converted-to-draft", (pr("opened"), pr("converted_to_draft", minute=2, draft=True)), O,
         "Pull request #57 open (draft, head 1a2b3c4, verified)"),
    Case("ready-for-review", (pr("opened", draft=True), pr("ready_for_review", minute=2)), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("synchronize", (pr("opened"), pr("synchronize", minute=3, sha=NEWER)), O,
         "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("older-synchronize-never-replaces-a-newer-head",
         (pr("synchronize", minute=5, sha=NEWER), pr("synchronize", minute=3, sha=OLDER)), O,
         "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("closed-unmerged", (pr("opened"), pr("closed", minute=2, state="closed")), X,
         "Blocked — pull request #57 was closed without merging"),
    Case("reopened", (pr("opened"), pr("closed", minute=2, state="closed"), pr("reopened", minute=3)), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("merged", (pr("opened"), merged()), M, "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("merged-is-final", (merged(), pr("synchronize", minute=7, sha=NEWER), pr("reopened", minute=8)), M,
         "Pull request #57 merged (merge commit 9f8e7d6)"),
    Case("conflicts", (pr("opened", mergeable_state="dirty"),), X,
         "Blocked — pull request #57 has merge conflicts with main"),
    Case("edited-to-link", (pr("opened", body="WIP", ref="wip"), pr("edited", minute=2, ref="wip")), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("review-carries-the-pull-request", (("pull_request_review", SHOP.review(None)),), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("push", (("push", SHOP.push()),), B, "Branch 42-empty-state (head 1a2b3c4, verified)"),
    Case("push-to-a-prefixed-branch", (("push", SHOP.push("agent/42-retry")),), B,
         "Branch agent/42-retry (head 1a2b3c4, verified)"),
    Case("create", (("create", SHOP.ref("42-empty-state")),), B, "Branch 42-empty-state created, no commit seen yet"),
    Case("delete", (("push", SHOP.push()), ("delete", SHOP.ref("42-empty-state"))), U, "Unreported"),
    Case("push-that-deletes", (("push", SHOP.push()), ("push", SHOP.push(sha=None, minute=2))), U, "Unreported"),
    Case("tags-are-not-work", (("push", SHOP.tag_push("42-x")), ("create", SHOP.ref("42-x", "tag"))), U,
         "Unreported"),
    Case("push-after-opening-moves-the-head", (pr("opened"), ("push", SHOP.push(sha=NEWER, minute=4))), O,
         "Pull request #57 open (head 5e6f7a8, verified)"),
    Case("failing-check-of-unknown-standing", (pr("opened"), ("check_run", SHOP.check_run())), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("check-suite", (pr("opened"), ("check_suite", SHOP.check_suite())), O,
         "Pull request #57 open (head 1a2b3c4, verified)"),
    Case("other-issue", (pr("opened", body="Fixes #7", ref="feature"),), U, "Unreported"),
    Case("other-repository", (pr("opened", body="Fixes other/repo#42", ref="feature"),), U, "Unreported"),
    Case("deploying", (merged(), ("deployment", SHOP.deployment())), M,
         "Pull request #57 merged (merge commit 9f8e7d6)", DeploymentState.DEPLOYING,
         "Deploying to production (9f8e7d6)"),
    Case("deployed", (merged(), ("deployment", SHOP.deployment()),
                      ("deployment_status", SHOP.deployment_status("in_progress")),
                      ("deployment_status", SHOP.deployment_status("success", minute=12))), M,
         "Pull request #57 merged (merge commit 9f8e7d6)", DeploymentState.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
    Case("failed", (merged(), ("deployment", SHOP.deployment()),
                    ("deployment_status", SHOP.deployment_status("error"))), M,
         "Pull request #57 merged (merge commit 9f8e7d6)", DeploymentState.FAILED, "Failed in production (9f8e7d6)"),
    Case("deployed-before-the-merge-arrived", (("deployment", SHOP.deployment()),
                                                ("deployment_status", SHOP.deployment_status("success")), merged()),
         M, "Pull request #57 merged (merge commit 9f8e7d6)", DeploymentState.DEPLOYED,
         "Deployed to production (9f8e7d6)"),
    Case("a-preview-of-an-open-head-ships-nothing", (pr("opened"), ("deployment", SHOP.deployment(
        sha=HEAD, environment="preview", transient=True)), ("deployment_status", SHOP.deployment_status(
            "success", sha=HEAD, environment="preview"))), O, "Pull request #57 open (head 1a2b3c4, verified)"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_evidence_webhook_moves_only_the_evidence_rail(hub: Hub, case: Case) -> None:
    hub.claim()
    work = hub.work()
    for event, payload in case.deliveries:
        hub.decide(event, payload)
    rail = hub.rail()
    assert (rail.repository, repository_text(rail)) == (case.repository, case.text)
    assert (rail.deployment, deployment_text(rail)) == (case.deployment, case.deployed)
    assert hub.work() == work
    body = hub.api()
    assert body["state"] == "claimed"
    assert (body["evidence"]["repository"]["state"], body["evidence"]["repository"]["text"]) == (
        case.repository.value,
        case.text,
    )
    assert body["evidence"]["deployment"]["state"] == case.deployment.value


def test_a_change_of_the_rail_is_an_evidence_event_and_makes_the_issue_due(hub: Hub) -> None:
    hub.claim()
    with hub.app.state.work.units.engine.begin() as connection:
        connection.execute(t.outbox.delete())
    hub.decide("pull_request", SHOP.pull_request("opened"))
    assert hub.evidence_events() == ["pull_request"]
    assert hub.due() == {42}
    assert hub.count(t.evidence_facts) == 1
    assert hub.count(t.events) == 2  # created, claimed: the work history is the work rail's alone


def test_facts_reach_only_tracked_tickets(hub: Hub) -> None:
    hub.decide("pull_request", SHOP.pull_request("opened", body="Fixes #42"))
    hub.decide("push", SHOP.push("43-other"))
    assert hub.count(t.tickets) == 0
    assert hub.count(t.evidence_rails) == 0
    assert hub.count(t.evidence_facts) == 2  # kept for the tickets that may link them later


def test_the_issue_closed_or_reopened_on_github_is_evidence_only(hub: Hub) -> None:
    hub.claim()
    hub.deliver("done")
    work = hub.work()
    hub.decide("issues", SHOP.issue("closed"))
    hub.decide("issues", SHOP.issue("reopened"))
    hub.decide("issues", SHOP.issue("closed", number=7))  # not tracked: nothing
    assert hub.work() == work
    assert hub.evidence_events() == ["issue_closed", "issue_reopened"]
    key = TicketKey(SHOP.installation, SHOP.repository_id, 42)
    assert hub.app.state.work.evidence.reads.events(key)[0]["data"] == {
        "actor": "octocat",
        "at": "2024-05-01T10:30:00Z",
        "state_reason": "completed",
    }
    assert hub.app.state.work.ticket(key).state is WorkState.DELIVERED


def test_batons_own_check_feeds_nothing(hub: Hub) -> None:
    hub.claim()
    hub.decide("pull_request", SHOP.pull_request("opened"))
    facts = hub.count(t.evidence_facts)
    hub.decide("check_run", SHOP.check_run("baton/acceptance", "neutral"))
    hub.decide("check_suite", SHOP.check_suite(app_id=APP_ID, app="Baton"))
    assert hub.count(t.evidence_facts) == facts
    assert hub.evidence_events() == ["pull_request"]


def test_a_review_body_still_carries_commands_and_its_pull_request_is_evidence(hub: Hub) -> None:
    hub.claim()
    hub.deliver("done")
    hub.decide("pull_request_review", SHOP.review("Vanishes on error.\n/send-back handle the error case"))
    ticket = hub.app.state.work.ticket(TicketKey(SHOP.installation, SHOP.repository_id, 42))
    assert (ticket.state, ticket.attempt) == (WorkState.CLAIMED, 2)
    assert hub.rail().repository is O


def test_an_uninstalled_installation_records_no_evidence(hub: Hub) -> None:
    hub.claim()
    hub.decide("installation", {**SHOP.base("deleted"), "installation": {"id": SHOP.installation, "account": {}}})
    hub.decide("pull_request", SHOP.pull_request("opened"))
    assert hub.rail().repository is U
    assert hub.count(t.evidence_facts) == 0


@pytest.mark.parametrize(
    ("event", "payload"),
    [("pull_request", {"action": "opened", "pull_request": "not an object"}),
     ("pull_request", {**SHOP.base("opened"), "pull_request": {"number": 57, "head": None}}),
     ("push", {**SHOP.base(), "ref": "refs/heads/42-x", "after": HEAD, "head_commit": {"timestamp": "yesterday"}}),
     ("check_run", {**SHOP.base("completed"), "check_run": {"name": "build"}}),
     ("deployment_status", {**SHOP.base("created"), "deployment": {"id": 1}, "deployment_status": {"state": "odd",
                                                                                                  "created_at": "x"}}),
     ("issues", {"action": "closed"})],
    ids=["not-an-object", "no-head", "bad-stamp", "no-commit", "unknown-status", "no-issue"],
)  # fmt: skip
def test_a_payload_without_what_a_fact_needs_is_done_and_changes_nothing(hub: Hub, event: str, payload: Any) -> None:
    hub.claim()
    work = hub.work()
    delivery = hub.decide(event, payload)
    assert hub.status(delivery) == "done"
    assert hub.work() == work
    assert hub.rail().repository is U


# ---------------------------------------------------------------------------------------------- linking


def test_an_edited_body_unlinks_and_a_late_older_delivery_does_not_link_again(hub: Hub) -> None:
    hub.claim(42)
    hub.claim(43)
    opened = SHOP.pull_request("opened", body="Fixes #42\nFixes #43", ref="wip")
    hub.decide("pull_request", opened, "opened")
    assert (hub.rail(42).repository, hub.rail(43).repository) == (O, O)
    hub.decide("pull_request", SHOP.pull_request("edited", body="Fixes #43", ref="wip", minute=2))
    assert (hub.rail(42).repository, hub.rail(43).repository) == (U, O)
    assert hub.evidence_events(42) == ["pull_request", "pull_request"]  # the edit reached the rail that held it
    hub.decide("pull_request", opened, "opened-again")  # the same opened, redelivered late under a new id
    assert (hub.rail(42).repository, hub.rail(43).repository) == (U, O)
    assert hub.api(42)["evidence"]["repository"]["pull_requests"] == []


def test_one_pull_request_may_link_several_tickets_and_one_ticket_several_pull_requests(hub: Hub) -> None:
    for number in (42, 43):
        hub.claim(number)
    hub.decide("pull_request", SHOP.pull_request("opened", 57, body="Closes octo/shop#42 and resolves #43", ref="x"))
    hub.decide("pull_request", SHOP.pull_request("closed", 57, body="Closes octo/shop#42 and resolves #43", ref="x",
                                               merged=True, minute=5))  # fmt: skip
    hub.decide("pull_request", SHOP.pull_request("opened", 60, body="FIXES https://github.com/octo/shop/issues/42",
                                               ref="y", sha=NEWER, minute=6))  # fmt: skip
    assert repository_text(hub.rail(42)) == (
        "Pull request #57 merged (merge commit 9f8e7d6); pull request #60 open (head 5e6f7a8, verified)"
    )
    assert repository_text(hub.rail(43)) == "Pull request #57 merged (merge commit 9f8e7d6)"
    shown = hub.api(42)["evidence"]["repository"]["pull_requests"]
    assert [(p["number"], p["state"]) for p in shown] == [(57, "merged"), (60, "open")]


def test_a_branch_name_links_its_number_only(hub: Hub) -> None:
    for number in (42, 7):
        hub.claim(number)
    for branch in ("agent-7/42-retry", "feature/issue-42", "fix-7-bugs", "v1.42", "42/empty-state"):
        hub.decide("push", SHOP.push(branch))
    assert [b.name for b in hub.rail(42).linked_branches()] == ["agent-7/42-retry", "feature/issue-42"]
    assert hub.rail(7).repository is U


@pytest.mark.parametrize("report_first", [True, False], ids=["report-first", "pull-request-first"])
def test_what_the_delivery_reported_links_a_pull_request_in_either_order(hub: Hub, report_first: bool) -> None:
    hub.claim()
    opened = SHOP.pull_request("opened", 60, body="A pull request that names no issue", ref="wip")
    if not report_first:
        hub.decide("pull_request", opened)
        assert hub.rail().repository is U
    hub.deliver("done\npr: #60")
    if report_first:
        assert repository_text(hub.rail()) == "Pull request #60 reported, not verified yet"
        hub.decide("pull_request", opened)
    assert repository_text(hub.rail()) == "Pull request #60 open (head 1a2b3c4, verified)"


# ---------------------------------------------------------------------------------------------- reported and verified


def test_a_reported_branch_pushed_before_the_delivery_is_verified_at_once(hub: Hub) -> None:
    hub.claim()
    hub.decide("push", SHOP.push("wip", sha=HEAD))
    hub.deliver("done\nbranch: wip\ncommit: 1A2B3C4")
    rail = hub.rail()
    assert (repository_text(rail), rail.verified_head_sha, rail.mismatch) == (
        "Branch wip (head 1a2b3c4, verified)",
        HEAD,
        None,
    )
    assert hub.evidence_events() == ["report", "branch"]


def test_a_mismatch_between_the_report_and_github_is_shown_in_the_read_api(hub: Hub) -> None:
    hub.claim()
    hub.deliver("done\nbranch: 42-empty-state\ncommit: 0c0ffee")
    hub.decide("pull_request", SHOP.pull_request("opened", sha=HEAD))
    rail = hub.rail()
    assert mismatch_text(rail) == "Reported commit 0c0ffee is not the head of pull request #57 (1a2b3c4)"
    repository = hub.api()["evidence"]["repository"]
    assert repository["reported"] == {"branch": "42-empty-state", "commit": "0c0ffee", "pull_request": None}
    assert (repository["verified_head_sha"], repository["checked_at"]) == (HEAD, "2024-05-01T10:01:00Z")
    assert repository["mismatch"] == "reported commit 0c0ffee is not the head of pull request #57 (1a2b3c4)"


def test_a_delivery_without_code_evidence_leaves_the_rail_alone(hub: Hub) -> None:
    hub.claim()
    hub.deliver("done\ntests: https://ci.example/run/1")
    assert hub.count(t.evidence_rails) == 0


# ---------------------------------------------------------------------------------------------- order and repetition

STORY = [
    ("push", SHOP.push("42-empty-state", OLDER, minute=0)),
    ("pull_request", SHOP.pull_request("opened", sha=OLDER, minute=1)),
    ("check_run", SHOP.check_run(sha=OLDER, minute=2)),
    ("push", SHOP.push("42-empty-state", HEAD, minute=3)),
    ("pull_request", SHOP.pull_request("synchronize", sha=HEAD, minute=3)),
    ("pull_request", SHOP.pull_request("edited", sha=HEAD, minute=4, body="Fixes #42, fixes #43")),
    ("check_run", SHOP.check_run(conclusion="success", sha=HEAD, minute=5)),
    ("pull_request", SHOP.pull_request("closed", sha=HEAD, minute=6, merged=True, body="Fixes #42, fixes #43")),
    ("delete", SHOP.ref("42-empty-state")),
    ("deployment", SHOP.deployment(minute=10)),
    ("deployment_status", SHOP.deployment_status("in_progress", minute=11)),
    ("deployment_status", SHOP.deployment_status("success", minute=12)),
    ("deployment", SHOP.deployment(2, minute=20, environment="staging")),
    ("deployment_status", SHOP.deployment_status("failure", 2, minute=21, environment="staging")),
    ("issues", SHOP.issue("closed")),
]


def seen(rail: EvidenceRail) -> tuple[Any, ...]:
    """Everything a rail says. What it keeps may differ where nothing depends on it: a `delete` is stamped when
    it arrived, and a check on a head the pull request left before the rail held it is not caught up on."""
    pulls = [(pr.number, pr.merged, pr.open, pr.latest.links, pr.merge) for pr in rail.pull_requests]
    branches = [(b.name, b.exists, b.sha) for b in rail.branches]
    return (rail.repository, rail.reason, repository_text(rail), rail.verified_head_sha, rail.checked_at,
            rail.mismatch, rail.deployment, deployment_text(rail), pulls, branches, rail.deployments)  # fmt: skip


def _retarget(payload: dict[str, Any], repo: Repo) -> dict[str, Any]:
    return {**payload, "repository": {"id": repo.repository_id, "full_name": repo.name}}


@pytest.mark.parametrize("seed", range(4))
def test_shuffled_and_repeated_deliveries_give_the_rails_the_ordered_ones_give(hub: Hub, seed: int) -> None:
    ordered, shuffled = Repo(repository_id=1), Repo(repository_id=2)
    for repo in (ordered, shuffled):
        hub.claim(42, repo=repo)
        hub.claim(43, repo=repo)
    hub.deliver("done\nbranch: 42-empty-state\ncommit: 1a2b3c4", repo=ordered)
    hub.deliver("done\nbranch: 42-empty-state\ncommit: 1a2b3c4", repo=shuffled)
    work = hub.work()
    for index, (event, payload) in enumerate(STORY):
        hub.decide(event, _retarget(payload, ordered), f"ordered-{index}")
    deliveries = [(f"shuffled-{index}", event, payload) for index, (event, payload) in enumerate(STORY)]
    rng = random.Random(seed)
    deliveries += rng.sample(deliveries, len(deliveries) // 2)  # some twice, under the same id
    deliveries += [(f"again-{d}", e, p) for d, e, p in rng.sample(deliveries, 4)]  # and under new ids
    rng.shuffle(deliveries)
    for delivery, event, payload in deliveries:
        hub.decide(event, _retarget(payload, shuffled), delivery)
    for number in (42, 43):
        assert seen(hub.rail(number, shuffled)) == seen(hub.rail(number, ordered)), number
    assert hub.rail(42, ordered).repository is M
    assert hub.rail(42, ordered).deployment is DeploymentState.DEPLOYED
    assert deployment_text(hub.rail(43, shuffled)) == "Deployed to production (9f8e7d6); failed in staging (9f8e7d6)"
    assert hub.work() == work


def test_a_duplicate_changes_nothing_at_all(hub: Hub) -> None:
    hub.claim()
    for index, (event, payload) in enumerate(STORY):
        hub.decide(event, payload, f"story-{index}")
    rails, events, facts = hub.rows(t.evidence_rails), hub.rows(t.evidence_events), hub.rows(t.evidence_facts)
    for index, (event, payload) in enumerate(STORY):
        hub.decide(event, payload, f"story-{index}")  # redelivered
        if event not in ("create", "delete"):  # stamped when they arrive: a copy under a new id arrives later
            hub.decide(event, payload)  # sent again under a new delivery id
    assert (hub.rows(t.evidence_rails), hub.rows(t.evidence_events), hub.rows(t.evidence_facts)) == (
        rails,
        events,
        facts,
    )


def test_a_deployment_reaches_merged_rails_not_yet_deployed_there_and_no_others(hub: Hub) -> None:
    for number in (42, 43, 44):
        hub.claim(number)
    hub.decide("pull_request", SHOP.pull_request("closed", 57, body="Fixes #42", merged=True, minute=5))
    hub.decide("pull_request", SHOP.pull_request("opened", 58, body="Fixes #43", ref="x", minute=5))
    hub.decide("deployment", SHOP.deployment(1, minute=10))
    hub.decide("deployment_status", SHOP.deployment_status("success", 1, minute=11))
    hub.decide("pull_request", SHOP.pull_request("closed", 59, body="Fixes #44", ref="y", merged=True, minute=20,
                                               merge_sha=NEWER))  # fmt: skip
    hub.decide("deployment", SHOP.deployment(2, sha=NEWER, minute=30))
    assert [d.id for d in hub.rail(42).deployments] == [1]  # already deployed to production: 2 is not its news
    assert hub.rail(43).deployments == ()  # nothing merged: a deployment ships nothing of it
    assert [d.id for d in hub.rail(44).deployments] == [2]  # merged after deployment 1 was made
    assert hub.rail(44).deployment is DeploymentState.DEPLOYING
    assert MERGE not in {d.sha for d in hub.rail(44).deployments}


# ---------------------------------------------------------------------------------------------- concurrency


def test_concurrent_deliveries_about_one_ticket_never_lose_a_fact(database_url: str) -> None:
    """Several processes' worth of writers (threads, each with its own connection) record facts about the same
    rail at once, while the runner delivers: every fact is on the rail at the end."""
    from baton.domain import Actor, Command, Evidence
    from baton.domain.evidence import BranchFact, DeploymentFact, Repository, Sighting
    from baton.reading.linking import branch_links
    from baton.service.evidence import EvidenceService
    from baton.service.unit import Units
    from baton.service.work import Issue, WorkService
    from baton.store import make_engine

    engine = make_engine(database_url, pool_size=12) if "postgresql" in database_url else make_engine(database_url)
    try:
        evidence = EvidenceService(Units(engine, SYSTEM), answer_delay=0)
        work = WorkService(Units(engine, SYSTEM), evidence, answer_delay=0)
        issue = Issue(TicketKey(SHOP.installation, SHOP.repository_id, 42), SHOP.name, "olivia")
        runner = Actor("agent-a", Permission.READ, collaborator=True)
        assert work.apply(issue, Command("claim"), runner, "claim").applied
        repository = Repository(RepositoryKey(SHOP.installation, SHOP.repository_id), SHOP.name)
        branches = [f"42-try-{n}" for n in range(10)]
        facts = [BranchFact(name, f"2024-05-01T10:{n:02d}:00Z", HEAD, links=branch_links(name))
                 for n, name in enumerate(branches)]  # fmt: skip
        barrier = threading.Barrier(len(facts) + 1)
        errors: list[BaseException] = []

        def push(fact: BranchFact) -> None:
            try:
                barrier.wait()
                evidence.record(repository, [Sighting(fact, fact.links)], f"push-{fact.name}")
            except BaseException as error:  # reported below, with the thread's own traceback lost
                errors.append(error)

        def deliver() -> None:
            try:
                barrier.wait()
                command = Command("deliver", text="done", evidence=Evidence(branch="42-try-3", commit="1a2b3c4"))
                assert work.apply(issue, command, runner, "deliver").applied
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=push, args=(fact,)) for fact in facts] + [threading.Thread(target=deliver)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        rail = evidence.rail(issue.key)
        assert sorted(b.name for b in rail.branches) == branches
        assert (rail.reported_branch, rail.verified_head_sha, rail.mismatch) == ("42-try-3", HEAD, None)
        evidence.record(repository, [Sighting(DeploymentFact(1, MERGE, "production", "2024-05-01T11:00:00Z"))], "d")
        assert evidence.rail(issue.key).deployments == ()  # nothing merged: it reaches no rail
    finally:
        engine.dispose()


def test_a_push_fact_carries_what_it_continues_from() -> None:
    from baton.domain.evidence import BranchFact
    from baton.github.facts import observe, repository_of

    def pushed(before: str) -> BranchFact:
        payload = {"ref": "refs/heads/42-work", "before": before, "after": "b" * 40,
                   "head_commit": {"timestamp": "2026-01-01T00:00:00Z"},
                   "repository": {"id": 7, "full_name": "octo/shop"}, "installation": {"id": 1}}  # fmt: skip
        repository = repository_of(payload)
        assert repository is not None
        (sighting,) = observe("push", payload, repository, "2026-01-01T00:00:05Z")
        assert isinstance(sighting.fact, BranchFact)
        return sighting.fact

    assert pushed("a" * 40).before == "a" * 40
    assert pushed("0" * 40).before is None  # the push that created the branch
