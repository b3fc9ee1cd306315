"""Idle cost of many subscriptions on one Redis bus: server connections and process CPU.

Run from the repository root::

    python benchmarks/bus_idle.py [--sessions 200] [--idle 10]

A process hosting many sessions holds, per session, a subscription to its step channel (the env
node), to each member's notification channel and to its status channel (a panel): with two
members, four per session. This script makes that many subscriptions on one ``RedisBus``, as one
hosting process would, lets them sit idle for ``--idle`` seconds, and prints:

* the connections open in ``redis-server`` (``INFO clients``, less the probe's own): the bus
  alone, with the subscriptions, and after they closed;
* the CPU seconds this process spent while idle (``time.process_time``), and per second;
* how long making the subscriptions took.

It starts its own ``redis-server`` (no persistence) on a free loopback port. It only uses the
bus API, so it can measure another checkout of the package: put that checkout first on
``PYTHONPATH``. It prints figures and checks nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from redis.asyncio import Redis

from cogym_lab.bus.redis import RedisBus
from cogym_lab.testing import RedisServer

CHANNELS_PER_SESSION = ("step", "status", "agent/obs", "user/obs")


async def connections(url: str) -> int:
    """Clients connected to the server, not counting this probe's own connection."""
    probe = Redis.from_url(url)
    try:
        return int((await probe.info("clients"))["connected_clients"]) - 1
    finally:
        await probe.aclose()


async def measure(url: str, sessions: int, idle: float) -> dict[str, float]:
    async with RedisBus(url) as bus:
        await bus.publish("warm-up", {"n": 0})  # every pooled connection of the bus is open
        base = await connections(url)
        started = time.perf_counter()
        subscriptions = [await bus.subscribe(f"idle-{s:04d}/{channel}")
                         for s in range(sessions) for channel in CHANNELS_PER_SESSION]
        subscribe_s = time.perf_counter() - started
        with_subs = await connections(url)
        cpu_before, wall_before = time.process_time(), time.perf_counter()
        await asyncio.sleep(idle)
        cpu = time.process_time() - cpu_before
        wall = time.perf_counter() - wall_before
        for subscription in subscriptions:
            await subscription.close()
        await asyncio.sleep(0.2)
        after_close = await connections(url)
    return {"subscriptions": len(subscriptions), "base": base, "with": with_subs,
            "closed": after_close, "cpu": cpu, "wall": wall, "subscribe": subscribe_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    with RedisServer() as server:
        figures = asyncio.run(measure(server.url, args.sessions, args.idle))
    print(f"{args.sessions} sessions x {len(CHANNELS_PER_SESSION)} channels = "
          f"{figures['subscriptions']:.0f} subscriptions on one RedisBus, idle {args.idle:g} s")
    print(f"  redis connections: bus alone {figures['base']:.0f}, with the subscriptions "
          f"{figures['with']:.0f}, after closing them {figures['closed']:.0f}")
    print(f"  process CPU while idle: {figures['cpu']:.2f} s in {figures['wall']:.1f} s "
          f"({100 * figures['cpu'] / figures['wall']:.1f} % of a core)")
    print(f"  making the subscriptions took {figures['subscribe']:.2f} s")


if __name__ == "__main__":
    main()
