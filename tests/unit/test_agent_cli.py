"""The agents' and reviewers' commands (`baton claim`, `next`, `new`, `deliver`, `release`, `tasks`, `status`,
`accept`, `send-back`, `reopen`) against Baton's HTTP contract, with respx standing in for the server: what each
sends, what it prints, and its exit status."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from baton.cli import main
from baton.client.agent import AgentClient, UsageError, find_token, parse_issue, parse_repository

URL = "http://baton.test"
TOKEN = "ghp_s3cretAgentToken0123456789"
ISSUE = "/api/v1/repos/octo/shop/issues/42"
HOLDER = "#42 is claimed by @agent-a (revision 19), not open. Pick another issue."


def ticket(**changes: Any) -> dict[str, Any]:
    body = {"repository": "octo/shop", "issue": 42, "state": "claimed", "runner": "agent-b", "revision": 19,
            "attempt": 1, "url": "https://github.com/octo/shop/issues/42", "message": None}  # fmt: skip
    return body | changes


def task(number: int, revision: int, title: str | None) -> dict[str, Any]:
    return {"repository": "octo/shop", "issue": number, "title": title, "state": "open", "revision": revision,
            "url": f"https://github.com/octo/shop/issues/{number}", "brief": None}  # fmt: skip


ERRORS = {409: "conflict", 412: "precondition_failed", 403: "forbidden", 404: "not_found", 422: "invalid",
          401: "unauthorized", 429: "rate_limited"}  # fmt: skip


def refusal(status: int, message: str = HOLDER, code: str | None = "wrong_state") -> dict[str, Any]:
    if status in (401, 429):
        return {"error": ERRORS[status], "message": message}
    return {"error": ERRORS[status], "code": code, "state": "claimed", "runner": "agent-a", "revision": 19,
            "message": message}  # fmt: skip


def answer(status: int, body: dict[str, Any]) -> httpx.Response:
    headers = {"Retry-After": "30"} if status == 429 else {}
    return httpx.Response(status, json=body, headers=headers)


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BATON_URL", URL)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    monkeypatch.delenv("BATON_TOKEN", raising=False)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no `gh` unless a test puts one there


@pytest.fixture
def baton() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=URL, assert_all_called=False) as router:
        yield router


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    return code, out, err


NEXT = "/api/v1/repos/octo/shop/tasks/claim"

# The command, and the one route its answer comes from.
COMMANDS = {
    "claim": (["claim", "octo/shop#42"], "POST", f"{ISSUE}/claim", ticket()),
    "release": (["release", "octo/shop#42"], "POST", f"{ISSUE}/release", ticket(state="open", runner=None)),
    "deliver": (
        ["deliver", "octo/shop#42", "--summary", "Done."],
        "POST",
        f"{ISSUE}/deliver",
        ticket(state="delivered"),
    ),
    "accept": (["accept", "octo/shop#42"], "POST", f"{ISSUE}/accept", ticket(state="accepted")),
    "send-back": (["send-back", "octo/shop#42"], "POST", f"{ISSUE}/send-back", ticket(state="claimed", attempt=2)),
    "reopen": (["reopen", "octo/shop#42"], "POST", f"{ISSUE}/reopen", ticket(state="open", runner=None)),
    "new": (["new", "octo/shop", "--title", "Totals"], "POST", "/api/v1/repos/octo/shop/issues", ticket(issue=43)),
    "tasks": (["tasks", "octo/shop"], "GET", "/api/v1/tasks", {"tasks": [task(7, 1, "Empty state")]}),
    "status": (["status", "octo/shop#42"], "GET", ISSUE, ticket()),
    "next": (["next", "octo/shop"], "POST", NEXT, ticket(title="Empty state", priority=2, brief=None)),
}
EXIT = {200: 0, 409: 1, 412: 1, 403: 1, 404: 1, 422: 1, 401: 2, 429: 2}


@pytest.mark.parametrize("status", [*EXIT, "network"])
@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_exits_by_the_answer(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], command: str, status: int | str
) -> None:
    argv, method, path, success = COMMANDS[command]
    route = baton.route(method=method, path=path)
    if status == "network":
        route.mock(side_effect=httpx.ConnectError("connection refused"))
    else:
        assert isinstance(status, int)
        route.mock(return_value=answer(status, success if status == 200 else refusal(status)))
    code, out, err = run(capsys, *argv)
    assert route.call_count == 1
    assert route.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert code == (2 if status == "network" else EXIT[status])
    if code == 0:
        assert out and not err
    else:
        assert not out and len(err.splitlines()) == 1 and "Traceback" not in err
    if code == 1:
        assert err == f"baton: {HOLDER}\n"  # the server's sentence, naming the holder


def test_claim_names_the_revision_and_prints_one_line(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    claim = baton.post(f"{ISSUE}/claim").respond(json=ticket())
    claimed = "claimed octo/shop#42 (revision 19, attempt 1)\n"
    assert run(capsys, "claim", "octo/shop#42", "--rev", "18") == (0, claimed, "")
    request = claim.calls.last.request
    assert request.headers["If-Match"] == '"18"' and json.loads(request.content) == {}
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"


def test_claim_without_rev_sends_no_if_match_and_shows_the_servers_note(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    note = "you already hold #42 (attempt 1, revision 19)."
    claim = baton.post(f"{ISSUE}/claim").respond(json=ticket(message=note))
    code, out, _ = run(capsys, "claim", "octo/shop#42")
    assert (code, out) == (0, f"claimed octo/shop#42 (revision 19, attempt 1): {note}\n")
    assert "If-Match" not in claim.calls.last.request.headers


def test_a_stale_revision_is_a_refusal_whose_hint_is_in_the_commands_syntax(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    message = "#42 is at revision 19, not 18. Send the command again with rev=19 if it still applies."
    baton.post(f"{ISSUE}/claim").respond(412, json=refusal(412, message, "stale_revision"))
    hint = "baton: #42 is at revision 19, not 18. Send the command again with --rev 19 if it still applies.\n"
    assert run(capsys, "claim", "octo/shop#42", "--rev", "18") == (1, "", hint)


def test_deliver_sends_the_summary_and_evidence(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    deliver = baton.post(f"{ISSUE}/deliver").respond(json=ticket(state="delivered", revision=20))
    code, out, _ = run(
        capsys, "deliver", "octo/shop#42", "--summary", "Empty state added.", "--branch", "42-empty-state",
        "--commit", "1a2b3c4", "--pr", "#57", "--tests", "https://ci.example.com/runs/881", "--tests", "12 passed",
        "--screenshot", "https://example.com/390.png", "--screenshot", "https://example.com/1280.png",
    )  # fmt: skip
    assert (code, out) == (0, "delivered octo/shop#42 (revision 20, attempt 1)\n")
    assert json.loads(deliver.calls.last.request.content) == {
        "summary": "Empty state added.", "branch": "42-empty-state", "commit": "1a2b3c4", "pr": 57,
        "tests": ["https://ci.example.com/runs/881", "12 passed"],
        "screenshots": ["https://example.com/390.png", "https://example.com/1280.png"],
    }  # fmt: skip


def test_deliver_with_a_summary_alone_sends_nulls_and_empty_lists(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    lacks = "the delivery lacks tests, 2 screenshots (0 given)"
    deliver = baton.post(f"{ISSUE}/deliver").respond(422, json=refusal(422, lacks, "missing_evidence"))
    assert run(capsys, "deliver", "octo/shop#42", "--summary", "Done.") == (1, "", f"baton: {lacks}\n")
    assert json.loads(deliver.calls.last.request.content) == {
        "summary": "Done.",
        "branch": None,
        "commit": None,
        "pr": None,
        "tests": [],
        "screenshots": [],
    }


def test_deliver_needs_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["deliver", "octo/shop#42"])
    assert exited.value.code == 2 and "--summary" in capsys.readouterr().err


def test_release_prints_one_line(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    baton.post(f"{ISSUE}/release").respond(json=ticket(state="open", runner=None, revision=20, attempt=None))
    assert run(capsys, "release", "octo/shop#42") == (0, "released octo/shop#42 (revision 20)\n", "")


def test_tasks_prints_one_line_per_task_in_the_servers_order(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = baton.get("/api/v1/tasks").respond(json={"tasks": [task(7, 1, "Empty state"), task(3, 4, None)]})
    assert run(capsys, "tasks", "octo/shop") == (0, "octo/shop#7  r1  Empty state\nocto/shop#3  r4\n", "")
    assert dict(tasks.calls.last.request.url.params) == {"repo": "octo/shop", "state": "open"}


def test_tasks_says_when_there_are_none(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    baton.get("/api/v1/tasks").respond(json={"tasks": []})
    assert run(capsys, "tasks", "octo/shop") == (0, "", "no open tasks in octo/shop\n")


def test_status_prints_the_state_holder_and_revision(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    baton.get(ISSUE).respond(json=ticket(runner="agent-a", attempt=2))
    assert run(capsys, "status", "octo/shop#42") == (0, "octo/shop#42  claimed by @agent-a  r19  attempt 2\n", "")


def test_next_is_one_request_and_prints_the_task_it_claimed(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    listed = baton.get("/api/v1/tasks").respond(json={"tasks": []})
    claimed = baton.post(NEXT).respond(json=ticket(issue=8, revision=4, title="Second", priority=1, brief=None))
    code, out, err = run(capsys, "next", "octo/shop")
    assert (code, out, err) == (0, "claimed octo/shop#8 (revision 4, attempt 1)  Second\n", "")
    assert claimed.call_count == 1 and not listed.called  # Baton picks the task: nothing is listed first
    assert json.loads(claimed.calls.last.request.content) == {}


def test_next_in_an_organisation_with_labels(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    claimed = baton.post("/api/v1/orgs/octo/tasks/claim").respond(json=ticket(repository="octo/tools", title="T"))
    code, out, _ = run(capsys, "next", "--org", "octo", "--label", "ui", "--label", "good first task")
    assert (code, out) == (0, "claimed octo/tools#42 (revision 19, attempt 1)  T\n")
    assert json.loads(claimed.calls.last.request.content) == {"labels": ["ui", "good first task"]}
    for argv in (["next"], ["next", "octo/shop", "--org", "octo"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "") and "one of the two" in err
    assert claimed.call_count == 1
    with pytest.raises(SystemExit) as exited:
        main(["next", "--org", "octo/shop"])
    assert exited.value.code == 2 and "not an organisation" in capsys.readouterr().err


def test_next_exits_1_when_no_task_is_ready(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    message = "No task in octo/shop is ready for you to claim (0 ready, 2 blocked, 5 claimed). Try again later."
    baton.post(NEXT).respond(404, json={"error": "not_found", "code": "none_ready", "message": message,
                                        "counts": {"ready": 0, "blocked": 2, "claimed": 5}})  # fmt: skip
    assert run(capsys, "next", "octo/shop") == (1, "", f"baton: {message}\n")


def test_json_prints_the_answer_whatever_the_exit(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    claim = baton.post(f"{ISSUE}/claim")
    claim.respond(json=ticket())
    code, out, _ = run(capsys, "claim", "octo/shop#42", "--json")
    key = claim.calls.last.request.headers["Idempotency-Key"]  # a fresh one, printed with the answer
    assert (code, json.loads(out)) == (0, ticket() | {"idempotency_key": key})
    claim.respond(409, json=refusal(409))
    code, out, err = run(capsys, "claim", "octo/shop#42", "--json", "--key", "try-1")
    assert claim.calls.last.request.headers["Idempotency-Key"] == "try-1"
    assert (code, json.loads(out), err) == (1, refusal(409) | {"idempotency_key": "try-1"}, f"baton: {HOLDER}\n")
    claim.respond(429, json=refusal(429, "Slow down."), headers={"Retry-After": "30"})
    code, out, _ = run(capsys, "claim", "octo/shop#42", "--json", "--key", "try-1")
    assert (code, json.loads(out)) == (2, refusal(429, "Slow down.") | {"idempotency_key": "try-1"})
    baton.get("/api/v1/tasks").respond(json={"tasks": [task(7, 1, "Empty state")]})
    code, out, _ = run(capsys, "tasks", "octo/shop", "--json")
    assert (code, json.loads(out)) == (0, {"tasks": [task(7, 1, "Empty state")]})


def test_json_of_next(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    claim = baton.post(NEXT).respond(json=ticket())
    code, out, _ = run(capsys, "next", "octo/shop", "--json", "--key", "run-5")
    assert (code, json.loads(out)) == (0, ticket() | {"idempotency_key": "run-5"})
    assert claim.calls.last.request.headers["Idempotency-Key"] == "run-5"
    none = {"error": "not_found", "code": "none_ready", "message": "No task is ready.",
            "counts": {"ready": 0, "blocked": 0, "claimed": 1}}  # fmt: skip
    claim.respond(404, json=none)
    code, out, _ = run(capsys, "next", "octo/shop", "--json", "--key", "run-6")
    assert (code, json.loads(out)) == (1, none | {"idempotency_key": "run-6"})


def test_rate_limited_says_when_to_retry(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    baton.get(ISSUE).respond(429, json=refusal(429, "Too many requests."), headers={"Retry-After": "30"})
    assert run(capsys, "status", "octo/shop#42") == (2, "", "baton: rate limited: Too many requests.; retry in 30 s\n")


def test_a_token_github_refuses_is_named_by_where_it_came_from(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    baton.post(f"{ISSUE}/claim").respond(401, json=refusal(401, "GitHub does not accept this token."))
    code, out, err = run(capsys, "claim", "octo/shop#42")
    assert (code, out) == (2, "")
    assert err == "baton: Baton did not accept the token from GITHUB_TOKEN: GitHub does not accept this token.\n"


def test_a_server_error_exits_2(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    baton.post(f"{ISSUE}/release").respond(502, text="<html>Bad Gateway</html>")
    assert run(capsys, "release", "octo/shop#42") == (2, "", "baton: Baton answered HTTP 502\n")


def test_no_answer_in_time_exits_2_in_one_line(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    baton.post(f"{ISSUE}/claim").mock(side_effect=httpx.ReadTimeout("timed out"))
    assert run(capsys, "claim", "octo/shop#42") == (2, "", f"baton: Baton at {URL} did not answer within 10.0 s\n")


def test_the_token_is_never_printed_even_when_the_server_repeats_it(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    baton.post(f"{ISSUE}/claim").respond(409, json=refusal(409, f"token {TOKEN} holds nothing"))
    code, out, err = run(capsys, "claim", "octo/shop#42", "--json")  # run() checks the token is absent
    assert code == 1 and "[token]" in out and err == "baton: token [token] holds nothing\n"
    assert TOKEN not in repr(AgentClient(URL, TOKEN)) and TOKEN not in repr(find_token())


@pytest.mark.parametrize("command", COMMANDS)
def test_without_baton_url_nothing_is_sent_and_the_exit_is_2(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.delenv("BATON_URL")
    code, out, err = run(capsys, *COMMANDS[command][0])
    assert (code, out) == (2, "") and "BATON_URL" in err
    assert not baton.calls


@pytest.mark.parametrize("command", COMMANDS)
def test_without_a_token_nothing_is_sent_and_the_exit_is_2(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    argv = COMMANDS[command][0]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "") and "GITHUB_TOKEN" in err and "GH_TOKEN" in err
    assert not baton.calls


def test_a_missing_setting_is_json_too_when_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_URL", "baton.test")
    code, out, _ = run(capsys, "status", "octo/shop#42", "--json")
    assert code == 2 and json.loads(out)["error"] == "usage"


def test_the_token_is_github_token_else_gh_token_else_gh_auth_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert (find_token().value, find_token().source) == (TOKEN, "GITHUB_TOKEN")
    monkeypatch.setenv("BATON_TOKEN", "a.workflow.token")  # a GitHub Actions OIDC token, beside the job's GITHUB_TOKEN
    assert (find_token().value, find_token().source) == ("a.workflow.token", "BATON_TOKEN")
    monkeypatch.delenv("BATON_TOKEN")
    monkeypatch.setenv("GH_TOKEN", "from-gh-token")
    assert find_token().value == TOKEN
    monkeypatch.delenv("GITHUB_TOKEN")
    assert (find_token().value, find_token().source) == ("from-gh-token", "GH_TOKEN")
    monkeypatch.delenv("GH_TOKEN")
    with pytest.raises(UsageError):
        find_token()  # no gh on PATH
    gh = tmp_path / "bin" / "gh"
    gh.write_text('#!/bin/sh\n[ "$1 $2" = "auth token" ] && echo from-gh-cli\n')
    gh.chmod(0o755)
    assert (find_token().value, find_token().source) == ("from-gh-cli", "`gh auth token`")
    gh.write_text("#!/bin/sh\necho 'not logged in' >&2\nexit 1\n")
    with pytest.raises(UsageError, match="GITHUB_TOKEN or GH_TOKEN"):
        find_token()


def test_the_token_from_gh_is_sent(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    gh = tmp_path / "bin" / "gh"
    gh.write_text(f"#!/bin/sh\necho {TOKEN}\n")
    gh.chmod(0o755)
    status = baton.get(ISSUE).respond(json=ticket())
    assert run(capsys, "status", "octo/shop#42")[0] == 0
    assert status.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("text", ["octo/shop#42", " octo/shop#42 ", "Octo-Cat/my.repo_1#7"])
def test_owner_repo_number_is_read(text: str) -> None:
    repo, number = parse_issue(text)
    assert f"{repo}#{number}" == text.strip()


@pytest.mark.parametrize(
    "text", ["octo/shop", "octo/shop#", "octo/shop#x", "octo#42", "octo/shop/x#42", "/shop#42", "octo/..#1",
             "octo/shop#0", "octo/shop#99999999999", "octo/shop #42", "-octo/shop#1", ""],
)  # fmt: skip
def test_anything_else_is_a_clear_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match=r"OWNER/REPO#N|issue number"):
        parse_issue(text)
    with pytest.raises(SystemExit) as exited:
        main(["claim", text])
    assert exited.value.code == 2 and "OWNER/REPO#N" in capsys.readouterr().err


def test_a_repository_is_owner_slash_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_repository("octo/shop") == "octo/shop"
    for text in ("octo", "octo/shop#1", "octo/shop/x", "octo/"):
        with pytest.raises(UsageError, match="OWNER/REPO"):
            parse_repository(text)
    with pytest.raises(SystemExit) as exited:
        main(["next", "octo"])
    assert exited.value.code == 2 and "OWNER/REPO" in capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_says_what_it_does_and_what_it_reads(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert all(name in out for name in ("BATON_URL", "GITHUB_TOKEN", "GH_TOKEN", "exit status"))


def test_the_agent_commands_leave_serving_lean() -> None:
    import subprocess
    import sys

    code = "import sys, baton.cli; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PATH": os.defpath}).stdout.split()  # fmt: skip
    assert "baton.client.agent" not in loaded


@pytest.mark.parametrize(
    ("argv", "action", "sent", "said"),
    [
        (["accept", "octo/shop#42", "--note", "Looks right."], "accept", {"note": "Looks right."}, "accepted"),
        (["send-back", "octo/shop#42", "--feedback", "No test."], "send-back", {"feedback": "No test."}, "sent back"),
        (["reopen", "octo/shop#42", "--reason", "It broke."], "reopen", {"reason": "It broke."}, "reopened"),
    ],
    ids=["accept", "send-back", "reopen"],
)
def test_a_reviewers_decision_sends_its_text_revision_and_key(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], argv: list[str], action: str,
    sent: dict[str, str], said: str,
) -> None:  # fmt: skip
    route = baton.post(f"{ISSUE}/{action}").respond(json=ticket(revision=21))
    code, out, err = run(capsys, *argv, "--rev", "20", "--key", "review-1")
    assert (code, out, err) == (0, f"{said} octo/shop#42 (revision 21, attempt 1)\n", "")
    request = route.calls.last.request
    assert json.loads(request.content) == sent
    assert (request.headers["If-Match"], request.headers["Idempotency-Key"]) == ('"20"', "review-1")


def test_each_run_sends_a_fresh_key_unless_given_one(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    route = baton.post(f"{ISSUE}/release").respond(json=ticket(state="open"))
    run(capsys, "release", "octo/shop#42")
    run(capsys, "release", "octo/shop#42")
    first, second = (call.request.headers["Idempotency-Key"] for call in route.calls)
    assert first != second and len(first) == 32
    run(capsys, "release", "octo/shop#42", "--key", "mine", "--rev", "7")
    assert route.calls.last.request.headers["Idempotency-Key"] == "mine"
    assert route.calls.last.request.headers["If-Match"] == '"7"'


def test_new_opens_and_claims_with_the_title_and_the_body_from_a_file_or_stdin(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = baton.post("/api/v1/repos/octo/shop/issues").respond(201, json=ticket(issue=43, revision=2))
    brief = tmp_path / "brief.md"
    brief.write_text("The footer shows totals.\n", encoding="utf-8")
    code, out, err = run(capsys, "new", "octo/shop", "--title", "Totals", "--body-file", str(brief), "--key", "k1")
    assert (code, out, err) == (0, "opened and claimed octo/shop#43 (revision 2, attempt 1)\n", "")
    request = route.calls.last.request
    assert json.loads(request.content) == {"title": "Totals", "body": "The footer shows totals.\n"}
    assert request.headers["Idempotency-Key"] == "k1" and "If-Match" not in request.headers
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("From stdin."))
    assert run(capsys, "new", "octo/shop", "--title", "Totals", "--body-file", "-")[0] == 0
    assert json.loads(route.calls.last.request.content)["body"] == "From stdin."
    code, out, err = run(capsys, "new", "octo/shop", "--title", "Totals", "--body-file", str(tmp_path / "none"))
    assert (code, out) == (2, "") and err.startswith("baton: cannot read --body-file") and len(err.splitlines()) == 1
    with pytest.raises(SystemExit) as exited:
        main(["new", "octo/shop"])
    assert exited.value.code == 2 and "--title" in capsys.readouterr().err


def test_an_invalid_request_prints_the_message_and_each_problem(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = [{"field": "commit", "message": "String should match pattern"},
                {"field": "tests[0]", "message": "String should have at least 1 character"}]  # fmt: skip
    baton.post(f"{ISSUE}/deliver").respond(
        422, json={"error": "invalid", "message": "The request is not valid: commit: …", "problems": problems}
    )
    code, out, err = run(capsys, "deliver", "octo/shop#42", "--summary", "Done.", "--commit", "zz")
    assert (code, out) == (1, "")
    assert err.splitlines() == ["baton: The request is not valid: commit: …",
                                "  commit: String should match pattern",
                                "  tests[0]: String should have at least 1 character"]  # fmt: skip
    detail = [{"loc": ["query", "state"], "msg": "Input should be 'open' or 'claimed'", "type": "enum"}]
    baton.get("/api/v1/tasks").respond(422, json={"detail": detail})
    code, out, err = run(capsys, "tasks", "octo/shop", "--state", "bogus")
    assert (code, out) == (1, "")
    assert err.splitlines() == ["baton: refused (HTTP 422)", "  query.state: Input should be 'open' or 'claimed'"]


def test_the_read_apis_sentence_is_said(baton: respx.MockRouter, capsys: pytest.CaptureFixture[str]) -> None:
    said = "Unknown ticket octo/shop#42: Baton does not track that issue."
    baton.get(ISSUE).respond(404, json={"detail": said})
    assert run(capsys, "status", "octo/shop#42") == (1, "", f"baton: {said}\n")


@pytest.mark.parametrize(
    "answer",
    [httpx.Response(404, html="<h1>Not Found</h1>"), httpx.Response(200, html="<p>Welcome</p>"),
     httpx.Response(403, json={"ok": False}), httpx.Response(200, json=["not", "an", "object"]),
     httpx.Response(404, json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})],
    ids=["404 page", "200 page", "other JSON", "JSON list", "GitHub's API"],
)  # fmt: skip
def test_an_address_that_does_not_answer_as_baton_is_said_in_one_line_and_exits_2(
    baton: respx.MockRouter, capsys: pytest.CaptureFixture[str], answer: httpx.Response
) -> None:
    baton.post(f"{ISSUE}/claim").mock(return_value=answer)
    baton.get("/api/v1/tasks").mock(return_value=answer)
    baton.post(NEXT).mock(return_value=answer)
    for argv in (["claim", "octo/shop#42"], ["tasks", "octo/shop"], ["next", "octo/shop"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert err.startswith(f"baton: BATON_URL {URL} does not answer as Baton: HTTP {answer.status_code} with ")
        assert len(err.splitlines()) == 1
    code, out, _ = run(capsys, "claim", "octo/shop#42", "--json", "--key", "k")
    assert code == 2 and json.loads(out)["error"] == "not_baton" and json.loads(out)["idempotency_key"] == "k"


def test_baton_help_lists_the_commands_by_whom_they_serve(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    agents, reviewers, operators = (
        out.index(f"commands for {group}:") for group in ("agents", "reviewers and maintainers", "operators")
    )
    assert agents < reviewers < operators
    listed = {line.split()[0]: n for n, line in enumerate(out.splitlines()) if line.startswith("  ") and line.split()}
    head = out.splitlines()
    for names, start, end in ((("claim", "next", "new", "deliver", "release", "tasks", "status", "mcp"), agents,
                               reviewers), (("accept", "send-back", "reopen", "assign"), reviewers, operators),
                              (("serve", "worker", "db", "docs"), operators, len(out))):  # fmt: skip
        for name in names:
            assert start < len("\n".join(head[: listed[name]])) < end, name
