"""The server's limits, and reading untrusted JSON within them.

Every body and WebSocket frame goes through :func:`read_json`: a size limit, strict UTF-8, no
``NaN``/``Infinity``, a nesting limit, and the text policy (lone surrogates become U+FFFD), so
nothing past this point meets a value the rest of the server cannot hold. Numbers that break a
limit are refused with the name of the setting that sets it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cogym_lab.core.text import clean
from cogym_lab.runtime.hosting import HostingError

KIB = 1024


@dataclass(frozen=True)
class ServerLimits:
    """The limits of one server; each is ``c.CogymLab.<name>`` (see docs/server.md)."""

    max_seats_per_session: int = 8
    max_sessions_per_user: int = 5
    max_sessions: int = 20
    max_request_bytes: int = 1024 * KIB
    max_action_bytes: int = 256 * KIB
    max_json_depth: int = 32
    ws_actions_per_second: float = 10.0
    ws_action_burst: int = 20

    @property
    def ws_frame_ceiling(self) -> int:
        """Frames above this close the socket (code 1009) before they are read; frames between
        ``max_action_bytes`` and this are read and refused with an error frame. The margin lets
        a person whose save is a little too big learn why, without reconnecting."""
        return 4 * self.max_action_bytes


class TokenBucket:
    """``rate`` events a second on average, up to ``burst`` at once."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self.clock = clock
        self.tokens = float(self.burst)
        self.updated = clock()

    def take(self) -> bool:
        """Spend one token if there is one."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


#: A REST body over its endpoint's limit is still read to its end (and dropped) when it is at
#: most this many times the limit, so that its client gets the ``413`` (see
#: :class:`~cogym_lab.server.handlers.CogymAPIHandler`); a larger one is refused at once.
DRAIN_FACTOR = 16


def drain_ceiling(limit: int, connection: Any = None) -> int:
    """The largest body an endpoint limited to ``limit`` bytes reads to its end: ``DRAIN_FACTOR``
    times the limit, and never more than the server's own ``max_body_size`` (tornado's limit,
    ``c.ServerApp.max_body_size``; read from ``connection``, an ``HTTP1Connection``, if given)."""
    ceiling = DRAIN_FACTOR * limit
    params = getattr(connection, "params", None)
    server_limit = getattr(params, "max_body_size", None)
    if server_limit is None:  # tornado's default then: its stream's buffer size
        server_limit = getattr(getattr(connection, "stream", None), "max_buffer_size", None)
    return min(ceiling, int(server_limit)) if server_limit else ceiling


def read_json(raw: bytes | str, *, max_bytes: int, max_depth: int, what: str = "The body",
              size_setting: str = "max_request_bytes") -> Any:
    """The JSON value in ``raw``, checked and cleaned. Raises ``HostingError``: 413 when it is
    too big, 400 when it is not UTF-8, not JSON, or nested deeper than ``max_depth``."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if len(data) > max_bytes:
        raise HostingError(f"{what} is {len(data)} bytes; this server takes at most {max_bytes} "
                           f"(c.CogymLab.{size_setting}).", status=413)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HostingError(f"{what} is not UTF-8 text (byte {error.start} is not).") from None
    try:
        value = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise HostingError(_too_deep(what, max_depth)) from None
    except ValueError as error:  # JSONDecodeError, and integers too long to read
        raise HostingError(f"{what} is not JSON: {error}") from None
    if depth_exceeds(value, max_depth):
        raise HostingError(_too_deep(what, max_depth))
    return clean(value)


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep (a loop, not
    recursion: the value may be as deep as the parser allowed)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _too_deep(what: str, limit: int) -> str:
    return (f"{what} nests objects and arrays too deeply: at most {limit} levels "
            "(c.CogymLab.max_json_depth).")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
