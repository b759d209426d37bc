"""Who may do what: every command × every kind of actor × every role setting, through the real app against
the stand-in GitHub (`github_standin`), which answers permission levels per login and team memberships per
team.

One Baton and one stand-in per settings variant; each cell gets an issue of its own, brought to the state
its command starts from, then the actor's comment. Once every cell of a variant is decided, each cell is
checked against the answers Baton queued for GitHub: applied (a 👍, the event and the role it records) or
refused (a reply naming the role needed and how to get it, and nothing recorded). Writing those answers,
labels and status comments to GitHub is the projection tests' subject (tests/system/test_projection.py); here the
outbox is read instead of written, which keeps five variants of some 135 issues each from costing ten
thousand stand-in requests. The expected answers are written out here, independently of the guards.
SQLite only: the role rules are not database-specific.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from baton.domain import Brief, TicketKey
from baton.domain.status import view
from baton.process.writer import reply_text
from baton.service.work import Issue
from support.standin_scene import Scene, opened

OWNER = "olivia"  # opens every issue: the task owner
RUNNER = "agent-a"  # claims and delivers in the setups: the runner

# actor -> (login, repository role on GitHub)
ACTORS = {
    "task owner": (OWNER, "read"),
    "runner": (RUNNER, "write"),
    "another agent with write": ("agent-b", "write"),
    "triage": ("tia", "triage"),
    "read": ("reed", "read"),
    "none": ("nobody", "none"),
    "maintain": ("maria", "maintain"),
    "admin": ("ada", "admin"),
    "listed reviewer": ("rita", "write"),
    "member of a listed team": ("tess", "read"),  # of @octo/qa
    "bot with admin": ("helper[bot]", "admin"),
    # for /accept and /send-back only: a maintainer reviewing work she ran herself
    "maintainer who ran it": ("maria", "maintain"),
}

SETTINGS = {
    "default": "",
    "reviewers": 'reviewers: [rita, "@octo/qa"]\n',
    "runners": 'runners: [agent-a, "@octo/qa"]\n',
    "maintainers": 'maintainers: [rita, "@octo/qa"]\n',
    "allow_self_review": "allow_self_review: true\n",
}

# command -> (the comment, the state its issue is brought to first)
COMMANDS = {
    "publish": ("/publish", "draft"),
    "claim": ("/claim", "open"),
    "release": ("/release", "claimed"),
    "release @runner": (f"/release @{RUNNER}", "claimed"),
    "assign": ("/assign @agent-b", "claimed"),
    "deliver": ("/deliver done", "claimed"),
    "accept": ("/accept looks right", "delivered"),
    "send-back": ("/send-back the tests fail", "delivered"),
    "reopen": ("/reopen wrong approach", "delivered"),
    "withdraw": ("/withdraw obsolete", "open"),
    "status": ("/status", "open"),
    "help": ("/help", "open"),
}


@dataclass(frozen=True)
class Expected:
    role: str | None  # the role the event records when applied; None: refused or noted
    reply: str | None  # the key part of the reply; None: no reply (a 👍)


def _is_maintainer(actor: str, settings: str) -> bool:
    if settings == "maintainers":
        return actor in ("listed reviewer", "member of a listed team")
    return actor in ("maintain", "admin", "maintainer who ran it")


def _review_role(actor: str, settings: str) -> str | None:
    if settings == "reviewers" and actor in ("listed reviewer", "member of a listed team"):
        return "reviewer"
    if _is_maintainer(actor, settings):
        return "repository_maintainer" if settings == "reviewers" else "reviewer"
    return None


def _may_run(actor: str, settings: str) -> bool:
    if settings == "runners":
        return actor in ("runner", "member of a listed team")
    return actor != "none"


def expect(command: str, actor: str, settings: str) -> Expected:
    """The rules, written out: who may do what, under which settings."""
    login = ACTORS[actor][0]
    maintainer = _is_maintainer(actor, settings)
    needs_maintainer = "that needs a repository maintainer, someone " + (
        "listed in `maintainers:`" if settings == "maintainers" else "with the maintain or admin role on octo/shop"
    )
    needs_owner = "that needs its task owner (@olivia) or a repository maintainer"
    match command:
        case "publish" | "withdraw":
            if actor == "task owner":
                return Expected("task_owner", None)
            return Expected("repository_maintainer", None) if maintainer else Expected(None, needs_owner)
        case "claim":
            if _may_run(actor, settings):
                return Expected("runner", None)
            return Expected(None, f"@{login} cannot /claim #N: that needs a runner")
        case "release":
            return Expected("runner", None) if actor == "runner" else Expected(None, "only @agent-a can /release")
        case "release @runner":
            if actor == "runner":
                return Expected("runner", None)
            if maintainer:
                return Expected("repository_maintainer", None)
            return Expected(None, "or a repository maintainer with /release @agent-a")
        case "assign" if maintainer and not _may_run("another agent with write", settings):
            return Expected(None, "cannot /assign #N to @agent-b: that needs a runner")  # agent-b may not run it
        case "assign" | "reopen":
            return Expected("repository_maintainer", None) if maintainer else Expected(None, needs_maintainer)
        case "deliver":
            return Expected("runner", None) if actor == "runner" else Expected(None, "only @agent-a can /deliver")
        case "accept" | "send-back":
            role = _review_role(actor, settings)
            if role is None:
                return Expected(None, f"@{login} cannot /{command} #N: that needs a reviewer")
            if actor == "maintainer who ran it" and settings != "allow_self_review":
                return Expected(None, "is its runner, and octo/shop requires an independent reviewer")
            return Expected(role, None)
        case "status":
            return Expected(None, None)
        case "help":
            return Expected(None, "commands you may use on #N now:")
    raise AssertionError(command)


def cells() -> Iterator[tuple[str, str]]:
    for command in COMMANDS:
        for actor in ACTORS:
            if actor == "maintainer who ran it" and command not in ("accept", "send-back"):
                continue
            yield command, actor


@dataclass
class Cell:
    command: str
    actor: str
    number: int
    runner: str  # who ran the task in the setup
    revision: int = 0  # the ticket's revision before the command
    comment: int = 0


def _cast(scene: Scene, settings: str) -> None:
    """The people of `octo/shop`, the team `octo/qa`, and the settings file."""
    with scene.hub.world.lock:
        for login, role in ACTORS.values():
            scene.hub.world.account(login, "Bot" if login.endswith("[bot]") else "User")
            scene.repository.permissions[login.lower()] = role
        scene.hub.world.join_team("octo", "qa", "tess")
    for login, _ in ACTORS.values():
        scene.people[login] = scene.hub.person(login, kind="Bot" if login.endswith("[bot]") else "User")
    # the setups have agent-a hold many claims at once
    scene.configure("max_active_claims: 100\n" + SETTINGS[settings], by="ada")


def _prepare(scene: Scene, cell: Cell) -> None:
    """A new issue by the task owner, brought to the state the cell's command starts from."""
    state = COMMANDS[cell.command][1]
    title = f"{cell.command} by {cell.actor}"
    if state == "draft":  # an issue Baton has not offered (it heard nothing of it): its ticket starts as a draft
        world = scene.hub.world
        with world.lock:
            cell.number = world.add_issue(scene.repository, title, world.account(OWNER)).number
    else:
        cell.number = scene.person(OWNER).open_issue(scene.stage.full_name, title)
    key = TicketKey(scene.repository.installation_id, scene.repository.id, cell.number)
    if state == "draft":
        brief = Brief(scope=("src/cart.tsx",), acceptance=("an empty state",))
        issue = Issue(key, scene.stage.full_name, OWNER)
        assert scene.app.state.work.open_ticket(issue, f"draft-{cell.number}", draft=True, brief=brief).applied
    elif state == "claimed":
        scene.person(cell.runner).comment(scene.stage.full_name, cell.number, "/claim")
    elif state == "delivered":
        scene.person(cell.runner).comment(scene.stage.full_name, cell.number, "/claim\n/deliver done")


@pytest.mark.long
@pytest.mark.parametrize("settings", list(SETTINGS))
def test_who_may_do_what(sqlite_url: str, settings: str) -> None:
    with opened(sqlite_url, writes_per_minute=100_000, writes_per_hour=100_000) as scene:
        _cast(scene, settings)
        work = scene.app.state.work
        table = []
        for command, actor in cells():
            if actor == "maintainer who ran it" and settings == "runners":
                continue  # maria is no runner there: she cannot have run it
            runner = "maria" if actor == "maintainer who ran it" else RUNNER
            table.append(Cell(command, actor, 0, runner))
        for cell in table:
            _prepare(scene, cell)
        scene.settle()
        for cell in table:
            key = TicketKey(scene.repository.installation_id, scene.repository.id, cell.number)
            ticket = work.ticket(key)
            cell.revision = ticket.revision if ticket else 0
            assert ticket is None or ticket.state.value == COMMANDS[cell.command][1], (cell, ticket)
            login = ACTORS[cell.actor][0]
            cell.comment = scene.person(login).comment(scene.stage.full_name, cell.number, COMMANDS[cell.command][0])
        scene.settle()
        outbox = scene.app.state.writer.outbox

        wrong = []
        for cell in table:
            key = TicketKey(scene.repository.installation_id, scene.repository.id, cell.number)
            expected = expect(cell.command, cell.actor, settings)
            answers = outbox.items(key)  # what Baton would write: each 👍, and the refusals' one coalesced reply
            replies = [item for item in answers if item.kind == "reply"]
            reply = reply_text(replies).replace(f"#{cell.number}", "#N") if replies else None
            thumbs = any(item.kind == "reaction" and item.comment_id == cell.comment for item in answers)
            ticket, events = work.ticket(key), work.history(key)
            last = events[-1] if events else None
            seen: tuple[object, ...]
            if expected.role is not None:  # applied: a 👍, no reply, and the event records the actor and role
                changed = ticket is not None and ticket.revision == max(cell.revision, 1) + 1  # 1: created now
                seen = (changed, thumbs, reply, last and last.actor, last and last.role.value)
                want: tuple[object, ...] = (True, True, None, ACTORS[cell.actor][0], expected.role)
            else:  # refused or noted: nothing recorded; a reply with the key part where one is expected
                # an untracked issue's first command tracks it (revision 1) before it is decided
                unchanged = (ticket.revision if ticket else 1) == max(cell.revision, 1)
                said = reply is not None and expected.reply is not None and expected.reply in reply
                seen = (unchanged, said if expected.reply else reply is None)
                want = (True, True)
            if seen != want:
                wrong.append(f"{cell.command} by {cell.actor}: expected {expected}, saw {seen}, reply {reply!r}")
            if cell.command == "accept" and expected.role is not None:
                override = " as repository maintainer (override)" if expected.role == "repository_maintainer" else ""
                self_verified = " (self-verified)" if cell.actor == "maintainer who ran it" else ""
                line = f"**Work:** Accepted by @{ACTORS[cell.actor][0]}{override}{self_verified} — attempt 1"
                stored, review, _ = outbox.ticket(key)
                status = view(stored.ticket, review).comment if stored is not None else ""
                if line not in status:
                    wrong.append(f"accept by {cell.actor}: the status comment lacks {line!r}: {status}")
        assert not wrong, "\n".join(wrong)


def test_teams_github_will_not_show_are_explained_once_not_refused_silently(sqlite_url: str) -> None:
    """Without the organisation `members: read` permission GitHub refuses the team lookup: team entries
    match nobody, and one reply says why, however many commands meet it."""
    with opened(sqlite_url) as scene:
        _cast(scene, "reviewers")
        with scene.hub.world.lock:
            del scene.hub.world.installations[scene.repository.installation_id].permissions["members"]
        first = scene.number
        scene.person(RUNNER).comment(scene.stage.full_name, first, "/claim\n/deliver done")
        scene.settle()
        scene.comment("tess", "/accept")
        second = scene.person(OWNER).open_issue(scene.stage.full_name, "Another task")
        scene.person(RUNNER).comment(scene.stage.full_name, second, "/claim\n/deliver done")
        scene.settle()
        scene.person("tess").comment(scene.stage.full_name, second, "/accept")
        scene.drain()
        explained = [
            (number, body)
            for number in (first, second)
            for body in Scene(scene.stage, number).replies()
            if "cannot read the members of @octo/qa" in body
        ]
        assert len(explained) == 1, explained
        assert explained[0][0] == first  # where it first happened: agent-a's /claim
        assert "the organization `members: read` permission" in explained[0][1]
        for number in (first, second):
            refusals = [body for body in Scene(scene.stage, number).replies() if "cannot /accept" in body]
            assert len(refusals) == 1 and "that needs a reviewer" in refusals[0], refusals
            key = TicketKey(scene.repository.installation_id, scene.repository.id, number)
            assert scene.app.state.work.ticket(key).state.value == "delivered"
        calls = [c for c in scene.rest.calls if "/teams/" in c.path]
        assert calls and all(c.status == 403 for c in calls)  # asked, and GitHub refused


@pytest.mark.parametrize("settings", ["default", "runners"])
def test_assign_makes_a_runner_only_of_someone_who_may_run(sqlite_url: str, settings: str) -> None:
    """`/assign @user` by a maintainer: the user must be one who could /claim it (GitHub would not even
    assign an account without access)."""
    with opened(sqlite_url) as scene:
        _cast(scene, settings)
        targets = {"nobody": False, "reed": settings == "default", "agent-a": True, "tess": True}
        numbers = {}
        for login in targets:
            numbers[login] = scene.person(OWNER).open_issue(scene.stage.full_name, f"for {login}")
            scene.person("maria").comment(scene.stage.full_name, numbers[login], f"/assign @{login}")
        scene.settle()
        work = scene.app.state.work
        for login, allowed in targets.items():
            key = TicketKey(scene.repository.installation_id, scene.repository.id, numbers[login])
            ticket, events = work.ticket(key), work.history(key)
            outcome = (ticket.state.value, ticket.runner, events[-1].type) if ticket else None
            assert outcome == (("claimed", login, "assigned") if allowed else ("open", None, "created")), login
        scene.drain()
        scene.number = numbers["nobody"]
        assert any("cannot /assign #" in r and "to @nobody: that needs a runner" in r for r in scene.replies())
