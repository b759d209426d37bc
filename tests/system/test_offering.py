"""Offering issues on sight, through signed webhooks into Baton's app against the stand-in GitHub: an
offered issue becomes an open ticket shown with `baton:open` (its status comment comes with the first
command); one that stops being
offered is withdrawn with an event saying why; installing the App (or `baton backfill`) offers the open
issues already there, once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from baton.cli import main
from baton.demo.stage import Stage
from baton.domain import Event, Ticket, TicketKey, WorkState
from baton.domain.status import LABELS
from baton.intake import decide, process
from support.keys import app_key, app_public_key
from support.standin_scene import Scene


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
        if settings_file is not None:  # pushed: what Baton read of the settings at the installation is forgotten
            scene.configure(settings_file)
        yield scene
        assert stage.hub.all_problems() == []


def open_issue(scene: Scene, login: str, title: str, body: str = "") -> int:
    scene.number = scene.person(login).open_issue(scene.full_name, title, body)
    scene.settle()
    return scene.number


def ticket(scene: Scene) -> Ticket | None:
    found: Ticket | None = scene.app.state.work.ticket(scene.key)
    return found


def history(scene: Scene) -> list[Event]:
    events: list[Event] = scene.app.state.work.history(scene.key)
    return events


def run_backfills(scene: Scene) -> int:
    """Decide what the inbox holds beyond the stand-in's deliveries (the backfills an installation stored),
    as the decide lane would."""
    inbox, intake = scene.app.state.inbox, scene.app.state.parts.intake
    taken = 0
    while deliveries := inbox.take_pending():
        decide(inbox, intake, deliveries)
        taken += len(deliveries)
    return taken


def tickets(scene: Scene) -> dict[int, WorkState]:
    from sqlalchemy import select

    from baton.store import tables as t

    with scene.app.state.work.units.engine.connect() as connection:
        rows = connection.execute(select(t.tickets.c.number, t.tickets.c.state)).all()
    return {row.number: WorkState(row.state) for row in rows}


# -- offer: all ----------------------------------------------------------------------------------------


def test_with_offer_all_a_new_issue_is_open_at_once_and_can_be_claimed(database_url: str) -> None:
    with staged(database_url) as scene:
        open_issue(scene, "olivia", "Empty state for the cart")
        opened = ticket(scene)
        assert opened is not None and opened.state is WorkState.OPEN and opened.owner == "olivia"
        assert scene.drain() == 1
        assert scene.labels() == {"baton:open"}
        assert not [c for c in scene.comments() if c.body.startswith("<!-- baton:status -->")]
        scene.comment("agent-a", "/claim")
        scene.drain()
        assert scene.labels() == {"baton:claimed"}
        assert "**Work:** Claimed — attempt 1 by @agent-a" in scene.status()
        assert [event.type for event in history(scene)] == ["created", "claimed"]


def test_a_redelivered_or_replayed_opened_creates_nothing_twice(database_url: str) -> None:
    with staged(database_url) as scene:
        open_issue(scene, "olivia", "Empty state for the cart")
        [opened] = [d for d in scene.hub.deliveries if d.event == "issues"]
        scene.hub.redeliver(opened)  # GitHub's redelivery: the same X-GitHub-Delivery
        scene.settle()
        inbox, intake = scene.app.state.inbox, scene.app.state.parts.intake
        assert inbox.replay(opened.id)  # processed again from the start, as `baton replay` does
        process(inbox, intake, opened.id)
        assert [event.type for event in history(scene)] == ["created"]
        assert tickets(scene) == {scene.number: WorkState.OPEN}


def test_an_issue_opened_with_claim_is_created_claimed_by_its_author_in_one_transaction(database_url: str) -> None:
    with staged(database_url) as scene:
        scene.person("agent-a")
        open_issue(scene, "agent-a", "I will do this", "/claim")
        claimed = ticket(scene)
        assert claimed is not None and claimed.state is WorkState.CLAIMED and claimed.runner == "agent-a"
        assert [event.type for event in history(scene)] == ["created", "claimed"]


def test_closing_an_open_issue_withdraws_its_ticket_and_reopening_offers_it_again(database_url: str) -> None:
    with staged(database_url) as scene:
        open_issue(scene, "olivia", "Empty state for the cart")
        scene.person("maria").close_issue(scene.full_name, scene.number, "not_planned")
        scene.settle()
        scene.later()
        scene.person("maria").reopen_issue(scene.full_name, scene.number)
        scene.settle()
        again = ticket(scene)
        assert again is not None and again.state is WorkState.OPEN and again.revision == 3
        assert [event.type for event in history(scene)] == ["created", "withdrawn", "reopened"]


def test_an_issue_reopened_that_baton_never_tracked_is_offered(database_url: str) -> None:
    with staged(database_url) as scene:
        world = scene.hub.world
        with world.lock:  # closed before Baton was installed: GitHub never told Baton of it
            issue = world.add_issue(scene.repository, "Closed long ago", world.account("olivia"))
            issue.state = "closed"
        scene.number = issue.number
        scene.person("maria").reopen_issue(scene.full_name, scene.number)
        scene.settle()
        offered = ticket(scene)
        assert offered is not None and offered.state is WorkState.OPEN
        scene.drain()
        assert scene.labels() == {"baton:open"}


def test_closing_a_claimed_issue_leaves_the_work_alone(database_url: str) -> None:
    with staged(database_url) as scene:
        open_issue(scene, "olivia", "Empty state for the cart")
        scene.comment("agent-a", "/claim")
        scene.person("maria").close_issue(scene.full_name, scene.number)
        scene.settle()
        claimed = ticket(scene)
        assert claimed is not None and claimed.state is WorkState.CLAIMED


def test_a_withdraw_command_is_not_undone_by_reopening(database_url: str) -> None:
    with staged(database_url) as scene:
        open_issue(scene, "olivia", "Empty state for the cart")
        scene.comment("maria", "/withdraw duplicate of #1")
        scene.person("maria").close_issue(scene.full_name, scene.number)
        scene.person("maria").reopen_issue(scene.full_name, scene.number)
        scene.settle()
        withdrawn = ticket(scene)
        assert withdrawn is not None and withdrawn.state is WorkState.WITHDRAWN


def test_a_deleted_issue_takes_its_claimed_ticket_off_the_board(database_url: str) -> None:
    with staged(database_url) as scene:
        open_issue(scene, "olivia", "Empty state for the cart")
        scene.comment("agent-a", "/claim")
        scene.drain()
        scene.person("octo-admin").delete_issue(scene.full_name, scene.number)
        scene.settle()
        gone = ticket(scene)
        assert gone is not None and gone.state is WorkState.WITHDRAWN
        last = history(scene)[-1]
        ended = last.data["ended"]
        assert (last.actor, last.data["offering"], ended["reason"]) == ("octo-admin", "deleted", "withdrawn")
        assert scene.drain() == 0  # nothing left on GitHub to show it on


# -- offer: labeled -----------------------------------------------------------------------------------


def test_with_offer_labeled_the_label_offers_the_issue_and_removing_it_withdraws_an_open_one(
    database_url: str,
) -> None:
    with staged(database_url, "offer: labeled\noffer_label: agents\n") as scene:
        first = open_issue(scene, "olivia", "Empty state for the cart")
        assert ticket(scene) is None  # not offered: nothing happens
        assert scene.drain() == 0
        assert scene.labels() == set()

        scene.label("maria", "agents", True)
        offered = ticket(scene)
        assert offered is not None and offered.state is WorkState.OPEN
        scene.drain()
        assert scene.labels() == {"agents", "baton:open"}
        scene.comment("agent-a", "/claim")
        scene.drain()
        assert scene.labels() == {"agents", "baton:claimed"}

        open_issue(scene, "olivia", "Focus order on the invoice list")
        scene.label("maria", "agents", True)
        scene.label("maria", "agents", False)
        withdrawn = ticket(scene)
        assert withdrawn is not None and withdrawn.state is WorkState.WITHDRAWN
        last = history(scene)[-1]
        assert (last.type, last.actor, last.data["offering"]) == ("withdrawn", "maria", "unlabeled")
        assert "`agents` was removed" in last.data["reason"]
        scene.drain()
        assert scene.labels() == {"baton:withdrawn"}

        scene.label("maria", "agents", True)  # offered again
        again = ticket(scene)
        assert again is not None and again.state is WorkState.OPEN

        scene.number = first  # a claimed ticket keeps its runner when the label goes
        scene.label("maria", "agents", False)
        kept = ticket(scene)
        assert kept is not None and kept.state is WorkState.CLAIMED and kept.runner == "agent-a"


def test_with_offer_labeled_commands_work_on_a_labelled_issue_and_are_refused_on_others(database_url: str) -> None:
    with staged(database_url, "offer: labeled\n") as scene:
        open_issue(scene, "olivia", "Not for agents")
        scene.comment("agent-a", "/claim")
        scene.drain()
        [reply] = scene.replies()
        assert "is not offered" in reply
        assert ticket(scene) is None

        # labelled while Baton was not told (the label was there before): the command offers it itself
        open_issue(scene, "olivia", "For agents")
        with scene.hub.world.lock:
            scene.hub.world.create_label(scene.repository, "baton", "ededed", None)
            scene.issue.labels.append("baton")
        scene.comment("agent-a", "/claim")
        claimed = ticket(scene)
        assert claimed is not None and claimed.state is WorkState.CLAIMED


# -- installation and backfill ------------------------------------------------------------------------


def _existing_issues(scene: Scene) -> tuple[list[int], int, int]:
    """Issues that were on GitHub before Baton heard of them: two open, one closed, one pull request."""
    world, repository = scene.hub.world, scene.repository
    with world.lock:
        author = world.account("olivia")
        open_ones = [world.add_issue(repository, f"Old issue {n}", author).number for n in (1, 2)]
        closed = world.add_issue(repository, "Done long ago", author)
        closed.state = "closed"
        world.add_commit(repository, "feature", "work")
        pull = world.add_pull_request(repository, author, "feature", "A pull request")
    return open_ones, closed.number, pull.number


def test_installing_offers_the_open_issues_already_there_once(database_url: str) -> None:
    with staged(database_url) as scene:
        open_ones, closed, pull = _existing_issues(scene)
        assert run_backfills(scene) == 1  # one backfill for the one repository installed
        assert tickets(scene) == dict.fromkeys(open_ones, WorkState.OPEN)
        scene.drain()
        with scene.hub.world.lock:
            assert [scene.repository.issues[n].labels for n in open_ones] == [["baton:open"], ["baton:open"]]
            assert scene.repository.issues[closed].labels == [] and scene.repository.issues[pull].labels == []

        [installed] = [d for d in scene.hub.deliveries if d.event == "installation"]
        inbox, intake = scene.app.state.inbox, scene.app.state.parts.intake
        assert inbox.replay(installed.id)  # the installation processed again
        process(inbox, intake, installed.id)
        assert run_backfills(scene) == 0  # its backfill was stored once
        assert tickets(scene) == dict.fromkeys(open_ones, WorkState.OPEN)


def test_installing_learns_the_links_made_before_baton_was_there(database_url: str) -> None:
    """An issue blocked, and a parent with an open sub-issue, before the installation: offered blocked, each
    one's links read from GitHub once."""
    with staged(database_url) as scene:
        world, repository = scene.hub.world, scene.repository
        with world.lock:
            author = world.account("olivia")
            blocked, blocker, parent, part = (world.add_issue(repository, title, author)
                                              for title in ("Blocked", "Blocker", "Epic", "Part"))  # fmt: skip
            world.add_blocked_by(blocked, blocker.id)
            world.add_sub_issue(parent, "octo", part.id)
        assert run_backfills(scene) == 1
        scene.drain()
        with world.lock:
            shown = {issue.number: set(issue.labels) for issue in (blocked, blocker, parent, part)}
        assert shown == {blocked.number: {"baton:open", "baton:blocked"}, blocker.number: {"baton:open"},
                         parent.number: {"baton:open", "baton:blocked"}, part.number: {"baton:open"}}  # fmt: skip
        lists = [path for path in scene.reads() if path.endswith(("/dependencies/blocked_by", "/sub_issues"))]
        wanted = [f"/repos/{scene.full_name}/issues/{issue.number}/{what}" for issue in (blocked, parent)
                  for what in ("dependencies/blocked_by", "sub_issues")]  # fmt: skip
        assert sorted(lists) == sorted(wanted)


@pytest.mark.both_engines
def test_baton_backfill_offers_a_repositorys_open_issues_page_by_page_and_is_idempotent(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with staged(database_url, "offer: labeled\n") as scene:
        open_ones, _, _ = _existing_issues(scene)
        with scene.hub.world.lock:
            scene.hub.world.create_label(scene.repository, "baton", "ededed", None)
            for number in open_ones:
                scene.repository.issues[number].labels.append("baton")
            scene.hub.world.add_issue(scene.repository, "Not labelled", scene.hub.world.account("olivia"))
        monkeypatch.setattr("baton.github.issues.PAGE", 2)  # several pages from four issues and a pull request
        for name, value in {
            "BATON_DATABASE_URL": database_url, "BATON_APP_ID": str(scene.stage.settings.app_id),
            "BATON_PRIVATE_KEY": app_key(), "BATON_GITHUB_API_URL": scene.stage.github_url,
        }.items():  # fmt: skip
            monkeypatch.setenv(name, value)

        assert main(["backfill", "octo/shop"]) == 0
        assert capsys.readouterr().out == (
            "octo/shop: 2 offered, 1 not offered\n"
            "octo/shop: GitHub shows their labels within offering's share of the write budget (40 a minute, 250 an "
            "hour), in about 1 s; answers to commands go first\n"
        )
        assert tickets(scene) == dict.fromkeys(open_ones, WorkState.OPEN)
        assert main(["backfill", "octo/shop"]) == 0
        assert capsys.readouterr().out == "octo/shop: 2 already tracked, 1 not offered\n"
        assert tickets(scene) == dict.fromkeys(open_ones, WorkState.OPEN)
        listed = [path for path in scene.reads() if path == "/repos/octo/shop/issues"]
        assert len(listed) == 6  # three pages, twice
        assert main(["backfill", "octo/shop", "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == {"repository": "octo/shop", "offered": 0, "offered_again": 0,
                                                       "already_tracked": 2, "not_offered": 1}  # fmt: skip

        assert main(["backfill", "octo/elsewhere"]) == 2
        assert "no installation of the App holds octo/elsewhere" in capsys.readouterr().err


def _add_repository(scene: Scene, name: str) -> tuple[Any, Any]:
    """A new repository of the installation's owner (the App not on it yet), and GitHub's
    `installation_repositories` `added` about it, to deliver."""
    from support.corpus import webhook_examples

    [example] = [e for e in webhook_examples()["installation_repositories"] if e["action"] == "added"][:1]
    world = scene.hub.world
    with world.lock:
        tools = world.add_repository(world.installations[scene.repository.installation_id], name)
    payload = {
        **example,
        # the example lacks fields GitHub's schema requires (GitHub sends them, null here)
        "installation": {**example["installation"], "id": tools.installation_id, "suspended_at": None,
                         "suspended_by": None},
        "requester": None,
        "repositories_added": [{**example["repositories_added"][0], "id": tools.id, "name": name,
                                "full_name": tools.full_name}],
        "repositories_removed": [],
    }  # fmt: skip
    return tools, payload


def test_repositories_added_to_the_installation_have_their_open_issues_offered_once(database_url: str) -> None:
    with staged(database_url) as scene:
        tools, payload = _add_repository(scene, "tools")
        world = scene.hub.world
        with world.lock:
            old = world.add_issue(tools, "Already there", world.account("olivia")).number
        added = scene.hub.deliver("installation_repositories", payload)
        scene.settle()
        run_backfills(scene)
        scene.hub.redeliver(added)
        scene.settle()
        assert run_backfills(scene) == 0  # a redelivery stores no second backfill
        offered = scene.app.state.work.ticket(TicketKey(tools.installation_id, tools.id, old))
        assert offered is not None and offered.state is WorkState.OPEN and offered.repository == "octo/tools"


def test_a_transferred_issue_is_withdrawn_here_and_offered_where_it_went(database_url: str) -> None:
    with staged(database_url) as scene:
        tools, payload = _add_repository(scene, "tools")
        scene.hub.deliver("installation_repositories", payload)
        open_issue(scene, "olivia", "Belongs in tools")
        scene.comment("agent-a", "/claim")
        moved = scene.person("maria").transfer_issue(scene.full_name, scene.number, "octo/tools")
        scene.settle()
        left = ticket(scene)
        assert left is not None and left.state is WorkState.WITHDRAWN
        last = history(scene)[-1]
        assert (last.actor, last.data["offering"], last.data["reason"]) == (
            "maria", "transferred", "the issue was moved to octo/tools",
        )  # fmt: skip
        arrived = scene.app.state.work.ticket(TicketKey(tools.installation_id, tools.id, moved))
        assert arrived is not None and arrived.state is WorkState.OPEN and arrived.owner == "olivia"
