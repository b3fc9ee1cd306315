"""Stateful property test of ``Subscription.consumed`` on both transports (a real
``redis-server`` for Redis, killed and restarted without persistence as one of the moves).

Hypothesis publishes messages with hostile text on a channel, has its one reader get them and
say it consumed any of those it got (or hand back a look-alike it never got), and restarts the
server. After every move:

* the reader got every message published, in order, each once (across restarts too);
* the channel's history still holds every message the reader was not given;
* it holds nothing but published messages, in order; and, while no restart re-added old ones,
  exactly those after the last one consumed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pydantic_core import from_json

from cogym_lab.bus import Bus, MemoryBus, Message, Subscription
from cogym_lab.bus.redis import KEY_PREFIX, RedisBus
from cogym_lab.core.text import clean_text
from tests.support.hostile import hostile_text
from tests.support.redis_server import RedisServer

CHANNEL = "props/step"
EXAMPLES = int(__import__("os").environ.get("PROPS_EXAMPLES", 60))


class ConsumedMachine(RuleBasedStateMachine):
    """One publisher bus, one reader bus (the same object on memory), one reader."""

    server: RedisServer | None = None  # set by the Redis test: the machine runs on Redis then

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.published: list[str] = []  # the texts, in order
        self.given: list[Message] = []  # what the reader returned, in order
        self.consumed_through = 0  # how many of the first messages the reader consumed
        self.restarted = False
        self.loop.run_until_complete(self._open())

    async def _open(self) -> None:
        self.client: Any = None
        if self.server is None:
            self.publisher: Bus = MemoryBus()
            self.reader_bus: Bus = self.publisher
        else:
            self.client = redis.from_url(self.server.url)
            await self.client.flushall()  # the last example's streams
            self.publisher = RedisBus(self.server.url, publish_timeout=20)
            self.reader_bus = RedisBus(self.server.url, publish_timeout=20)
            for bus in (self.publisher, self.reader_bus):
                await bus.connect()
        self.reader: Subscription = await self.reader_bus.subscribe(CHANNEL, from_beginning=True)

    # -- moves ---------------------------------------------------------------------------------

    @rule(texts=st.lists(hostile_text, min_size=1, max_size=4))
    def publish(self, texts: list[str]) -> None:
        async def send() -> None:
            for text in texts:
                await self.publisher.publish(CHANNEL, {"n": len(self.published), "text": text})
                self.published.append(text)
        self.loop.run_until_complete(send())

    @precondition(lambda self: len(self.given) < len(self.published))
    @rule(count=st.integers(1, 4))
    def get(self, count: int) -> None:
        async def take() -> None:
            for _ in range(min(count, len(self.published) - len(self.given))):
                message = await self.reader.get(timeout=20)
                assert message is not None, f"message {len(self.given)} never came"
                n = len(self.given)
                assert message["n"] == n  # in order, none twice
                assert message["text"] in (self.published[n], clean_text(self.published[n]))
                self.given.append(message)
        self.loop.run_until_complete(take())

    @precondition(lambda self: self.given)
    @rule(data=st.data())
    def consume(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.given) - 1))

        async def consume() -> None:  # where a reader says it: in its event loop
            self.reader.consumed(self.given[index])
        self.loop.run_until_complete(consume())
        if not self.restarted:
            self.consumed_through = max(self.consumed_through, index + 1)

    @precondition(lambda self: self.given)
    @rule()
    def hand_back_a_look_alike(self) -> None:
        async def consume() -> None:
            self.reader.consumed(dict(self.given[-1]))  # equal, but not one it returned
        self.loop.run_until_complete(consume())

    @precondition(lambda self: self.server is not None)
    @rule()
    def the_server_restarts_without_its_data(self) -> None:
        async def restart() -> None:
            assert self.server is not None
            await asyncio.to_thread(self.server.kill)
            await asyncio.to_thread(self.server.start)
            # The publisher re-adds its buffer when its next command meets the new server.
            await self.publisher.publish(CHANNEL, {"n": len(self.published), "text": "after"})
            self.published.append("after")
            await self.client.aclose()  # the test's own look at the stream: a new connection
            self.client = redis.from_url(self.server.url)
        self.loop.run_until_complete(restart())
        self.restarted = True

    # -- what must hold after every move ---------------------------------------------------------

    async def history(self) -> list[int]:
        """The ``n`` of every message the channel keeps, oldest first (trims sent first)."""
        if isinstance(self.reader_bus, RedisBus):
            await self.reader_bus._trimmer.flush()
            entries = await self.client.xrange(KEY_PREFIX + CHANNEL)
            return [from_json(fields[b"data"])["n"] for _, fields in entries]
        assert isinstance(self.reader_bus, MemoryBus)
        return [message["n"] for _, message in self.reader_bus._history.get(CHANNEL, ())]

    @invariant()
    def nothing_not_given_is_dropped(self) -> None:
        kept = self.loop.run_until_complete(self.history())
        assert kept == sorted(set(kept)) and all(0 <= n < len(self.published) for n in kept)
        not_given = list(range(len(self.given), len(self.published)))
        if not self.restarted:
            assert kept == list(range(self.consumed_through, len(self.published)))
        else:  # re-added history may hold consumed ones again, but never loses one not given
            assert set(not_given) <= set(kept) or self._in_the_reader_queue(not_given, kept)

    def _in_the_reader_queue(self, not_given: list[int], kept: list[int]) -> bool:
        """A message the reader read before the restart but did not return yet is in its queue,
        not in the (new) stream: the reader still gives it (``get`` checks)."""
        queued = self.reader._queue.qsize()  # type: ignore[attr-defined]
        return set(not_given) - set(kept) <= set(not_given[:queued])

    def teardown(self) -> None:
        async def close() -> None:
            await self.reader.close()
            for bus in {id(b): b for b in (self.publisher, self.reader_bus)}.values():
                await bus.close()
            if self.client is not None:
                await self.client.aclose()
        self.loop.run_until_complete(close())
        self.loop.close()


def run(machine: type[ConsumedMachine], examples: int, steps: int) -> None:
    case = machine.TestCase
    case.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.filter_too_much])
    case("runTest").runTest()


@pytest.mark.timeout(600)
def test_consumed_on_the_memory_bus() -> None:
    run(ConsumedMachine, EXAMPLES * 3, 30)


@pytest.mark.timeout(900)
def test_consumed_on_redis_across_restarts(redis_server: RedisServer) -> None:
    class OnRedis(ConsumedMachine):
        server = redis_server

    run(OnRedis, EXAMPLES, 20)
