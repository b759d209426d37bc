"""Serving an ASGI app on 127.0.0.1 from a thread: for `baton demo` and the end-to-end tests, where Baton
and the stand-in GitHub each run as a real HTTP server on a port of their own."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import suppress
from typing import Any

import uvicorn


class _Server(uvicorn.Server):
    """uvicorn's server, told to stop by an event instead of noticing a flag at its next tenth of a second:
    a test opens and closes a pair of servers, and those tenths added up."""

    _loop: asyncio.AbstractEventLoop | None = None
    _stop: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 10) % 864000  # `on_tick` refreshes the Date header when this is a multiple of 10
            with suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), 1.0)

    def stop_soon(self) -> None:
        self.should_exit = True
        if self._loop is not None and self._stop is not None:
            with suppress(RuntimeError):  # the loop has ended already
                self._loop.call_soon_threadsafe(self._stop.set)


class Served:
    """`with Served(app) as served:` serves `app` at `served.url` until the block ends."""

    def __init__(self, app: Any, *, port: int = 0, log_level: str = "warning", http: Any = "auto") -> None:
        """`http`: uvicorn's HTTP protocol (its name, or a protocol class)."""
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port = int(self._socket.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        # On stop, requests still running get a moment to finish, then are cancelled: a stand-in GitHub told to
        # hang (a fault with a long delay) must not hold up the end of a test or of `baton demo`.
        config = uvicorn.Config(
            app, log_level=log_level, lifespan="on", access_log=False, timeout_graceful_shutdown=1, http=http
        )
        self._server = _Server(config)
        self._thread = threading.Thread(target=self._run, name=f"serve-{self.port}", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._socket]))

    def start(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the server on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.stop_soon()
        self._thread.join(timeout=15)
        self._socket.close()

    def __enter__(self) -> Served:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
