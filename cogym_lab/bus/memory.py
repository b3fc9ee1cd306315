"""In-process transport: asyncio queues, no dependencies. The default bus."""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque

from cogym_lab.bus.base import Bus, Message, Outgoing, Subscription, as_message, next_from

_CLOSED = object()


class MemorySubscription(Subscription):
    def __init__(self, bus: MemoryBus, channel: str) -> None:
        self.channel = channel
        self._bus = bus
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._closed = False

    def _put(self, message: object) -> None:
        self._queue.put_nowait(message)

    async def get(self, timeout: float | None = None) -> Message | None:
        if self._closed and self._queue.empty():
            return None
        item = await next_from(self._queue, timeout)
        if item is None:
            return None
        if item is _CLOSED:
            self._closed = True
            return None
        return item  # type: ignore[return-value]

    async def close(self) -> None:
        if not self._closed:
            self._bus._subscribers[self.channel].discard(self)
            self._closed = True
            self._put(_CLOSED)


class MemoryBus(Bus):
    """Fan-out through per-subscription queues inside one event loop.

    Messages are passed by reference: receivers must treat them as read-only.
    Each channel keeps its last ``history`` messages for ``from_beginning`` subscribers; keep it
    small, since every kept message stays alive for the garbage collector to scan.
    """

    def __init__(self, history: int = 256) -> None:
        super().__init__()
        self._subscribers: defaultdict[str, set[MemorySubscription]] = defaultdict(set)
        self._history: defaultdict[str, deque[Message]] = defaultdict(lambda: deque(maxlen=history))

    async def publish(self, channel: str, message: Outgoing) -> None:
        message = as_message(message)
        self._history[channel].append(message)
        for subscription in self._subscribers.get(channel, ()):
            subscription._put(message)

    async def subscribe(self, channel: str, *, from_beginning: bool = False) -> MemorySubscription:
        subscription = MemorySubscription(self, channel)
        if from_beginning:
            for message in self._history.get(channel, ()):
                subscription._put(message)
        self._subscribers[channel].add(subscription)
        return subscription

    async def close(self) -> None:
        for subscriptions in list(self._subscribers.values()):
            for subscription in list(subscriptions):
                await subscription.close()
        self._subscribers.clear()
