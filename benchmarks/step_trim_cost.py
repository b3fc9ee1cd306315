"""What a reader's ``consumed`` costs on Redis: a step's hop with and without it.

Run from the repository root::

    python benchmarks/step_trim_cost.py [--steps 2000] [--sizes 200 100000] [--rounds 3]

It prints figures and checks nothing. The script starts its own ``redis-server`` on a free
loopback port. A publisher bus sends ``--steps`` messages of ``--sizes`` bytes on a step channel,
one at a time, each once the reader (a second bus, subscribed from the beginning, as the env
node is) got the one before; with ``consumed`` the reader says so of each message it got, and
the bus trims the stream in batches. Printed per size: the median time of a hop over
``--rounds`` rounds (alternating, so the machine's load falls on both alike), without and with
``consumed``, the trims sent (round trips) and the stream's length at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))


async def one_round(url: str, steps: int, size: int, consume: bool) -> tuple[float, int, int]:
    """Seconds per hop, trims sent, entries left in the stream."""
    import redis.asyncio as redis

    from cogym_lab.bus.redis import KEY_PREFIX, RedisBus

    channel = f"cost-{time.time_ns()}/step"
    publisher, reader_bus = RedisBus(url), RedisBus(url)
    client = redis.from_url(url)
    await publisher.connect()
    await reader_bus.connect()
    reader = await reader_bus.subscribe(channel, from_beginning=True)
    text = "x" * size
    start = time.perf_counter()
    for n in range(steps):
        await publisher.publish(channel, {"n": n, "text": text})
        message = await reader.get(timeout=30)
        assert message is not None and message["n"] == n
        if consume:
            reader.consumed(message)
    elapsed = time.perf_counter() - start
    await asyncio.sleep(0.3)  # the last batched trim
    left = await client.xlen(KEY_PREFIX + channel)
    trims = reader_bus._trimmer.sent_batches
    await client.delete(KEY_PREFIX + channel)
    await client.aclose()
    await reader_bus.close()
    await publisher.close()
    return elapsed / steps, trims, left


async def measure(url: str, steps: int, sizes: list[int], rounds: int) -> None:
    for size in sizes:
        hops: dict[bool, list[float]] = {False: [], True: []}
        trims = left = 0
        for _ in range(rounds):
            for consume in (False, True):
                hop, sent, remaining = await one_round(url, steps, size, consume)
                hops[consume].append(hop)
                if consume:
                    trims, left = sent, remaining
        plain, trimmed = statistics.median(hops[False]), statistics.median(hops[True])
        print(f"  {size:7d} B x {steps} steps: {plain * 1e6:7.0f} us a hop without consumed, "
              f"{trimmed * 1e6:7.0f} us with ({trimmed / plain:.2f}x); {trims} trims sent, "
              f"{left} entries left")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from cogym_lab.testing import RedisServer

    server = RedisServer().start()
    try:
        print("A step's hop on Redis (publish, then the reader gets it), median of rounds:")
        asyncio.run(measure(server.url, args.steps, args.sizes, args.rounds))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
