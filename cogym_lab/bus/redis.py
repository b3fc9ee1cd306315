"""Redis Streams transport: nodes in several processes (or machines) share one bus.

Each channel is a stream ``cogym:<channel>``; each message is one entry with two fields,
``mid`` (a unique id) and ``data`` (compact JSON). Each bus object has one reader: a single
task doing one ``XREAD BLOCK`` over every stream it has subscriptions on, on one connection,
fanning entries out to the subscriptions in memory (:class:`_Reader`). A subscription that needs
the read to change wakes it through the bus's own wake-up stream.

Surviving a server restart
--------------------------
The server may run without persistence, so a restart loses every stream. The bus still
loses nothing and delivers nothing twice, by combining two mechanisms:

* **At-least-once re-publish.** Every bus keeps, per channel it published to, its last
  ``replay_window`` messages, and of those no more than ``replay_bytes`` bytes (4 MiB by
  default) besides the newest, which is always kept: a person's whole-text edits of a 100 KB
  document would otherwise hold some 100 MB per session in the process that publishes them
  (:class:`~cogym_lab.bus.replay_buffer.ReplayBuffer`). When it learns the server restarted
  (``run_id`` from ``INFO server`` changed), it re-adds them, with their original ``mid`` and
  in order, before any new message. A message the old server accepted but no reader had read yet
  is therefore back in the stream.
* **Per-subscription dedup.** Readers that notice a restart read the new stream from its
  start, so they see re-published messages they already delivered; each subscription
  remembers recently delivered ``mid`` values and skips those. That holds for messages its
  reader consumed and had trimmed (see "Trimming"): the ``mid`` values are the subscription's
  own memory, not the stream's.

A restart must be noticed *before* any command reaches the new server: otherwise a new
message could be added ahead of the re-published ones, or a reader could resume from an
id that means nothing on the new server. redis-py may silently reconnect a pooled
connection, so every connection of the bus runs a connect hook that compares the server's
``run_id`` with the one the bus has synced to, and refuses the connection (a
``ConnectionError``) if they differ. The failing command then goes through the normal
retry path, which calls ``_ensure_server()``: under the publish lock, it re-publishes the
buffers on a separate hook-less connection, records the new ``run_id``, and bumps
``_epoch`` so the reader restarts from the beginning of the new streams. The reader always
holds a blocking read open (on its wake-up stream at least), so even an idle bus notices a
restart at once.

Limits: a subscriber that was more than ``replay_window`` messages, or ``replay_bytes`` bytes
of them, behind a publisher when the server lost its data misses the older ones; a subscription
made while a restart is being handled may see re-published history as new messages. The env
node, the one reader of a step channel, is about one step behind its publishers, and a session
that was interrupted keeps its unlogged steps in the stream only as long as the server keeps
its data: a resume after a restart without persistence also misses those the publishers no
longer buffer.

Session ids
-----------
``claim_session`` runs one Lua script: it refuses an id whose claim marker (a string key
``cogym:<session>/.claim``) exists or whose given channels hold a stream, else sets the marker.
The marker expires with the session's channels. A restart without persistence loses markers;
the channels' re-published history still makes a reused id refused.

Expiry
------
``expire(channels, after)`` gives each channel's stream a ``PEXPIRE`` (a finished session's
streams hold its members' private views, and nothing else would ever delete them). The bus
remembers it: a later publish to such a channel, and a re-publish after a restart, set the
expiry again (a stream that was deleted and is re-created has none), and the bus drops its own
re-publish buffers of those channels when they expire.

Trimming
--------
Every stream is trimmed as it grows (``XADD ... MAXLEN ~``): to ``stream_maxlen`` entries, and a
member's notification channel (:func:`~cogym_lab.core.messages.resyncs`) to ``resync_maxlen``
only. Those carry whole texts (an editor's document in every notification), and no reader needs
their history: a member, a panel or an outside seat subscribes from the newest entry and is sent
the whole state when it joins, and one that fell more than ``resync_maxlen`` entries behind sees
a gap in the notifications' ``seq`` and asks for the whole state (a sync). The re-publish buffer
of such a channel keeps as few. ``~`` lets Redis trim whole nodes of its stream only: a stream
of large entries (a node holds at most 4 KB) is trimmed exactly, one of small ones keeps up to a
node's 100 entries more.

A stream's one reader also trims what it is done with: ``Subscription.consumed(message)``
(a subscription made from the stream's first entry only) trims the stream up to and including
that message's entry, exactly (``XTRIM MINID`` the next id). The env node says so of every step
once the step's events are in the session's log, so a step channel, which carries a person's
whole-text edits, holds only the steps not yet logged (plus those of the last
``trim_interval``), not the last ``stream_maxlen``. The trims are batched
(:class:`~cogym_lab.bus.stream_trimmer.StreamTrimmer`): the furthest position per stream,
sent in one pipeline ``trim_interval`` seconds (0.1) after the first, under the publish lock
(no restart is handled meanwhile) and only for entries read from the current server. A trim
that fails is dropped: the next one covers it. Nothing the reader was not given is trimmed,
but every entry before the consumed one is, so it is for a channel with one reader.

Text
----
A message is encoded as UTF-8, which cannot hold a lone UTF-16 surrogate. The bus applies the
text policy (:mod:`cogym_lab.core.text`) to a message that has one, rather than fail to
publish it: such a surrogate becomes U+FFFD.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import from_json
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import KeyT, StreamIdT

from cogym_lab.bus.base import (
    CLAIM_SUFFIX,
    Bus,
    BusError,
    Message,
    Outgoing,
    SessionIdTaken,
    Subscription,
    claim_marker,
    next_from,
)
from cogym_lab.bus.given import GivenPositions
from cogym_lab.bus.replay_buffer import ReplayBuffer
from cogym_lab.bus.stream_trimmer import Due, StreamTrimmer
from cogym_lab.core.messages import resyncs
from cogym_lab.core.text import clean, clean_text, is_clean
from cogym_lab.errors import CogymError

__all__ = ["RedisBus", "RedisSubscription"]

log = logging.getLogger(__name__)

T = TypeVar("T")

KEY_PREFIX = "cogym:"
NETWORK_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
BACKOFF_START = 0.02
BACKOFF_CAP = 0.5
READ_BLOCK_MS = 1000
READ_COUNT = 256

_CLOSED = object()

#: Claims a session id in one atomic step. KEYS[1] is the claim marker, KEYS[2..] the channels
#: that must be empty; ARGV[1] this claim's token, ARGV[2] "1" to resume. A token already in the
#: marker is this very claim, retried after its reply was lost: it succeeds again.
_CLAIM_SCRIPT = """
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then return 0 end
if ARGV[2] ~= '1' then
  if held then return 1 end
  for i = 2, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then return 2 end
  end
end
redis.call('SET', KEYS[1], ARGV[1])
return 0
"""


def _encode(message: Outgoing) -> str:
    """Compact JSON; a pydantic model is encoded by pydantic's compiled serializer. Text that
    UTF-8 cannot hold (a lone surrogate) is cleaned rather than refused."""
    if isinstance(message, BaseModel):
        try:
            return message.model_dump_json()
        except ValueError:  # pydantic refuses a lone surrogate: clean the plain data instead
            message = clean(message.model_dump(mode="json"))
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return text if is_clean(text) else clean_text(text)


class _ServerChanged(CogymError, RedisConnectionError):
    """A connection reached a server the bus has not synced to yet (it restarted)."""


def _run_id_from_info(raw: bytes | str) -> str:
    text = raw.decode() if isinstance(raw, bytes) else raw
    for line in text.splitlines():
        if line.startswith("run_id:"):
            return line.partition(":")[2].strip()
    raise RedisConnectionError("INFO server reply has no run_id")


class _Backoff:
    """Exponential delays: 20 ms doubling up to 0.5 s."""

    def __init__(self) -> None:
        self.delay = BACKOFF_START

    async def sleep(self) -> None:
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, BACKOFF_CAP)

    def reset(self) -> None:
        self.delay = BACKOFF_START


async def _stop(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for it to end.

    Cancels again until it ends: on Python 3.11, ``asyncio.wait_for`` (used inside
    redis-py) swallows a cancellation that lands just as the awaited operation completes.
    """
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=0.1)
    if not task.cancelled() and task.exception() is not None:
        log.error("Background task %s failed", task.get_name(), exc_info=task.exception())


def _parse_id(entry_id: bytes) -> tuple[int, int]:
    """A stream entry id (``b"1716200000500-3"``) as a pair that compares in stream order."""
    millis, _, seq = entry_id.partition(b"-")
    return int(millis), int(seq or 0)


_START = (0, 0)


class RedisSubscription(Subscription):
    """One channel's messages, fanned out by the bus's single reader into a local queue.

    ``_last`` is the id of the last entry this subscription was given (or the stream's newest
    when it subscribed): the reader reads each stream from the lowest position any of its
    subscriptions needs, and gives a subscription only the entries after its own.
    """

    def __init__(self, bus: RedisBus, channel: str, start_id: bytes, *,
                 from_beginning: bool = False) -> None:
        self.channel = channel
        self._bus = bus
        self._key = bus._key(channel)
        self._last = _parse_id(start_id)
        # Given the stream from its first entry: its consumed() may trim it.
        self._trims = from_beginning and self._last == _START
        self._given = GivenPositions()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._seen_max = 4 * bus.replay_window
        self._closed = False

    async def get(self, timeout: float | None = None) -> Message | None:
        if self._closed:
            return None
        item = await next_from(self._queue, timeout)
        if item is None:
            return None
        if item is _CLOSED:
            self._queue.put_nowait(_CLOSED)  # wake any other waiting getter too
            return None
        assert isinstance(item, _Delivered)  # the queue holds delivered entries and _CLOSED
        if self._trims:
            self._given.add(item.message, (item.position, item.epoch))
        return item.message

    def consumed(self, message: Message) -> None:
        """Have the stream trimmed up to and including ``message``'s entry, soon (see
        :meth:`Subscription.consumed` and "Trimming" in the module docstring)."""
        if not self._trims:
            return
        given = self._given.take_through(message)
        if not isinstance(given, tuple):
            return
        position, epoch = given
        if epoch == self._bus._epoch:  # else read from a server that restarted since: its id
            self._bus._trimmer.trim_through(self._key, position, epoch)  # means nothing now

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # No wake-up: the reader drops the stream at its next read, and until then it only
        # reads entries nobody is given.
        self._bus._reader.remove(self)
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(_CLOSED)

    def _end(self) -> None:
        """The reader cannot read this channel (the key holds something else): end it loudly
        rather than spin; ``get`` then returns ``None`` as after ``close``."""
        self._bus._reader.remove(self)
        self._queue.put_nowait(_CLOSED)

    def _deliver(self, entry_id: bytes, fields: Mapping[bytes | str, bytes | str] | None) -> None:
        fields = fields or {}  # None: an entry deleted since (XREAD gives its id alone)
        mid, data = fields.get(b"mid"), fields.get(b"data")
        if not isinstance(mid, bytes) or data is None:
            log.warning("Skipping foreign entry %r on %s", entry_id, self._key)
            return
        if mid in self._seen:
            return
        self._seen[mid] = None
        if len(self._seen) > self._seen_max:
            self._seen.popitem(last=False)
        try:
            message = from_json(data)
        except ValueError:
            log.warning("Skipping undecodable entry %r on %s", entry_id, self._key)
            return
        self._queue.put_nowait(_Delivered(message, _parse_id(entry_id), self._bus._epoch))


class _Delivered:
    """A decoded entry waiting in a subscription's queue, with where it sat in its stream and
    on which server (the bus's restart epoch) it was read."""

    __slots__ = ("epoch", "message", "position")

    def __init__(self, message: Message, position: tuple[int, int], epoch: int) -> None:
        self.message = message
        self.position = position
        self.epoch = epoch


class _Stream:
    """What the reader knows of one stream: where it reads it from, and who gets its entries."""

    __slots__ = ("cursor", "subscriptions")

    def __init__(self, cursor: tuple[int, int]) -> None:
        self.cursor = cursor
        self.subscriptions: set[RedisSubscription] = set()


class _Reader:
    """The one reader of a bus: a single task doing one blocking ``XREAD`` over every stream
    this bus object has subscriptions on, fanning entries out to them in memory.

    A reader per subscription held a connection each and woke once a second each, idle or
    not: a process hosting 200 sessions kept some 600 connections open in the server. This one
    holds one connection, and the blocking read is its own restart watchdog too.

    A subscription that needs the reader to read differently (a stream it does not read yet,
    or an earlier position for a ``from_beginning`` subscriber) adds an entry to the bus's own
    wake-up stream, which the blocking read always includes, so the read returns at once with
    no polling. The wake-up stream holds one entry, and expires when the bus goes quiet.
    """

    WAKE_TTL_MS = 600_000

    def __init__(self, bus: RedisBus) -> None:
        self._bus = bus
        self._streams: dict[str, _Stream] = {}
        self._wake_key = bus._key(f"_wake/{uuid.uuid4().hex}")
        self._wake_cursor = _START
        self._epoch = bus._epoch
        self._client: Redis | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def subscriptions(self) -> list[RedisSubscription]:
        return [s for stream in self._streams.values() for s in stream.subscriptions]

    def start(self) -> None:
        self._client = self._bus._new_client(hooked=True)
        self._task = asyncio.create_task(self._loop(), name="cogym-redis-reader")

    async def stop(self) -> None:
        if self._task is not None:
            await _stop(self._task)
        if self._client is not None:
            await self._client.aclose()
        self._task = self._client = None

    def add(self, subscription: RedisSubscription) -> bool:
        """Register ``subscription``; True when the blocking read must be woken to see it."""
        stream = self._streams.get(subscription._key)
        if stream is None:
            stream = self._streams[subscription._key] = _Stream(subscription._last)
            stream.subscriptions.add(subscription)
            return True
        stream.subscriptions.add(subscription)
        if subscription._last < stream.cursor:
            stream.cursor = subscription._last
            return True
        return False  # the stream is read already, from no later than this one needs

    def remove(self, subscription: RedisSubscription) -> None:
        stream = self._streams.get(subscription._key)
        if stream is None:
            return
        stream.subscriptions.discard(subscription)
        if not stream.subscriptions:
            del self._streams[subscription._key]

    async def wake(self) -> None:
        """Make the blocking read return, so that the next one covers what changed."""
        client = self._bus._client
        assert client is not None

        async def add() -> None:
            pipeline = client.pipeline(transaction=False)
            pipeline.xadd(self._wake_key, {"w": b""}, maxlen=1, approximate=False)
            pipeline.pexpire(self._wake_key, self.WAKE_TTL_MS)
            await pipeline.execute()

        await self._bus._retry(add, self._bus._deadline(), "wake the reader")

    def _restart_positions(self) -> None:
        """The server lost its streams: ids restart, and re-published entries come first."""
        self._epoch = self._bus._epoch
        self._wake_cursor = _START
        for stream in self._streams.values():
            stream.cursor = _START
            for subscription in stream.subscriptions:
                subscription._last = _START

    async def _loop(self) -> None:
        client = self._client
        assert client is not None
        bus = self._bus
        backoff = _Backoff()
        check_server = False
        while True:
            try:
                if check_server:
                    await bus._ensure_server()
                    check_server = False
                if bus._epoch != self._epoch:
                    self._restart_positions()
                epoch = self._epoch
                positions: dict[KeyT, StreamIdT] = {
                    key: b"%d-%d" % stream.cursor for key, stream in self._streams.items()}
                positions[self._wake_key] = b"%d-%d" % self._wake_cursor
                reply = await client.xread(positions, count=READ_COUNT, block=READ_BLOCK_MS)
            except NETWORK_ERRORS:
                await backoff.sleep()
                check_server = True
                continue
            except ResponseError:
                if not await self._drop_unreadable(client):
                    log.exception("Redis bus reader: the read was refused")
                    await backoff.sleep()  # not a key of ours: do not spin on it
                continue
            backoff.reset()
            if bus._epoch != epoch:
                continue  # the read may have reached the new server with a stale id: redo it
            streams = reply.items() if isinstance(reply, dict) else reply or ()
            for key, entries in streams:
                self._fan_out(key.decode() if isinstance(key, bytes) else str(key), entries)

    def _fan_out(self, key: str, entries: Sequence[Any]) -> None:
        if key == self._wake_key:
            if entries:
                self._wake_cursor = _parse_id(entries[-1][0])
            return
        stream = self._streams.get(key)
        if stream is None:  # every subscription closed while the read was out
            return
        for entry_id, fields in entries:
            assert isinstance(entry_id, bytes)  # the client decodes nothing
            position = _parse_id(entry_id)
            stream.cursor = max(stream.cursor, position)
            for subscription in list(stream.subscriptions):
                if position > subscription._last:
                    subscription._last = position
                    subscription._deliver(entry_id, fields if isinstance(fields, dict) else None)

    async def _drop_unreadable(self, client: Redis) -> bool:
        """One key of the read is not a stream (another program wrote it): the whole read was
        refused, so find the keys that are not streams and end their subscriptions. True when
        there was one."""
        dropped = False
        for key in list(self._streams):
            try:
                kind = await client.type(key)
            except NETWORK_ERRORS:
                return True  # the next read retries, through the restart handling
            if kind not in (b"stream", b"none", "stream", "none"):
                log.error("Redis bus reader: %r holds a %r, not a stream; its subscriptions end",
                          key, kind)
                stream = self._streams.pop(key)
                for subscription in stream.subscriptions:
                    subscription._end()
                dropped = True
        return dropped


class RedisBus(Bus):
    """A bus on Redis Streams that survives server restarts without loss or duplicates.

    ``replay_window``: messages per channel kept for re-publishing after a restart.
    ``replay_bytes``: the most bytes of them kept per channel, beyond the newest message.
    ``stream_maxlen``: approximate length each stream is trimmed to (history depth).
    ``resync_maxlen``: the same for a member's notification channel, whose readers resync
    instead of reading history (see "Trimming" above).
    ``publish_timeout``: seconds ``publish`` keeps retrying before raising ``BusError``.
    ``trim_interval``: seconds a consumed entry may wait for its stream's trim (they are sent in
    batches, see "Trimming" above).
    """

    def __init__(
        self,
        url: str,
        *,
        replay_window: int = 1024,
        replay_bytes: int = 4 * 2**20,
        stream_maxlen: int = 10_000,
        resync_maxlen: int = 32,
        publish_timeout: float = 60.0,
        trim_interval: float = 0.1,
    ) -> None:
        super().__init__()
        self.url = url
        self.replay_window = replay_window
        self.replay_bytes = replay_bytes
        self.stream_maxlen = stream_maxlen
        self.resync_maxlen = resync_maxlen
        self.publish_timeout = publish_timeout
        self._client: Redis | None = None  # hooked: refuses a restarted server until synced
        self._admin: Redis | None = None  # hook-less: INFO and re-publish
        self._run_id: str | None = None
        self._epoch = 0  # bumped each time the bus syncs to a restarted server
        self._lock = asyncio.Lock()  # serializes publishes and restart handling
        self._connect_lock = asyncio.Lock()
        self._replay: dict[str, ReplayBuffer] = {}
        self._expiring: dict[str, float] = {}  # channel -> loop time its stream expires
        self._handler_tasks: set[asyncio.Task[None]] = set()
        self._reader = _Reader(self)  # started by connect()
        self._trimmer = StreamTrimmer(self._send_trims, trim_interval)

    # -- connections -------------------------------------------------------------------

    def _maxlen(self, channel: str) -> int:
        """How many entries ``channel``'s stream keeps, about (see "Trimming" above)."""
        return self.resync_maxlen if resyncs(channel) else self.stream_maxlen

    def _key(self, channel: str) -> str:
        return KEY_PREFIX + channel

    def _new_client(self, *, hooked: bool) -> Redis:
        # redis-py's own retries are off: our retry loops must see every failure.
        kwargs: dict[str, Any] = {"retry": Retry(NoBackoff(), 0)}
        if hooked:
            kwargs["redis_connect_func"] = self._on_connect
        return Redis.from_url(self.url, **kwargs)

    async def _on_connect(self, conn: AbstractConnection) -> None:
        """Connect hook: refuse a server other than the one the bus last synced to."""
        await conn.on_connect()
        await conn.send_command("INFO", "server")
        run_id = _run_id_from_info(await conn.read_response())
        if run_id != self._run_id:
            raise _ServerChanged(f"Redis at {self.url} restarted (run_id {run_id})")

    async def connect(self) -> None:
        async with self._connect_lock:
            if self._admin is not None:
                return
            admin = self._new_client(hooked=False)
            try:
                info = await self._retry(
                    lambda: admin.info("server"), self._deadline(), "connect", sync=False
                )
            except BaseException:
                await admin.aclose()
                raise
            self._run_id = str(info["run_id"])
            self._admin = admin
            self._client = self._new_client(hooked=True)
            self._reader.start()

    async def close(self) -> None:
        if self._client is not None:
            await self._trimmer.close()
        for subscription in self._reader.subscriptions:
            await subscription.close()
        for task in list(self._handler_tasks):
            await _stop(task)
        await self._reader.stop()
        for client in (self._client, self._admin):
            if client is not None:
                await client.aclose()
        self._client = self._admin = None
        self._reader = _Reader(self)  # a bus connected again reads afresh

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.publish_timeout

    async def _retry(
        self,
        op: Callable[[], Awaitable[T]],
        deadline: float | None,
        what: str,
        *,
        locked: bool = False,
        sync: bool = True,
    ) -> T:
        """Run ``op`` until it succeeds, syncing with a restarted server between attempts.

        ``locked``: the caller holds ``_lock``. ``sync=False``: skip the restart check
        (only while connecting, when there is nothing to sync yet).
        """
        backoff = _Backoff()
        failed = False
        while True:
            try:
                if failed and sync:
                    await (self._ensure_server_locked() if locked else self._ensure_server())
                return await op()
            except NETWORK_ERRORS as exc:
                if deadline is not None and asyncio.get_running_loop().time() >= deadline:
                    raise BusError(
                        f"Redis bus at {self.url}: {what} failed for "
                        f"{self.publish_timeout:g} s: {exc}"
                    ) from exc
                failed = True
                await backoff.sleep()

    # -- restart handling ----------------------------------------------------------------

    async def _ensure_server(self) -> None:
        """Sync with the server if it restarted; one attempt, raises on network errors."""
        async with self._lock:
            await self._ensure_server_locked()

    async def _ensure_server_locked(self) -> None:
        assert self._admin is not None
        run_id = str((await self._admin.info("server"))["run_id"])
        if run_id == self._run_id:
            return
        log.warning("Redis at %s restarted; re-publishing buffered messages", self.url)
        for channel, buffer in list(self._replay.items()):
            expiry = self._expiry_ms(channel)
            if expiry == 0:  # expired meanwhile: its messages are not wanted back
                self._replay.pop(channel, None)
                continue
            for mid, data in buffer:
                await self._admin.xadd(
                    self._key(channel),
                    {"mid": mid, "data": data},
                    maxlen=self._maxlen(channel),
                    approximate=True,
                )
            if expiry is not None:
                await self._admin.pexpire(self._key(channel), expiry)
        self._run_id = run_id
        self._epoch += 1
        # A handler may publish or wait on a subscription: run it outside the lock and
        # outside the reader task that noticed the restart.
        task = asyncio.create_task(self._run_reconnect_handlers())
        self._handler_tasks.add(task)
        task.add_done_callback(self._handler_tasks.discard)

    async def _run_reconnect_handlers(self) -> None:
        try:
            await self._fire_reconnect()
        except Exception:
            log.exception("on_reconnect handler failed")

    # -- Bus API ---------------------------------------------------------------------------

    async def publish(self, channel: str, message: Outgoing) -> None:
        await self.publish_many([(channel, message)])

    async def publish_many(self, items: Sequence[tuple[str, Outgoing]]) -> None:
        """Add every message in one pipelined round trip, in order.

        A retry after a partial failure re-sends all of them with the same ``mid`` values, so
        readers drop the ones that had already landed.
        """
        # Encoded once: the client sends these bytes as they are, and the buffer counts them.
        entries = [(channel, uuid.uuid4().hex, _encode(message).encode())
                   for channel, message in items]
        if not entries:
            return
        if self._client is None:
            await self.connect()
        client = self._client
        assert client is not None

        async def add_all() -> None:
            expiring = [channel for channel in dict.fromkeys(c for c, _, _ in entries)
                        if channel in self._expiring]
            if len(entries) == 1 and not expiring:  # a plain command costs less than a pipeline
                channel, mid, data = entries[0]
                await client.xadd(self._key(channel), {"mid": mid, "data": data},
                                  maxlen=self._maxlen(channel), approximate=True)
                return
            pipeline = client.pipeline(transaction=False)
            for channel, mid, data in entries:
                pipeline.xadd(self._key(channel), {"mid": mid, "data": data},
                              maxlen=self._maxlen(channel), approximate=True)
            for channel in expiring:  # a re-created stream would otherwise live for ever
                pipeline.pexpire(self._key(channel), self._expiry_ms(channel) or 1)
            await pipeline.execute()

        what = f"publish to {entries[0][0]!r}" + (f" and {len(entries) - 1} more"
                                                   if len(entries) > 1 else "")
        async with self._lock:
            await self._retry(add_all, self._deadline(), what, locked=True)
            for channel, mid, data in entries:
                buffer = self._replay.get(channel)
                if buffer is None:
                    buffer = self._replay[channel] = ReplayBuffer(
                        min(self.replay_window, self._maxlen(channel)), self.replay_bytes)
                buffer.append(mid, data)

    async def claim_session(self, session_id: str, channels: Sequence[str], *,
                            resume: bool = False) -> None:
        """Claim ``session_id`` with one Lua script, so two processes claiming the same id at
        once cannot both win; the marker is a plain string key next to the session's streams."""
        if self._client is None:
            await self.connect()
        client = self._client
        assert client is not None
        keys = [self._key(claim_marker(session_id)), *(self._key(c) for c in channels)]
        token = uuid.uuid4().hex
        script = client.register_script(_CLAIM_SCRIPT)
        refused = await self._retry(
            lambda: script(keys=keys, args=[token, "1" if resume else "0"]),
            self._deadline(), f"claim session {session_id!r}")
        if refused == 1:
            raise SessionIdTaken(session_id, "another session claimed it")
        if refused == 2:
            raise SessionIdTaken(session_id, "its channels hold an earlier run's messages")
        self._claimed[session_id] = frozenset(channels)

    async def expire(self, channels: Sequence[str], after: float) -> None:
        """Give the streams of ``channels`` an expiry ``after`` seconds from now (see the module
        docstring); the bus forgets its re-publish buffers of them then too. The claim markers
        of their sessions get the same expiry."""
        channels = list(dict.fromkeys([*channels, *self._claims_expiring_with(channels)]))
        if not channels:
            return
        if self._client is None:
            await self.connect()
        client = self._client
        assert client is not None
        loop = asyncio.get_running_loop()
        after = max(0.001, after)
        for channel in channels:
            self._expiring[channel] = loop.time() + after

        async def set_all() -> None:
            pipeline = client.pipeline(transaction=False)
            for channel in channels:
                pipeline.pexpire(self._key(channel), self._expiry_ms(channel) or 1)
            await pipeline.execute()

        async with self._lock:
            await self._retry(set_all, self._deadline(), f"expire {channels[0]!r} and "
                              f"{len(channels) - 1} more", locked=True)
        loop.call_later(after, self._forget_buffers, channels)

    def _expiry_ms(self, channel: str) -> int | None:
        """Milliseconds until ``channel``'s stream expires (0: it has), ``None`` if it does not."""
        deadline = self._expiring.get(channel)
        if deadline is None:
            return None
        return max(0, int((deadline - asyncio.get_running_loop().time()) * 1000))

    async def _send_trims(self, due: Due) -> None:
        """Trim each stream in ``due`` to the entries after its consumed position, exactly
        (``MINID``, no ``~``), in one pipeline. Under the publish lock, so no restart is being
        handled meanwhile; positions read from an earlier server are skipped."""
        client = self._client
        if client is None:
            return
        async with self._lock:
            pipeline = client.pipeline(transaction=False)
            for key, ((millis, seq), epoch) in due.items():
                if epoch == self._epoch:  # the first id not consumed is the next one after
                    pipeline.xtrim(key, minid=b"%d-%d" % (millis, seq + 1), approximate=False)
            if len(pipeline):
                await pipeline.execute(raise_on_error=False)

    def _forget_buffers(self, channels: Sequence[str]) -> None:
        for channel in channels:
            self._replay.pop(channel, None)
            if channel.endswith(CLAIM_SUFFIX):
                self._released(channel)

    async def subscribe(self, channel: str, *, from_beginning: bool = False) -> RedisSubscription:
        if self._client is None:
            await self.connect()
        client = self._client
        assert client is not None
        epoch = self._epoch
        start_id = b"0-0"
        if not from_beginning:
            last = await self._retry(
                lambda: client.xrevrange(self._key(channel), count=1),
                self._deadline(),
                f"subscribe to {channel!r}",
            )
            if last:
                newest = last[0][0]
                assert isinstance(newest, bytes)  # the client decodes nothing
                start_id = newest
        if self._epoch != epoch:  # the server restarted meanwhile: that id means nothing now
            start_id = b"0-0"
        subscription = RedisSubscription(self, channel, start_id, from_beginning=from_beginning)
        if self._reader.add(subscription):
            await self._reader.wake()
        return subscription
