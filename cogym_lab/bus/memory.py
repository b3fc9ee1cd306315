"""In-process transport: asyncio queues, no dependencies. The default bus."""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence

from cogym_lab.bus.base import (
    Bus,
    Message,
    Outgoing,
    SessionIdTaken,
    Subscription,
    as_message,
    claim_marker,
    next_from,
)
from cogym_lab.bus.given import GivenPositions

_CLOSED = object()

#: History depths by channel-name suffix (see :class:`MemoryBus`).
DEFAULT_DEPTHS: dict[str, int] = {"/step": 65_536, "/obs": 1, "/settled": 0}


class MemorySubscription(Subscription):
    def __init__(self, bus: MemoryBus, channel: str, *, trims: bool) -> None:
        self.channel = channel
        self._bus = bus
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._closed = False
        self._trims = trims  # given the whole history: may drop what it consumed
        self._given = GivenPositions()

    def _put(self, item: tuple[int, Message] | object) -> None:
        self._queue.put_nowait(item)

    async def get(self, timeout: float | None = None) -> Message | None:
        if self._closed and self._queue.empty():
            return None
        item = await next_from(self._queue, timeout)
        if item is None:
            return None
        if item is _CLOSED:
            self._closed = True
            return None
        assert isinstance(item, tuple)  # the queue holds (number, message) pairs and _CLOSED
        number, message = item
        if self._trims:
            self._given.add(message, number)
        return message

    def consumed(self, message: Message) -> None:
        """Drop ``message`` and every older one from the channel's kept history (see
        :meth:`Subscription.consumed`)."""
        if not self._trims:
            return
        number = self._given.take_through(message)
        if isinstance(number, int):
            self._bus._drop_through(self.channel, number)

    async def close(self) -> None:
        if not self._closed:
            self._bus._subscribers[self.channel].discard(self)
            self._closed = True
            self._put(_CLOSED)


class MemoryBus(Bus):
    """Fan-out through per-subscription queues inside one event loop.

    Messages are passed by reference: receivers must treat them as read-only.

    Each channel keeps its last ``history`` messages for ``from_beginning`` subscribers; keep it
    small, since every kept message stays alive for the garbage collector to scan. ``depths``
    sets another depth for the channels whose names end with a given suffix; by default those
    of the sessions' channels (``cogym_lab.core.messages``) that differ:

    * a step channel (``{session}/step``) is a queue, not a broadcast: every member writes its
      small requests to it and its one reader, the env node, may subscribe after they did (a
      host joins every seat before the session runs), so it keeps 65,536, or a session with
      many seats would lose joins;
    * a member's notifications (``{session}/{role}/obs``) are large (each a full view) and read
      live, never from the beginning (a member that (re)joins asks for a sync), so each keeps
      only its latest: 256 of every seat's would grow a session of thousands of seats by
      gigabytes;
    * the env's answers to the steps (``{session}/settled``) are read live by whoever sent them,
      who subscribes before sending: none is kept.

    A subscription's :meth:`~MemorySubscription.consumed` drops what its reader is done with
    from the kept history at once: the env node says so of every step once it is in the
    session's log, so a step channel keeps only the steps not yet logged.
    """

    def __init__(self, history: int = 256, *,
                 depths: Mapping[str, int] | None = None) -> None:
        super().__init__()
        self.history = history
        self.depths = dict(DEFAULT_DEPTHS if depths is None else depths)
        self._subscribers: defaultdict[str, set[MemorySubscription]] = defaultdict(set)
        #: channel -> its kept messages, each with its number on the channel (1, 2, ...)
        self._history: dict[str, deque[tuple[int, Message]]] = {}
        self._numbers: dict[str, int] = {}  # channel -> the number of its last message
        self._expiries: list[asyncio.TimerHandle] = []
        self._expired: set[str] = set()  # channels whose history is gone and stays gone
        self._claims: set[str] = set()  # claim markers of the session ids taken on this bus

    def _kept(self, channel: str) -> deque[tuple[int, Message]]:
        kept = self._history.get(channel)
        if kept is None:
            depth = next((depth for suffix, depth in self.depths.items()
                          if channel.endswith(suffix)), self.history)
            kept = self._history[channel] = deque(maxlen=depth)
        return kept

    async def publish(self, channel: str, message: Outgoing) -> None:
        message = as_message(message)
        number = self._numbers[channel] = self._numbers.get(channel, 0) + 1
        item = (number, message)
        if channel not in self._expired:  # a straggler after the expiry reaches live readers only
            self._kept(channel).append(item)
        for subscription in self._subscribers.get(channel, ()):
            subscription._put(item)

    async def subscribe(self, channel: str, *, from_beginning: bool = False) -> MemorySubscription:
        # Given everything kept: its consumed() may drop history.
        subscription = MemorySubscription(self, channel, trims=from_beginning)
        if from_beginning:
            for item in self._history.get(channel, ()):
                subscription._put(item)
        self._subscribers[channel].add(subscription)
        return subscription

    def _drop_through(self, channel: str, number: int) -> None:
        """Forget ``channel``'s kept messages up to and including the ``number``-th."""
        kept = self._history.get(channel)
        while kept and kept[0][0] <= number:
            kept.popleft()

    async def claim_session(self, session_id: str, channels: Sequence[str], *,
                            resume: bool = False) -> None:
        marker = claim_marker(session_id)
        if not resume:
            if marker in self._claims:
                raise SessionIdTaken(session_id, "another session claimed it")
            if any(self._history.get(channel) for channel in channels):
                raise SessionIdTaken(session_id, "its channels hold an earlier run's messages")
        self._claims.add(marker)
        self._claimed[session_id] = frozenset(channels)

    async def expire(self, channels: Sequence[str], after: float) -> None:
        """Forget the history of ``channels`` after ``after`` seconds, and keep none for them
        from then on (a bus shared by many sessions would otherwise keep every finished
        session's last notifications). The claims of their sessions go with them."""
        channels = [*channels, *self._claims_expiring_with(channels)]
        self._expiries.append(asyncio.get_running_loop().call_later(
            max(0.0, after), self._forget, tuple(channels)))

    def _forget(self, channels: tuple[str, ...]) -> None:
        for channel in channels:
            if channel in self._claims:  # a claim marker: the id is free again
                self._claims.discard(channel)
                self._released(channel)
                continue
            self._history.pop(channel, None)
            self._numbers.pop(channel, None)
            self._expired.add(channel)
            if not self._subscribers.get(channel):
                self._subscribers.pop(channel, None)

    async def close(self) -> None:
        for expiry in self._expiries:
            expiry.cancel()
        self._expiries.clear()
        for subscriptions in list(self._subscribers.values()):
            for subscription in list(subscriptions):
                await subscription.close()
        self._subscribers.clear()
