"""``Subscription.consumed``: a channel's one reader says it is done with the messages up to
one it got, and the transport drops them from the channel's history, never one it was not
given. Every test runs on both transports (a real ``redis-server`` for Redis).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as redis

from cogym_lab.bus import Bus, Message
from cogym_lab.bus.redis import KEY_PREFIX, RedisBus
from cogym_lab.bus.stream_trimmer import Due, StreamTrimmer
from cogym_lab.core.text import clean_text
from tests.support.buses import BusFactory, history_of, receive
from tests.support.hostile import NASTY
from tests.support.redis_server import RedisServer

#: What a person may type, whole: the texts that broke a transport once, and a 1 MB one.
HOSTILE = [*NASTY, "\ud800 lone \udfff", "line\u2028break\x00nul", "\U0010ffff" * 10,
           "y" * 1_000_000]

pytestmark = pytest.mark.timeout(60)


async def history(bus: Bus, channel: str) -> list[Message]:
    """What a reader subscribing from the channel's beginning now gets; 0.3 s without a message
    ends it (longer than the contract tests' pause: a trim must be seen to have dropped them)."""
    return await history_of(bus, channel, quiet=0.3)


async def trimmed(bus: Bus) -> None:
    """Wait for the transport's batched trims to be sent (the Redis bus batches them)."""
    if isinstance(bus, RedisBus):
        await bus._trimmer.flush()


async def test_consumed_drops_what_the_reader_is_done_with(bus_factory: BusFactory) -> None:
    publisher, reader_bus = await bus_factory(), await bus_factory()
    channel = "s-consumed/step"
    for n in range(6):
        await publisher.publish(channel, {"n": n})
    reader = await reader_bus.subscribe(channel, from_beginning=True)
    got = await receive(reader, 4)
    reader.consumed(got[2])  # up to and including the third
    await trimmed(reader_bus)
    assert [m["n"] for m in await history(publisher, channel)] == [3, 4, 5]
    # The messages it was given but did not consume yet, and those queued, still come.
    assert [m["n"] for m in await receive(reader, 2)] == [4, 5]
    reader.consumed(got[3])
    await trimmed(reader_bus)
    assert [m["n"] for m in await history(publisher, channel)] == [4, 5]


async def test_consumed_never_drops_a_message_not_given(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    channel = "s-ahead/step"
    reader = await bus.subscribe(channel, from_beginning=True)
    await bus.publish(channel, {"n": 0})
    first = (await receive(reader, 1))[0]
    for n in range(1, 50):  # published after it was given, before it is consumed
        await bus.publish(channel, {"n": n})
    reader.consumed(first)
    await trimmed(bus)
    assert [m["n"] for m in await history(bus, channel)] == list(range(1, 50))
    assert [m["n"] for m in await receive(reader, 49)] == list(range(1, 50))


async def test_a_reader_that_missed_history_or_hands_back_a_stranger_drops_nothing(
        bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    channel = "s-live/step"
    for n in range(3):
        await bus.publish(channel, {"n": n})
    live = await bus.subscribe(channel)  # never given the first three
    await bus.publish(channel, {"n": 3})
    live.consumed((await receive(live, 1))[0])
    reader = await bus.subscribe(channel, from_beginning=True)
    got = await receive(reader, 2)  # held, as a reader holds what it hands back
    reader.consumed({"n": 1})  # equal to one it got, but not one it got
    assert got[1] == {"n": 1}
    await trimmed(bus)
    assert [m["n"] for m in await history(bus, channel)] == [0, 1, 2, 3]


async def test_hostile_whole_texts_are_consumed_and_trimmed(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    channel = "s-hostile/step"
    reader = await bus.subscribe(channel, from_beginning=True)
    for text in HOSTILE:
        await bus.publish(channel, {"text": text})
        message = (await receive(reader, 1))[0]
        assert message["text"] in (text, clean_text(text))  # Redis carries valid Unicode only
        reader.consumed(message)
        await trimmed(bus)
        assert await history(bus, channel) == []


async def test_the_redis_step_stream_is_trimmed_in_batches(redis_server: RedisServer) -> None:
    """A trim per interval, not per consumed message; the stream ends up exactly empty."""
    bus = RedisBus(redis_server.url, trim_interval=0.2)
    client: Any = redis.from_url(redis_server.url)
    channel = "s-batched/step"
    try:
        await bus.connect()
        reader = await bus.subscribe(channel, from_beginning=True)
        for n in range(200):
            await bus.publish(channel, {"n": n, "text": "x" * 5000})
            reader.consumed((await receive(reader, 1))[0])
        await asyncio.sleep(0.5)
        assert await client.xlen(KEY_PREFIX + channel) == 0
        assert bus._trimmer.sent_batches < 50
    finally:
        await bus.close()
        await client.aclose()


async def test_the_replay_buffer_keeps_a_byte_budget(redis_server: RedisServer) -> None:
    bus = RedisBus(redis_server.url, replay_bytes=300_000)
    try:
        await bus.connect()
        for n in range(40):
            await bus.publish("s-budget/step", {"n": n, "text": "é" * 50_000})  # 100 KB
        buffer = bus._replay["s-budget/step"]
        assert buffer.size <= 300_000 and len(buffer) == 2
        await bus.publish("s-budget/step", {"text": "z" * 1_000_000})  # over budget: kept
        assert len(buffer) == 1 and buffer.size > 1_000_000
    finally:
        await bus.close()


async def test_a_trim_asked_while_a_batch_is_out_goes_in_the_next() -> None:
    """The trimmer's own contract: nothing asked is left unsent because a batch was out."""
    sent: list[Due] = []
    out, release = asyncio.Event(), asyncio.Event()

    async def send(due: Due) -> None:
        sent.append(due)
        out.set()
        await release.wait()

    trimmer = StreamTrimmer(send, interval=0.01)
    trimmer.trim_through("k", (1, 0), 0)
    await asyncio.wait_for(out.wait(), 5)
    trimmer.trim_through("k", (2, 0), 0)
    trimmer.trim_through("k", (1, 5), 0)  # behind the one asked: ignored
    release.set()
    await asyncio.sleep(0.2)
    assert sent == [{"k": ((1, 0), 0)}, {"k": ((2, 0), 0)}]
    await trimmer.close()
