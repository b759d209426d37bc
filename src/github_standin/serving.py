"""Serving an ASGI app on 127.0.0.1 from a thread: for `baton demo` and the end-to-end tests, where Baton
and the stand-in GitHub each run as a real HTTP server on a port of their own."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn


class Served:
    """`with Served(app) as served:` serves `app` at `served.url` until the block ends."""

    def __init__(self, app: Any, *, port: int = 0, log_level: str = "warning") -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", port))
        self.port = int(self._socket.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        # On stop, requests still running get a moment to finish, then are cancelled: a stand-in GitHub told to
        # hang (a fault with a long delay) must not hold up the end of a test or of `baton demo`.
        config = uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False, timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
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
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._socket.close()

    def __enter__(self) -> Served:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
