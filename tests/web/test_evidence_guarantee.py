"""The guarantee of the evidence rail (docs/design.md §4): GitHub's own example payloads of every evidence event, in
their order and in shuffled sequences with duplicates, reach tracked tickets in every work state and change
no row of the work tables. And the code on the evidence path has no import path to the work transitions.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton.domain import Actor, Command, Evidence, Permission, TicketKey, WorkState
from baton.github.facts import EVIDENCE_EVENTS
from baton.intake import HANDLERS
from baton.service.work import Issue, WorkService
from baton.store import tables as t
from support.corpus import webhook_examples
from support.webhook_hub import FakeDirectory, Hub, open_hub, settings

ROOT = Path(__file__).resolve().parents[2]
EVENTS = (*EVIDENCE_EVENTS, "issues")
# Of `issues`, closing and reopening are evidence about the issue. Its other actions change what the repository
# offers (opened, labeled, unlabeled, deleted, transferred) or the brief (edited): tests/system/test_offering.py and
# tests/system/test_briefs.py hold those.
ISSUE_EVIDENCE = ("closed", "reopened")

# Where the corpus's payloads happen: GitHub's example repositories. Examples without an installation get
# this one (a GitHub App's deliveries always carry theirs).
INSTALLATION = 1
HELLO = (INSTALLATION, 186853002, "Codertocat/Hello-World")
PR_HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"  # pull request #2's head in the examples
DEPLOYED = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"  # the examples' deployed commit
PUSHED = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"  # the examples' push to master

RUNNER = Actor("agent-a", Permission.READ, collaborator=True)
MAINTAINER = Actor("maria", Permission.MAINTAIN)


class Tickets:
    """Tracked tickets in every work state, with deliveries that report what the examples name."""

    def __init__(self, service: WorkService) -> None:
        self.service = service
        self.seen = 0

    def do(self, where: tuple[int, int, str], number: int, command: Command, actor: Actor) -> None:
        self.seen += 1
        installation, repository_id, name = where
        issue = Issue(TicketKey(installation, repository_id, number), name, "olivia")
        outcome = self.service.apply(issue, command, actor, f"setup-{self.seen}")
        assert outcome.applied, outcome

    def deliver(self, where: tuple[int, int, str], number: int, evidence: Evidence) -> None:
        self.do(where, number, Command("claim"), RUNNER)
        self.do(where, number, Command("deliver", text="done", evidence=evidence), RUNNER)


def track(service: WorkService) -> dict[tuple[int, int], WorkState]:
    tickets = Tickets(service)
    # 1: the issue the `issues` examples close and reopen, delivered with pull request #2's branch and head
    tickets.deliver(HELLO, 1, Evidence("changes", PR_HEAD[:7], 2))
    # 3: accepted, reporting the branch the push examples push to
    tickets.deliver(HELLO, 3, Evidence("master", PUSHED))
    tickets.do(HELLO, 3, Command("accept", text="ok"), MAINTAINER)
    # 4: claimed; 5: open (the edited variant below links both)
    tickets.do(HELLO, 4, Command("claim"), RUNNER)
    assert service.open_ticket(Issue(TicketKey(*HELLO[:2], 5), HELLO[2], "olivia"), "setup-open").applied
    # 6: withdrawn after delivering pull request #2
    tickets.deliver(HELLO, 6, Evidence(pull_request=2))
    tickets.do(HELLO, 6, Command("withdraw", text="not needed"), MAINTAINER)
    # 7: a draft
    assert service.open_ticket(Issue(TicketKey(*HELLO[:2], 7), HELLO[2], "olivia"), "setup-draft", draft=True).applied
    # 8: sent back after delivering pull request #2: claimed again, attempt 2
    tickets.deliver(HELLO, 8, Evidence("changes", pull_request=2))
    tickets.do(HELLO, 8, Command("send-back", text="again"), MAINTAINER)
    found = {}
    for number in (1, 3, 4, 5, 6, 7, 8):
        ticket = service.ticket(TicketKey(*HELLO[:2], number))
        assert ticket is not None
        found[(HELLO[1], number)] = ticket.state
    return found


def deliveries() -> list[tuple[str, dict[str, Any]]]:
    """Every example of the evidence events, and a few variants of them that make more of them reach tickets."""
    found = []
    corpus = webhook_examples()
    for event in EVENTS:
        assert corpus.get(event), f"the corpus has no example of {event}: has its layout changed?"
        for example in corpus[event]:
            if event == "issues" and example.get("action") not in ISSUE_EVIDENCE:
                continue
            payload = copy.deepcopy(example)
            if not isinstance(payload.get("installation"), dict):
                payload["installation"] = {"id": INSTALLATION}
            found.append((event, payload))
    opened = next(p for e, p in found if e == "pull_request" and p.get("action") == "opened")
    edited = copy.deepcopy(opened)  # the description now links #4 and #5
    edited["action"] = "edited"
    edited["pull_request"]["body"] = "Fixes #4\nCloses Codertocat/Hello-World#5"
    edited["pull_request"]["updated_at"] = "2019-05-15T15:30:00Z"
    merged = copy.deepcopy(edited)  # and merged, as the examples' deployed commit
    merged["action"] = "closed"
    merged["pull_request"].update(state="closed", merged=True, merged_at="2019-05-15T15:31:00Z",
                                  updated_at="2019-05-15T15:31:00Z", merge_commit_sha=DEPLOYED)  # fmt: skip
    return [*found, ("pull_request", edited), ("pull_request", merged)]


@pytest.fixture
def hub(database_url: str) -> Iterator[Hub]:
    # Without the App's credentials Baton cannot read permissions: a delivery that needed one would wait.
    with open_hub(settings(database_url, credentials=False), FakeDirectory(down=True)) as made:
        yield made


def test_every_example_of_the_evidence_events_is_routed() -> None:
    corpus = webhook_examples()
    routed = {(event, str(example.get("action") or "")) for event in EVENTS for example in corpus[event]}
    for event, evidence in EVIDENCE_EVENTS.items():
        for action in evidence.actions:
            assert (event, action) in HANDLERS
    assert routed & set(HANDLERS)  # the examples do reach the handlers


@pytest.mark.long
def test_the_examples_in_order_and_shuffled_with_duplicates_change_no_work_row(hub: Hub) -> None:
    states = track(hub.app.state.work)
    assert set(states.values()) == set(WorkState)
    work = hub.work()
    sent = deliveries()

    for event, payload in sent:
        hub.send(event, payload)
    assert hub.statuses() <= {"done", "ignored"}
    assert hub.work() == work
    evidence = hub.app.state.work.evidence
    rail = evidence.rail(TicketKey(*HELLO[:2], 1))
    assert [pr.number for pr in rail.pull_requests] == [2] and rail.reported_pull_request == 2
    assert evidence.rail(TicketKey(*HELLO[:2], 3)).branch("master") is not None  # the push reached it
    assert {pr.number for pr in evidence.rail(TicketKey(*HELLO[:2], 4)).linked_pull_requests()} == {2}
    assert evidence.rail(TicketKey(*HELLO[:2], 4)).deployments  # shipped by the merged variant's commit
    assert {c.name for c in rail.checks} == {"Octocoders-linter", "octocoders-linter"}  # a check run and a suite
    assert "issue_reopened" in {event["type"] for event in evidence.reads.events(TicketKey(*HELLO[:2], 1))}

    for seed in range(3):
        rng = random.Random(seed)
        numbered = [(f"seed-{seed}-{index}", event, payload) for index, (event, payload) in enumerate(sent)]
        sequence = numbered + rng.choices(numbered, k=len(numbered) // 2)  # some twice under the same id
        sequence += [(f"{d}-again", e, p) for d, e, p in rng.sample(numbered, 20)]  # some again under new ids
        rng.shuffle(sequence)
        for delivery, event, payload in sequence:
            hub.send(event, payload, delivery)
        assert hub.statuses() <= {"done", "ignored"}, seed
        assert hub.work() == work, seed
    assert hub.count(t.evidence_events) > 0


# ------------------------------------------------------------------------------------- no path to the work rail

# Every module that handles evidence, from the payload to the database and back to GitHub's questions.
EVIDENCE_PATH = ["baton.domain.evidence", "baton.reading.linking", "baton.service.evidence", "baton.store.evidence",
                 "baton.store.outbox", "baton.store.outbox.marking", "baton.github.facts",
                 "baton.github.verify"]  # fmt: skip
WORK_RAIL = {"baton.domain.transitions", "baton.domain", "baton.service", "baton.service.work",
             "baton.service.unit", "baton.store.work", "baton.store", "baton.reading.commands", "baton.intake",
             "baton.process.writer"}  # fmt: skip


def _source(module: str) -> Path:
    base = ROOT / "src" / Path(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _imports(module: str) -> set[str]:
    """The baton modules whose code `module` uses. `from baton.store import Store` uses the package root
    (which re-exports the work store); `from baton.store import tables` uses only that module."""
    found = set()
    package = module if _source(module).name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(_source(module).read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names}
            if all(_source(name).exists() for name in submodules):
                found.update(submodules)
            else:
                found.add(base)
    return {name for name in found if name.split(".")[0] == "baton"}


def test_no_module_of_the_evidence_path_reaches_the_work_transitions() -> None:
    reached: dict[str, str] = {}
    todo = [(module, module) for module in EVIDENCE_PATH]
    while todo:
        module, via = todo.pop()
        if module in reached:
            continue
        reached[module] = via
        todo.extend((name, f"{via} -> {name}") for name in _imports(module) if _source(name).exists())
    assert not {module: reached[module] for module in reached if module in WORK_RAIL}
    assert "baton.store.tables" in reached and "baton.domain.model" in reached  # the walk does follow imports


def test_the_walk_would_notice_an_import_of_the_work_rail() -> None:
    """Guards the test above: the work service does reach the transitions, through the package root."""
    assert "baton.domain" in _imports("baton.service.work")
    assert "baton.store" in _imports("baton.service.unit")
    assert "baton.domain.transitions" in _imports("baton.domain")
    assert _imports("baton.store.evidence") >= {"baton.store.tables", "baton.domain.evidence"}
