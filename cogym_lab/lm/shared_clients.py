"""One ``openai`` client per event loop and endpoint, shared by every LM that calls it.

A batch of 1,000 sessions holds 2,000 LMs on one endpoint. A client of their own would cost
each of them an HTTP client, an aiohttp session and a connection pool to build, and connections
that no other LM could reuse. A shared client keeps warm connections for everyone.

Clients are counted: an LM holds its client from its first call until it is closed
(:meth:`LM.aclose`), and the last holder closes it. A client belongs to one event loop (its
connections do), so each loop has clients of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import threading
import weakref
from dataclasses import dataclass, field

import openai

from cogym_lab.lm.failures import mark_reply_started

#: Connections one shared client may open at once (aiohttp's own default is 100): the provider
#: limits (:mod:`cogym_lab.lm.limits`), not the connection pool, say how many requests wait.
MAX_CONNECTIONS = 10_000


@dataclass(frozen=True)
class ClientKey:
    """What a client is made from: LMs whose keys are equal share one."""

    base_url: str | None
    api_key: str = field(repr=False)  # a secret: never in a log line
    timeout: float | None = None


@dataclass
class _Held:
    client: openai.AsyncOpenAI
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


async def _reply_started(response: object) -> None:
    mark_reply_started()


def _new_client(key: ClientKey) -> openai.AsyncOpenAI:
    defaults = openai.DEFAULT_CONNECTION_LIMITS
    limits = type(defaults)(max_connections=MAX_CONNECTIONS,
                            max_keepalive_connections=defaults.max_keepalive_connections,
                            keepalive_expiry=defaults.keepalive_expiry)
    # aiohttp: the transport the openai package offers for many requests at once (its
    # ``aiohttp`` extra); about half the CPU time per request of its default httpx transport.
    # The response hook runs once the status line and headers have come, before the body is
    # read: a timeout after it is a trickle, not a hang (cogym_lab.lm.failures).
    http_client = openai.DefaultAioHttpClient(verify=_tls_context(), limits=limits,
                                              event_hooks={"response": [_reply_started]})
    return openai.AsyncOpenAI(base_url=key.base_url, api_key=key.api_key, timeout=key.timeout,
                              max_retries=0, http_client=http_client)


def hold(key: ClientKey) -> openai.AsyncOpenAI:
    """The running loop's client for ``key``, made on first use; the caller now holds it."""
    loop = asyncio.get_running_loop()
    with _lock:
        table = _by_loop.setdefault(loop, {})
        held = table.get(key)
        if held is None:
            held = table[key] = _Held(_new_client(key))
        held.holders += 1
        return held.client


def _let_go(key: ClientKey, loop: asyncio.AbstractEventLoop) -> openai.AsyncOpenAI | None:
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


def clients_open() -> int:
    """How many shared clients are open on every loop (for tests and diagnostics)."""
    with _lock:
        return sum(len(table) for table in _by_loop.values())


__all__ = ["MAX_CONNECTIONS", "ClientKey", "clients_open", "forget", "hold", "release"]
