"""Baton knows where it is installed without an installation webhook: it lists the App's installations and
their repositories as it starts and every hour, and asks GitHub about a repository it has no record of before
answering that it does not serve it. Baton and the stand-in GitHub over real sockets; the stand-in never told
Baton it was installed (a new database behind an App installed long ago)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from baton.demo.stage import APP_ID, Stage
from baton.environment.clock import SYSTEM
from baton.store import make_engine
from baton.store import tables as t
from baton.store.sweeps import Sweeps
from support.keys import app_key, app_public_key
from support.local_http import HTTP
from support.processes import stop
from support.standin_scene import Scene, scene_with

NOT_SERVED = "Baton is not installed on {}, or you cannot read it."


scene = scene_with(announce=False, hidden=("secret",))


def _claim(scene: Scene, login: str, repository: str, number: int) -> httpx.Response:
    token = scene.hub.person(login).token()
    url = f"{scene.stage.baton_url}/api/v1/repos/{repository}/issues/{number}/claim"
    return HTTP.post(url, json={}, headers={"Authorization": f"Bearer {token}"})


def _asked(scene: Scene, path: str) -> int:
    with scene.hub.world.lock:
        return sum(1 for call in scene.rest.calls if call.method == "GET" and call.path == path)


def _recorded(scene: Scene) -> tuple[dict[int, str], dict[str, bool]]:
    with scene.app.state.work.units.engine.connect() as connection:
        statuses = {row.id: row.status for row in connection.execute(select(t.installations))}
        repositories = {row.full_name: row.present for row in connection.execute(select(t.installation_repositories))}
    return statuses, repositories


def test_a_new_database_behind_an_installed_app_answers_a_claim_asking_github_once(scene: Scene) -> None:
    assert _recorded(scene) == ({}, {})  # no installation event ever came
    scene.stage.person("agent-a")
    won = _claim(scene, "agent-a", scene.full_name, scene.number)
    assert won.status_code == 200 and won.json()["runner"] == "agent-a", won.text
    again = _claim(scene, "agent-a", scene.full_name, scene.number)
    assert again.status_code == 200, again.text
    assert _asked(scene, f"/repos/{scene.full_name}/installation") == 1  # recorded at the first answer
    installation = scene.repository.installation_id
    assert _recorded(scene) == ({installation: "active"}, {scene.full_name: True})

    # A repository the App is not installed on is asked about once; the "no" is remembered.
    for _ in range(3):
        missing = _claim(scene, "agent-a", "octo/nowhere", 1)
        assert missing.status_code == 404 and missing.json()["message"] == NOT_SERVED.format("octo/nowhere")
    assert _asked(scene, "/repos/octo/nowhere/installation") == 1

    # Calls about one repository at once ask once too: the others wait for that answer.
    token = scene.hub.person("agent-a").token()
    url, headers = f"{scene.stage.baton_url}/api/v1/tasks", {"Authorization": f"Bearer {token}"}
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: HTTP.get(url, params={"repo": "octo/elsewhere"}, headers=headers), range(8)))
    assert [answer.status_code for answer in answers] == [404] * 8
    assert _asked(scene, "/repos/octo/elsewhere/installation") == 1


@pytest.mark.both_engines
def test_the_sweep_records_installations_and_follows_repositories_removed_and_suspensions(scene: Scene) -> None:
    sweep = scene.app.state.parts.installation_sweep
    world, installation = scene.hub.world, scene.repository.installation_id
    with world.lock:
        secret = scene.stage.other("secret")
        secret.permissions["reed"] = "read"
        world.account("reed")
        number = world.add_issue(secret, "Rotate the keys", world.account("octo")).number
    found = sweep.sweep()
    assert found is not None and sorted(found.added) == ["octo/secret", "octo/shop"]
    assert _recorded(scene) == ({installation: "active"}, {"octo/shop": True, "octo/secret": True})
    assert _claim(scene, "reed", "octo/secret", number).status_code == 200
    assert _asked(scene, "/repos/octo/secret/installation") == 0  # the sweep had recorded it

    with world.lock:
        secret.installation_id = 0  # removed from the installation on GitHub; no webhook says so
    found = sweep.sweep()
    assert found is not None and found.removed == ("octo/secret",)
    gone = _claim(scene, "reed", "octo/secret", number)
    assert gone.status_code == 404 and gone.json()["message"] == NOT_SERVED.format("octo/secret"), gone.text

    scene.stage.person("agent-a")
    with world.lock:
        world.installations[installation].suspended = True
    found = sweep.sweep()
    assert found is not None and found.suspended == (installation,)
    assert _recorded(scene)[0] == {installation: "suspended"}
    stopped = _claim(scene, "agent-a", scene.full_name, scene.number)
    assert stopped.status_code == 404 and stopped.json()["message"] == NOT_SERVED.format(scene.full_name)

    with world.lock:
        world.installations[installation].suspended = False
    assert sweep.sweep() is not None
    assert _recorded(scene)[0] == {installation: "active"}
    assert _claim(scene, "agent-a", scene.full_name, scene.number).status_code == 200

    with world.lock:
        del world.installations[installation]  # uninstalled
    found = sweep.sweep()
    assert found is not None and found.gone == (installation,)
    assert _recorded(scene)[0] == {installation: "deleted"}

    with world.lock:
        again = world.install("octo")
        scene.repository.installation_id = again.id  # installed again: no event, and no sweep yet
    answered = _claim(scene, "agent-a", scene.full_name, scene.number)
    assert answered.status_code == 200 and answered.json()["runner"] == "agent-a", answered.text
    assert _recorded(scene)[0] == {installation: "deleted", again.id: "active"}


def test_one_process_sweeps_at_a_time_and_not_again_before_its_period(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        sweeps, hold = Sweeps(engine, SYSTEM), timedelta(minutes=10)
        assert sweeps.take("installations", "serve", hold)
        assert not sweeps.take("installations", "worker", hold)  # held
        sweeps.done("installations", "serve")
        assert not sweeps.take("installations", "worker", hold, since=timedelta(minutes=30))  # swept just now
        assert sweeps.take("installations", "worker", hold)  # a process that starts sweeps
        sweeps.release("installations", "worker")
        assert sweeps.take("installations", "serve", timedelta(seconds=-1))  # a hold already run out …
        assert sweeps.take("installations", "worker", hold)  # … is taken over
    finally:
        engine.dispose()


def test_baton_serve_sweeps_as_it_starts(database_url: str) -> None:
    with Stage.open(database_url, key=(app_key(), app_public_key()), announce=False, write_interval=0) as stage:
        assert _repositories_recorded(stage.app.state.work.units.engine) == {stage.full_name: True}
        with stage.hub.world.lock:
            assert [c.path for c in stage.hub.rest.calls if c.method == "GET"].count("/app/installations") == 1


def _repositories_recorded(engine: Any, within: float = 60.0) -> dict[str, bool]:
    """The repositories recorded, as soon as there are any (within `within` seconds)."""
    deadline = time.monotonic() + within
    while True:
        with engine.connect() as connection:
            recorded = {row.full_name: row.present for row in connection.execute(select(t.installation_repositories))}
        if recorded:
            return recorded
        assert time.monotonic() < deadline, "no sweep recorded the installation"
        time.sleep(0.05)


def test_baton_worker_sweeps_as_it_starts(database_url: str) -> None:
    with Stage.open(database_url, key=(app_key(), app_public_key()), announce=False, lanes=False) as stage:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("BATON_")},
               "BATON_DATABASE_URL": database_url, "BATON_APP_ID": str(APP_ID), "BATON_PRIVATE_KEY": app_key(),
               "BATON_GITHUB_API_URL": stage.github_url}  # fmt: skip
        worker = subprocess.Popen([sys.executable, "-m", "baton.cli", "worker"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert _repositories_recorded(stage.app.state.work.units.engine) == {stage.full_name: True}
        finally:
            stop(worker)
