"""End to end: Baton and the stand-in GitHub, each a real HTTP server on 127.0.0.1.

People act on the stand-in (comment, push, open and merge pull requests, deploy); it sends Baton
signed webhooks shaped like GitHub's; Baton answers through GitHub's REST API. Every request Baton makes
and every answer and webhook the stand-in produces is checked against GitHub's own descriptions, and
the tests assert what a person sees on GitHub: labels, assignees, the status comment, replies, reactions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from baton.demo.stage import Stage
from baton.demo.story import offered, play, showing, wait_for, work_line
from github_standin.contract import Contract, ContractUnavailable
from github_standin.people import Person
from github_standin.server import Fault
from support import processes
from support.corpus import missing
from support.keys import app_key, app_public_key
from support.local_http import HTTP

TOKEN = "e2e-read-token"


@pytest.fixture
def stage(database_url: str) -> Iterator[Stage]:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    with Stage.open(database_url, key=(app_key(), app_public_key()), api_token=TOKEN) as opened:
        yield opened
        # Nothing Baton sent and nothing the stand-in answered or delivered strayed from GitHub's descriptions.
        assert opened.hub.all_problems() == []
    opened.app.state.work.units.engine.dispose()


def api(stage: Stage, path: str) -> httpx.Response:
    return HTTP.get(f"{stage.baton_url}/api/v1{path}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)


@pytest.mark.both_engines
@pytest.mark.long
def test_the_whole_life_of_a_task(stage: Stage) -> None:
    said: list[str] = []
    after = play(stage, said.append)
    task, pull = 1, 3

    raced = after["raced"]
    winner = raced.assignees[0]
    loser = "agent-b" if winner == "agent-a" else "agent-a"
    assert raced.labels == ("baton:claimed",)
    assert raced.assignees == (winner,)
    assert work_line(raced.status) == f"**Work:** Claimed — attempt 1 by @{winner}"
    # of the two /claim comments, only the winner's has a 👍; the loser is told who holds the task
    claims = {c.user.login: c.id for c in stage.repository.comments.values() if c.issue == task and c.body == "/claim"}
    assert raced.reactions.get(claims[winner]) == ("+1",) and claims[loser] not in raced.reactions
    assert raced.replies[-1].startswith(
        f"@{loser} #{task} is claimed by @{winner} (revision 2), not open. Pick another issue."
    )

    delivered = after["delivered"]
    assert delivered.labels == ("baton:delivered",) and delivered.assignees == (winner,)
    assert work_line(delivered.status) == f"**Work:** Delivered — attempt 1 by @{winner}, awaiting review"

    sent_back = after["sent back"]
    assert sent_back.labels == ("baton:claimed",) and sent_back.assignees == (winner,)
    assert work_line(sent_back.status) == f"**Work:** Claimed — attempt 2 by @{winner}"

    refused = "\n".join(after["refused"].replies)
    # the agents have write access, to push their branches: that makes neither of them a reviewer
    assert f"@{winner} cannot /accept #{task}: that needs a reviewer" in refused
    assert f"(@{winner} has write)" in refused
    assert f"@visitor cannot /accept #{task}: that needs a reviewer" in refused

    merged = after["merged"]
    assert merged.state == "closed"  # GitHub closed the issue on merge ...
    assert merged.labels == ("baton:delivered",)  # ... and the work did not move
    assert work_line(merged.status) == f"**Work:** Delivered — attempt 2 by @{winner}, awaiting review"

    # the evidence rail: what the repository shows, verified against GitHub; it never moved the work
    pr_state = stage.repository.pulls[pull]
    head, merge = pr_state.head_sha, pr_state.merge_commit_sha or ""
    first = stage.repository.commits(f"{task}-empty-state")[-2]
    assert f"**Repository:** Branch {task}-empty-state (head {first[:7]}, verified)" in (delivered.status or "")
    assert f"**Repository:** Pull request #{pull} open (head {head[:7]}, verified)" in (
        after["pull request"].status or ""
    )
    assert after["refused"].checks == ((head, "in_progress", None),)  # the acceptance check waits on the PR
    assert f"**Repository:** Pull request #{pull} merged (merge commit {merge[:7]})" in (merged.status or "")
    assert "**Deployment:** Not deployed" in (merged.status or "")
    deployed = after["deployed"]
    assert deployed.labels == ("baton:delivered",)  # deployed, and still only delivered
    assert f"**Deployment:** Deployed to production ({merge[:7]})" in (deployed.status or "")

    accepted = after["accepted"]
    assert accepted.labels == ("baton:accepted",)
    assert accepted.status == (
        "<!-- baton:status -->\n"
        f"**Work:** Accepted by @maria — attempt 2 by @{winner}\n"
        f"**Repository:** Pull request #{pull} merged (merge commit {merge[:7]})\n"
        f"**Deployment:** Deployed to production ({merge[:7]})\n\n"
        "Revision 6. It is finished; a maintainer can /reopen it."
    )
    checked = wait_for(stage, task, lambda s: s.checks == ((head, "completed", "success"),), "the check passed")
    assert checked.checks == ((head, "completed", "success"),)
    assert "accepted by @maria" in (stage.repository.check_runs[max(stage.repository.check_runs)].summary or "")

    # the history tells all of it, including the superseded delivery and why it was sent back
    events = api(stage, f"/repos/octo/shop/issues/{task}/events?rail=work").json()["events"]
    kinds = [event["type"] for event in events]
    assert kinds == ["created", "claimed", "delivered", "sent_back", "delivered", "accepted"], kinds
    assert "vanishes when the invoices request fails" in str(events[3])
    # and the whole timeline holds what GitHub reported besides, in the order it was recorded
    timeline = api(stage, f"/repos/octo/shop/issues/{task}/events").json()["events"]
    assert [e for e in timeline if e["rail"] == "work"] == events
    assert {"repository", "deployment"} <= {e["rail"] for e in timeline}
    assert [e["created_at"] for e in timeline] == sorted(e["created_at"] for e in timeline)
    ticket = api(stage, f"/repos/octo/shop/issues/{task}").json()
    assert ticket["state"] == "accepted" and ticket["runner"] == winner and len(ticket["deliveries"]) == 2
    # one status comment on the issue, edited in place, and the pull request's refusals answered there
    assert sum(1 for c in stage.repository.comments.values() if c.issue == task and "baton:status" in c.body) == 1
    assert len(after["refused"].replies) == 1  # both refusals coalesced into one reply
    assert any(f"#{pull}" in line for line in said)


@pytest.mark.both_engines
@pytest.mark.long
def test_twenty_agents_claim_at_once_one_wins_and_github_sees_at_most_six_writes(database_url: str) -> None:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    # the production coalescing window, so the 19 refusals leave in one reply
    with Stage.open(database_url, key=(app_key(), app_public_key()), answer_delay=2.0) as stage:
        maria = stage.person("maria", "maintain")
        agents = [stage.person(f"agent-{n:02d}", "write") for n in range(20)]
        number = maria.open_issue(stage.full_name, "A popular task")
        wait_for(stage, number, offered, "offered")  # its label comes first (its status comment with the claim)
        _settled(stage)
        writes_before = len(stage.hub.rest.writes())
        together = threading.Barrier(20)
        comment_ids: dict[str, int] = {}

        def claim(agent: Person) -> None:
            comment_ids[agent.login] = agent.comment(stage.full_name, number, "/claim", together=together)

        racers = [threading.Thread(target=claim, args=(agent,)) for agent in agents]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
        assert all(d.status == 202 for d in stage.hub.deliveries if d.event == "issue_comment")
        shown = wait_for(stage, number, lambda s: showing("claimed")(s) and len(s.replies) == 1, "claimed, answered")
        _settled(stage, 2.5)
        shown = wait_for(stage, number, lambda s: True, "the settled issue")
        (winner,) = shown.assignees
        assert shown.labels == ("baton:claimed",)
        assert shown.reactions == {comment_ids[winner]: ("+1",)}
        (reply,) = shown.replies
        losers = [agent.login for agent in agents if agent.login != winner]
        assert all(f"@{loser}" in reply for loser in losers) and f"@{winner} " not in reply.split("claimed by")[0]
        # creating the `baton:claimed` label is once per repository, not the race's
        writes = [w for w in stage.hub.rest.writes()[writes_before:] if w.path != "/repos/octo/shop/labels"]
        assert len(writes) <= 6, [(w.method, w.path) for w in writes]
        assert stage.hub.all_problems() == []
    stage.app.state.work.units.engine.dispose()


def test_a_state_label_removed_by_hand_comes_back(stage: Stage) -> None:
    maria, agent = stage.person("maria", "maintain"), stage.person("agent-a", "write")
    number = maria.open_issue(stage.full_name, "A task")
    wait_for(stage, number, offered, "offered")
    _settled(stage)  # Baton's own `baton:open` has come back to it as a webhook
    agent.comment(stage.full_name, number, "/claim")
    wait_for(stage, number, showing("claimed"), "claimed")
    maria.label(stage.full_name, number, "baton:claimed", add=False)
    maria.label(stage.full_name, number, "baton:open", add=True)
    back = wait_for(stage, number, lambda s: s.labels == ("baton:claimed",), "the state label put back")
    assert back.assignees == ("agent-a",)
    kinds = [e["type"] for e in api(stage, f"/repos/octo/shop/issues/{number}/events").json()["events"]]
    assert kinds.count("label_restored") == 2 and kinds[:2] == ["created", "claimed"]
    assert api(stage, f"/repos/octo/shop/issues/{number}").json()["state"] == "claimed"


def _settled(stage: Stage, seconds: float = 1.0) -> tuple[int, int]:
    """Wait until the stand-in has seen no call from Baton for `seconds`; returns (calls, writes)."""
    last, quiet_since = -1, time.monotonic()
    while time.monotonic() - quiet_since < seconds:
        count = len(stage.hub.rest.calls)
        if count != last:
            last, quiet_since = count, time.monotonic()
        time.sleep(0.05)
    return len(stage.hub.rest.calls), len(stage.hub.rest.writes())


def test_a_redelivered_webhook_changes_nothing(stage: Stage) -> None:
    maria, agent = stage.person("maria", "maintain"), stage.person("agent-a", "write")
    number = maria.open_issue(stage.full_name, "A task")
    agent.comment(stage.full_name, number, "/claim")
    wait_for(stage, number, showing("claimed"), "claimed")
    claim = next(d for d in stage.hub.deliveries if d.event == "issue_comment" and b'"/claim"' in d.body)
    _, writes = _settled(stage)
    before = wait_for(stage, number, lambda s: True, "anything")
    again = stage.hub.redeliver(claim)
    assert again.status == 202 and '"received":"duplicate"' in again.answer
    _, writes_after = _settled(stage)
    assert writes_after == writes
    assert wait_for(stage, number, lambda s: True, "anything") == before
    assert api(stage, f"/repos/octo/shop/issues/{number}").json()["revision"] == 2


@pytest.mark.long
def test_faults_in_github_delay_updates_but_never_lose_or_double_them(stage: Stage) -> None:
    maria, agent = stage.person("maria", "maintain"), stage.person("agent-a", "write")
    number = maria.open_issue(stage.full_name, "A task")
    maria.comment(stage.full_name, number, "/status")
    wait_for(stage, number, showing("open"), "open")
    stage.hub.rest.inject(Fault("POST", r"/issues/\d+/labels$", status=502))
    stage.hub.rest.inject(Fault("POST", r"/issues/\d+/assignees$", status=500))
    stage.hub.rest.inject(Fault("PATCH", r"/issues/comments/\d+$", status=403, retry_after=1))
    stage.hub.rest.inject(Fault("POST", r"/reactions$", status=None, delay=0.5))  # slow, not failed
    claim = agent.comment(stage.full_name, number, "/claim")
    shown = wait_for(stage, number, lambda s: showing("claimed")(s) and claim in s.reactions, "claimed", timeout=60)
    assert shown.labels == ("baton:claimed",) and shown.assignees == ("agent-a",)
    assert shown.reactions[claim] == ("+1",)  # once, though its write was slow
    assert all(len(given) == 1 for given in shown.reactions.values())
    assert sum(1 for c in stage.repository.comments.values() if c.issue == number and c.user.type == "Bot") == 1
    failed = sorted({c.status for c in stage.hub.rest.calls if c.status >= 400 and c.status != 404})
    assert failed == [403, 500, 502]  # each fault was met, and each was got over
    assert all(fault.times == 0 for fault in stage.hub.rest.faults)


@pytest.mark.long
def test_baton_demo_plays_the_story_and_exits_with_once(tmp_path: Path) -> None:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    done = subprocess.run(
        [sys.executable, "-m", "baton.cli", "demo", "--once", "--port", "0", "--database",
         f"sqlite:///{tmp_path / 'demo.db'}"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "BATON_DATABASE_URL": "sqlite:///unused.db"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "every call checked against GitHub's REST description" in out
    assert "8. @maria accepts on the pull request with /accept." in out
    assert "The status comment on octo/shop#1 now reads:" in out
    assert "**Work:** Accepted by @maria — attempt 2 by @agent-" in out
    assert "strayed" not in out


@pytest.mark.long
def test_baton_demo_keeps_serving_and_prints_a_link_that_opens_the_board(tmp_path: Path) -> None:
    try:
        Contract.load()
    except ContractUnavailable as error:
        missing(str(error))
    demo = processes.demo(tmp_path)
    try:
        assert demo.stdout is not None
        said = []
        for line in demo.stdout:
            said.append(line)
            if line.startswith("Board: "):
                break
        else:
            raise AssertionError("".join(said))
        link = line.removeprefix("Board: ").strip()
        with httpx.Client(timeout=10, follow_redirects=True) as browser:  # a cookie jar of its own, as a browser has
            opened = browser.get(link)
            assert opened.status_code == 200 and str(opened.url) == link.split("/sign-in/")[0] + "/"
            assert 'data-ticket="octo/shop#1"' in opened.text and "Accepted by @maria" in opened.text
        with httpx.Client(timeout=10) as other:  # the link works once
            assert other.get(link).status_code == 401
        # the demo's App has an OAuth client too: signing in with GitHub, the stand-in signs @maria in
        with httpx.Client(timeout=10, follow_redirects=True) as browser:
            board = link.split("/sign-in/")[0]
            assert 'href="/auth/github?next=%2F"' in browser.get(f"{board}/").text
            opened = browser.get(f"{board}/auth/github")
            assert opened.status_code == 200 and str(opened.url) == f"{board}/"
            assert "Signed in as @maria" in opened.text and 'data-ticket="octo/shop#1"' in opened.text
    finally:
        demo.send_signal(signal.SIGINT)
        demo.wait(30)


def test_the_story_plays_unchecked_where_githubs_descriptions_are_not_installed(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`baton demo` on a fresh machine: no npm packages, so no checks, and the same story."""

    def unavailable(cls: type, root: Path | None = None) -> Contract:
        raise ContractUnavailable("not installed")

    monkeypatch.setattr(Contract, "load", classmethod(unavailable))
    with Stage.open(sqlite_url, key=(app_key(), app_public_key())) as stage:
        assert stage.hub.contract is None
        after = play(stage, lambda line: None)
        assert after["accepted"].labels == ("baton:accepted",)
    stage.app.state.work.units.engine.dispose()


def test_what_webhooks_did_not_tell_baton_asks_github(stage: Stage) -> None:
    """A branch pushed and a pull request opened while Baton heard nothing (it was down: GitHub does not
    redeliver by itself), then a deployment of a commit after the merge: Baton reads branches, pulls and
    the comparison from GitHub's API to verify what the runner reported and what was deployed."""
    maria, agent = stage.person("maria", "maintain"), stage.person("agent-a", "write")
    number = agent.open_issue(stage.full_name, "Tidy the invoice list", "/claim")  # created claimed, by its body
    claimed = wait_for(stage, number, lambda s: showing("claimed")(s) and 0 in s.reactions, "claimed from the body")
    assert claimed.reactions[0] == ("+1",) and claimed.assignees == ("agent-a",)  # the 👍 is on the issue itself

    hook, stage.hub.hook_url = stage.hub.hook_url, None  # Baton hears nothing for a while
    branch = f"{number}-tidy"
    head = agent.push(stage.full_name, branch, "Tidy the list")
    pull = agent.open_pull_request(stage.full_name, branch, "Tidy", "Part of the invoices work")
    stage.hub.hook_url = hook
    agent.comment(stage.full_name, number, f"/deliver Tidied.\nbranch: {branch}\ncommit: {head}\npr: #{pull}")
    shown = wait_for(stage, number, showing("delivered", f"Pull request #{pull} open (head {head[:7]}, verified)"),
                     "the reported pull request verified")  # fmt: skip
    assert "Mismatch" not in (shown.status or "")

    merge = maria.merge(stage.full_name, pull)
    wait_for(stage, number, showing("delivered", "merged"), "the merge")
    later = maria.push(stage.full_name, "main", "Release notes")  # main moves on past the merge
    maria.deploy(stage.full_name, later, "production")
    deployed = wait_for(stage, number, showing("delivered", f"Deployed to production ({later[:7]})"), "deployed")
    assert merge != later and deployed.state == "open"  # "Part of" closes nothing
    asked = stage.hub.rest.operations()
    assert {"repos/get-branch", "pulls/get", "repos/compare-commits-with-basehead",
            "reactions/create-for-issue"} <= asked, asked  # fmt: skip
