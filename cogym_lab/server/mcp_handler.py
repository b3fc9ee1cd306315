"""``/cogym/api/sessions/<id>/mcp/<role>``: an outside seat of a hosted session over MCP's
streamable HTTP transport.

The request is authenticated and authorized as every other handler's (the server's token, or
the Hub's cookie or ``Authorization: token``), its body read within ``max_action_bytes`` (a
tool call is an action), and the seat checked through the :class:`Gate`: only who holds the
outside seat reaches it (the session's creator, unless the seat was given to someone else).
Person seats are not served here: a person's seat is a panel's, and an MCP client takes a seat
the create request named in ``outside``. The request is then answered by the seat's MCP
endpoint (:mod:`cogym_lab.mcp_seat.hosted_seats`), through :mod:`cogym_lab.server.asgi_bridge`.

Refusals are JSON-RPC errors (``{"jsonrpc": "2.0", "id": null, "error": {...}}``) with the HTTP
status, so that an MCP client shows their message: 404 no such session (or not the caller's),
403 a seat of someone else's, 400 no outside seat, 409 the session has ended or is not hosted
by this server now, 413 a body over the limit, 501 the server lacks the ``mcp`` extra.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from cogym_lab.mcp_seat.hosted_seats import HostedSeats
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.server.asgi_bridge import TornadoExchange
from cogym_lab.server.handlers import CogymAPIHandler

#: JSON-RPC's code for a request the server will not serve.
INVALID_REQUEST = -32600
#: What a server without the SDK answers.
NO_SDK = ("This Jupyter server cannot serve seats over MCP: install the `mcp` extra where it "
          "runs (pip install 'cogym_lab[mcp]') and restart it.")


class SeatMcpHandler(CogymAPIHandler):
    """GET (the client's notification stream), POST (its messages), DELETE (its goodbye) on
    one outside seat; see the module docstring."""

    body_limit = "max_action_bytes"

    def initialize(self, *args: Any, **kwargs: Any) -> None:
        super().initialize(*args, **kwargs)
        self._exchange: TornadoExchange | None = None

    @property
    def seats(self) -> HostedSeats | None:
        return self.settings.get("cogym_lab_mcp_seats")

    @web.authenticated
    @authorized
    async def get(self, session_id: str, role: str) -> None:
        await self._serve(session_id, role)

    @web.authenticated
    @authorized
    async def post(self, session_id: str, role: str) -> None:
        await self._serve(session_id, role)

    @web.authenticated
    @authorized
    async def delete(self, session_id: str, role: str) -> None:
        await self._serve(session_id, role)

    async def _serve(self, session_id: str, role: str) -> None:
        try:
            seats = self.seats
            endpoint = await self.loops.run(self._endpoint(seats, session_id, role))
        except HostingError as error:
            return self.error(error.status, error.message)
        # The endpoint and the seat's bus live on the sessions' loop; the answer's bytes are
        # written on the server's (asgi_bridge hands them back).
        self._exchange = TornadoExchange(self, b"".join(self._chunks),
                                         on_server=self.loops.to_server)
        await self.loops.run(endpoint.serve(self._exchange))

    async def _endpoint(self, seats: HostedSeats | None, session_id: str, role: str) -> Any:
        """On the sessions' loop: the seat's MCP endpoint, once the caller may reach it."""
        self.gate.outside_seat(session_id, role)
        hosted = self.host.get(session_id)  # 409 for a session of an earlier server
        self.refuse_oversized()
        if seats is None:
            raise HostingError(NO_SDK, status=501)
        # A seat served already goes on answering for a while after the end (its client
        # learns of the end from its tools); a new one is made for a running session only.
        endpoint = seats.serving(session_id, role)
        if endpoint is None:
            if hosted.status != "running" or hosted.bus is None:
                end = f" ({hosted.end_reason})" if hosted.end_reason else ""
                raise HostingError(f"Session {session_id!r} has ended{end}.", status=409)
            endpoint = await seats.endpoint(hosted, role)
        return endpoint

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self._exchange is not None:
            self._exchange.client_gone()

    def error(self, status: int, message: str) -> None:
        """A refusal as a JSON-RPC error, so that an MCP client shows its message."""
        if self._finished:
            return
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": INVALID_REQUEST, "message": message, "data": {"status": status}}}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """tornado's own refusals (403 for a bad token) in the same form."""
        reason = self._reason or "Error"
        self.error(status_code, f"{status_code} {reason}: the Jupyter server refused this "
                                "request (is the token right?).")


__all__ = ["SeatMcpHandler"]
