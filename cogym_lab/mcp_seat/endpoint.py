"""A seat's MCP server on a loopback HTTP port, for an outside agent this process launches.

An agent the session starts itself (an ACP agent, a program that is an MCP client) reaches its
seat over MCP's streamable HTTP transport at :attr:`SeatEndpoint.url`. Only this machine can
connect (the port is bound to 127.0.0.1), and only with the endpoint's own bearer secret
(:attr:`SeatEndpoint.headers`), made fresh for each endpoint: another local program that finds
the port still cannot act in the seat. The secret opens this one seat and nothing else, so
handing it to the agent gives away no LM key and no Jupyter token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import socket
from types import TracebackType
from typing import Any

from cogym_lab.mcp_seat.seat import Seat
from cogym_lab.mcp_seat.server import SDK_MISSING, SeatServer

log = logging.getLogger(__name__)

#: The path the seat's MCP endpoint answers on.
MCP_PATH = "/mcp"
#: Seconds ``__aexit__`` waits for the HTTP server to stop before it gives up on it.
STOP_WAIT = 5.0


class SeatEndpoint:
    """``seat``'s MCP server on ``http://127.0.0.1:PORT/mcp`` while the context is open.

    ``server_options`` go to :class:`SeatServer` (timeouts, ``progress_seconds``)."""

    def __init__(self, seat: Seat, **server_options: Any) -> None:
        if SDK_MISSING is not None:
            raise ImportError(SDK_MISSING)
        self.seat_server = SeatServer(seat, **server_options)
        self.secret = secrets.token_urlsafe(32)
        self.port: int | None = None
        self._serving: asyncio.Task[None] | None = None
        self._uvicorn: Any = None
        self._ready = asyncio.Event()

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("The endpoint is not open: use it as "
                               "`async with SeatEndpoint(...)`.")
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"

    @property
    def headers(self) -> dict[str, str]:
        """What the client sends with every request (the only way in)."""
        return {"Authorization": f"Bearer {self.secret}"}

    async def __aenter__(self) -> SeatEndpoint:
        import uvicorn  # a dependency of the `mcp` extra

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]
        # asgi3 said, not guessed: uvicorn takes a bound method for an ASGI2 app
        config = uvicorn.Config(self._asgi, log_level="warning", lifespan="on",
                                access_log=False, interface="asgi3")
        self._uvicorn = uvicorn.Server(config)
        self._serving = asyncio.create_task(self._serve(listener))
        started = asyncio.create_task(self._ready.wait())
        done, _ = await asyncio.wait({started, self._serving}, return_when=asyncio.FIRST_COMPLETED)
        if started not in done:
            started.cancel()
            self._serving.result()  # raises why the server could not start
            raise RuntimeError("The seat's MCP endpoint stopped before it started.")
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        server, serving = self._uvicorn, self._serving
        if server is not None:
            server.should_exit = True
        if serving is not None:
            done, _ = await asyncio.wait({serving}, timeout=STOP_WAIT)
            if not done:
                serving.cancel()
                with contextlib.suppress(BaseException):
                    await serving

    async def _serve(self, listener: socket.socket) -> None:
        try:
            await self._uvicorn.serve(sockets=[listener])
        finally:
            listener.close()

    # -- the ASGI app ---------------------------------------------------------------------------

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope.get("path") != MCP_PATH:
            await _plain(send, 404, "Not found: the seat's MCP endpoint is at /mcp.")
            return
        if not self._authorized(scope):
            await _plain(send, 401, "This seat's endpoint needs its bearer secret.")
            return
        await self._manager.handle_request(scope, receive, send)

    def _authorized(self, scope: dict[str, Any]) -> bool:
        expected = f"Bearer {self.secret}".encode()
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return hmac.compare_digest(given, expected)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        """Runs the SDK's session manager for as long as the HTTP server serves."""
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self._manager = StreamableHTTPSessionManager(
            app=self.seat_server.server, session_idle_timeout=None)
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with self._manager.run():
            await send({"type": "lifespan.startup.complete"})
            self._ready.set()
            message = await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


__all__ = ["MCP_PATH", "SeatEndpoint"]
