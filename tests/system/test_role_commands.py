"""Every role's loop from the `baton` command, run as a process against Baton and the stand-in GitHub over real
sockets: an agent opens and claims a task (`baton new`) and delivers it, a reviewer sends it back, accepts it and
reopens it; refusals exit 1 with Baton's reason in the command's own syntax, and an address that is not Baton's
exits 2 in one line (docs/agents.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.standin_scene import Scene, opened

EVIDENCE = ("--branch", "1-empty-state", "--commit", "1a2b3c4", "--tests", "https://ci.example.com/runs/881",
            "--screenshot", "https://example.com/390.png")  # fmt: skip


@pytest.fixture
def scene(sqlite_url: str) -> Iterator[Scene]:
    # The commands only relay the agent API's answers, which tests/system/test_agent_api.py holds on both engines.
    with opened(sqlite_url) as made:
        made.settle()
        yield made


def baton(url: str, token: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("BATON_", "GH_", "GITHUB_"))},
           "BATON_URL": url, "GITHUB_TOKEN": token}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "baton.cli", *args], env=env, capture_output=True, text=True,
                          timeout=60, input=stdin)  # fmt: skip


def token(scene: Scene, login: str, permission: str = "read") -> str:
    made: str = scene.stage.person(login, permission).token()
    return made


def test_an_agent_opens_and_delivers_and_a_reviewer_sends_back_accepts_and_reopens(
    scene: Scene, tmp_path: Path
) -> None:
    url, agent, maria = scene.stage.baton_url, token(scene, "agent-a"), token(scene, "maria", "maintain")
    brief = tmp_path / "brief.md"
    brief.write_text("The cart's footer shows the totals.\n", encoding="utf-8")

    made = baton(url, agent, "new", scene.full_name, "--title", "Totals in the footer", "--body-file", str(brief),
                 "--json", "--key", "open-totals")  # fmt: skip
    assert made.returncode == 0, made.stderr
    opened_ = json.loads(made.stdout)
    number, task = opened_["issue"], f"{scene.full_name}#{opened_['issue']}"
    assert (opened_["state"], opened_["runner"], opened_["idempotency_key"]) == ("claimed", "agent-a", "open-totals")
    again = baton(url, agent, "new", scene.full_name, "--title", "Totals in the footer", "--body-file", str(brief),
                  "--json", "--key", "open-totals")  # fmt: skip
    assert again.returncode == 0 and json.loads(again.stdout)["issue"] == number  # the same key: no second issue
    with scene.hub.world.lock:
        issue = scene.repository.issues[number]
        assert (issue.title, issue.body) == ("Totals in the footer", "The cart's footer shows the totals.\n")

    delivered = baton(url, agent, "deliver", task, "--summary", "Totals shown.", *EVIDENCE)
    assert delivered.returncode == 0, delivered.stderr
    assert delivered.stdout.startswith(f"delivered {task} (revision ")

    own = baton(url, agent, "accept", task)  # the runner reviews nothing of its own
    assert own.returncode == 1 and own.stdout == "" and "cannot /accept" in own.stderr, own.stderr

    sent_back = baton(url, maria, "send-back", task, "--feedback", "The totals lack the tax line.", "--json")
    assert sent_back.returncode == 0, sent_back.stderr
    body = json.loads(sent_back.stdout)
    assert (body["state"], body["runner"], body["attempt"]) == ("claimed", "agent-a", 2)
    assert len(body["idempotency_key"]) == 32  # a fresh key, said so the run can be repeated with it

    assert baton(url, agent, "deliver", task, "--summary", "Tax line added.", *EVIDENCE).returncode == 0
    revision = scene.app.state.work.ticket(scene.key.__class__(scene.key.installation_id, scene.key.repository_id,
                                                               number)).revision  # fmt: skip
    accepted = baton(url, maria, "accept", task, "--note", "Right.", "--rev", str(revision), "--key", "accept-1")
    assert (accepted.returncode, accepted.stderr) == (0, "")
    assert accepted.stdout == f"accepted {task} (revision {revision + 1}, attempt 2)\n"
    replayed = baton(url, maria, "accept", task, "--note", "Right.", "--rev", str(revision), "--key", "accept-1")
    assert (replayed.returncode, replayed.stdout) == (0, accepted.stdout)  # the first answer, decided once

    stale = baton(url, maria, "reopen", task, "--reason", "The tax is wrong.", "--rev", str(revision))
    assert stale.returncode == 1 and stale.stdout == ""
    assert f"with --rev {revision + 1} " in stale.stderr and "rev=" not in stale.stderr, stale.stderr
    reopened = baton(url, maria, "reopen", task, "--reason", "The tax is wrong.", "--rev", str(revision + 1))
    assert reopened.returncode == 0, reopened.stderr
    assert reopened.stdout.startswith(f"reopened {task} (revision {revision + 2}")
    key = scene.key.__class__(scene.key.installation_id, scene.key.repository_id, number)
    history = scene.app.state.work.history(key)
    assert [event.type for event in history] == ["created", "claimed", "delivered", "sent_back", "delivered",
                                                 "accepted", "reopened"]  # fmt: skip
    assert all(event.data.get("source") == "api" for event in history[1:])


def test_accepting_ones_own_delivery_is_refused_and_releasing_is_guarded_by_the_revision(scene: Scene) -> None:
    url, maria, task = scene.stage.baton_url, token(scene, "maria", "maintain"), f"{scene.full_name}#{scene.number}"
    revision = scene.app.state.work.ticket(scene.key).revision
    claimed = baton(url, maria, "claim", task, "--rev", str(revision))
    assert claimed.returncode == 0, claimed.stderr
    held = baton(url, maria, "release", task, "--rev", str(revision), "--json")
    assert held.returncode == 1 and json.loads(held.stdout)["error"] == "precondition_failed"
    assert baton(url, maria, "deliver", task, "--summary", "Done.", *EVIDENCE).returncode == 0
    own = baton(url, maria, "accept", task, "--json")
    assert own.returncode == 1, own.stderr
    refused = json.loads(own.stdout)
    assert (refused["error"], refused["code"]) == ("forbidden", "self_review")
    assert own.stderr == f"baton: {refused['message']}\n"


def test_a_request_baton_cannot_take_prints_each_problem(scene: Scene) -> None:
    agent, task = token(scene, "agent-a"), f"{scene.full_name}#{scene.number}"
    assert baton(scene.stage.baton_url, agent, "claim", task).returncode == 0
    bad = baton(scene.stage.baton_url, agent, "deliver", task, "--summary", "Done.", "--commit", "not-a-sha",
                "--tests", "")  # fmt: skip
    assert (bad.returncode, bad.stdout) == (1, "")
    lines = bad.stderr.splitlines()
    assert lines[0].startswith("baton: The request is not valid: ")
    assert [line.split(":")[0] for line in lines[1:]] == ["  commit", "  tests[0]"]


class _Site(BaseHTTPRequestHandler):
    """Some other web site: a page for anything asked."""

    def _page(self) -> None:
        page = b"<html><body><h1>Not Found</h1></body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    do_GET = do_POST = _page

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_address_that_is_not_baton_exits_2_in_one_line() -> None:
    site = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{site.server_address[1]}"
    try:
        for args in (["claim", "octo/shop#1"], ["tasks", "octo/shop"], ["accept", "octo/shop#1", "--json"],
                     ["new", "octo/shop", "--title", "T"], ["status", "octo/shop#1"]):  # fmt: skip
            done = baton(url, "ghp_unused", *args)
            assert done.returncode == 2, done.stderr
            said = f"baton: BATON_URL {url} does not answer as Baton: HTTP 404 with text/html\n"
            assert done.stderr == said
            if "--json" in args:
                assert json.loads(done.stdout)["error"] == "not_baton"
            else:
                assert done.stdout == ""
    finally:
        site.shutdown()
        site.server_close()


def test_a_route_or_method_baton_lacks_is_baton_s_error_and_the_command_exits_2_saying_so(scene: Scene) -> None:
    import httpx

    agent, api = token(scene, "agent-a"), f"{scene.stage.baton_url}/api/v1"
    auth = {"Authorization": f"Bearer {agent}"}
    missing = httpx.post(f"{api}/repos/{scene.full_name}/tasks/claimed", headers=auth, timeout=30)
    assert missing.status_code == 404
    assert missing.json()["error"] == "no_route"
    assert missing.json()["message"].startswith(
        f"Baton has no route POST /api/v1/repos/{scene.full_name}/tasks/claimed"
    )
    wrong = httpx.get(f"{api}/repos/{scene.full_name}/issues/{scene.number}/claim", headers=auth, timeout=30)
    assert (wrong.status_code, wrong.headers["Allow"], wrong.json()["error"]) == (405, "POST", "method_not_allowed")
    assert (
        wrong.json()["message"]
        == f"/api/v1/repos/{scene.full_name}/issues/{scene.number}/claim does not take GET; it takes POST."
    )
    # A route's own 404 and what lies outside the API keep their documented bodies (docs/api.md).
    assert set(httpx.get(f"{scene.stage.baton_url}/nothing-here", timeout=30).json()) == {"detail"}
    # A Baton that lacks what the command asks for (here: BATON_URL names a path under the API, so every route the
    # command calls is one it does not serve): nothing was decided, exit 2, Baton's message in one line.
    lacking = f"{api}/older"
    done = baton(lacking, agent, "claim", f"{scene.full_name}#{scene.number}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("baton: Baton has no route POST /api/v1/older/api/v1/repos/"), done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_maintainer_assigns_a_task_and_releases_someone_elses_claim_from_the_command(scene: Scene) -> None:
    url, task = scene.stage.baton_url, f"{scene.full_name}#{scene.number}"
    agent_a, maria = token(scene, "agent-a"), token(scene, "maria", "maintain")
    token(scene, "agent-b")  # who is assigned: a person GitHub knows, who may run the task
    token(scene, "outsider", "none")  # GitHub knows them; they cannot read the repository, let alone run it

    not_theirs = baton(url, agent_a, "assign", task, "@agent-b", "--json")  # only a maintainer assigns
    assert not_theirs.returncode == 1, not_theirs.stderr
    assert (json.loads(not_theirs.stdout)["error"], json.loads(not_theirs.stdout)["code"]) == (
        "forbidden", "not_permitted")  # fmt: skip
    nobody = baton(url, maria, "assign", task, "@outsider")  # only someone who may run it is made its runner
    assert nobody.returncode == 1 and "outsider" in nobody.stderr, nobody.stderr
    bad = baton(url, maria, "assign", task, "not a login")
    assert bad.returncode == 2 and "is not a GitHub login" in bad.stderr

    assigned = baton(url, maria, "assign", task, "@agent-b", "--json")
    assert assigned.returncode == 0, assigned.stderr
    assert (json.loads(assigned.stdout)["state"], json.loads(assigned.stdout)["runner"]) == ("claimed", "agent-b")
    taken = baton(url, agent_a, "release", task, "--user", "agent-b")  # naming someone is a maintainer's release
    assert taken.returncode == 1 and "@agent-b" in taken.stderr, taken.stderr
    released = baton(url, maria, "release", task, "--user", "@agent-b", "--json")
    assert released.returncode == 0, released.stderr
    assert (json.loads(released.stdout)["state"], json.loads(released.stdout)["runner"]) == ("open", None)

    assert baton(url, agent_a, "claim", task).returncode == 0
    reassigned = baton(url, maria, "assign", task, "agent-b")  # a claim held by someone else ends
    assert reassigned.returncode == 0, reassigned.stderr
    assert reassigned.stdout.startswith(f"assigned to @agent-b: {task} (revision ")
    history = scene.app.state.work.history(scene.key)
    assert [event.type for event in history] == ["created", "assigned", "released", "claimed", "assigned"]
    released_event = [event for event in history if event.type == "released"][-1]
    assert (released_event.actor, released_event.role) == ("maria", "repository_maintainer")
    assert all(event.data.get("source") == "api" for event in history if event.type != "created")
