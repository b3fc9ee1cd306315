"""One HTTP client per event loop and endpoint, shared by every LM that calls it.

A batch of 1,000 sessions holds 2,000 LMs on one endpoint. A client of their own would cost
each of them an aiohttp session and a connection pool to build, and connections that no other
LM could reuse. A shared client keeps warm connections for everyone.

A client is an :class:`EndpointClient`: an ``aiohttp.ClientSession`` with the endpoint's URL and
headers worked out once, so a call only encodes its body and posts it.

Clients are counted: an LM holds its client from its first call until it is closed
(:meth:`LM.aclose`), and the last holder closes it. A client belongs to one event loop (its
connections do), so each loop has clients of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import ssl
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import aiohttp

#: Connections one shared client may open at once (aiohttp's own default is 100): the provider
#: limits (:mod:`cogym_lab.lm.limits`), not the connection pool, say how many requests wait.
MAX_CONNECTIONS = 10_000
#: Where requests go when no base URL is set: the OpenAI API.
OPENAI_API_URL = "https://api.openai.com/v1"
#: The environment variables the OpenAI API reads an organisation and project from (the
#: ``openai`` package sends them when set; so does this client).
ENV_ORGANIZATION = "OPENAI_ORG_ID"
ENV_PROJECT = "OPENAI_PROJECT_ID"
USER_AGENT = "cogym_lab"


@dataclass(frozen=True)
class ClientKey:
    """What a client is made from: LMs whose keys are equal share one."""

    base_url: str | None
    api_key: str = field(repr=False)  # a secret: never in a log line
    timeout: float | None = None


class EndpointClient:
    """An aiohttp session bound to one endpoint and key (made by :func:`hold`).

    ``timeout`` is kept for the record only: the retry loop of :class:`~cogym_lab.lm.base.LM`
    bounds each attempt as a whole with ``asyncio.timeout``, which also catches a server that
    trickles its reply (a per-read timeout would not).
    """

    def __init__(self, key: ClientKey) -> None:
        base = key.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_API_URL
        self.base_url = base.rstrip("/")
        self.timeout = key.timeout
        # Lower-case names, as HTTP/2 writes them and the openai package sent them.
        headers = {"authorization": f"Bearer {key.api_key}", "content-type": "application/json",
                   "accept": "application/json", "user-agent": USER_AGENT}
        for variable, header in ((ENV_ORGANIZATION, "openai-organization"),
                                 (ENV_PROJECT, "openai-project")):
            if value := os.environ.get(variable):
                headers[header] = value
        # The connector's own limit would queue requests the provider limits already let go.
        # TLS only where it is used: a loopback or LAN server on http:// needs no CA bundle.
        tls: ssl.SSLContext | bool = (_tls_context() if self.base_url.lower().startswith("https:")
                                      else True)
        connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=tls)
        self.session = aiohttp.ClientSession(
            connector=connector, headers=headers,
            # No timeout of aiohttp's own: the retry loop's bounds the whole attempt.
            timeout=aiohttp.ClientTimeout(total=None),
            # The JSON is read by the caller; aiohttp's own cookie handling is of no use here.
            cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=True)

    def url(self, path: str) -> str:
        """``path`` (``/chat/completions``) under the client's base URL."""
        return self.base_url + path

    async def post(self, path: str, data: bytes, **options: Any) -> aiohttp.ClientResponse:
        """Post ``data`` (an encoded JSON body) to ``path``; the response, headers read, body
        not yet. Redirects are not followed: an API endpoint that redirects is misconfigured,
        and the ``openai`` package did not follow them either."""
        return await self.session.post(self.url(path), data=data, allow_redirects=False,
                                       **options)

    async def close(self) -> None:
        await self.session.close()


@dataclass
class _Held:
    client: EndpointClient
    holders: int = 0


_lock = threading.Lock()  # an LM that moved to another loop lets go of its old one from there
_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ClientKey, _Held]] = (
    weakref.WeakKeyDictionary())


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every client: loading the CA bundle anew costs each client about
    20 ms of CPU."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def hold(key: ClientKey) -> EndpointClient:
    """The running loop's client for ``key``, made on first use; the caller now holds it."""
    loop = asyncio.get_running_loop()
    with _lock:
        table = _by_loop.setdefault(loop, {})
        held = table.get(key)
        if held is None:
            held = table[key] = _Held(EndpointClient(key))
        held.holders += 1
        return held.client


def _let_go(key: ClientKey, loop: asyncio.AbstractEventLoop) -> EndpointClient | None:
    """Count one holder less; the client, when that was its last holder."""
    with _lock:
        table = _by_loop.get(loop, {})
        held = table.get(key)
        if held is None:
            return None
        held.holders -= 1
        if held.holders > 0:
            return None
        del table[key]
        return held.client


async def release(key: ClientKey, loop: asyncio.AbstractEventLoop) -> None:
    """Let go of the client held on ``loop``; the last holder closes it (from that loop)."""
    client = _let_go(key, loop)
    if client is None:
        return
    with contextlib.suppress(RuntimeError):  # its event loop is closed: nothing to free
        if loop is asyncio.get_running_loop():
            await client.close()


def forget(key: ClientKey, loop: asyncio.AbstractEventLoop) -> None:
    """Let go of a client held on another loop than the running one, without closing it: its
    connections belong to that loop (which has usually ended)."""
    _let_go(key, loop)


async def close_this_loops_clients() -> int:
    """Close every client of the running loop, held or not, and forget them; how many there
    were. For the owner of a loop about to end (``Session.run_sync``): an LM made outside it
    cannot close its client once the loop is gone, and the client's connections die with it.
    An LM that still holds one opens a new client on its next call."""
    loop = asyncio.get_running_loop()
    with _lock:
        table = _by_loop.pop(loop, {})
    for held in table.values():
        await held.client.close()
    return len(table)


def clients_open() -> int:
    """How many shared clients are open on every loop (for tests and diagnostics)."""
    with _lock:
        return sum(len(table) for table in _by_loop.values())


__all__ = ["MAX_CONNECTIONS", "OPENAI_API_URL", "ClientKey", "EndpointClient", "clients_open",
           "close_this_loops_clients", "forget", "hold", "release"]
