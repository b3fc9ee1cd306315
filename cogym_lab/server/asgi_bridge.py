"""Serving one request of a tornado handler with an ASGI application.

The MCP SDK's streamable HTTP server is an ASGI application; the Jupyter server is tornado.
:func:`serve_asgi` hands a request the handler has already authenticated, authorized and read
(its body, within the endpoint's limit) to an ASGI app: the app's ``receive`` gets that body,
then waits for the client to go away (``http.disconnect``), and the app's ``send`` becomes the
handler's status, headers and writes, each body chunk flushed at once, so a stream of
server-sent events reaches the client as it is produced.

The app may run on another loop than the handler (the hosted sessions' own,
:mod:`cogym_lab.server.sessions_loop`): given ``on_server``, every write to the handler is
handed back to the handler's loop, and the client leaving is told to the app's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, TypeVar

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

from cogym_lab.errors import CogymError

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]
T = TypeVar("T")
OnServer = Callable[[Coroutine[Any, Any, Any]], Awaitable[Any]]


class ClientGone(CogymError, OSError):
    """The client closed the connection while the app was still answering."""


class TornadoExchange:
    """One request and its answer, as an ASGI app sees them (see the module docstring).

    ``body`` is the request's whole body; ``scope_path`` the path the app is told (the
    handler's own URL path: the app serves that one endpoint whatever its route).
    ``on_server``: awaits a coroutine on the handler's loop, when the app runs on another."""

    def __init__(self, handler: RequestHandler, body: bytes,
                 on_server: OnServer | None = None) -> None:
        self.handler = handler
        self.body = body
        self.status: int | None = None
        self._body_sent = False
        self._gone = asyncio.Event()
        self._left = False  # the client went (read by the app's loop, set by the handler's)
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._on_server = on_server
        self._finished = False

    def scope(self) -> dict[str, Any]:
        request = self.handler.request
        host, _, port = (request.host or "").partition(":")
        client = request.remote_ip or ""
        return {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.removeprefix("HTTP/") or "1.1",
            "method": request.method or "GET", "scheme": request.protocol,
            "path": request.path, "raw_path": request.path.encode("latin-1", "replace"),
            "query_string": request.query.encode("latin-1", "replace"), "root_path": "",
            "headers": [(name.lower().encode("latin-1"), value.encode("latin-1", "replace"))
                        for name, value in request.headers.get_all()],
            "server": (host, int(port) if port.isdigit() else None),
            "client": (client, 0),
        }

    def client_gone(self) -> None:
        """The connection closed (tornado's ``on_connection_close``); from the handler's
        loop."""
        self._left = True
        loop = self._app_loop
        if loop is None or self._on_server is None:
            self._gone.set()
        else:
            with contextlib.suppress(RuntimeError):  # the app's loop closed already
                loop.call_soon_threadsafe(self._gone.set)

    async def receive(self) -> Message:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self._gone.wait()  # a stream listens for the client leaving: until it does
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self._on_server is None:
            await self._send(message)
        else:
            await self._on_server(self._send(message))

    async def _send(self, message: Message) -> None:
        """``send`` on the handler's loop."""
        handler = self.handler
        if self._finished:
            return
        kind = message.get("type")
        try:
            if kind == "http.response.start":
                self.status = int(message["status"])
                handler.set_status(self.status)
                handler.clear_header("Content-Type")  # the app says what it sends
                for name, value in message.get("headers") or []:
                    handler.add_header(_text(name), _text(value))
            elif kind == "http.response.body":
                chunk = message.get("body") or b""
                if chunk:
                    handler.write(bytes(chunk))
                if message.get("more_body"):
                    await handler.flush()
                else:
                    self._finished = True
                    await handler.finish()
        except StreamClosedError as error:
            self.client_gone()
            raise ClientGone("the client closed the connection") from error

    async def run(self, app: ASGIApp) -> None:
        """Serve the request with ``app``; the answer is finished when it returns."""
        self._app_loop = asyncio.get_running_loop()
        if self._left:  # gone before the app started
            self._gone.set()
        try:
            await app(self.scope(), self.receive, self.send)
        except ClientGone:
            pass
        finally:
            self._gone.set()  # anything still listening for the client lets go
            if self._on_server is None:
                self._close()
            else:
                await self._on_server(_run(self._close))

    def _close(self) -> None:
        """On the handler's loop: finish an answer the app left unfinished."""
        if not self._finished and not self.handler._finished:
            self._finished = True
            if self.status is None:  # the app answered nothing: say so, once
                self.handler.set_status(500)
            with contextlib.suppress(StreamClosedError):
                self.handler.finish()


async def _run(function: Callable[[], T]) -> T:
    return function()


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


__all__ = ["ASGIApp", "ClientGone", "TornadoExchange"]
