"""The ``bus_factory`` fixture: every bus-level test runs on both transports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from cogym_lab.bus import Bus, MemoryBus
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
