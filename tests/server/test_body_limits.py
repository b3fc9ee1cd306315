"""Request bodies over a REST endpoint's limit, sent over a raw socket to a real in-process
Jupyter server (with the extension) whose tornado server has ``c.ServerApp``'s body settings:
every client gets a ``413`` whose JSON names the limit, never a connection that breaks under it.

A client that sends its whole body before reading the answer is what a plain HTTP library does;
a server that answered and closed while the bytes still arrived would have the connection reset
under the answer. Bodies are sent with a declared length and in chunks, just over the limit and
many times it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import tornado.httpserver
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.server.limits import DRAIN_FACTOR
from tests.support.jupyter_api import as_user, server_config

LIMIT = 64 * 1024  # max_request_bytes here
ACTION_LIMIT = 8 * 1024
SERVER_LIMIT = 64 * 1024 * 1024  # c.ServerApp.max_body_size: above every limit of ours


@pytest.fixture
def jp_server_config(tmp_path):
    config = server_config(tmp_path / "results", "alice", max_request_bytes=LIMIT,
                           max_action_bytes=ACTION_LIMIT)
    config["ServerApp"]["max_body_size"] = SERVER_LIMIT
    return config


@pytest.fixture
def http_server(jp_asyncio_loop, http_server_port, jp_web_app, jp_serverapp):
    """pytest-jupyter's server, made as ``ServerApp.init_httpserver`` makes it: with the
    body limits of ``c.ServerApp`` (its own fixture leaves tornado's defaults)."""

    async def start() -> tornado.httpserver.HTTPServer:
        server = tornado.httpserver.HTTPServer(
            jp_web_app, max_body_size=jp_serverapp.max_body_size,
            max_buffer_size=jp_serverapp.max_buffer_size)
        server.add_socket(http_server_port[0])
        return server

    server = jp_asyncio_loop.run_until_complete(start())
    yield server
    server.stop()
    jp_asyncio_loop.run_until_complete(server.close_all_connections())
    http_server_port[0].close()


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


async def post(port: int, path: str, body: bytes, *, chunked: bool = False,
               headers: dict[str, str] | None = None) -> Answer:
    """Send a whole POST (all of its body, then read), as a plain client does; the answer.
    A connection reset on the way fails the test."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in (as_user("alice") | (headers or {})).items()),
             "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    step = 64 * 1024
    try:
        if not headers or headers.get("Expect") != "100-continue":
            for start in range(0, len(body), step):
                piece = body[start:start + step]
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked
                             else piece)
                await writer.drain()
            if chunked:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        found = {k.strip().lower(): v.strip() for k, v in
                 (line.split(":", 1) for line in header_lines if ":" in line)}
        content = await reader.readexactly(int(found.get("content-length", "0")))
    finally:
        writer.close()
    return Answer(int(status_line.split()[1]), found, content)


@pytest.fixture
def sessions_url(jp_base_url, http_server) -> str:
    """The sessions endpoint, with the server listening."""
    return jp_base_url.rstrip("/") + "/cogym/api/sessions"


def _is_413_naming_the_limit(answer: Answer, limit: int, setting: str, size: int | None) -> None:
    assert answer.status == 413, (answer.status, answer.body[:300])
    refused = answer.json()
    assert refused["limit"] == limit and refused["setting"] == f"c.CogymLab.{setting}"
    assert f"at most {limit} (c.CogymLab.{setting})" in refused["message"]
    if size is not None:
        assert f"is {size} bytes" in refused["message"], refused


@pytest.mark.parametrize("size", [LIMIT + 1, 10 * LIMIT, DRAIN_FACTOR * LIMIT - 64])
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_over_the_limit_is_answered_413(run, http_server_port, sessions_url, size,
                                               chunked):
    port = http_server_port[1]

    async def body():
        sent = b'{"task": "todo", "note": "' + b"x" * size + b'"}'
        answer = await post(port, sessions_url, sent, chunked=chunked)
        _is_413_naming_the_limit(answer, LIMIT, "max_request_bytes", len(sent))
        # and the server goes on answering
        small = await post(port, sessions_url, b'{"task": "todo", "people": ["user"]}')
        assert small.status == 201, small.body

    run(body())


def test_an_action_over_its_own_limit_is_answered_413(run, http_server_port, sessions_url):
    port = http_server_port[1]

    async def body():
        created = await post(port, sessions_url, b'{"task": "todo", "people": ["user"]}')
        assert created.status == 201, created.body
        actions = f"{sessions_url}/{created.json()['session_id']}/actions"
        sent = json.dumps({"role": "user", "action": {"name": "ADD_ITEM", "args": {
            "text": "x" * (10 * ACTION_LIMIT)}}}).encode()
        for chunked in (False, True):
            answer = await post(port, actions, sent, chunked=chunked)
            _is_413_naming_the_limit(answer, ACTION_LIMIT, "max_action_bytes", len(sent))
        for path in ("resume", "interrupt"):  # endpoints that read no body refuse one too
            answer = await post(port, f"{sessions_url}/{created.json()['session_id']}/{path}",
                                b"x" * (2 * LIMIT))
            _is_413_naming_the_limit(answer, LIMIT, "max_request_bytes", 2 * LIMIT)

    run(body())


def test_a_body_far_over_the_limit_is_refused_from_its_headers(run, http_server_port,
                                                               sessions_url):
    """Past DRAIN_FACTOR times the limit, or when the client waits for ``100 Continue``, the
    answer comes before the body is sent: the client is told at once, and nothing is read."""
    port = http_server_port[1]

    async def body():
        declared = DRAIN_FACTOR * LIMIT + 1
        waiting = await post(port, sessions_url, b"x" * declared,
                             headers={"Expect": "100-continue"})
        _is_413_naming_the_limit(waiting, LIMIT, "max_request_bytes", declared)
        far = 4 * DRAIN_FACTOR * LIMIT
        head = await _answer_after(port, sessions_url, f"Content-Length: {far}", b"")
        assert head.startswith(b"HTTP/1.1 413 "), head  # from the headers alone

    run(body())


def test_a_chunked_body_that_goes_on_past_the_ceiling_is_answered_as_it_comes(
        run, http_server_port, sessions_url):
    port = http_server_port[1]

    async def body():
        piece = b"x" * (64 * 1024)
        chunks = b"".join(f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
                          for _ in range(DRAIN_FACTOR + 1))  # one chunk past the ceiling
        head = await _answer_after(port, sessions_url, "Transfer-Encoding: chunked", chunks)
        assert head.startswith(b"HTTP/1.1 413 "), head
        assert b"more than" in head  # the size so far: the rest was never sent

    run(body())


async def _answer_after(port: int, path: str, framing: str, sent: bytes) -> bytes:
    """The answer (its head and body) to a POST of which only ``sent`` of the body is sent."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  f"Authorization: {as_user('alice')['Authorization']}\r\n"
                  f"{framing}\r\n\r\n").encode() + sent)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 10)  # the server closes after answering
    finally:
        writer.close()
