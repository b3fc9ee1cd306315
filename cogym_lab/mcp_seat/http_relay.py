"""``cogym-lab mcp --session ID --url URL``: a local MCP server (stdio) that relays to the
outside seat a Jupyter server serves over streamable HTTP.

An MCP client that only launches local servers (stdio) joins a hosted session through this
relay: :func:`find_seat` asks the server's REST API which session and seat it is (with clear
errors for a wrong URL, a refused token, an unknown or ended session, a seat that is not the
caller's), then :func:`relay_stdio` connects to ``/cogym/api/sessions/<id>/mcp/<role>`` with the
SDK's streamable HTTP client and serves the same tools, resources and instructions on stdio,
forwarding progress. The token goes into the HTTP header only: every text the local client
reads comes from the remote seat's answers or from this module's messages, which never hold it
(and a text that somehow does has it blanked, see :func:`scrub`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cogym_lab.errors import CogymError

log = logging.getLogger(__name__)

#: Seconds to connect and to send; a response stream (a long wait_for_news) reads for longer.
CONNECT_SECONDS = 30.0
#: Seconds a response may go without a byte (the server sends keep-alive pings every 15 s).
READ_SECONDS = 660.0


class RelayError(CogymError):
    """The relay cannot reach the seat; the message says why in plain words."""


@dataclass
class SeatAddress:
    """Where the seat is served, and as whom."""

    base_url: str  # the Jupyter server's URL, ending in '/'
    session_id: str
    role: str
    token: str | None

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}cogym/api/sessions/{self.session_id}/mcp/{self.role}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"} if self.token else {}


def scrub(text: str, token: str | None) -> str:
    """``text`` with the token blanked, should it ever hold it."""
    return text.replace(token, "[token]") if token else text


def base_url(url: str) -> str:
    """The server's URL as the relay uses it; ``RelayError`` for one it cannot use."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RelayError(f"--url must be the Jupyter server's http(s) address, e.g. "
                         f"http://127.0.0.1:8888/; got {url[:200]!r}.")
    if parts.query or parts.fragment:
        raise RelayError("--url must be the server's address alone: give the token in "
                         "JUPYTER_TOKEN (or --token-file), never in the URL.")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}/"


async def find_seat(url: str, session_id: str, role: str | None, token: str | None
                    ) -> SeatAddress:
    """The seat to relay to, checked with the server's REST API; ``RelayError`` otherwise."""
    import httpx2

    base = base_url(url)
    headers = {"Authorization": f"token {token}"} if token else {}
    where = f"{base}cogym/api/sessions/{session_id}"
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=CONNECT_SECONDS) as http:
            response = await http.get(where)
            if response.status_code == 404:
                status = await http.get(f"{base}cogym/api/status")
                if status.status_code == 404:
                    raise RelayError(f"{base} has no cogym_lab API: is it the Jupyter server "
                                     "that hosts the session, with the cogym_lab extension "
                                     "enabled (and the Hub's /user/NAME/ path, behind a "
                                     "JupyterHub)?")
    except httpx2.HTTPError as error:
        raise RelayError(f"Cannot reach {base} ({type(error).__name__}): is the Jupyter server "
                         "running there?") from None
    code = response.status_code
    if code in (401, 403):
        given = "the token in JUPYTER_TOKEN (or --token-file)" if token else "no token"
        raise RelayError(f"The Jupyter server at {base} refused {given} ({code}): set "
                         "JUPYTER_TOKEN to the server's token (or your JupyterHub API "
                         "token).")
    if code == 404:
        raise RelayError(f"The server at {base} has no session {session_id!r} of yours.")
    if code == 409:
        raise RelayError(f"Session {session_id!r} is from an earlier run of the server: its "
                         "creator resumes it first.")
    if code != 200:
        raise RelayError(f"The server at {base} answered {code} for session {session_id!r}.")
    snapshot = response.json()
    if snapshot.get("status") != "running":
        end = f" ({snapshot.get('end_reason')})" if snapshot.get("end_reason") else ""
        raise RelayError(f"Session {session_id!r} has ended{end}.")
    mine = [str(seat) for seat in snapshot.get("outside_seats") or []]
    outside = [str(seat) for seat in snapshot.get("outside") or []]
    if role is None:
        if len(mine) != 1:
            raise RelayError(f"Session {session_id!r} has {len(mine) or 'no'} outside seats of "
                             f"yours ({', '.join(mine) or 'none'}): "
                             + ("pick one with --role." if mine else
                                "its creator names seats for outside agents in 'outside'."))
        role = mine[0]
    elif role not in mine:
        raise RelayError(f"Seat {role!r} of session {session_id!r} is not yours." if role in
                         outside else f"{role!r} is not an outside seat of session "
                         f"{session_id!r} (yours: {', '.join(mine) or 'none'}).")
    return SeatAddress(base, session_id, role, token)


async def relay_stdio(address: SeatAddress) -> None:
    """Serve the remote seat on this process's stdin and stdout until the client goes away.
    Raises ``RelayError`` when the seat's endpoint refuses the connection."""
    import httpx2
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server import Server, ServerRequestContext
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError

    from cogym_lab._version import __version__

    token = address.token
    timeout = httpx2.Timeout(CONNECT_SECONDS, read=READ_SECONDS)
    async with httpx2.AsyncClient(headers=address.headers(), timeout=timeout) as http, \
            streamable_http_client(address.mcp_url, http_client=http) as (read, write), \
            ClientSession(read, write) as remote:
        try:
            await remote.initialize()
        except MCPError as error:
            raise RelayError(scrub(f"The seat's endpoint refused the connection: "
                                   f"{error.error.message}", token)) from None

        def refused(error: MCPError) -> MCPError:
            return MCPError(error.error.code, scrub(error.error.message, token))

        async def list_tools(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListToolsResult:
            try:
                return await remote.list_tools()
            except MCPError as error:
                raise refused(error) from None

        async def call_tool(ctx: ServerRequestContext[Any],
                            params: types.CallToolRequestParams) -> types.CallToolResult:
            async def progress(progress: float, total: float | None,
                               message: str | None) -> None:
                await ctx.session.report_progress(progress, total, message)

            try:
                result = await remote.call_tool(params.name, params.arguments,
                                                progress_callback=progress)
            except MCPError as error:
                return _tool_error(scrub(f"The session's server refused the call: "
                                         f"{error.error.message}", token))
            except Exception as error:  # noqa: BLE001 - the connection went: say so, stay up
                log.warning("relaying %s failed: %r", params.name, error)
                return _tool_error("The Jupyter server did not answer this call (the "
                                   "connection to it failed); observe to see if it ran.")
            return _scrubbed(result, token)

        async def list_resources(ctx: ServerRequestContext[Any],
                                 params: types.PaginatedRequestParams | None
                                 ) -> types.ListResourcesResult:
            try:
                return await remote.list_resources()
            except MCPError as error:
                raise refused(error) from None

        async def read_resource(ctx: ServerRequestContext[Any],
                                params: types.ReadResourceRequestParams
                                ) -> types.ReadResourceResult:
            try:
                return await remote.read_resource(str(params.uri))
            except MCPError as error:
                raise refused(error) from None

        server: Server[Any] = Server(
            "cogym-lab-seat", version=__version__, title="Co-Gym seat",
            instructions=remote.instructions, on_list_tools=list_tools,
            on_call_tool=call_tool, on_list_resources=list_resources,
            on_read_resource=read_resource)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def _tool_error(text: str) -> Any:
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


def _scrubbed(result: Any, token: str | None) -> Any:
    """A remote answer as it goes on (its texts without the token, should one hold it)."""
    if not token or token not in json.dumps(result.model_dump(mode="json"), ensure_ascii=False):
        return result
    dumped = scrub(json.dumps(result.model_dump(mode="json"), ensure_ascii=False), token)
    return type(result).model_validate(json.loads(dumped))


__all__ = ["RelayError", "SeatAddress", "base_url", "find_seat", "relay_stdio", "scrub"]
