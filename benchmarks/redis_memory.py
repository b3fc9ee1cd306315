"""Redis memory a batch of sessions leaves behind, before and after their channels expire.

Run from the repository root::

    python benchmarks/redis_memory.py [--sessions 5] [--sizes 10 100] [--edits 300] [--ttl 2]

It prints figures and checks nothing. The script starts its own ``redis-server`` on a free
loopback port. For each document size it runs ``--sessions`` sessions at once, each on a
``RedisBus`` of its own: a session of the notes task (``tests/support/notes_env.py``: a shared
text that ``WRITE`` replaces whole) with an agent that never acts (it receives every update, as
a real one would) and a person seat that replaces the text ``--edits`` times, each time with one
word changed, sending its steps on the step channel from one more bus shared by the sessions,
as the Jupyter server does. Each session ends with ``channel_ttl`` = ``--ttl`` seconds (a tree
from before session channels expired has no such setting: nothing is ever deleted there).

Printed: once every session made its edits, while they still run, Redis's ``used_memory`` (less
the empty server's), the entries in their step streams, and the bytes the publishers keep to
re-publish after a restart (the person's publisher: its step channels; the sessions' buses:
their notification channels); then ``used_memory`` and the number of keys right after the
batch, and again once ``--ttl`` has passed. The same script runs on an older tree (put it first
on ``PYTHONPATH``) for a before-and-after figure.
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


def buffered_bytes(bus: Any, suffix: str = "") -> int:
    """Bytes of data ``bus`` keeps to re-publish, on its channels ending with ``suffix``."""
    return sum(len(data) for channel, buffer in bus._replay.items() if channel.endswith(suffix)
               for _, data in buffer)


async def one_session(url: str, person_bus: Any, size: int, edits: int, ttl: float, index: int,
                      all_edited: asyncio.Barrier, measured: asyncio.Event,
                      buses: list[Any]) -> None:
    from cogym_lab.bus.redis import RedisBus
    from cogym_lab.core.messages import StepRequest, step_channel
    from cogym_lab.nodes import Session, SessionConfig
    from tests.support.notes_env import NotesEnv

    bus = RedisBus(url)
    await bus.connect()
    buses.append(bus)
    limits: dict[str, Any] = {"idle_seconds": 600, "max_events": 10**6}
    if "channel_ttl" in SessionConfig.__dataclass_fields__:  # a tree from before expiries has none
        limits["channel_ttl"] = ttl
    session = Session(NotesEnv(), {"agent": Idle(), "user": None},
                      kinds={"agent": "agent", "user": "person"}, bus=bus,
                      session_id=f"redis-memory-{size}-{index}-{time.time_ns()}",
                      config=SessionConfig(**limits))
    channel = step_channel(session.session_id)
    running = asyncio.create_task(session.run())
    await person_bus.publish(channel, StepRequest(role="user", kind="join"))
    while not session.coordinator.started_at:
        await asyncio.sleep(0.01)
    previous = ""
    for version in range(1, edits + 1):
        text = document(size, version)
        await person_bus.publish(channel, StepRequest(
            role="user", base=previous, action={"name": "WRITE", "args": {"text": text}}))
        previous = text
        while session.coordinator.seq < version + 1:
            await asyncio.sleep(0.001)
    await asyncio.sleep(0.5)  # what is left once the steps are in
    await all_edited.wait()
    await measured.wait()
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
            await live_figures(client, url, size_kb, sessions, edits, ttl, empty)
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


async def live_figures(client: Any, url: str, size_kb: int, sessions: int, edits: int,
                       ttl: float, empty: int) -> None:
    """Run the sessions at once; print the figures while they all still run."""
    from cogym_lab.bus.redis import RedisBus

    person_bus = RedisBus(url)  # the Jupyter server's: it publishes every person's steps
    await person_bus.connect()
    all_edited, measured = asyncio.Barrier(sessions + 1), asyncio.Event()
    buses: list[Any] = []
    runs = asyncio.gather(*(one_session(url, person_bus, size_kb * 1000, edits, ttl, index,
                                        all_edited, measured, buses)
                            for index in range(sessions)))
    await all_edited.wait()
    used = (await client.info("memory"))["used_memory"] - empty
    steps = [key async for key in client.scan_iter(match="cogym:*/step")]
    entries = sum([await client.xlen(key) for key in steps])
    person_bytes = buffered_bytes(person_bus, "/step")
    session_bytes = sum(buffered_bytes(bus) for bus in buses)
    measured.set()
    await runs
    print(f"  {size_kb:4d} KB document, {sessions} sessions x {edits} edits, while running: "
          f"{used / 2**20:8.1f} MiB, {entries} entries in {len(steps)} step streams; "
          f"re-publish buffers: person's steps {person_bytes / 2**20:.1f} MiB, "
          f"sessions' {session_bytes / 2**20:.1f} MiB")
    await person_bus.close()


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
