"""Who may run a task by default, through the real app against the stand-in GitHub, on a public repository
(where everybody reads): `runners: collaborators` (the default) takes those GitHub's collaborator check
answers 204 for, `runners: readers` anyone with read access; the refusal names the setting and how to widen
it, and GitHub failing while asked is never a refusal."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from baton.demo.stage import Stage
from baton.domain import TicketKey
from github_standin.server import Fault
from support.keys import app_key, app_public_key
from support.local_http import HTTP
from support.standin_scene import Scene, opened

COLLABORATORS_ONLY = (
    "only collaborators may run tasks here (`runners: collaborators` in `.github/baton.yml`, the default; "
    "`runners: readers` or `runners: anyone` widens it)"
)


@pytest.fixture
def scene(database_url: str) -> Iterator[Scene]:
    with opened(database_url) as made:
        assert not made.repository.private  # everybody reads it
        made.settle()
        yield made


def outsider(scene: Scene, login: str) -> str:
    """Someone on GitHub who was given no role on the repository (they read it, as everybody may); their token."""
    return scene.hub.person(login).token()


def claim(scene: Scene, token: str, number: int) -> httpx.Response:
    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{number}/claim"
    return HTTP.post(url, headers={"Authorization": f"Bearer {token}"})


def state(scene: Scene, number: int) -> str:
    key = TicketKey(scene.repository.installation_id, scene.repository.id, number)
    ticket = scene.app.state.work.ticket(key)
    assert ticket is not None
    return ticket.state.value


def test_a_reader_who_is_no_collaborator_is_refused_by_default_and_runs_under_readers(scene: Scene) -> None:
    scene.people["otto"] = scene.hub.person("otto")  # given no role (`Scene.person` would give read)
    assert scene.repository.permission("otto") == "read" and not scene.repository.is_collaborator("otto")
    scene.comment("otto", "/claim")
    scene.drain()
    assert state(scene, scene.number) == "open"
    [reply] = scene.replies()
    assert f"@otto cannot /claim #{scene.number}: that needs a runner, and {COLLABORATORS_ONLY}" in reply
    assert "@otto is not a collaborator on octo/shop" in reply

    second = scene.unheard_issue("Totals in the footer")
    refused = claim(scene, outsider(scene, "otto"), second)
    assert refused.status_code == 403 and refused.json()["code"] == "not_permitted", refused.text
    assert COLLABORATORS_ONLY in refused.json()["message"]

    scene.configure("runners: readers\n")
    accepted = claim(scene, outsider(scene, "otto"), second)
    assert accepted.status_code == 200 and accepted.json()["runner"] == "otto", accepted.text
    scene.number = scene.unheard_issue("Keyboard focus")
    scene.comment("otto", "/claim")
    assert state(scene, scene.number) == "claimed"


def test_a_collaborator_runs_by_default(scene: Scene) -> None:
    scene.stage.person("carla", "read")  # a collaborator with the read role
    scene.comment("carla", "/claim")
    assert state(scene, scene.number) == "claimed"
    scene.number = scene.unheard_issue("Totals in the footer")
    answered = claim(scene, scene.stage.person("carla", "read").token(), scene.number)
    assert answered.status_code == 200 and answered.json()["runner"] == "carla", answered.text
    # the collaborator check was asked once, and its answer kept for the second claim
    assert scene.reads().count("/repos/octo/shop/collaborators/carla") == 1


def test_github_failing_the_collaborator_check_answers_503_never_a_refusal(scene: Scene) -> None:
    token = scene.stage.person("carla", "read").token()
    scene.rest.inject(Fault("GET", r"/collaborators/carla$", status=502, times=1))
    failed = claim(scene, token, scene.number)
    assert failed.status_code == 503 and failed.json()["error"] == "unavailable", failed.text
    assert int(failed.headers["Retry-After"]) >= 1
    assert state(scene, scene.number) == "open"
    again = claim(scene, token, scene.number)
    assert again.status_code == 200 and again.json()["runner"] == "carla", again.text


def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)


def test_github_failing_the_collaborator_check_for_a_comment_is_tried_again_never_refused(
    database_url: str,
) -> None:
    with Stage.open(database_url, key=(app_key(), app_public_key())) as stage:
        owner, carla = stage.person("olivia", "admin"), stage.person("carla", "read")
        number = owner.open_issue(stage.full_name, "Flaky GitHub")
        key = TicketKey(stage.repository.installation_id, stage.repository.id, number)
        work: Any = stage.app.state.work
        until(lambda: work.ticket(key) is not None, 30, "the issue offered")
        stage.hub.rest.inject(Fault("GET", r"/collaborators/carla$", status=503, times=2))
        carla.comment(stage.full_name, number, "/claim")
        until(lambda: work.ticket(key).state.value == "claimed", 60, "the claim, once GitHub answers")
        with stage.hub.world.lock:
            said = [c.body for c in stage.repository.comments.values() if c.issue == number]
            failures = [c for c in stage.hub.rest.calls if c.path.endswith("/collaborators/carla") and c.status == 503]
        assert not [body for body in said if "cannot /claim" in body]
        assert len(failures) == 2  # asked while GitHub failed, and again until it answered
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()
