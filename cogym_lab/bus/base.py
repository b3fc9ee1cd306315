"""The bus: one small async interface that every node talks through.

A bus moves JSON-compatible dicts along named channels. Publishers may also hand it a pydantic
model: a network transport then encodes it straight to JSON (in pydantic's compiled code) and
receivers still get a dict. Nodes never know which transport
carries them; the contract tests in ``tests/bus/test_bus_contract.py`` run on every transport.

Guarantees every transport gives:

* messages published by one bus object to one channel arrive in publish order;
* every subscription to a channel receives every message published after ``subscribe``
  returned (fan-out); with ``from_beginning=True`` it also receives the channel's history;
* ``publish`` returns once the message is accepted by the transport, and never drops it silently;
* a subscription's reader may say it is done with a channel's messages up to one it got
  (:meth:`Subscription.consumed`); a transport may then drop them from the channel's history,
  and never drops one that subscription was not given yet;
* a session id is claimed once (:meth:`Bus.claim_session`): a second session under an id that
  is claimed, or whose channels already hold history, is refused with :class:`SessionIdTaken`.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pydantic import BaseModel

from cogym_lab.errors import CogymError

Message = dict[str, Any]
Outgoing = Message | BaseModel  # what may be published; subscribers always receive a Message
ReconnectHandler = Callable[[], Any]


def as_message(message: Outgoing) -> Message:
    """The dict a subscriber receives for ``message``."""
    return message.model_dump(mode="json") if isinstance(message, BaseModel) else message


class BusError(CogymError, RuntimeError):
    """The transport failed in a way the bus could not recover from."""


class SessionIdTaken(BusError):
    """A session tried to start under an id that already has history on the transport."""

    def __init__(self, session_id: str, why: str) -> None:
        super().__init__(
            f"Session id {session_id!r} is already taken on this bus ({why}). A new session "
            "needs an id of its own (cogym_lab.nodes.new_session_id() makes one); an interrupted "
            "session is carried on by resuming it.")
        self.session_id = session_id


CLAIM_SUFFIX = "/.claim"


def claim_marker(session_id: str) -> str:
    """The name under which a transport records that ``session_id`` was claimed. It sits next to
    the session's channels (``<session>/step``, ``<session>/<role>/obs``, ...) and ends in a
    name no role or channel kind uses, so no subscriber ever reads it."""
    return session_id + CLAIM_SUFFIX


async def next_from(queue: asyncio.Queue[object], timeout: float | None) -> object | None:
    """The next queued item, or ``None`` after ``timeout`` seconds.

    Cheaper than ``asyncio.wait_for``, which starts a task per call: this sits on every hop.
    """
    if not queue.empty():
        return queue.get_nowait()
    try:
        async with asyncio.timeout(timeout):
            return await queue.get()
    except TimeoutError:
        return None


class Subscription(abc.ABC):
    """A stream of messages from one channel, in order."""

    channel: str

    @abc.abstractmethod
    async def get(self, timeout: float | None = None) -> Message | None:
        """Return the next message, or ``None`` if ``timeout`` seconds pass first."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop receiving. Pending messages are discarded."""

    def consumed(self, message: Message) -> None:  # noqa: B027 - optional for a transport
        """Say that ``message`` (one :meth:`get` returned) and every message before it on the
        channel are done with: nobody needs them from the channel's history again. The
        transport may drop them from it, now or a little later (in batches: this never waits).
        It must be one of the last 64 messages :meth:`get` returned (the reader says it as it
        is done with each, so it is the last).

        Meant for a channel's one reader (the env node and its step channel). A message this
        subscription was not given yet is never dropped, whatever is handed back; nothing is
        when the subscription was not made from the channel's beginning (it was never given the
        history before it), nor when ``message`` is not one it returned recently (matched by
        identity, so the reader must still hold it). A transport that keeps no history has
        nothing to do.
        """

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        while True:
            message = await self.get()
            if message is None:  # only on close
                return
            yield message


class Bus(abc.ABC):
    """A message bus shared by the nodes of one or more sessions."""

    def __init__(self) -> None:
        self._reconnect_handlers: list[ReconnectHandler] = []
        #: session id -> the channels checked when this bus object claimed it (see ``expire``)
        self._claimed: dict[str, frozenset[str]] = {}

    async def connect(self) -> None:  # noqa: B027 - optional hook
        """Open connections. Called once before use; idempotent."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and end all subscriptions."""

    @abc.abstractmethod
    async def publish(self, channel: str, message: Outgoing) -> None:
        """Deliver ``message`` to every current subscriber of ``channel``."""

    async def publish_many(self, items: Sequence[tuple[str, Outgoing]]) -> None:
        """Publish several messages, in order. Transports may batch them into one round trip."""
        for channel, message in items:
            await self.publish(channel, message)

    @abc.abstractmethod
    async def subscribe(self, channel: str, *, from_beginning: bool = False) -> Subscription:
        """Start receiving ``channel``. Messages published after this returns are never missed."""

    async def expire(self, channels: Sequence[str], after: float) -> None:  # noqa: B027
        """Delete ``channels`` and their history ``after`` seconds from now (a finished
        session's channels hold its members' private views). Current subscriptions are left
        alone; a message published later still arrives. A transport that keeps nothing has
        nothing to do."""

    @abc.abstractmethod
    async def claim_session(self, session_id: str, channels: Sequence[str], *,
                            resume: bool = False) -> None:
        """Take ``session_id`` for one new session before it publishes anything of its own.

        Raises :class:`SessionIdTaken` (naming the id) when the id was claimed before on this
        transport, by any bus object in any process, or when one of ``channels`` (those only the
        session itself writes: its members' notification channels) already holds history, as
        the channels of a run made before claims existed do. Without it a reused id would start
        a session on top of the old one's streams, and its env node, which reads the step
        channel from the beginning, would apply the old run's steps again.

        ``resume=True`` is for a session that carries on its own earlier run (restored from its
        log): it takes the id over whatever it holds.

        A claim lasts as long as its channels: once ``expire`` was asked for any of
        ``channels`` and they are gone, the id is free again (nothing of the old run is left to
        replay).
        """

    def _claims_expiring_with(self, channels: Sequence[str]) -> list[str]:
        """The claim markers of the sessions this bus claimed whose channels ``channels`` hold:
        they expire with them (a claim outliving its history would only leak a key)."""
        expiring = set(channels)
        return [claim_marker(session_id) for session_id, claimed in self._claimed.items()
                if claimed & expiring]

    def _released(self, marker: str) -> None:
        """Forget what this bus remembered of a claim whose marker expired."""
        self._claimed.pop(marker.removesuffix(CLAIM_SUFFIX), None)

    def on_reconnect(self, handler: ReconnectHandler) -> None:
        """Call ``handler`` after the transport lost and regained its server.

        Nodes use it to resync: a member asks the env for the current state.
        The handler may be a coroutine function.
        """
        self._reconnect_handlers.append(handler)

    async def _fire_reconnect(self) -> None:
        for handler in list(self._reconnect_handlers):
            result = handler()
            if hasattr(result, "__await__"):
                await result

    async def __aenter__(self) -> Bus:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
