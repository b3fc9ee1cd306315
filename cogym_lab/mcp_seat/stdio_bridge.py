"""A seat's loopback MCP endpoint offered over stdio, for an agent that speaks MCP over stdio only.

An ACP agent that does not advertise MCP over HTTP is given this command as its MCP server::

    python -m cogym_lab.mcp_seat.stdio_bridge http://127.0.0.1:PORT/mcp

with the endpoint's bearer secret in the ``COGYM_SEAT_SECRET`` environment variable, never on
the command line (where any local user could read it in the process list). The bridge passes
every MCP message through unchanged, both ways, between its stdin/stdout and the seat's
streamable HTTP endpoint: the agent meets the seat's own server (its tools, progress and
cancellations), not a copy of it. It needs the ``mcp`` extra, as the endpoint does.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

#: The environment variable that carries the endpoint's bearer secret.
SECRET_ENV = "COGYM_SEAT_SECRET"
#: Seconds an HTTP read may stay silent: wait_for_news sends progress far more often than this.
READ_TIMEOUT = 900.0


async def _pump(source: Any, sink: Any) -> None:
    """Forward every message from ``source`` to ``sink`` until ``source`` ends."""
    async with sink:
        async for message in source:
            if isinstance(message, Exception):  # a line that was not JSON-RPC: nothing to pass
                print(f"stdio bridge: dropped an unreadable message: {message}", file=sys.stderr)
                continue
            await sink.send(message)


async def bridge(url: str, secret: str) -> None:
    """Serve this process's stdio as the MCP endpoint at ``url`` until either side closes."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    headers = {"Authorization": f"Bearer {secret}"}
    timeout = httpx2.Timeout(30.0, read=READ_TIMEOUT)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http, \
            streamable_http_client(url, http_client=http) as (from_seat, to_seat), \
            stdio_server() as (from_agent, to_agent), \
            anyio.create_task_group() as group:
        async def agent_to_seat() -> None:
            await _pump(from_agent, to_seat)
            group.cancel_scope.cancel()  # the agent closed its side: nothing more to do

        group.start_soon(agent_to_seat)
        group.start_soon(_pump, from_seat, to_agent)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    secret = os.environ.get(SECRET_ENV, "")
    if len(args) != 1 or not args[0].startswith("http://127.0.0.1:") or not secret:
        print(f"usage: python -m cogym_lab.mcp_seat.stdio_bridge http://127.0.0.1:PORT/mcp, with "
              f"the endpoint's secret in {SECRET_ENV}", file=sys.stderr)
        return 2
    import anyio

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(bridge, args[0], secret)
    return 0


if __name__ == "__main__":
    sys.exit(main())
