"""Local mode: relay a person seat of a session hosted in this process to the panel's browser code.

With no server extension to talk to, the session runs on a :class:`SessionHost` in the kernel's
own event loop. The bridge subscribes to the seat's notification channel and to the agents'
status channel and forwards both as custom widget messages; the browser's actions and ratings
come back the same way and go to the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from cogym_lab.core.messages import obs_channel, status_channel
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.widgets import wire

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], None]


class LocalBridge:
    """Connects one seat (``session_id``, ``role``) of ``host`` to ``send`` (the widget's
    ``send``). Use it from any thread: all work runs on ``loop``, the host's event loop."""

    def __init__(self, host: SessionHost, session_id: str, role: str, send: Send,
                 loop: asyncio.AbstractEventLoop,
                 observer: Callable[[dict[str, Any]], None] | None = None) -> None:
        host.check_seat(session_id, role)  # an unknown session or seat fails here, at once
        self.host = host
        self.session_id = session_id
        self.role = role
        self.send = send
        self.loop = loop
        self.observer = observer  # told of each notification relayed (the panel's last_seq)
        self.latest: dict[str, Any] | None = None  # the last notification relayed
        self.statuses: dict[str, dict[str, Any]] = {}  # agent role -> its last status
        self.relayed = 0
        self._ready = asyncio.Event()  # set once the subscriptions exist (binds to loop lazily)
        self._subscriptions: list[Any] = []
        self._tasks: set[Any] = set()
        self._closed = False
        self._spawn(self._run())

    # -- from the browser ---------------------------------------------------------------------

    def handle(self, content: Any) -> None:
        """A custom message from the panel's browser code."""
        try:
            message = wire.FROM_PANEL.validate_python(content)
        except ValidationError as error:
            self._send(wire.error(f"The panel sent a message the kernel cannot read: "
                                  f"{error.errors()[0]['msg']}"))
            return
        if isinstance(message, wire.Hello):
            self._spawn(self._hello())
        elif isinstance(message, wire.ActionMessage):
            self._spawn(self._act(message))
        else:
            self._spawn(self._rate(message))

    async def _hello(self) -> None:
        """A view opened: give it the agents' statuses and the seat's current state."""
        await self._wait_ready()
        for status in list(self.statuses.values()):
            self._send(wire.status(status))
        try:
            hosted = self.host.get(self.session_id)
            running = hosted.status == "running"
        except HostingError:
            running = False
        if running:
            await self.host.sync(self.session_id, self.role)
        elif self.latest is not None:  # ended: the last state (with the rating form) again
            self._send(wire.notification(self.latest))
        else:
            self._send(wire.error(f"Session {self.session_id} is not running."))

    async def _act(self, message: wire.ActionMessage) -> None:
        try:
            await self.host.act(self.session_id, self.role, message.action, base=message.base)
        except HostingError as error:
            self._send(wire.error(error.message, message.id))

    async def _rate(self, message: wire.RatingMessage) -> None:
        if message.role not in (None, self.role):
            self._send(wire.rating_error(message.id, f"This panel rates as {self.role!r}."))
            return
        try:
            ratings = self.host.rate(self.session_id, self.role, message.outcome_rating,
                                     message.satisfaction, message.comment)
        except HostingError as error:
            self._send(wire.rating_error(message.id, error.message))
            return
        self._send(wire.rated(message.id, ratings))

    # -- to the browser -----------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            hosted = self.host.get(self.session_id)
            if hosted.bus is None:
                return
            notifications = await hosted.bus.subscribe(obs_channel(self.session_id, self.role))
            statuses = await hosted.bus.subscribe(status_channel(self.session_id),
                                                  from_beginning=True)
            self._subscriptions += [notifications, statuses]
        finally:
            self._ready.set()
        await asyncio.gather(self._pump(notifications, self._on_notification),
                             self._pump(statuses, self._on_status))

    async def _wait_ready(self) -> None:
        await self._ready.wait()

    async def _pump(self, subscription: Any, forward: Callable[[dict[str, Any]], None]) -> None:
        async for message in subscription:
            forward(message)

    def _on_notification(self, message: dict[str, Any]) -> None:
        self.latest = message
        self.relayed += 1
        if self.observer is not None:
            try:
                self.observer(message)
            except Exception:
                log.warning("the panel's observer failed", exc_info=True)
        self._send(wire.notification(message))

    def _on_status(self, message: dict[str, Any]) -> None:
        if isinstance(message.get("role"), str):
            self.statuses[message["role"]] = message
        self._send(wire.status(message))

    def _send(self, content: dict[str, Any]) -> None:
        if self._closed:
            return
        try:
            self.send(content)
        except Exception:  # a closed comm must not stop the relay
            log.warning("could not send a message to the panel", exc_info=True)

    # -- life cycle ---------------------------------------------------------------------------

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        # A task in the loop we run in; a concurrent future when called from another thread.
        task: Any = (self.loop.create_task(coroutine) if running is self.loop
                     else asyncio.run_coroutine_threadsafe(coroutine, self.loop))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: Any) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("panel relay task failed", exc_info=task.exception())

    def close(self) -> None:
        """Stop relaying (the widget was closed)."""
        if self._closed:
            return
        self._closed = True

        async def stop() -> None:
            for subscription in self._subscriptions:
                await subscription.close()

        with contextlib.suppress(RuntimeError):  # the loop is closed already
            self._spawn(stop())
