"""`/mcp`: the agent API's MCP tools (`baton.client.mcp`) over MCP's streamable HTTP transport, served by Baton itself
(docs/agents.md).

Every request carries the agent's own GitHub token (`Authorization: Bearer <token>`), checked as the agent API
checks it: the same 401, 429 and 503 answers, before MCP reads anything. A tool call then calls the agent API of
the server it arrived at, over the connection's own local address, with that token: its answer is the API's
by construction.

The MCP SDK is loaded by the first request to `/mcp`, not by serving: a Baton nobody asks over MCP never pays
for loading it (about a second of CPU). Its session manager then runs in a task of the app's lifespan, which
`run()` is, until the app stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from .agent_api import AgentApi, Refusal

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from baton.client.agent import AgentClient


def _local_url(scope: Scope) -> str:
    """The address the request arrived at, as seen from this host: where this same server answers."""
    server = scope.get("server")
    if not server or server[1] is None:
        raise RuntimeError("the request arrived on no TCP address")  # a Unix socket: there is no loopback URL
    host, port = server
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class McpEndpoint:
    """The ASGI app mounted at `/mcp`."""

    def __init__(self, agent_api: AgentApi) -> None:
        self.agent_api = agent_api
        self._wanted = asyncio.Event()  # a first request came
        self._ready = asyncio.Event()  # the session manager runs (or cannot)
        self._stopping = asyncio.Event()
        self._manager: StreamableHTTPSessionManager | None = None
        self._failure: BaseException | None = None

    async def run(self) -> None:
        """The app's lifespan task: once MCP is wanted, load it and run its session manager until `stop()`."""
        wanted = asyncio.ensure_future(self._wanted.wait())
        stopping = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait([wanted, stopping], return_when=asyncio.FIRST_COMPLETED)
        wanted.cancel()
        if self._stopping.is_set():
            stopping.cancel()
            return
        try:
            manager = self._build()
            async with manager.run():
                self._manager = manager
                self._ready.set()
                await stopping
        except BaseException as error:  # the requests waiting for it answer 503
            self._failure = error
            self._ready.set()
            if not isinstance(error, Exception):
                raise

    def stop(self) -> None:
        self._stopping.set()

    def _build(self) -> StreamableHTTPSessionManager:
        from mcp.server.transport_security import TransportSecuritySettings

        from baton.client.agent import AgentClient
        from baton.client.mcp import build_server

        @contextmanager
        def clients(ctx: Context) -> Iterator[AgentClient]:
            request: Any = ctx.request_context.request
            with AgentClient(_local_url(request.scope), request.headers["authorization"].partition(" ")[2]) as made:
                yield made

        server = build_server(clients)
        # Stateless: each request stands alone (no session to keep across processes behind a load balancer),
        # answered with one JSON body. The Host check guards servers without authentication against DNS
        # rebinding; every request here must carry the agent's token, which such a page does not have.
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        return server.session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self.agent_api.identify(Headers(scope=scope).get("authorization"))
        except Refusal as refused:
            await refused.response(scope, receive, send)
            return
        self._wanted.set()
        with suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), 30)
        manager = self._manager
        if manager is None:
            from fastapi.responses import JSONResponse

            said = f"MCP is not available here: {self._failure or 'it did not start in time'}."
            await JSONResponse({"error": "unavailable", "message": said}, 503)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)


__all__ = ["McpEndpoint"]
