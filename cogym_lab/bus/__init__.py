"""Transports that carry steps and notifications between nodes."""

from cogym_lab.bus.base import Bus, BusError, Message, SessionIdTaken, Subscription
from cogym_lab.bus.memory import MemoryBus

__all__ = ["Bus", "BusError", "MemoryBus", "Message", "SessionIdTaken", "Subscription",
           "connect_bus"]


def connect_bus(url: str | None = None) -> Bus:
    """Build a bus from a URL: ``None`` or ``memory://`` for in-process, ``redis://…`` for Redis."""
    if url is None or url in ("memory", "memory://"):
        return MemoryBus()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from cogym_lab.bus.redis import RedisBus

        return RedisBus(url)
    raise ValueError(f"Unknown bus URL {url!r}: use 'memory://' or 'redis://HOST:PORT/DB'.")
