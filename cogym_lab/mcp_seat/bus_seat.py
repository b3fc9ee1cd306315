"""A seat over a session's bus: the member's side of the notification protocol, for a member
that is driven from outside (an MCP client) rather than by an object with ``act``.

It does what a member node does for its member (:mod:`cogym_lab.nodes.member_node`): joins,
keeps the seat's copy of its view and chat from the env's updates (asking for a sync when one
was missed or the bus reconnected), and sends actions as the seat's role. It does not wait for
notifications to act: the outside agent acts when it chooses, and each action is answered with
the env's settlement (:mod:`cogym_lab.core.settlements`), so a refused or failed action is never
silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import Any

from pydantic import ValidationError

from cogym_lab.bus import Bus, Subscription
from cogym_lab.core.collaboration import NOT_ECHOED
from cogym_lab.core.deadline import within
from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import (
    Event,
    EventType,
    Notification,
    SessionContext,
    StepRequest,
    Update,
    obs_channel,
    step_channel,
)
from cogym_lab.mcp_seat.seat import ActOutcome, News, Seat, SeatError
from cogym_lab.runtime.settlements import Settlements

log = logging.getLogger(__name__)

#: Seconds an action's answer waits for the seat's own notification of it (the view after it).
ECHO_WAIT = 2.0
#: Seconds before a seat that missed an update asks for a sync again, if none came.
SYNC_RETRY_SECONDS = 5.0
#: Events the seat remembers for news; an agent that looks less often gets the newest only.
KEPT_EVENTS = 2000
#: Request ids of the seat's own actions it remembers, to tell its echoes from news.
KEPT_REQUESTS = 1000


class BusSeat(Seat):
    """``role``'s seat in session ``session_id`` on ``bus``. ``start()`` joins; ``close()``
    lets go of the subscriptions (the session goes on)."""

    def __init__(self, bus: Bus, session_id: str, role: str) -> None:
        self.bus = bus
        self.session_id = session_id
        self.role = role
        self.settlements = Settlements(session_id)
        self.stats = {"updates": 0, "syncs_asked": 0, "actions_sent": 0}
        self._copy = MemberCopy(role)
        self._current: Notification | None = None
        self._context: SessionContext | None = None
        self._events: deque[Event] = deque(maxlen=KEPT_EVENTS)
        self._sent: deque[str] = deque(maxlen=KEPT_REQUESTS)
        self._echoes: dict[str, asyncio.Future[Event]] = {}
        self._changed = asyncio.Event()
        self._gap_asked_at: float | None = None
        self._subscription: Subscription | None = None
        self._receiver: asyncio.Task[None] | None = None

    # -- joining and leaving ------------------------------------------------------------------

    async def start(self) -> None:
        """Follow the seat's updates and the env's answers, then join the session."""
        self._subscription = await self.bus.subscribe(obs_channel(self.session_id, self.role))
        await self.settlements.start(self.bus)
        self.bus.on_reconnect(self.request_sync)
        self._receiver = asyncio.create_task(self._receive(self._subscription))
        await self._send(StepRequest(role=self.role, kind="join"))

    async def close(self) -> None:
        """Stop following the session (it goes on without this seat's client)."""
        receiver, self._receiver = self._receiver, None
        if receiver is not None:
            receiver.cancel()
            await asyncio.gather(receiver, return_exceptions=True)
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            with contextlib.suppress(Exception):
                await subscription.close()
        await self.settlements.stop()

    async def request_sync(self) -> None:
        """Ask the env for the seat's current state (after a reconnect or a missed update)."""
        self.stats["syncs_asked"] += 1
        await self._send(StepRequest(role=self.role, kind="sync"))

    # -- the Seat interface -------------------------------------------------------------------

    async def ready(self, timeout: float) -> SessionContext:
        deadline = time.monotonic() + timeout
        while self._context is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SeatError(f"Session {self.session_id} did not start within {timeout:g} s.")
            await self._wait_for_change(remaining)
        return self._context

    @property
    def context(self) -> SessionContext | None:
        return self._context

    @property
    def current(self) -> Notification | None:
        return self._current

    async def act(self, action: dict[str, Any], *, timeout: float = 60.0,
                  seen_seq: int | None = None) -> ActOutcome:
        """Send ``action`` as the seat's role; ``seen_seq``: the update the agent acted on, so
        that a whole-text replacement made on an older view is merged with the edits made
        since, not written over them."""
        request = StepRequest(role=self.role, action=action, seen_seq=seen_seq)
        loop = asyncio.get_running_loop()
        outcome = self.settlements.expect(request)
        echo: asyncio.Future[Event] = loop.create_future()
        self._echoes[request.id] = echo
        self._sent.append(request.id)
        try:
            try:
                await self._send(request)
            except BaseException:
                self.settlements.forget(request.id)
                raise
            self.stats["actions_sent"] += 1
            try:
                settlement = await within(timeout, asyncio.shield(outcome))
            except TimeoutError:
                return ActOutcome(None)
            event = None
            if settlement.applied and action.get("name") not in NOT_ECHOED:
                with contextlib.suppress(TimeoutError):
                    event = await within(ECHO_WAIT, asyncio.shield(echo))
            return ActOutcome(settlement, event)
        finally:
            self._echoes.pop(request.id, None)

    def news_since(self, seq: int) -> News:
        own = set(self._sent)
        events = [event for event in self._events
                  if event.seq > seq and event.request_id not in own]
        chat = self._current.chat if self._current is not None else []
        messages = [m for m in chat if m.seq > seq and m.sender != self.role]
        return News(events, messages)

    async def wait_for_news(self, seq: int, timeout: float) -> News:
        deadline = time.monotonic() + timeout
        while True:
            news = self.news_since(seq)
            remaining = deadline - time.monotonic()
            if news or remaining <= 0 or self.ended:
                return news
            await self._wait_for_change(remaining)

    # -- receiving ----------------------------------------------------------------------------

    async def _wait_for_change(self, timeout: float) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._changed.wait()

    async def _receive(self, subscription: Subscription) -> None:
        async for message in subscription:
            try:
                update = Update.model_validate(message)
            except ValidationError as error:
                log.warning("%s: ignoring a malformed update: %s", self.role, error.errors()[:1])
                continue
            notification = await self._apply(update)
            if notification is not None:
                self._take(notification)

    async def _apply(self, update: Update) -> Notification | None:
        try:
            return self._copy.apply(update)
        except OutOfSync as gap:
            now = time.monotonic()
            if self._gap_asked_at is None or now - self._gap_asked_at > SYNC_RETRY_SECONDS:
                log.info("%s: %s; asking for a sync", self.role, gap)
                self._gap_asked_at = now
                await self.request_sync()
            return None
        finally:
            if not self._copy.out_of_sync:
                self._gap_asked_at = None

    def _take(self, notification: Notification) -> None:
        self.stats["updates"] += 1
        self._current = notification
        if notification.context is not None:
            self._context = notification.context
        event = notification.event
        if event.type is not EventType.SYNC:
            self._events.append(event)
        echo = self._echoes.get(event.request_id or "")
        if echo is not None and not echo.done():
            echo.set_result(event)
        self._changed.set()

    async def _send(self, request: StepRequest) -> None:
        await self.bus.publish(step_channel(self.session_id), request.model_dump(mode="json"))


__all__ = ["ECHO_WAIT", "BusSeat"]
