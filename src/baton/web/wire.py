"""What `baton serve` puts on the wire: each response's head and body in one write.

uvicorn writes a response's head as soon as the application starts it and its body when the application sends it:
two writes, two system calls and two TCP segments for every answer, however small. For the agent API's short JSON
answers the second write costs about as much as the first, and it is paid while holding the interpreter. The
protocol here gives uvicorn a transport that holds a response's head back until the body follows, which the
application sends at once, and writes the two together. A head whose body does not come in the same turn of the
event loop (a streamed answer) is written at the loop's next turn, as it would have been on its own; so is
anything else uvicorn writes (an error it answers itself, before closing, goes out before the close).
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

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

    class OneWrite(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(cast(asyncio.Transport, HeadWithBody(transport, self.loop)))

    return OneWrite


__all__ = ["HeadWithBody", "protocol"]
