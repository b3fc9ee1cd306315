"""Trims of Redis streams that readers consumed, gathered and sent in batches.

A reader says it consumed an entry at every step it handles; one ``XTRIM`` per step would add a
round trip to the hot path. The trimmer keeps only the furthest position asked for per stream
and sends them all together, in one pipeline, ``interval`` seconds after the first one it was
given: at most one round trip per interval however fast the steps come.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

#: A stream's key -> (the position of the last consumed entry, the restart epoch it was read in).
Due = dict[str, tuple[tuple[int, int], int]]


class StreamTrimmer:
    """Collects ``trim_through(key, position, epoch)`` calls and hands them to ``send`` in
    batches, from one background task. ``send`` is the transport's: it must skip the positions
    of another epoch (read from a server that restarted since), and a batch it fails to send is
    dropped (the next consumed entry's trim covers everything before it)."""

    def __init__(self, send: Callable[[Due], Awaitable[None]], interval: float) -> None:
        self._send = send
        self.interval = interval
        self._due: Due = {}
        self._task: asyncio.Task[None] | None = None
        self.sent_batches = 0  # for the figures: how many round trips trimming took

    def trim_through(self, key: str, position: tuple[int, int], epoch: int) -> None:
        """Trim ``key`` up to and including ``position`` soon. Never waits."""
        held = self._due.get(key)
        if held is None or held[1] != epoch or held[0] < position:
            self._due[key] = (position, epoch)
        if self._task is None or self._task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # called outside the loop: the next call or close() sends it
                return
            self._task = loop.create_task(self._send_later(), name="cogym-redis-trimmer")

    async def _send_later(self) -> None:
        while self._due:  # what was asked while a batch was out goes in the next one
            await asyncio.sleep(self.interval)
            await self.flush()

    async def flush(self) -> None:
        """Send what is due now."""
        if not self._due:
            return
        due, self._due = self._due, {}
        self.sent_batches += 1
        try:
            await self._send(due)
        except Exception as error:  # noqa: BLE001 - trimming is housekeeping: never fatal
            log.debug("stream trim not sent (the next one covers it): %s", error)

    async def close(self, timeout: float = 1.0) -> None:
        """Send what is due (one attempt, within ``timeout``) and stop."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.flush()
