"""A seat's MCP server on a loopback port (``SeatEndpoint``): the SDK's streamable HTTP client
reaches it with the endpoint's bearer secret and acts in the seat; without the secret, or with
another, it is answered 401 and nothing reaches the seat; the port listens on 127.0.0.1 only."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cogym_lab.bus import MemoryBus
from cogym_lab.mcp_seat.endpoint import HOST, MCP_PATH, SeatEndpoint
from cogym_lab.mcp_seat.local import LocalSeatSession
from cogym_lab.sessions import SessionSpec
from tests.support.mcp_client import text_of


@asynccontextmanager
async def _endpoint(tmp_path: Path) -> AsyncIterator[tuple[LocalSeatSession, SeatEndpoint]]:
    local = LocalSeatSession(SessionSpec(task="todo", limits={"idle_seconds": 30}), "agent",
                             bus=MemoryBus(), results_parent=tmp_path)
    seat = await local.start()
    try:
        async with SeatEndpoint(seat) as endpoint:
            yield local, endpoint
    finally:
        await local.finish()


@asynccontextmanager
async def _client(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.mark.timeout(60)
async def test_the_sdk_client_acts_in_the_seat_with_the_secret(tmp_path) -> None:
    async with _endpoint(tmp_path) as (local, endpoint), \
            _client(endpoint.url, endpoint.headers) as session:
        assert endpoint.url == f"http://{HOST}:{endpoint.port}{MCP_PATH}"
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {"ADD_ITEM", "observe", "wait_for_news", "finish"} <= tools
        added = await session.call_tool("ADD_ITEM", {"text": "tent"})
        assert not added.is_error, text_of(added)
        looked = await session.call_tool("observe", {})
        assert "tent" in text_of(looked)
        assert local.session.env.outcome() == ["tent"]


@pytest.mark.timeout(60)
async def test_without_the_secret_the_endpoint_answers_401(tmp_path) -> None:
    async with _endpoint(tmp_path) as (local, endpoint):
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as http:
            for headers in ({}, {"Authorization": "Bearer not-the-secret"},
                            {"Authorization": endpoint.secret}):  # no scheme: refused too
                answer = await http.post(endpoint.url, json=initialize,
                                         headers={**accept, **headers})
                assert answer.status_code == 401, headers
            other_path = await http.post(endpoint.url.removesuffix(MCP_PATH) + "/other",
                                         json=initialize, headers={**accept, **endpoint.headers})
            assert other_path.status_code == 404
            let_in = await http.post(endpoint.url, json=initialize,
                                     headers={**accept, **endpoint.headers})
            assert let_in.status_code == 200
        with pytest.raises(Exception):  # noqa: B017 - the SDK client fails on the 401
            async with _client(endpoint.url, {"Authorization": "Bearer wrong"}) as session:
                await session.list_tools()
        assert local.seat.stats["actions_sent"] == 0


def _other_local_address() -> str | None:
    """An address of this machine other than loopback, when it has one."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent, a route is chosen
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


@pytest.mark.timeout(60)
async def test_the_port_listens_on_loopback_only(tmp_path) -> None:
    async with _endpoint(tmp_path) as (_, endpoint):
        bound = [sock.getsockname() for server in endpoint._uvicorn.servers
                 for sock in server.sockets]
        assert bound == [(HOST, endpoint.port)]
        other = _other_local_address()
        if other is not None:  # the same port on the machine's own address: nobody listens
            with pytest.raises(OSError):
                socket.create_connection((other, endpoint.port), timeout=2).close()
    with pytest.raises(OSError):  # closed with the context
        socket.create_connection((HOST, endpoint.port), timeout=2).close()
