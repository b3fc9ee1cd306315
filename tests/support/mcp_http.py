"""The real MCP client SDK on a seat a Jupyter server hosts, over streamable HTTP.

``http_seat(url, headers)`` opens ``mcp.client.streamable_http.streamable_http_client`` on the
seat's endpoint with an HTTP client that sends ``headers`` (the Jupyter token), initializes a
``ClientSession`` and yields a :class:`~tests.support.mcp_client.SeatClient`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.mcp_client import SeatClient


def seat_url(port: int, base_url: str, session_id: str, role: str) -> str:
    return f"http://127.0.0.1:{port}{base_url}cogym/api/sessions/{session_id}/mcp/{role}"


@asynccontextmanager
async def http_seat(url: str, headers: dict[str, str], results: Path | None = None, *,
                    terminate_on_close: bool = True) -> AsyncIterator[SeatClient]:
    """``terminate_on_close=False``: leave without the DELETE, as a client that dies does."""
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http, \
            streamable_http_client(url, http_client=http, terminate_on_close=terminate_on_close
                                   ) as (read_stream, write_stream), \
            ClientSession(read_stream, write_stream) as session:
        initialized = await session.initialize()
        yield SeatClient(session, results or Path("."), initialized)


__all__ = ["http_seat", "seat_url"]
