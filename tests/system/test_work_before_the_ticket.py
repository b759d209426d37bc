"""Work begun before its issue became a ticket reaches the ticket's repository rail, through the real app and
writer against the stand-in GitHub: a pull request or a branch Baton logged while the issue was not offered is
applied to the rail the moment the ticket is made, and a pull request GitHub held before Baton was installed is
found once, in the issue's timeline, when the writer first shows the ticket."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from baton.demo.stage import Stage
from baton.domain import RepositoryState, WorkState
from baton.domain.evidence import EvidenceRail
from baton.domain.status import LABELS
from baton.intake import decide
from baton.process import writer
from github_standin.server import Fault
from support.keys import app_key, app_public_key
from support.payloads import HEAD, NEWER
from support.standin_scene import Scene

LABELLED = "offer: labeled\noffer_label: agents\n"


@contextmanager
def staged(database_url: str, settings_file: str | None = None) -> Iterator[Scene]:
    """Baton and the stand-in GitHub, `octo/shop` with Baton's labels and `settings_file` as its
    `.github/baton.yml`, and no issue yet. Nothing is written to GitHub but by `scene.drain()`."""
    options: dict[str, Any] = {"answer_delay": 0, "write_interval": 0, "lanes": False}
    with Stage.open(database_url, key=(app_key(), app_public_key()), **options) as stage:
        with stage.hub.world.lock:
            for name, (colour, description) in LABELS.items():
                stage.hub.world.create_label(stage.repository, name, colour, description)
        scene = Scene(stage, 0)
        scene.settle()  # the installation, as GitHub told Baton
        if settings_file is not None:
            scene.configure(settings_file)
        yield scene
        assert stage.hub.all_problems() == []


def open_issue(scene: Scene, title: str = "Empty state for the cart") -> int:
    scene.number = scene.person("olivia").open_issue(scene.full_name, title)
    scene.settle()
    return scene.number


def rail(scene: Scene) -> EvidenceRail:
    found: EvidenceRail = scene.app.state.writer.evidence.rail(scene.key)
    return found


def repository_line(scene: Scene) -> str:
    [line] = [line for line in scene.status().splitlines() if line.startswith("**Repository:**")]
    return line


def timeline_reads(scene: Scene) -> int:
    return scene.reads().count(f"{scene.path}/timeline")


def evidence_events(scene: Scene) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = scene.app.state.writer.evidence.reads.events(scene.key)
    return events


def run_backfills(scene: Scene) -> None:
    """Decide the backfills an installation stored, as the decide lane would."""
    inbox, intake = scene.app.state.inbox, scene.app.state.parts.intake
    while deliveries := inbox.take_pending():
        decide(inbox, intake, deliveries)


# -- from the log: what Baton heard before the issue was a ticket ---------------------------------------------


def test_a_pull_request_opened_before_the_issue_was_offered_is_on_the_rail_once_it_is(database_url: str) -> None:
    with staged(database_url, LABELLED) as scene:
        number = open_issue(scene)
        agent = scene.person("agent-a")
        agent.push(scene.full_name, "empty-cart", "Empty state for the cart", sha=HEAD)
        pr = agent.open_pull_request(scene.full_name, "empty-cart", "Empty state for the cart", f"Fixes #{number}")
        scene.settle()
        assert scene.app.state.work.ticket(scene.key) is None  # not offered: the pull request reaches no rail

        scene.label("maria", "agents", True)  # offered now: the ticket's rail catches up in its creation
        ticket = scene.app.state.work.ticket(scene.key)
        assert ticket is not None and ticket.state is WorkState.OPEN
        assert rail(scene).repository is RepositoryState.PULL_REQUEST_OPEN
        assert [p.number for p in rail(scene).linked_pull_requests()] == [pr]
        [caught_up] = [e for e in evidence_events(scene) if e["type"] == "pull_request"]
        assert caught_up["data"]["caught_up"] is True

        scene.drain()
        assert repository_line(scene) == f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)"
        assert scene.labels() == {"agents", "baton:open"}
        # the log knew it: GitHub is asked about the issue's timeline, not about the pull request
        assert f"/repos/{scene.full_name}/pulls/{pr}" not in scene.reads()
        assert timeline_reads(scene) == 1

        scene.comment("agent-a", "/claim")
        scene.drain()
        assert timeline_reads(scene) == 1  # once per ticket
        assert repository_line(scene) == f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)"


def test_a_branch_named_after_the_issue_pushed_before_the_ticket_is_on_its_rail(database_url: str) -> None:
    with staged(database_url, LABELLED) as scene:
        number = open_issue(scene)
        scene.person("agent-a").push(scene.full_name, f"{number}-empty-cart", "Empty state", sha=HEAD)
        scene.settle()
        other = open_issue(scene, "Focus order on the invoice list")  # its number is not the branch's
        scene.label("maria", "agents", True)
        assert rail(scene).repository is RepositoryState.UNREPORTED

        scene.number = number
        scene.label("maria", "agents", True)
        assert rail(scene).repository is RepositoryState.BRANCH_REPORTED
        scene.drain()
        assert repository_line(scene) == f"**Repository:** Branch {number}-empty-cart (head 1a2b3c4, verified)"
        scene.number = other
        assert rail(scene).repository is RepositoryState.UNREPORTED


def test_the_newest_fact_about_a_pull_request_decides_whether_it_links_a_new_ticket(database_url: str) -> None:
    with staged(database_url, LABELLED) as scene:
        number = open_issue(scene)
        agent = scene.person("agent-a")
        agent.push(scene.full_name, "empty-cart", "Empty state for the cart", sha=HEAD)
        pr = agent.open_pull_request(scene.full_name, "empty-cart", "Empty state", f"Fixes #{number}")
        scene.later()
        agent.edit_pull_request(scene.full_name, pr, "Only the styles; the cart comes later")
        scene.settle()

        scene.label("maria", "agents", True)
        assert rail(scene).linked_pull_requests() == ()
        assert rail(scene).repository is RepositoryState.UNREPORTED


def test_a_command_that_creates_the_ticket_sees_the_pull_request_opened_before(database_url: str) -> None:
    with staged(database_url) as scene:
        scene.unheard_issue("Empty state for the cart")  # Baton was not told: the first command makes the ticket
        agent = scene.person("agent-a")
        agent.push(scene.full_name, "empty-cart", "Empty state for the cart", sha=HEAD)
        pr = agent.open_pull_request(scene.full_name, "empty-cart", "Empty state", f"Closes #{scene.number}")
        scene.settle()
        scene.comment("agent-a", "/claim")
        ticket = scene.app.state.work.ticket(scene.key)
        assert ticket is not None and ticket.state is WorkState.CLAIMED
        assert [p.number for p in rail(scene).linked_pull_requests()] == [pr]
        scene.drain()
        assert repository_line(scene) == f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)"


# -- from GitHub: work from before Baton was installed ------------------------------------------------------


def _before_baton(scene: Scene, body: str) -> tuple[int, int]:
    """An issue and a pull request GitHub held before Baton was installed (no webhook told Baton of either),
    with `body` the pull request's; and another pull request that only mentions the issue."""
    world, repository = scene.hub.world, scene.repository
    with world.lock:
        author = world.account("olivia")
        issue = world.add_issue(repository, "Empty state for the cart", author).number
        world.add_commit(repository, "empty-cart", "Empty state for the cart", sha=HEAD)
        pr = world.add_pull_request(repository, world.account("agent-a"), "empty-cart", "Empty state",
                                    body.format(issue=issue)).number  # fmt: skip
        world.add_commit(repository, "styles", "Styles", sha=NEWER)
        world.add_pull_request(repository, author, "styles", "Styles", f"See #{issue} for the cart")
    return issue, pr


def test_a_pull_request_from_before_the_installation_shows_after_the_backfill(database_url: str) -> None:
    with staged(database_url) as scene:
        scene.number, pr = _before_baton(scene, "Fixes #{issue}")
        run_backfills(scene)
        assert scene.app.state.work.ticket(scene.key) is not None
        assert rail(scene).repository is RepositoryState.UNREPORTED  # nothing in the log

        scene.drain()  # the writer reads the issue's timeline once, and asks about the pull requests it names
        assert rail(scene).repository is RepositoryState.PULL_REQUEST_OPEN
        assert [p.number for p in rail(scene).linked_pull_requests()] == [pr]  # a bare mention links nothing
        assert repository_line(scene) == f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)"
        assert scene.labels() == {"baton:open"}
        assert timeline_reads(scene) == 1
        assert scene.reads().count(f"/repos/{scene.full_name}/pulls/{pr}") == 1
        [found] = [e for e in evidence_events(scene) if e["type"] == "pull_request"]
        assert (found["source"], found["data"]["fact"]["number"]) == ("github-api", pr)
        assert scene.reads().count(f"/repos/{scene.full_name}/pulls/{pr + 1}") == 1  # asked, and it links nothing

        scene.comment("agent-a", "/claim")
        scene.drain()
        assert timeline_reads(scene) == 1
        assert scene.reads().count(f"/repos/{scene.full_name}/pulls/{pr}") == 1


def test_github_failing_to_give_the_timeline_never_holds_the_ticket_back(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "LOOK_BACK_AGAIN", 0.0)
    with staged(database_url) as scene:
        scene.number, pr = _before_baton(scene, "Resolves #{issue}")
        scene.rest.inject(Fault("GET", rf"^{scene.path}/timeline$", status=502, times=1))
        run_backfills(scene)
        scene.drain()  # shown without it, asked again at once (LOOK_BACK_AGAIN), and found then
        assert scene.labels() == {"baton:open"}
        assert timeline_reads(scene) == 2
        assert repository_line(scene) == f"**Repository:** Pull request #{pr} open (head 1a2b3c4, verified)"
