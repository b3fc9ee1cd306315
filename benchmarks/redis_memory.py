"""Redis memory a batch of sessions leaves behind, before and after their channels expire.

Run from the repository root::

    python benchmarks/redis_memory.py [--sessions 5] [--sizes 10 100] [--edits 300] [--ttl 2]

It prints figures and checks nothing. The script starts its own ``redis-server`` on a free
loopback port. For each document size it runs ``--sessions`` sessions one after another on a
``RedisBus``: a session of the notes task (``tests/support/notes_env.py``: a shared text that
``WRITE`` replaces whole) with an agent that never acts (it receives every update, as a real
one would) and a person seat that replaces the text ``--edits`` times, each time with one word
changed, sending its steps on the step channel as the server's WebSocket does. Each session
ends with ``channel_ttl`` = ``--ttl`` seconds (a tree from before session channels expired
has no such setting: nothing is ever deleted there). Printed: Redis's ``used_memory`` (less the
empty server's) and its number of keys right after the batch, and again once ``--ttl`` has
passed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # for tests.support


class Idle:
    """An agent that never acts."""

    def start(self, context: Any) -> None: ...

    async def act(self, notification: Any) -> None:
        return None

    def end(self, final: Any) -> None: ...


def document(size: int, version: int) -> str:
    words = [f"w{i % 997}" for i in range(size // 5)]
    words[len(words) // 2] = f"edit{version}"
    return " ".join(words)[:size]


async def one_session(url: str, size: int, edits: int, ttl: float, index: int) -> None:
    from cogym_lab.bus.redis import RedisBus
    from cogym_lab.core.messages import StepRequest, step_channel
    from cogym_lab.nodes import Session, SessionConfig
    from tests.support.notes_env import NotesEnv

    bus = RedisBus(url)
    await bus.connect()
    limits: dict[str, Any] = {"idle_seconds": 600, "max_events": 10**6}
    if "channel_ttl" in SessionConfig.__dataclass_fields__:  # a tree from before expiries has none
        limits["channel_ttl"] = ttl
    session = Session(NotesEnv(), {"agent": Idle(), "user": None},
                      kinds={"agent": "agent", "user": "person"}, bus=bus,
                      session_id=f"redis-memory-{size}-{index}-{time.time_ns()}",
                      config=SessionConfig(**limits))
    channel = step_channel(session.session_id)
    running = asyncio.create_task(session.run())
    await bus.publish(channel, StepRequest(role="user", kind="join"))
    while not session.coordinator.started_at:
        await asyncio.sleep(0.01)
    previous = ""
    for version in range(1, edits + 1):
        text = document(size, version)
        await bus.publish(channel, StepRequest(role="user", base=previous,
                                               action={"name": "WRITE", "args": {"text": text}}))
        previous = text
        while session.coordinator.seq < version + 1:
            await asyncio.sleep(0.001)
    assert session.env_node is not None
    await session.env_node.stop("benchmark over")  # the END is logged and sent; channels expire
    await running
    await bus.close()


async def measure(url: str, sizes: list[int], sessions: int, edits: int, ttl: float) -> None:
    import redis.asyncio as redis

    client = redis.from_url(url)
    try:
        await client.flushall()
        empty = (await client.info("memory"))["used_memory"]
        for size_kb in sizes:
            for index in range(sessions):
                await one_session(url, size_kb * 1000, edits, ttl, index)
            after = (await client.info("memory"))["used_memory"] - empty
            keys = await client.dbsize()
            await asyncio.sleep(ttl + 1.0)
            expired = (await client.info("memory"))["used_memory"] - empty
            left = await client.dbsize()
            print(f"  {size_kb:4d} KB document, {sessions} sessions x {edits} edits: "
                  f"{after / 2**20:8.1f} MiB in {keys} keys right after; "
                  f"{expired / 2**20:6.2f} MiB in {left} keys after {ttl:g} s")
            await client.flushall()
    finally:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--edits", type=int, default=300)
    parser.add_argument("--ttl", type=float, default=2.0)
    args = parser.parse_args()
    from cogym_lab.testing import RedisServer

    server = RedisServer().start()
    try:
        print("Redis memory after a batch (used_memory less the empty server's):")
        asyncio.run(measure(server.url, args.sizes, args.sessions, args.edits, args.ttl))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
