"""Local mode: relay a person seat of a session hosted in this process to the panel's browser code.

With no server extension to talk to, the session runs on a :class:`SessionHost` in the kernel's
own event loop. The bridge subscribes to the seat's notification channel and to the agents'
status channel and forwards both as custom widget messages; the browser's actions and ratings
come back the same way and go to the host.

A bridge counts as a panel of its seat from the moment it is made until it is closed (see
``SessionHost.panel_opened``): a session whose panels are all closed ends after the host's grace
period.

A read-only bridge (``readonly=True``, watch mode) follows any member instead, an agent or a
simulated user included: it relays that member's notifications and the agents' statuses, refuses
every action and rating, and is not counted as a person's panel (nobody sits at that seat).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import Update
from cogym_lab.runtime.hosting import HostedSession, HostingError, SessionHost
from cogym_lab.widgets import wire

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], None]

#: What a read-only panel answers to an action or a rating, in plain words.
READ_ONLY_REFUSAL = ("This panel only watches {role}: it takes no actions. Join the session "
                     "with a person seat to act.")


def check_member(host: SessionHost, session_id: str, role: Any) -> HostedSession:
    """The running (or ended) session whose member ``role`` a watcher may follow; ``HostingError``
    (404 for an unknown session, 400 for a role that is no member) otherwise."""
    hosted = host.get(session_id)
    members = [member.role for member in hosted.session.team]
    if not isinstance(role, str) or role not in members:
        shown = ", ".join(members) or "none"
        raise HostingError(f"{role!r} is not a member of session {session_id!r} (its members: "
                           f"{shown}).", status=400)
    return hosted


class LocalBridge:
    """Connects one seat (``session_id``, ``role``) of ``host`` to ``send`` (the widget's
    ``send``). Use it from any thread: all work runs on ``loop``, the host's event loop.

    ``readonly``: watch member ``role`` (any member) without acting; see the module docstring.
    """

    def __init__(self, host: SessionHost, session_id: str, role: str, send: Send,
                 loop: asyncio.AbstractEventLoop,
                 observer: Callable[[dict[str, Any]], None] | None = None,
                 readonly: bool = False) -> None:
        # An unknown session, seat or member fails here, at once.
        if readonly:
            check_member(host, session_id, role)
        else:
            host.check_seat(session_id, role)
        self.readonly = readonly
        self.host = host
        self.session_id = session_id
        self.role = role
        self.send = send
        self.loop = loop
        self.observer = observer  # told of each notification relayed (the panel's last_seq)
        # The seat's state as the relayed updates built it: the last update, and the copy.
        self._copy = MemberCopy(role)
        self._last: Update | None = None
        self.statuses: dict[str, dict[str, Any]] = {}  # agent role -> its last status
        self.relayed = 0
        self._ready = asyncio.Event()  # set once the subscriptions exist (binds to loop lazily)
        self._subscriptions: list[Any] = []
        self._tasks: set[Any] = set()
        self._closed = False
        self._counted = False  # whether the host counts this bridge as an open panel
        if not readonly:  # a watcher is nobody at a seat: it must not keep a session going
            # On the host's loop, as the host wants; in order, so the count comes before any
            # close.
            loop.call_soon_threadsafe(self._count_open)
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
        elif self.readonly:  # refused here, before anything reaches the host
            refusal = READ_ONLY_REFUSAL.format(role=self.role)
            if isinstance(message, wire.ActionMessage):
                self._send(wire.error(refusal, message.id))
            elif isinstance(message, wire.PairwiseRequest):
                self._send(wire.pairwise_error(message.id, refusal))
            else:
                self._send(wire.rating_error(message.id, refusal))
        elif isinstance(message, wire.ActionMessage):
            self._spawn(self._act(message))
        elif isinstance(message, wire.PairwiseRequest):
            self._spawn(self._pairwise(message))
        else:
            self._spawn(self._rate(message))

    async def _hello(self) -> None:
        """A view opened: give it the agents' statuses and the seat's current state."""
        await self._wait_ready()
        for status in list(self.statuses.values()):
            self._send(wire.status(status))
        if self.readonly:
            await self._watch_hello()
            return
        try:
            hosted = self.host.get(self.session_id)
            running = hosted.status == "running"
        except HostingError:
            running = False
        if running:
            await self.host.sync(self.session_id, self.role)
        elif self._last is not None:  # ended: the last state (with the rating form) again
            self._send(wire.notification(
                self._copy.whole_update(self._last).model_dump(mode="json")))
        else:
            self._send(wire.error(f"Session {self.session_id} is not running."))

    async def _watch_hello(self) -> None:
        """A read-only view opened: the member's current state, built without a sync (see
        :meth:`SessionHost.watched`); the member's next notifications follow on the relay."""
        try:
            state = self.host.watched(self.session_id, self.role)
        except HostingError as error:
            self._send(wire.error(error.message))
            return
        if state is not None:
            self._on_notification(state)

    async def _act(self, message: wire.ActionMessage) -> None:
        """Pass the action on; tell the panel if the env did not apply it (the session ended
        first), as for an action the host refused at once."""
        try:
            submitted = await self.host.submit(self.session_id, self.role, message.action,
                                               base=message.base, seen_seq=message.seen_seq)
        except HostingError as error:
            self._send(wire.error(error.message, message.id))
            return
        settled = await submitted.settled()
        if settled is not None and not settled.applied:
            self._send(wire.error(settled.message or "The action was not applied.", message.id))

    async def _rate(self, message: wire.RatingMessage) -> None:
        if message.role not in (None, self.role):
            self._send(wire.rating_error(message.id, f"This panel rates as {self.role!r}."))
            return
        try:
            ratings = self.host.rate(self.session_id, self.role, message.outcome_rating,
                                     message.satisfaction, message.comment,
                                     likert=message.likert(),
                                     pairwise=message.pairwise,
                                     pairwise_order=message.pairwise_order)
        except HostingError as error:
            self._send(wire.rating_error(message.id, error.message))
            return
        self._send(wire.rated(message.id, ratings))

    async def _pairwise(self, message: wire.PairwiseRequest) -> None:
        try:
            offer = await self.host.pairwise_offer(self.session_id, self.role)
        except HostingError as error:
            self._send(wire.pairwise_error(message.id, error.message))
            return
        self._send(wire.pairwise_offer(message.id, offer.model_dump(mode="json")))

    # -- to the browser -----------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            feed = await self.host.follow(self.session_id, self.role)
            if feed is None:
                return
            self._subscriptions += [feed.updates, feed.statuses]
        finally:
            self._ready.set()
        await asyncio.gather(self._pump(feed.updates, self._on_notification),
                             self._pump(feed.statuses, self._on_status))

    async def _wait_ready(self) -> None:
        await self._ready.wait()

    async def _pump(self, subscription: Any, forward: Callable[[dict[str, Any]], None]) -> None:
        async for message in subscription:
            forward(message)

    @property
    def latest(self) -> dict[str, Any] | None:
        """What the seat was last shown, as a whole notification in JSON (``None`` before
        anything was relayed)."""
        if self._last is None:
            return None
        return self._copy.notification(self._last).model_dump(mode="json")

    def _on_notification(self, message: dict[str, Any]) -> None:
        self._keep(message)
        self.relayed += 1
        if self.observer is not None:
            try:
                self.observer(message)
            except Exception:
                log.warning("the panel's observer failed", exc_info=True)
        self._send(wire.notification(message))

    def _keep(self, message: dict[str, Any]) -> None:
        """Apply a relayed update to the bridge's copy (the browser keeps its own)."""
        try:
            update = Update.model_validate(message)
            if self._copy.apply(update) is not None:
                self._last = update
        except (ValidationError, OutOfSync) as problem:  # the browser asks for a sync itself
            log.debug("the panel relay's copy missed an update: %s", problem)

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

    def _count_open(self) -> None:
        if self._closed:  # closed before the loop got here: never counted
            return
        self.host.panel_opened(self.session_id, self.role)
        self._counted = True

    def _count_closed(self) -> None:
        if self._counted:
            self._counted = False
            self.host.panel_closed(self.session_id, self.role)

    def close(self) -> None:
        """Stop relaying (the widget was closed)."""
        if self._closed:
            return
        self._closed = True

        async def stop() -> None:
            self._count_closed()
            for subscription in self._subscriptions:
                await subscription.close()

        with contextlib.suppress(RuntimeError):  # the loop is closed already
            self._spawn(stop())
