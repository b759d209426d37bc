"""What `baton serve` puts on the wire: each response's head and body in one write.

uvicorn writes a response's head as soon as the application starts it and its body when the application sends it:
two writes, two system calls and two TCP segments for every answer, however small. For the agent API's short JSON
answers the second write costs about as much as the first, and it is paid while holding the interpreter. The
protocol here gives uvicorn a transport that holds a response's head back until the body follows, which the
application sends at once, and writes the two together. A head whose body does not come in the same turn of the
event loop (a streamed answer) is written at the loop's next turn, as it would have been on its own; so is
anything else uvicorn writes (an error it answers itself, before closing, goes out before the close).

The protocol also serves the hot routes itself, before any ASGI machinery: a request the app's `Lane` takes (the
agent API's commands and GitHub's deliveries, `web/plain.py`) is read by uvicorn's parser as any other, but instead
of a task running the application for it, the lane is given its path, headers and body and answers at once or later
(the future of a decision batch, or of the transaction storing a hook), and the answer is written whole: the status
line, uvicorn's default headers (date, server), the answer's own, and its body, as uvicorn would have written them.
A request the lane declines (it needs a thread, or is not valid as sent), or whose answer failed, goes to the
application as usual, which answers it as it answers every request (its failure raised there: `FAILED`). A request
is taken only where uvicorn would start the application for it at once, with nothing else in flight on the
connection; with the access log on, its line is written as uvicorn writes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol, cast

FAILED = "baton.failed"  # in a request's scope: the exception its lane's answer failed with, to raise again
_MOST_BODY = 65_536  # a body larger than this goes to the application, which reads it at its own pace


class Answer(Protocol):
    """An answer the lane gives: a Starlette `Response` with its body rendered."""

    status_code: int
    body: bytes | memoryview

    @property
    def raw_headers(self) -> list[tuple[bytes, bytes]]: ...


class Lane(Protocol):
    """The requests the protocol answers without the application (`protocol`'s description)."""

    def takes(self, method: str, path: str) -> bool:
        """Whether a request of `method` to `path` (without the app's root path) may be the lane's, from its
        request line alone."""

    def answer(
        self, method: str, path: str, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> Answer | asyncio.Future[Any] | None:
        """The answer to the whole request: now, later (a future), or None for the application to give."""


_HEAD = b"HTTP/1."
_HEAD_END = b"\r\n\r\n"


class HeadWithBody:
    """A transport that holds a response's head back until the next write, or the event loop's next turn."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held:
            held, self._held = self._held, b""
            self._transport.write(held + bytes(data))
        elif data[:7] == _HEAD and data[-4:] == _HEAD_END:  # a response's head, whole: its body follows
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        """Write the head held back, if any (nowhere once the connection is closing: its client went away)."""
        if self._held:
            held, self._held = self._held, b""
            if not self._transport.is_closing():
                self._transport.write(held)

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def __getattr__(self, name: str) -> Any:  # everything else is the transport's own
        return getattr(self._transport, name)


def protocol() -> type[asyncio.Protocol] | str:
    """uvicorn's HTTP/1.1 protocol (httptools) over `HeadWithBody`; "auto" where httptools is not installed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] installs httptools
        return "auto"

    from uvicorn.protocols.http.httptools_impl import STATUS_LINE
    from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

    class OneWrite(HttpToolsProtocol):
        _lane: Lane | None = None
        _held: Any = None  # the request cycle uvicorn made for a request the lane may take, its task not started
        _fresh = False  # while uvicorn reads a request's head (a request it starts later is not the lane's)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(cast(asyncio.Transport, HeadWithBody(transport, self.loop)))
            self._lane = getattr(getattr(self.config.app, "state", None), "lane", None)

        def on_headers_complete(self) -> None:
            self._fresh = True
            try:
                super().on_headers_complete()
            finally:
                self._fresh = False

        def _start_asgi_task(self, cycle: Any, app: Any) -> None:
            # From `on_headers_complete`, for a request started at once; one pipelined behind another is queued,
            # and started later from `on_response_complete`: not the lane's.
            if (self._fresh and self._lane is not None and self._held is None and app is self.app
                    and not cycle.waiting_for_100_continue
                    and self._lane.takes(cycle.scope["method"], route_path(cycle.scope))):  # fmt: skip
                self._held = cycle
                return
            super()._start_asgi_task(cycle, app)

        def on_body(self, body: bytes) -> None:
            held = self._held
            if held is not None and held is self.cycle and len(held.body) + len(body) > _MOST_BODY:
                self._release()
            super().on_body(body)

        def on_message_complete(self) -> None:
            super().on_message_complete()
            cycle: Any = self._held
            if cycle is None or cycle is not self.cycle or cycle.more_body:
                return
            try:
                answer = cast(Lane, self._lane).answer(cycle.scope["method"], route_path(cycle.scope),
                                                       cycle.scope["headers"], bytes(cycle.body))  # fmt: skip
            except Exception as error:  # raised again by the application, which answers as it answers a failure
                _fail(cycle, error)
                answer = None
            if answer is None:
                self._release()
            elif isinstance(answer, asyncio.Future):
                answer.add_done_callback(lambda done: self._answered(cycle, done))
            else:
                self._write(cycle, answer)

        def _release(self) -> None:
            """The request held goes to the application after all."""
            cycle, self._held = self._held, None
            super()._start_asgi_task(cycle, self.app)

        def _answered(self, cycle: Any, done: asyncio.Future[Any]) -> None:
            if done.cancelled():
                error: BaseException | None = asyncio.CancelledError()
            else:
                error = done.exception()
            if error is None:
                self._write(cycle, done.result())
            elif self._held is cycle and not cycle.disconnected:
                _fail(cycle, error)
                self._release()

        def _write(self, cycle: Any, answer: Answer) -> None:
            """The answer written whole, as uvicorn writes a response with a Content-Length, and the request done."""
            if self._held is cycle:
                self._held = None
            if cycle.disconnected or cycle.response_complete:
                return
            if self.access_log:  # the line uvicorn writes for each response, when it writes them
                scope = cycle.scope
                self.access_logger.info('%s - "%s %s HTTP/%s" %d', get_client_addr(scope), scope["method"],
                                        get_path_with_query_string(scope), scope["http_version"],
                                        answer.status_code)  # fmt: skip
            content = [STATUS_LINE[answer.status_code]]
            for name, value in (*self.server_state.default_headers, *answer.raw_headers):
                content += (name, b": ", value, b"\r\n")
            if not cycle.keep_alive:
                content.append(b"connection: close\r\n")
            content += (b"\r\n", bytes(answer.body))
            self.transport.write(b"".join(content))
            cycle.response_started = cycle.response_complete = True
            cycle.waiting_for_100_continue = False
            cycle.message_event.set()
            if not cycle.keep_alive:
                self.transport.close()
            cycle.on_response()

    return OneWrite


def _fail(cycle: Any, error: BaseException) -> None:
    """The request of `cycle` goes to the application with the failure to raise there."""
    scope: dict[str, Any] = cycle.scope
    scope[FAILED] = error


def route_path(scope: Any) -> str:
    """The path as the app's router matches it: without the app's `root_path`."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


__all__ = ["FAILED", "Answer", "HeadWithBody", "Lane", "protocol", "route_path"]
