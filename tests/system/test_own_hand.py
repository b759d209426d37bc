"""Baton knows its own hand, through the real app against the stand-in GitHub: it learns its login from `GET
/app`, its own label writes coming back as webhooks are never taken for a change by hand, and a brief edited
by the task owner is recorded as the task owner's."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from baton.domain import Role
from support.local_http import HTTP
from support.standin_scene import Scene, opened

BRIEF = """\
```yaml
task: Add an empty state to the billing history view
scope:
  files: [src/BillingHistory.tsx]
acceptance:
  - no invoices shows the approved empty-state copy
```
"""


@pytest.fixture
def scene(database_url: str) -> Iterator[Scene]:
    with opened(database_url) as made:
        # An App named otherwise than Baton's usual slug: its own login can only come from GitHub's `GET /app`.
        with made.hub.world.lock:
            made.hub.world.app_slug = "relay-desk"
        made.settle()
        yield made


def restored(scene: Scene) -> list[tuple[str, str, str]]:
    return [(e.actor, e.data["label"], e.data["action"])
            for e in scene.app.state.work.history(scene.key) if e.type == "label_restored"]  # fmt: skip


def test_batons_own_label_write_arriving_after_a_quick_claim_is_no_change_by_hand(scene: Scene) -> None:
    token = scene.stage.person("agent-a", "write").token()
    with scene.hub.held():  # GitHub's webhooks back up: Baton's own `baton:open` comes back only after the claim
        scene.app.state.writer.drain()  # the offer's label, written
        assert "baton:open" in scene.labels()
        claimed = HTTP.post(f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}/claim",
                            headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert claimed.status_code == 200, claimed.text
    scene.settle()
    echoed = [json.loads(d.body) for d in scene.hub.deliveries if d.event == "issues" and b'"labeled"' in d.body]
    assert [(e["sender"]["login"], e["label"]["name"]) for e in echoed] == [("relay-desk[bot]", "baton:open")]
    assert restored(scene) == []
    assert "/app" in scene.reads()  # the login Baton took as its own is the one GitHub named
    scene.drain()
    assert scene.labels() == {"baton:claimed"} and restored(scene) == []

    # a person changing the state label by hand still is one, and the label is put back
    scene.label("maria", "baton:claimed", added=False)
    scene.drain()
    assert restored(scene) == [("maria", "baton:claimed", "removed")]
    assert scene.labels() == {"baton:claimed"}


def test_a_brief_edited_by_its_task_owner_is_recorded_as_the_task_owners(scene: Scene) -> None:
    owner = scene.person("olivia")
    owner.edit_issue(scene.full_name, scene.number, BRIEF)
    scene.settle()
    scene.person("maria").edit_issue(scene.full_name, scene.number, BRIEF.replace("empty-state copy", "empty state"))
    scene.settle()
    edits = [(e.actor, e.role) for e in scene.app.state.work.history(scene.key) if e.type == "brief_changed"]
    assert edits == [("olivia", Role.TASK_OWNER), ("maria", Role.ANYONE)]
