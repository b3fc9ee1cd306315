"""The host's side of the env's answers to actions (:mod:`cogym_lab.core.settlements`).

The host keeps a future for every action it publishes to a session (:class:`Settlements`). The
env node's :class:`~cogym_lab.core.settlements.Settlement` resolves it. Once the env node says it
reads no more (:class:`~cogym_lab.core.settlements.StepsClosed`), or the session's run is over
whatever happened to the node, every future still pending is answered refused (``interrupted``
for a session that was interrupted), and later actions are refused before they are published.
So a person's action is answered in every case: applied (its event is in the log) or not, and
why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from cogym_lab.bus import Bus, Subscription
from cogym_lab.core.deadline import within
from cogym_lab.core.messages import StepRequest
from cogym_lab.core.settlements import SETTLED, Settlement, StepsClosed, settled_channel

log = logging.getLogger(__name__)


@dataclass
class Submitted:
    """An action the host published, and the future the env's answer resolves."""

    request: StepRequest
    outcome: asyncio.Future[Settlement] | None = None  # None: nobody answers (no settlements)

    async def settled(self, wait: float | None = None) -> Settlement | None:
        """The answer, or ``None`` if it did not come within ``wait`` seconds (``None``: wait
        until it comes; it always does, at the latest when the session's run is over)."""
        if self.outcome is None:
            return None
        try:
            return await within(wait, asyncio.shield(self.outcome))
        except TimeoutError:
            return None


class Settlements:
    """The pending answers to one session's actions. Use it on the host's loop."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        #: Set once no answer will come any more: later actions are refused with its message.
        self.closed: StepsClosed | None = None
        self._pending: dict[str, tuple[str, asyncio.Future[Settlement]]] = {}
        self._heard_closed = asyncio.Event()  # the env node's last word came
        self._subscription: Subscription | None = None
        self._listener: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        """How many published actions wait for their answer."""
        return len(self._pending)

    async def start(self, bus: Bus) -> None:
        """Follow the session's answers; before any action is published."""
        self._subscription = await bus.subscribe(settled_channel(self.session_id))
        self._listener = asyncio.create_task(self._listen(self._subscription))

    def expect(self, request: StepRequest) -> asyncio.Future[Settlement]:
        """The future of ``request``'s answer; call it before publishing ``request``."""
        future: asyncio.Future[Settlement] = asyncio.get_running_loop().create_future()
        if self.closed is not None:
            future.set_result(self.closed.settle(request.id, request.role))
        else:
            self._pending[request.id] = (request.role, future)
        return future

    def forget(self, request_id: str) -> None:
        """``request_id`` was not published after all (the transport failed)."""
        self._pending.pop(request_id, None)

    async def last_word(self, timeout: float) -> bool:
        """Wait (up to ``timeout`` seconds) for the env node's :class:`StepsClosed`, which comes
        after all its answers; whether it came."""
        try:
            async with asyncio.timeout(timeout):
                await self._heard_closed.wait()
        except TimeoutError:
            return False
        return True

    def close(self, closed: StepsClosed, known: Mapping[str, Settlement] | None = None) -> None:
        """No answer comes any more: refuse every pending action with ``closed``'s words (the
        first closing's, when the env node's came before the run's end), but for those whose
        answer is ``known`` already (answers the env node could not publish)."""
        if self.closed is None:
            self.closed = closed
        pending, self._pending = self._pending, {}
        for request_id, (role, future) in pending.items():
            if not future.done():
                answer = (known or {}).get(request_id)
                future.set_result(answer or self.closed.settle(request_id, role))

    async def stop(self) -> None:
        """Stop following the answers (the session's bus is about to close), and let go of
        the bus: an ended session keeps only :attr:`closed`."""
        listener, self._listener = self._listener, None
        subscription, self._subscription = self._subscription, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await listener
        if subscription is not None:
            with contextlib.suppress(Exception):
                await subscription.close()

    async def _listen(self, subscription: Subscription) -> None:
        async for message in subscription:
            try:
                answer = SETTLED.validate_python(message)
            except ValidationError as error:
                log.warning("session %s: ignoring a malformed settlement: %s", self.session_id,
                            error.errors()[:1])
                continue
            if isinstance(answer, StepsClosed):
                self.close(answer)
                self._heard_closed.set()
                return
            entry = self._pending.pop(answer.request_id, None)
            if entry is not None and not entry[1].done():
                entry[1].set_result(answer)
