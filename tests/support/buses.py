"""The ``bus_factory`` fixture: every bus-level test runs on both transports; and the reads
those tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from cogym_lab.bus import Bus, MemoryBus, Message, Subscription
from cogym_lab.bus.redis import RedisBus
from tests.support.redis_server import RedisServer

BusFactory = Callable[[], Awaitable[Bus]]


@pytest.fixture(params=["memory", "redis"])
async def bus_factory(request: pytest.FixtureRequest) -> AsyncIterator[BusFactory]:
    """``await make()`` gives a connected bus. Each call is a separate bus object on the same
    transport (as separate processes would have); for memory they are one shared ``MemoryBus``."""
    buses: list[Bus] = []
    if request.param == "memory":
        shared = MemoryBus()
        buses.append(shared)

        async def make() -> Bus:
            return shared

    else:
        server: RedisServer = request.getfixturevalue("redis_server")

        async def make() -> Bus:
            bus = RedisBus(server.url, publish_timeout=15)
            await bus.connect()
            buses.append(bus)
            return bus

    yield make
    for bus in buses:
        await bus.close()


async def receive(subscription: Subscription, count: int, timeout: float = 10.0) -> list[Message]:
    """The next ``count`` messages; fails if one takes longer than ``timeout`` seconds."""
    received: list[Message] = []
    for _ in range(count):
        message = await subscription.get(timeout=timeout)
        assert message is not None, f"got {len(received)} of {count} messages, then nothing"
        received.append(message)
    return received


async def history_of(bus: Bus, channel: str, quiet: float = 0.1) -> list[Message]:
    """What a subscriber from the beginning gets of ``channel`` right now: every message until
    none comes for ``quiet`` seconds."""
    probe = await bus.subscribe(channel, from_beginning=True)
    history = []
    while (message := await probe.get(timeout=quiet)) is not None:
        history.append(message)
    await probe.close()
    return history
