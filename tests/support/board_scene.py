"""One reference story, played once per test module through a real Baton against the stand-in GitHub, for the
board's tests: then four days pass on Baton's clock and its sweep flags the claim left quiet (#2) stale. Then a
task in the private repository octo/vault is claimed and delivered, naming a commit that is no longer its branch's
head: @vera may read it (and octo/shop), @maria may not. The
board takes both ways of signing in: the read token, and GitHub (the App's OAuth client)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import httpx

from baton.demo.stage import Stage
from baton.demo.story import play, seen
from baton.environment.clock import ShiftedClock
from github_standin.contract import Contract, ContractUnavailable
from support.corpus import missing

TOKEN = "board-read-token"
# A client of these tests' own, its cookie jar emptied after each call: a session is sent only where a test says.
CLIENT = httpx.Client(timeout=10)
TASK, OTHER, PULL = 1, 2, 3
VAULT = "octo/vault"
SECRET = 1  # the task in octo/vault
BRANCH = "1-rotate-keys"  # pushed to twice; the delivery in octo/vault reports its first commit


@contextmanager
def played(folder: Path, migrated: Path) -> Iterator[Stage]:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    database = folder / "baton.db"
    database.write_bytes(migrated.read_bytes())
    clock = ShiftedClock()  # the lanes write at their real pace; the four days pass at once
    with Stage.open(f"sqlite:///{database}", api_token=TOKEN, clock=clock, oauth=True, hidden=("vault",)) as stage:
        play(stage, lambda line: None)
        clock.advance(timedelta(days=4, hours=1))
        assert stage.app.state.parts.sweep.sweep().flagged == 1
        _deliver_in_the_vault(stage)
        yield stage
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()


def _deliver_in_the_vault(stage: Stage) -> None:
    world, vault = stage.hub.world, stage.other("vault")
    with world.lock:
        vault.permissions.update({"vera": "maintain", "agent-v": "write"})
        stage.repository.permissions["vera"] = "read"
    number = stage.hub.person("vera").open_issue(VAULT, "Rotate the vault's keys")
    assert number == SECRET
    _wait(stage, "baton:open")
    stage.hub.person("agent-v").comment(VAULT, SECRET, "/claim")
    _wait(stage, "baton:claimed")
    agent = stage.hub.person("agent-v")
    first = agent.push(VAULT, BRANCH, "Rotate the keys")
    agent.push(VAULT, BRANCH, "Rotate the backup keys too")
    # the delivery names the first commit, no longer the branch's head: a mismatch the card warns of
    agent.comment(VAULT, SECRET, f"/deliver The keys are rotated.\nbranch: {BRANCH}\ncommit: {first}")
    _wait(stage, "baton:delivered")
    deadline = time.monotonic() + 30
    while "Mismatch" not in (seen(stage.other("vault"), SECRET, stage.hub.world.lock).status or ""):
        assert time.monotonic() < deadline, f"octo/vault#{SECRET}'s status never showed the mismatch"
        time.sleep(0.05)


def _wait(stage: Stage, label: str) -> None:
    deadline = time.monotonic() + 30
    while label not in seen(stage.other("vault"), SECRET, stage.hub.world.lock).labels:
        assert time.monotonic() < deadline, f"octo/vault#{SECRET} never showed {label}"
        time.sleep(0.05)


def call(
    baton: str, method: str, path: str, session: str | None = None, headers: dict[str, str] | None = None,
    **options: object,
) -> httpx.Response:  # fmt: skip
    headers = {**(headers or {}), **({"Cookie": f"baton_session={session}"} if session else {})}
    try:
        return CLIENT.request(method, f"{baton}{path}", headers=headers, **options)  # type: ignore[arg-type]
    finally:
        CLIENT.cookies.clear()


def sign_in(baton: str, token: str = TOKEN, target: str = "/") -> httpx.Response:
    return call(baton, "POST", "/sign-in", data={"token": token, "next": target})


def session(baton: str) -> str:
    """A session cookie's value, as the sign-in form gives it for the read token."""
    answer = sign_in(baton)
    assert answer.status_code == 303, answer.text
    return answer.cookies["baton_session"]


def github_start(baton: str, target: str = "/") -> httpx.Response:
    """Baton's `/auth/github`: the way to GitHub, and the cookie holding the sign-in's state."""
    return call(baton, "GET", "/auth/github", params={"next": target})


def github_back(location: str, state_cookie: str | None) -> httpx.Response:
    """The browser back at Baton's callback (`location`, as GitHub sent it), with the state cookie or none."""
    headers = {"Cookie": f"baton_sign_in={state_cookie}"} if state_cookie else {}
    try:
        return CLIENT.get(location, headers=headers)
    finally:
        CLIENT.cookies.clear()


def at_github(stage: Stage, login: str, location: str) -> str:
    """GitHub's authorize page, for `login` signed in at the stand-in: where it sends the browser back."""
    with stage.hub.world.lock:
        stage.hub.world.web_login = login
    authorized = CLIENT.get(location)
    CLIENT.cookies.clear()
    assert authorized.status_code == 302, authorized.text
    return authorized.headers["location"]


def github_session(stage: Stage, login: str, target: str = "/") -> str:
    """A session cookie's value, as signing in with GitHub as `login` gives it, followed as a browser does."""
    start = github_start(stage.baton_url, target)
    assert start.status_code == 303, start.text
    back = github_back(at_github(stage, login, start.headers["location"]), start.cookies["baton_sign_in"])
    assert back.status_code == 303 and back.headers["location"] == target, back.text
    return back.cookies["baton_session"]


def user_tokens(stage: Stage, login: str) -> list[str]:
    """The user access tokens the stand-in gave `login` through the App's OAuth client."""
    with stage.hub.world.lock:
        return [token for token, who in stage.hub.world.user_tokens.items()
                if who == login and token in stage.hub.world.token_apps]  # fmt: skip
