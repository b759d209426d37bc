"""The agent API's commands, GitHub's deliveries and a ticket read with the read token answered by `baton serve`'s
HTTP protocol itself (`web/wire.py`,
`web/plain.py`), over real sockets: the answer and its headers are those the application gives; a request the lane
declines, one behind another on the same connection, one asking `100-continue` or with a large body, and one whose
decision failed are all answered as before, in order; a client that goes away leaves the server answering the
others."""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from baton.github.webhooks import signature
from support import standin_scene
from support.standin_scene import Scene

READ_TOKEN = "lane-read-token"
scene = standin_scene.scene_with(api_token=READ_TOKEN)  # Baton and the stand-in GitHub, wired to each other


class Lane:
    """The app's lane, watched: of the requests to paths starting with `prefix`, what it answered itself (True) or
    left to the application (False)."""

    def __init__(self, scene: Scene, prefix: str = "/api/v1/") -> None:
        self.lane = scene.app.state.lane
        self.took: list[bool] = []
        self.deliveries: list[str] = []  # beside each of `took`, the request's X-GitHub-Delivery ("" for none)
        self.declining = False  # set: every request goes to the application, as the lane leaves one it cannot take
        answer = self.lane.answer

        def watched(method: str, path: str, headers: Any, *args: Any) -> Any:
            headers = list(headers)
            given = None if self.declining else answer(method, path, headers, *args)
            if path.startswith(prefix):
                self.took.append(given is not None)
                named = [value for name, value in headers if name.lower() == b"x-github-delivery"]
                self.deliveries.append(named[0].decode() if named else "")
            return given

        self.lane.answer = watched


def raw(scene: Scene, method: str, path: str, token: str | None = None, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: baton"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    if body:
        lines.append("Content-Type: application/json")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def connect(scene: Scene) -> socket.socket:
    host, port = scene.stage.baton_url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=10)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def answers(connection: socket.socket, count: int) -> list[tuple[int, dict[str, str], bytes]]:
    """`count` responses read off the connection: status, headers (lower-cased names), body."""
    reader = connection.makefile("rb")
    read = []
    for _ in range(count):
        status = int(reader.readline().split()[1])
        headers: dict[str, str] = {}
        while (line := reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        read.append((status, headers, reader.read(int(headers.get("content-length", "0")))))
    return read


def claim_path(scene: Scene, number: int | None = None, action: str = "claim") -> str:
    return f"/api/v1/repos/{scene.full_name}/issues/{number or scene.number}/{action}"


def test_a_command_is_answered_by_the_lane_with_the_headers_the_application_gives(scene: Scene) -> None:
    lane = Lane(scene)
    first, second = (scene.stage.person(login, "read").token() for login in ("agent-a", "agent-b"))
    scene.app.state.agent_api.identities.who(first)  # known: the lane answers at once
    scene.app.state.agent_api.identities.who(second)
    with connect(scene) as connection:
        connection.sendall(raw(scene, "POST", claim_path(scene), first))
        [(status, headers, body)] = answers(connection, 1)
        assert status == 200 and json.loads(body)["runner"] == "agent-a"
        connection.sendall(raw(scene, "POST", claim_path(scene), second))
        [(refused, refused_headers, refusal)] = answers(connection, 1)
        assert refused == 409 and json.loads(refusal)["runner"] == "agent-a"
        # The same route, its body not valid as sent: the application's declaration answers (422).
        connection.sendall(raw(scene, "POST", claim_path(scene), second, b'{"note": 1}'))
        [(invalid, invalid_headers, _)] = answers(connection, 1)
    assert invalid == 422
    assert lane.took == [True, True, False]
    for given in (headers, refused_headers):
        assert set(given) == set(invalid_headers) == {"date", "server", "content-length", "content-type"}
        assert given["content-type"] == invalid_headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)


def test_a_ticket_read_with_the_read_token_is_answered_by_the_lane_as_the_application_answers_it(scene: Scene) -> None:
    lane = Lane(scene)
    scene.comment("agent-a", "/claim")
    ticket = f"/api/v1/repos/{scene.full_name}/issues/{scene.number}"
    unknown = f"/api/v1/repos/{scene.full_name}/issues/9999"
    person = scene.stage.person("agent-b", "read").token()
    given: dict[str | None, list[tuple[int, dict[str, str], bytes]]] = {}
    with connect(scene) as connection:
        for path in (ticket, unknown):  # the lane's answer (read at once on SQLite), then the application's
            given[path] = []
            for declining in (False, True):
                lane.declining = declining
                connection.sendall(raw(scene, "GET", path, READ_TOKEN))
                given[path] += answers(connection, 1)
        lane.declining = False
        # A person's own token (GitHub is asked whether they may read), a wrong token, none: the application's.
        for credential in (person, "not-the-token", None):
            connection.sendall(raw(scene, "GET", ticket, credential))
            given[credential] = answers(connection, 1)
    assert given[ticket][0][0] == 200 and json.loads(given[ticket][0][2])["runner"] == "agent-a"
    assert given[unknown][0][0] == 404
    for by_lane, by_app in (given[ticket], given[unknown]):
        assert (by_lane[0], by_lane[2]) == (by_app[0], by_app[2])
        assert set(by_lane[1]) == set(by_app[1]) == {"date", "server", "content-length", "content-type"}
        assert by_lane[1]["content-type"] == by_app[1]["content-type"]
    assert [given[credential][0][0] for credential in (person, "not-the-token", None)] == [200, 401, 401]
    assert given[person][0][2] == given[ticket][0][2]
    assert lane.took == [True, False, True, False, False, False, False]


def delivery(scene: Scene, body: bytes, delivery_id: str, sign: bytes | None = None, **headers: str) -> bytes:
    """A delivery of `body` as GitHub posts it, signed with the App's webhook secret (or `sign`)."""
    secret = scene.stage.settings.webhook_secret
    assert secret is not None
    return raw(scene, "POST", "/webhooks/github", None, body, X_GitHub_Event="issue_comment",
               X_GitHub_Delivery=delivery_id, X_Hub_Signature_256=signature(sign or secret.get_secret_value().encode(),
                                                                            body), **headers)  # fmt: skip


def test_a_delivery_is_answered_by_the_lane_as_the_application_answers_it(database_url: str) -> None:
    with standin_scene.opened(database_url, lanes=True) as scene:  # a decide lane to wake, as in `baton serve`
        a_delivery_answered_by_the_lane(scene)


def a_delivery_answered_by_the_lane(scene: Scene) -> None:
    lane = Lane(scene, prefix="/webhooks/")
    scene.comment("agent-a", "/claim")  # GitHub delivers the comment to Baton, which decides it
    assert lane.took and all(lane.took)
    ticket = scene.app.state.work.ticket(scene.key)
    assert ticket is not None and ticket.runner == "agent-a"

    made = len(lane.took)
    body = json.dumps({"action": "created", "installation": {"id": scene.repository.installation_id},
                       "issue": {"number": scene.number}, "comment": {"id": 9, "body": "hello"},
                       "sender": {"login": "olivia"}}).encode()  # fmt: skip
    with connect(scene) as connection:
        connection.sendall(delivery(scene, body, "lane-1") + delivery(scene, body, "lane-1"))  # pipelined
        first, again = answers(connection, 2)
        connection.sendall(delivery(scene, body, "lane-2", sign=b"not the secret"))
        [forged] = answers(connection, 1)
        # The same forged delivery, asking 100-continue: the application answers it.
        head = delivery(scene, body, "lane-2", sign=b"not the secret", Expect="100-continue")
        connection.sendall(head[: -len(body)])
        reader = connection.makefile("rb")
        assert reader.readline().startswith(b"HTTP/1.1 100")
        assert reader.readline() == b"\r\n"
        connection.sendall(body)
        [forged_by_app] = answers(connection, 1)
    assert (first[0], json.loads(first[2])) == (202, {"delivery": "lane-1", "received": "new"})
    assert (again[0], json.loads(again[2])) == (202, {"delivery": "lane-1", "received": "duplicate"})
    assert forged[0] == forged_by_app[0] == 401
    assert forged[2] == forged_by_app[2]
    assert set(forged[1]) == set(forged_by_app[1]) == set(first[1]) == {"date", "server", "content-length",
                                                                          "content-type"}  # fmt: skip
    # the pipelined second and the 100-continue one were the application's (GitHub's deliveries of Baton's own
    # answers on the issue may come meanwhile, as on a busy machine)
    mine = [
        took for took, named in zip(lane.took[made:], lane.deliveries[made:], strict=True) if named.startswith("lane-")
    ]
    assert mine == [True, True], (lane.took, lane.deliveries)


def test_requests_behind_a_command_on_one_connection_are_answered_in_order(scene: Scene) -> None:
    lane = Lane(scene)
    tokens = [scene.stage.person(f"agent-{n}", "read").token() for n in range(3)]
    for token in tokens[:2]:
        scene.app.state.agent_api.identities.who(token)
    other = scene.person("olivia").open_issue(scene.full_name, "Second task")
    scene.settle()
    sent = [
        raw(scene, "POST", claim_path(scene), tokens[0]),
        raw(scene, "GET", "/healthz"),
        raw(scene, "POST", claim_path(scene), tokens[1]),
        raw(scene, "POST", claim_path(scene, other), tokens[2]),  # a token not known yet: GitHub is asked first
        raw(scene, "POST", claim_path(scene, other, "release"), tokens[1]),
    ]
    with connect(scene) as connection:
        connection.sendall(b"".join(sent))  # all at once: pipelined
        read = answers(connection, len(sent))
    assert [status for status, _, _ in read] == [200, 200, 409, 200, 409]
    assert json.loads(read[1][2]) == {"status": "ok"}
    assert json.loads(read[3][2])["runner"] == "agent-2"
    assert json.loads(read[4][2])["runner"] == "agent-2"  # the release refused: agent-1 does not hold #other
    assert lane.took[0] is True  # the first was the lane's; those queued behind it were the application's


def test_connection_close_and_http_1_0_are_kept(scene: Scene) -> None:
    token = scene.stage.person("agent-a", "read").token()
    scene.app.state.agent_api.identities.who(token)
    with connect(scene) as connection:
        connection.sendall(raw(scene, "POST", claim_path(scene), token, Connection="close"))
        [(status, headers, _)] = answers(connection, 1)
        assert status == 200 and headers["connection"] == "close"
        assert connection.recv(1) == b""  # closed by the server
    with connect(scene) as connection:
        request = raw(scene, "POST", claim_path(scene), token).replace(b"HTTP/1.1", b"HTTP/1.0", 1)
        connection.sendall(request)
        [(status, headers, body)] = answers(connection, 1)
        assert status == 200 and json.loads(body)["runner"] == "agent-a"
        assert connection.recv(1) == b""


def test_expect_100_continue_and_a_large_body_go_to_the_application(scene: Scene) -> None:
    lane = Lane(scene)
    token = scene.stage.person("agent-a", "read").token()
    scene.app.state.agent_api.identities.who(token)
    with connect(scene) as connection:
        head = raw(scene, "POST", claim_path(scene), token, b"{}", Expect="100-continue")
        connection.sendall(head[:-2])
        reader = connection.makefile("rb")
        assert reader.readline().startswith(b"HTTP/1.1 100")
        assert reader.readline() == b"\r\n"
        connection.sendall(b"{}")
        [(status, _, body)] = answers(connection, 1)
        assert status == 200 and json.loads(body)["runner"] == "agent-a"
        large = json.dumps({"note": "x" * 70_000}).encode()
        connection.sendall(raw(scene, "POST", claim_path(scene), token, large))
        [(status, _, _)] = answers(connection, 1)
        assert status == 422
    assert lane.took == []  # neither reached the lane


def test_a_decision_that_failed_is_answered_as_the_application_answers_a_failure(scene: Scene) -> None:
    lane = Lane(scene)
    token = scene.stage.person("agent-a", "read").token()
    api = scene.app.state.agent_api
    api.identities.who(token)
    decide = api.decide_calls

    def failing(calls: Any) -> Any:
        raise RuntimeError("a fault in the decision")

    api.decide_calls = failing
    api._calls._work = failing
    try:
        with connect(scene) as connection:
            connection.sendall(raw(scene, "POST", claim_path(scene), token))
            [(status, _, body)] = answers(connection, 1)
    finally:
        api._calls._work = decide
    assert (status, body) == (500, b"Internal Server Error")
    assert lane.took == [True]

    def unreachable(calls: Any) -> Any:
        raise OperationalError("SELECT 1", {}, Exception("could not connect to server"))

    api._calls._work = unreachable
    try:
        with connect(scene) as connection:
            connection.sendall(raw(scene, "POST", claim_path(scene), token))
            [(status, headers, body)] = answers(connection, 1)
            assert status == 503 and headers["retry-after"] and json.loads(body)["error"] == "unavailable"
            # The database is thought away: the lane takes nothing, the gate answers until the database does.
            connection.sendall(raw(scene, "POST", claim_path(scene), token))
            [(status, _, _)] = answers(connection, 1)
            assert status == 503
    finally:
        api._calls._work = decide
    assert lane.took == [True, True]


def test_a_client_that_goes_away_before_its_answer_leaves_the_others_answered(scene: Scene) -> None:
    tokens = [scene.stage.person(f"agent-{n}", "read").token() for n in range(2)]
    for token in tokens:
        scene.app.state.agent_api.identities.who(token)
    gone = connect(scene)
    gone.sendall(raw(scene, "POST", claim_path(scene), tokens[0]))
    gone.close()
    time.sleep(0.2)
    with connect(scene) as connection:
        connection.sendall(raw(scene, "POST", claim_path(scene), tokens[1]))
        [(status, _, body)] = answers(connection, 1)
    assert status in (200, 409)
    assert json.loads(body)["runner"] in ("agent-0", "agent-1")


def test_with_the_access_log_on_the_lanes_answers_have_their_lines(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    lane = Lane(scene)
    token = scene.stage.person("agent-a", "read").token()
    scene.app.state.agent_api.identities.who(token)
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    with connect(scene) as connection:
        connection.sendall(raw(scene, "POST", claim_path(scene) + "?via=lane", token))
        [(status, _, _)] = answers(connection, 1)
    assert status == 200 and lane.took == [True]
    lines = [record.getMessage() for record in caplog.records if record.name == "uvicorn.access"]
    assert any(f'"POST {claim_path(scene)}?via=lane HTTP/1.1" 200' in line for line in lines), lines
