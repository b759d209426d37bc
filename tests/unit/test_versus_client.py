"""The versus bench's HTTP/1.1 client reads each answer whole, however its length is given, and leaves the
kept-alive stream at the next one; and its judge counts only rounds with one winner and the rest refused."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bench.versus import OBTAIN, Agent, RoundSet, judge, main, read_response, request, setup_token


def test_a_request_carries_its_host_headers_and_length() -> None:
    raw = request("PATCH", 3000, "/api/tickets/7", {"Authorization": "Bearer k"}, b'{"a": 1}')
    assert raw == (b"PATCH /api/tickets/7 HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nAuthorization: Bearer k\r\n"
                   b"Content-Length: 8\r\n\r\n" + b'{"a": 1}')  # fmt: skip


def test_answers_by_length_and_chunked_are_read_whole_and_in_turn() -> None:
    stream = io.BytesIO(
        b"HTTP/1.1 409 Conflict\r\nCONTENT-LENGTH: 5\r\nContent-Type: application/json\r\n\r\nfirst"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;name=value\r\nsec\n\r\n3\r\nond\r\n0\r\nX-Trailer: t\r\n\r\n"
        b"HTTP/1.1 204 No Content\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end"
    )
    assert read_response(stream) == (409, b"first")
    assert read_response(stream) == (200, b"sec\nond")
    assert read_response(stream) == (204, b"")
    assert read_response(stream) == (200, b"to the end")
    with pytest.raises(ConnectionError):
        read_response(stream)


def answers(statuses: list[int]) -> RoundSet:
    return RoundSet([(0, i, s, b"", 0.001) for i, s in enumerate(statuses)], elapsed=1.0, cpu=0.0, rss_mb=0.0,
                    load=0.0)  # fmt: skip


@pytest.mark.parametrize(
    ("statuses", "right"),
    [([200, 409, 409], 1), ([200, 200, 409], 0), ([409, 409, 409], 0), ([200, 409, 429], 0)],
)
def test_a_round_is_right_with_one_winner_and_the_rest_refused(statuses: list[int], right: int) -> None:
    agents = [Agent(f"agent-{i}", 1, b"", [b""]) for i in range(3)]
    result = answers(statuses)
    judge(result, agents, 1, refusal=lambda body, winner: True, win=lambda body, winner: True)
    assert (result.right, len(result.wrong)) == (right, 1 - right)


def test_a_refusal_that_does_not_name_the_winner_makes_the_round_wrong() -> None:
    agents = [Agent(f"agent-{i}", 1, b"", [b""]) for i in range(3)]
    result = answers([409, 200, 409])
    judge(result, agents, 1, refusal=lambda body, winner: winner == "agent-0", win=lambda body, winner: True)
    assert result.right == 0


def test_the_setup_token_is_read_from_the_link_a_fresh_board_prints(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("listening on http://127.0.0.1:3000\nfirst start: http://127.0.0.1:3000/?setup=0f3a9c\n")
    assert setup_token(log) == "0f3a9c"


@pytest.mark.parametrize("given", [["--agentboard", "{empty}", "--node", "node"], ["--node", "node"]])
def test_a_rival_without_its_files_is_refused_with_how_to_get_them(
    given: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([argument.format(empty=tmp_path) for argument in given])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "server.js and package.json" in error
    assert OBTAIN.splitlines()[-1] in error
