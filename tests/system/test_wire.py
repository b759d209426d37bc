"""`baton serve` writes each response's head and body in one write, and every answer still arrives whole: a short
one, a streamed one, one with no body, several on one kept-alive connection, and uvicorn's own refusal."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn

from baton.web.wire import HeadWithBody, protocol


class Wire:
    """A transport that records what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


def test_a_head_and_the_body_after_it_are_one_write() -> None:
    async def scene() -> list[bytes]:
        wire = Wire()
        transport = HeadWithBody(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(HEAD)
        assert wire.writes == []
        transport.write(b"{}")
        await asyncio.sleep(0)
        return wire.writes

    assert asyncio.run(scene()) == [HEAD + b"{}"]


def test_a_head_whose_body_waits_goes_out_at_the_loops_next_turn_and_before_a_close() -> None:
    async def scene() -> tuple[list[bytes], list[bytes], bool]:
        wire = Wire()
        transport = HeadWithBody(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(HEAD)
        await asyncio.sleep(0)
        alone = list(wire.writes)
        transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
        transport.close()
        return alone, wire.writes, wire.is_closing()

    alone, writes, closed = asyncio.run(scene())
    assert alone == [HEAD]
    assert writes == [HEAD, b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"]
    assert closed


def test_a_head_held_for_a_connection_that_closed_meanwhile_is_dropped() -> None:
    async def scene() -> list[bytes]:
        wire = Wire()
        transport = HeadWithBody(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(HEAD)
        wire.closed = True  # the client went away
        await asyncio.sleep(0)
        return wire.writes

    assert asyncio.run(scene()) == []


def test_what_is_not_a_head_is_written_as_it_comes() -> None:
    async def scene() -> list[bytes]:
        wire = Wire()
        transport = HeadWithBody(wire, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"5\r\nhello\r\n")
        transport.write(b"HTTP/1.1 partial")
        return wire.writes

    assert asyncio.run(scene()) == [b"5\r\nhello\r\n", b"HTTP/1.1 partial"]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for part in (b"one ", b"two ", b"three"):
            await send({"type": "http.response.body", "body": part, "more_body": True})
            await asyncio.sleep(0.01)
        await send({"type": "http.response.body", "body": b""})
    elif path == "/empty":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    else:
        body = b'{"ok": true}'
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"12")]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})


@contextmanager
def served() -> Iterator[int]:
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=protocol(), log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                pytest.fail("the server did not start")
            threading.Event().wait(0.01)
        yield listening.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        listening.close()


def exchange(connection: socket.socket, raw: bytes, until: bytes) -> bytes:
    connection.sendall(raw)
    answer = b""
    while not answer.endswith(until):
        chunk = connection.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer


def test_answers_arrive_whole_on_a_kept_alive_connection() -> None:
    assert protocol() != "auto"
    with served() as port, socket.create_connection(("127.0.0.1", port)) as connection:
        short = exchange(connection, b"GET /short HTTP/1.1\r\nHost: x\r\n\r\n", b'{"ok": true}')
        assert short.startswith(b"HTTP/1.1 200 OK\r\n") and short.endswith(b'\r\n\r\n{"ok": true}')
        empty = exchange(connection, b"GET /empty HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n\r\n")
        assert empty.startswith(b"HTTP/1.1 204 No Content\r\n")
        streamed = exchange(connection, b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", b"0\r\n\r\n")
        assert b"transfer-encoding: chunked" in streamed
        assert streamed.endswith(b"4\r\none \r\n4\r\ntwo \r\n5\r\nthree\r\n0\r\n\r\n")
        again = exchange(connection, b"GET /short HTTP/1.1\r\nHost: x\r\n\r\n", b'{"ok": true}')
        assert again == short.replace(short.split(b"date: ")[1].split(b"\r\n")[0],
                                      again.split(b"date: ")[1].split(b"\r\n")[0])  # fmt: skip


def test_uvicorns_own_refusal_of_a_malformed_request_arrives_before_it_closes() -> None:
    with served() as port, socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
