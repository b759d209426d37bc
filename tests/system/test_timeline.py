"""`GET …/events`: the whole timeline of a ticket, both rails merged by time, a page at a time, through the real
app (tests/web/test_api.py's fixtures); and end to end against the stand-in GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from baton.domain import WorkState
from baton.store.timeline import Cursor, evidence_rail
from support import read_api
from support.local_http import HTTP
from support.payloads import MERGE
from support.read_api import TIMELINE_42, Rail, full_life
from support.standin_scene import Scene, scene_with

# the read API's app, client and store, as tests/web/test_api.py makes them
make_app, app, client, clock, rail = read_api.make_app, read_api.app, read_api.client, read_api.clock, read_api.rail

EVENTS = "/api/v1/repos/octo/shop/issues/42/events"


def pages(client: TestClient, query: str) -> Iterator[dict[str, Any]]:
    after = ""
    while True:
        page = client.get(f"{EVENTS}?{query}&after={after}").json()
        yield page
        if page["next"] is None:
            return
        after = page["next"]


@pytest.mark.parametrize("limit", [1, 3, 4, 9, 10])
def test_pages_hold_the_whole_timeline_once_in_order(client: TestClient, rail: Rail, limit: int) -> None:
    full_life(rail)
    found = list(pages(client, f"limit={limit}"))
    assert all(len(page["events"]) == limit for page in found[:-1])
    assert [e for page in found for e in page["events"]] == TIMELINE_42
    assert len(found) == -(-len(TIMELINE_42) // limit)


def test_an_entry_recorded_after_a_page_is_on_a_later_page(client: TestClient, rail: Rail) -> None:
    full_life(rail)
    first = client.get(f"{EVENTS}?limit={len(TIMELINE_42) - 1}").json()
    assert first["next"] is not None
    rail.pull_request(("octo/shop", 7, 1001), 57, "Fixes #42", "a" * 40, 50)  # a push to the pull request
    rest = client.get(f"{EVENTS}?after={first['next']}").json()
    assert rest["next"] is None
    assert [e["id"] for e in rest["events"]] == [TIMELINE_42[-1]["id"], "evidence-5"]


@pytest.mark.parametrize(
    ("query", "rails"),
    [("rail=work", {"work"}), ("rail=repository", {"repository"}), ("rail=deployment", set()),
     ("rail=repository&rail=deployment", {"repository"}), ("rail=work&rail=repository&rail=deployment", None)],
)  # fmt: skip
@pytest.mark.both_engines
def test_the_rail_filter(client: TestClient, rail: Rail, query: str, rails: set[str] | None) -> None:
    full_life(rail)
    wanted = [e for e in TIMELINE_42 if rails is None or e["rail"] in rails]
    for limit in (2, 500):
        assert [e for page in pages(client, f"{query}&limit={limit}") for e in page["events"]] == wanted


@pytest.mark.parametrize("query", ["after=x", "after=1", "after=1.", "after=-1.2", "after=1.2.3", "rail=evidence",
                                   "limit=0", "limit=501", "after=" + "9" * 19 + ".0"])  # fmt: skip
@pytest.mark.both_engines
def test_bad_parameters_are_422(client: TestClient, rail: Rail, query: str) -> None:
    full_life(rail)
    response = client.get(f"{EVENTS}?{query}")
    assert response.status_code == 422, response.text


def test_an_empty_cursor_is_the_first_page_and_an_unknown_ticket_is_404(client: TestClient, rail: Rail) -> None:
    full_life(rail)
    assert client.get(f"{EVENTS}?after=").json() == {"events": TIMELINE_42, "next": None}
    assert client.get("/api/v1/repos/octo/shop/issues/43/events?rail=work").status_code == 404


def test_cursors_and_rails() -> None:
    assert Cursor.parse(str(Cursor(12, 7))) == Cursor(12, 7)
    assert [evidence_rail(t) for t in ("pull_request", "branch", "check", "report", "issue_closed")] == [
        "repository"
    ] * 5
    assert [evidence_rail(t) for t in ("deployment", "deployment_status", "comparison")] == ["deployment"] * 3


def test_the_openapi_description_names_the_parameters(client: TestClient) -> None:
    spec = TestClient(client.app).get("/openapi.json").json()
    operation = spec["paths"]["/api/v1/repos/{owner}/{repo}/issues/{number}/events"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"owner", "repo", "number", "rail", "after", "limit"}
    assert set(spec["components"]["schemas"]["EventList"]["properties"]) == {"events", "next"}


# ---------------------------------------------------------------------------------------------- end to end

TOKEN = "timeline-token"


scene = scene_with(api_token=TOKEN)


def test_the_timeline_after_a_claim_a_pull_request_merged_and_a_deployment(scene: Scene) -> None:
    maria, agent = scene.person("maria"), scene.person("agent-a")
    scene.comment("agent-a", "/claim")
    branch = f"{scene.number}-empty-state"
    agent.push(scene.full_name, branch, "Empty state for the cart", sha="1a2b3c4")
    pr = agent.open_pull_request(scene.full_name, branch, "Empty state for the cart", f"Fixes #{scene.number}")
    scene.settle()
    scene.later()
    maria.merge(scene.full_name, pr, sha=MERGE)
    scene.settle()
    scene.later()
    maria.deploy(scene.full_name, MERGE, "production")
    scene.drain()

    url = f"{scene.stage.baton_url}/api/v1/repos/{scene.full_name}/issues/{scene.number}/events"
    answer = HTTP.get(url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()
    timeline = answer["events"]
    assert answer["next"] is None
    assert [e["created_at"] for e in timeline] == sorted(e["created_at"] for e in timeline)
    seen = [(e["rail"], e["type"]) for e in timeline]
    assert seen[:2] == [("work", "created"), ("work", "claimed")]
    assert {("repository", "branch"), ("repository", "pull_request"), ("repository", "issue_closed"),
            ("deployment", "deployment"), ("deployment", "deployment_status")} <= set(seen)  # fmt: skip
    # each rail's entries in the order things happened: the merge after the opening, the deployment after both
    pulls = [e["data"]["fact"] for e in timeline if e["type"] == "pull_request"]
    assert pulls[0]["state"] == "open" and pulls[-1]["merged"] is True
    first_deployment = seen.index(("deployment", "deployment"))
    assert seen.index(("repository", "pull_request")) < first_deployment
    merged = [i for i, e in enumerate(timeline) if e["type"] == "pull_request" and e["data"]["fact"]["merged"]]
    assert merged and merged[0] < first_deployment
    assert timeline[-1]["rail"] == "deployment" and timeline[-1]["deployment_state"] == "deployed"
    for entry in timeline:
        work = entry["rail"] == "work"
        assert (entry["actor"] is not None) == work and (entry["source"] is not None) == (not work)
    # evidence moved no work state
    assert scene.app.state.work.ticket(scene.key).state is WorkState.CLAIMED
    assert [e["type"] for e in timeline if e["rail"] == "work"] == ["created", "claimed"]
