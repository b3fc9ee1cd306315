"""The bus contract (see ``cogym_lab/bus/base.py``), checked on every transport.

``bus_factory`` (from ``tests/support/buses.py``) runs each contract test on the memory
bus and on a Redis bus backed by a real ``redis-server`` started by the test; the
Redis-only tests at the end kill and restart that server mid-session.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from cogym_lab.bus import (
    Bus,
    BusError,
    MemoryBus,
    Message,
    SessionIdTaken,
    connect_bus,
)
from cogym_lab.bus.redis import RedisBus
from tests.support.buses import (  # the ``bus_factory`` fixture lives there too
    BusFactory,
    history_of,
    receive,
)
from tests.support.redis_server import RedisServer

# -- contract, every transport ---------------------------------------------------------------


async def test_one_publisher_order_is_kept(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    subscription = await bus.subscribe("steps")
    for i in range(500):
        await bus.publish("steps", {"i": i})
    received = await receive(subscription, 500)
    assert [m["i"] for m in received] == list(range(500))
    assert await subscription.get(timeout=0.05) is None


async def test_fan_out_to_every_subscription_of_the_channel_only(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    subscriptions = [await bus.subscribe("news") for _ in range(3)]
    other = await bus.subscribe("sports")
    for i in range(50):
        await bus.publish("news", {"i": i})
    for subscription in subscriptions:
        assert [m["i"] for m in await receive(subscription, 50)] == list(range(50))
    assert await other.get(timeout=0.2) is None


async def test_publish_right_after_subscribe_is_never_missed(bus_factory: BusFactory) -> None:
    publisher, subscriber = await bus_factory(), await bus_factory()
    for i in range(20):
        same_bus = await publisher.subscribe(f"fresh-{i}")
        await publisher.publish(f"fresh-{i}", {"i": i})
        assert await same_bus.get(timeout=5) == {"i": i}

        other_bus = await subscriber.subscribe(f"cross-{i}")
        await publisher.publish(f"cross-{i}", {"i": i})
        assert await other_bus.get(timeout=5) == {"i": i}


async def test_from_beginning_gets_history_and_default_gets_only_new(
    bus_factory: BusFactory,
) -> None:
    bus = await bus_factory()
    for i in range(5):
        await bus.publish("log", {"i": i})
    late = await bus.subscribe("log", from_beginning=True)
    new_only = await bus.subscribe("log")
    await bus.publish("log", {"i": 5})
    assert [m["i"] for m in await receive(late, 6)] == list(range(6))
    assert await new_only.get(timeout=5) == {"i": 5}
    assert await new_only.get(timeout=0.1) is None
    assert await late.get(timeout=0.05) is None


async def test_from_beginning_on_an_empty_channel_gets_new_messages(
    bus_factory: BusFactory,
) -> None:
    bus = await bus_factory()
    subscription = await bus.subscribe("empty", from_beginning=True)
    await bus.publish("empty", {"first": True})
    assert await subscription.get(timeout=5) == {"first": True}


async def test_expired_channels_lose_their_history_but_not_their_readers(
    bus_factory: BusFactory,
) -> None:
    bus = await bus_factory()
    live = await bus.subscribe("gone/a")
    for i in range(3):
        await bus.publish("gone/a", {"i": i})
    await bus.publish("kept/b", {"i": 0})
    await bus.expire(["gone/a", "gone/never-written"], 0.3)
    assert [m["i"] for m in await history_of(bus, "gone/a")] == [0, 1, 2]  # not yet
    assert [m["i"] for m in await receive(live, 3)] == [0, 1, 2]
    while await history_of(bus, "gone/a"):
        await asyncio.sleep(0.05)
    assert await history_of(bus, "kept/b") == [{"i": 0}]
    await bus.publish("gone/a", {"i": 3})  # a straggler: delivered, then gone too
    assert await live.get(timeout=5) == {"i": 3}
    while await history_of(bus, "gone/a"):
        await asyncio.sleep(0.05)
    await live.close()


async def test_get_times_out_with_none(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    subscription = await bus.subscribe("quiet")
    assert await subscription.get(timeout=0.05) is None
    await bus.publish("quiet", {"x": 1})
    assert await subscription.get(timeout=5) == {"x": 1}
    assert await subscription.get(timeout=0.05) is None


async def test_get_after_close_returns_none(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    subscription = await bus.subscribe("closing")
    await bus.publish("closing", {"x": 1})
    assert await subscription.get(timeout=5) == {"x": 1}
    await subscription.close()
    assert await asyncio.wait_for(subscription.get(), 5) is None
    assert await asyncio.wait_for(subscription.get(timeout=1), 5) is None
    await subscription.close()  # idempotent
    await bus.publish("closing", {"x": 2})
    assert await asyncio.wait_for(subscription.get(), 5) is None


async def test_async_iteration_stops_on_close(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    subscription = await bus.subscribe("iter")
    received: list[Message] = []
    got_three = asyncio.Event()

    async def consume() -> None:
        async for message in subscription:
            received.append(message)
            if len(received) == 3:
                got_three.set()

    consumer = asyncio.create_task(consume())
    for i in range(3):
        await bus.publish("iter", {"i": i})
    await asyncio.wait_for(got_three.wait(), 10)
    await subscription.close()
    await asyncio.wait_for(consumer, 5)  # the loop ended by itself
    assert received == [{"i": 0}, {"i": 1}, {"i": 2}]


async def test_a_pending_get_returns_none_when_closed(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    subscription = await bus.subscribe("pending")
    waiter = asyncio.create_task(subscription.get())
    await asyncio.sleep(0.05)
    await subscription.close()
    assert await asyncio.wait_for(waiter, 5) is None


async def test_separate_bus_objects_talk_both_ways(bus_factory: BusFactory) -> None:
    alice, bob = await bus_factory(), await bus_factory()
    to_bob = await bob.subscribe("to-bob")
    to_alice = await alice.subscribe("to-alice")
    for i in range(10):
        await alice.publish("to-bob", {"from": "alice", "i": i})
        await bob.publish("to-alice", {"from": "bob", "i": i})
    assert await receive(to_bob, 10) == [{"from": "alice", "i": i} for i in range(10)]
    assert await receive(to_alice, 10) == [{"from": "bob", "i": i} for i in range(10)]


async def test_two_publishers_each_keep_their_order(bus_factory: BusFactory) -> None:
    alice, bob, carol = await bus_factory(), await bus_factory(), await bus_factory()
    subscription = await carol.subscribe("shared")

    async def publish_all(bus: Bus, name: str) -> None:
        for i in range(100):
            await bus.publish("shared", {"who": name, "i": i})

    await asyncio.gather(publish_all(alice, "alice"), publish_all(bob, "bob"))
    received = await receive(subscription, 200)
    for name in ("alice", "bob"):
        assert [m["i"] for m in received if m["who"] == name] == list(range(100))


PAYLOADS: list[Message] = [
    {"text": "héllo wörld — 你好, мир 👋🏽", "emoji": "🧪", "rtl": "שלום"},
    {"blob": "x" * 1024, "more": "é" * 600},
    {
        "nested": {"list": [1, 2.5, -3, None, True, False, "s"], "empty": {}, "none": []},
        "deep": {"a": {"b": {"c": {"d": [{"e": "f"}, [[], [1]]]}}}},
        "escapes": "quote\" backslash\\ newline\n tab\t nul\u0000 cr\r",
        "big": 2**53,
        "neg": -0.000123,
    },
    {},
]


async def test_publish_many_keeps_order_and_reaches_each_channel(bus_factory: BusFactory) -> None:
    publisher, reader = await bus_factory(), await bus_factory()
    a, b = await reader.subscribe("many/a"), await reader.subscribe("many/b")
    await publisher.publish_many([("many/a", {"n": 1}), ("many/b", {"n": 2}),
                                  ("many/a", {"n": 3})])
    await publisher.publish_many([])
    await publisher.publish("many/a", {"n": 4})
    assert [m["n"] for m in await receive(a, 3)] == [1, 3, 4]
    assert [m["n"] for m in await receive(b, 1)] == [2]
    assert await b.get(timeout=0.05) is None


async def test_payloads_round_trip_equal(bus_factory: BusFactory) -> None:
    publisher, subscriber = await bus_factory(), await bus_factory()
    subscription = await subscriber.subscribe("payloads")
    for payload in PAYLOADS:
        await publisher.publish("payloads", payload)
    assert await receive(subscription, len(PAYLOADS)) == PAYLOADS


async def test_a_session_id_is_claimed_once(bus_factory: BusFactory) -> None:
    first, second = await bus_factory(), await bus_factory()
    await first.claim_session("claim-1", ["claim-1/a/obs"])
    for bus in (first, second):  # the same bus object or another process: both refused
        with pytest.raises(SessionIdTaken, match="'claim-1'.*another session claimed it"):
            await bus.claim_session("claim-1", ["claim-1/a/obs"])
    await second.claim_session("claim-2", ["claim-2/a/obs"])  # other ids are free


async def test_a_session_id_whose_channels_hold_history_is_refused(
    bus_factory: BusFactory,
) -> None:
    """Channels written before claims existed (or by a run on another bus) count as taken."""
    bus = await bus_factory()
    await bus.publish("old/b/obs", {"stale": True})
    await bus.publish("new/step", {"join": True})  # not among the checked channels: no matter
    with pytest.raises(SessionIdTaken, match="'old'.*earlier run"):
        await bus.claim_session("old", ["old/a/obs", "old/b/obs"])
    await bus.claim_session("new", ["new/a/obs"])


async def test_resume_takes_a_claimed_id_back(bus_factory: BusFactory) -> None:
    first, second = await bus_factory(), await bus_factory()
    await first.claim_session("kept", ["kept/a/obs"])
    await first.publish("kept/a/obs", {"n": 1})
    await second.claim_session("kept", ["kept/a/obs"], resume=True)
    with pytest.raises(SessionIdTaken):
        await first.claim_session("kept", ["kept/a/obs"])


async def test_a_claim_expires_with_its_channels(bus_factory: BusFactory) -> None:
    bus = await bus_factory()
    await bus.claim_session("short", ["short/a/obs"])
    await bus.publish("short/a/obs", {"n": 1})
    await bus.expire(["short/a/obs", "short/step"], 0.2)
    with pytest.raises(SessionIdTaken):
        await bus.claim_session("short", ["short/a/obs"])
    async with asyncio.timeout(10):
        while True:
            await asyncio.sleep(0.05)
            try:
                await bus.claim_session("short", ["short/a/obs"])
                break
            except SessionIdTaken:
                continue


async def test_a_late_from_beginning_reader_does_not_repeat_to_live_ones(
    bus_factory: BusFactory,
) -> None:
    """One channel read live and then from its beginning too: the live subscription is not given
    the history again (a shared reader re-reads the stream for the late one)."""
    bus = await bus_factory()
    live = await bus.subscribe("mixed")
    for i in range(3):
        await bus.publish("mixed", {"i": i})
    assert [m["i"] for m in await receive(live, 3)] == [0, 1, 2]
    late = await bus.subscribe("mixed", from_beginning=True)
    await bus.publish("mixed", {"i": 3})
    assert [m["i"] for m in await receive(late, 4)] == [0, 1, 2, 3]
    assert await live.get(timeout=5) == {"i": 3}
    assert await live.get(timeout=0.2) is None


async def test_closing_one_subscription_leaves_the_others_of_its_channel(
    bus_factory: BusFactory,
) -> None:
    bus = await bus_factory()
    kept, closed = await bus.subscribe("pair"), await bus.subscribe("pair")
    await closed.close()
    await bus.publish("pair", {"n": 1})
    assert await kept.get(timeout=5) == {"n": 1}
    again = await bus.subscribe("pair")
    await bus.publish("pair", {"n": 2})
    assert await kept.get(timeout=5) == {"n": 2}
    assert await again.get(timeout=5) == {"n": 2}


async def test_a_new_channel_is_read_at_once_on_an_idle_bus(bus_factory: BusFactory) -> None:
    """A subscription to a channel nobody read yet is not left waiting for a blocking read on
    the others to time out (on Redis, that would be a second per channel)."""
    bus, publisher = await bus_factory(), await bus_factory()
    await bus.subscribe("idle-anchor")  # the reader is already blocked when the others come
    for i in range(10):
        subscription = await bus.subscribe(f"idle-{i}")
        await publisher.publish(f"idle-{i}", {"i": i})
        assert await subscription.get(timeout=0.5) == {"i": i}


# -- connect_bus ------------------------------------------------------------------------------


def test_connect_bus_picks_the_transport(redis_server_session: RedisServer) -> None:
    assert isinstance(connect_bus(), MemoryBus)
    assert isinstance(connect_bus("memory://"), MemoryBus)
    bus = connect_bus(redis_server_session.url)
    assert isinstance(bus, RedisBus)
    assert bus.url == redis_server_session.url


@pytest.mark.parametrize("url", ["kafka://localhost:9092", "localhost:6379", "", "http://x"])
def test_connect_bus_rejects_unknown_urls(url: str) -> None:
    with pytest.raises(ValueError, match="Unknown bus URL"):
        connect_bus(url)


async def test_connect_bus_redis_works_end_to_end(redis_server_session: RedisServer) -> None:
    async with connect_bus(redis_server_session.url) as bus:
        subscription = await bus.subscribe("e2e-check")
        await bus.publish("e2e-check", {"ok": True})
        assert await subscription.get(timeout=5) == {"ok": True}


# -- Redis only: the server restarts and loses its data ----------------------------------------


class ReconnectFlag:
    """An ``on_reconnect`` handler that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.event = asyncio.Event()

    async def __call__(self) -> None:
        self.calls += 1
        self.event.set()


async def _restart(server: RedisServer, down_for: float) -> None:
    await asyncio.to_thread(server.kill)
    await asyncio.sleep(down_for)
    await asyncio.to_thread(server.start)


@pytest.mark.timeout(60)
async def test_redis_restart_while_publishing_loses_nothing(redis_server: RedisServer) -> None:
    publisher = RedisBus(redis_server.url, publish_timeout=30)
    subscriber = RedisBus(redis_server.url, publish_timeout=30)
    flags = ReconnectFlag(), ReconnectFlag()
    publisher.on_reconnect(flags[0])
    subscriber.on_reconnect(flags[1])
    async with publisher, subscriber:
        subscription = await subscriber.subscribe("numbers")
        received: list[int] = []
        forty_seen = asyncio.Event()

        async def read_all() -> None:
            while len(received) < 200:
                message = await subscription.get(timeout=20)
                assert message is not None, f"stalled after {len(received)} messages"
                received.append(message["n"])
                if len(received) == 40:
                    forty_seen.set()

        async def publish_all() -> None:
            for n in range(200):
                await publisher.publish("numbers", {"n": n})
                await asyncio.sleep(0.005)

        reader = asyncio.create_task(read_all())
        writer = asyncio.create_task(publish_all())
        await asyncio.wait_for(forty_seen.wait(), 20)
        await _restart(redis_server, down_for=0.5)
        await asyncio.wait_for(asyncio.gather(writer, reader), 40)

        assert received == list(range(200))
        assert await subscription.get(timeout=0.3) is None  # no late duplicates either
        await asyncio.wait_for(flags[0].event.wait(), 10)
        await asyncio.wait_for(flags[1].event.wait(), 10)
        assert flags[0].calls == 1
        assert flags[1].calls == 1


@pytest.mark.timeout(60)
async def test_redis_burst_accepted_just_before_a_kill_is_not_lost(
    redis_server: RedisServer,
) -> None:
    publisher = RedisBus(redis_server.url)
    subscriber = RedisBus(redis_server.url)
    async with publisher, subscriber:
        subscription = await subscriber.subscribe("burst")
        for n in range(300):
            await publisher.publish("burst", {"n": n})
        redis_server.kill()  # no await since the last publish: the reader is likely behind
        await asyncio.sleep(0.3)
        await asyncio.to_thread(redis_server.start)
        received = await receive(subscription, 300, timeout=20)
        assert [m["n"] for m in received] == list(range(300))
        assert await subscription.get(timeout=0.3) is None


@pytest.mark.timeout(60)
async def test_redis_restart_recovers_messages_no_reader_had_read(
    redis_server: RedisServer,
) -> None:
    """Deterministic version of the burst test: the subscriber's event loop is frozen
    while another loop publishes and the server is killed, so (apart from at most the
    first reply already in flight) the messages exist only in the publisher's buffer."""
    subscriber = RedisBus(redis_server.url)
    published = threading.Event()
    restarted = threading.Event()
    errors: list[BaseException] = []

    async def publisher_side() -> None:
        async with RedisBus(redis_server.url) as publisher:
            flag = ReconnectFlag()
            publisher.on_reconnect(flag)
            for n in range(100):
                await publisher.publish("frozen", {"n": n})
            published.set()
            await asyncio.to_thread(restarted.wait, 30)
            # Publish at once: the new messages must still come after the re-published ones.
            for n in range(100, 110):
                await publisher.publish("frozen", {"n": n})
            await asyncio.wait_for(flag.event.wait(), 20)
            assert flag.calls == 1

    def run_publisher() -> None:
        try:
            asyncio.run(publisher_side())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            published.set()

    async with subscriber:
        subscription = await subscriber.subscribe("frozen")
        thread = threading.Thread(target=run_publisher)
        thread.start()
        # Block this event loop on purpose: the reader cannot run until after the restart.
        assert published.wait(30)
        redis_server.kill()
        time.sleep(1.0)  # long enough for the publisher's watchdog to back off to its cap
        redis_server.start()
        restarted.set()

        received = await receive(subscription, 110, timeout=20)
        await asyncio.to_thread(thread.join, 30)
        assert not errors, errors
        assert [m["n"] for m in received] == list(range(110))
        assert await subscription.get(timeout=0.3) is None


@pytest.mark.timeout(60)
async def test_redis_publish_gives_up_after_publish_timeout(redis_server: RedisServer) -> None:
    bus = RedisBus(redis_server.url, publish_timeout=0.5)
    async with bus:
        await bus.publish("doomed", {"n": 0})
        redis_server.kill()
        with pytest.raises(BusError, match="publish to 'doomed' failed") as info:
            await bus.publish("doomed", {"n": 1})
        assert redis_server.url in str(info.value)


@pytest.mark.timeout(60)
async def test_redis_restart_gives_back_a_channel_with_its_expiry_or_not_at_all(
    redis_server: RedisServer,
) -> None:
    """After a restart the bus re-publishes what it buffered: an expiring channel comes back
    with the rest of its expiry, and one that has expired meanwhile does not come back."""
    async with RedisBus(redis_server.url, publish_timeout=20) as bus:
        for channel in ("expiring/long", "expiring/short", "kept"):
            await bus.publish(channel, {"on": channel})
        await bus.expire(["expiring/long"], 60)
        await bus.expire(["expiring/short"], 0.2)
        await asyncio.sleep(0.4)
        await asyncio.to_thread(redis_server.kill)
        await asyncio.to_thread(redis_server.start)
        await bus.publish("after", {"restarted": True})  # goes through the restart handling
        admin = bus._admin
        assert admin is not None
        assert 0 < await admin.pttl("cogym:expiring/long") <= 60_000
        assert await admin.exists("cogym:expiring/short") == 0
        assert await admin.pttl("cogym:kept") == -1  # back, with no expiry: none was asked


# -- Redis only: one reader per bus -----------------------------------------------------------


async def _connections(server: RedisServer) -> int:
    async with RedisBus(server.url) as probe:
        admin = probe._admin
        assert admin is not None
        return int((await admin.info("clients"))["connected_clients"])


async def test_redis_bus_reads_every_subscription_on_one_connection(
    redis_server: RedisServer,
) -> None:
    async with RedisBus(redis_server.url) as bus:
        subscriptions = [await bus.subscribe("many/0")]  # the bus has all its connections now
        before = await _connections(redis_server)
        subscriptions += [await bus.subscribe(f"many/{i}") for i in range(1, 100)]
        assert await _connections(redis_server) == before
        await bus.publish_many([(f"many/{i}", {"i": i}) for i in range(100)])
        for i, subscription in enumerate(subscriptions):
            assert await subscription.get(timeout=5) == {"i": i}


async def test_redis_a_key_that_is_not_a_stream_ends_only_its_subscriptions(
    redis_server: RedisServer,
) -> None:
    async with RedisBus(redis_server.url) as bus:
        admin = bus._admin
        assert admin is not None
        await admin.set("cogym:not-a-stream", "plain")
        good = await bus.subscribe("fine")
        bad = await bus.subscribe("not-a-stream", from_beginning=True)  # no XREVRANGE first
        assert await asyncio.wait_for(bad.get(), 10) is None
        await bus.publish("fine", {"ok": True})
        assert await good.get(timeout=5) == {"ok": True}
