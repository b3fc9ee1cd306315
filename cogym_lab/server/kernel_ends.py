"""Ending the sessions whose notebook's kernel ended.

A session a notebook cell created (``created_in``), or one that runs in a notebook, belongs to
that notebook's kernel. Closing the tab does not end it: the kernel goes on, and reopening the
notebook shows its panel again. When the kernel itself is shut down (the person shuts it down,
closes the notebook with "shut down kernel", or the server culls it), nothing in the notebook can
reach the session any more, so it ends with a reason in plain words. A restart keeps the
kernel's id, so the session goes on through it.

The server's kernels are checked every few seconds: a session ends once its kernel is gone. A
resumed session (a server restart makes new kernels) is tied to its kernel only once that kernel
has been seen running, so one resumed after its kernel had gone goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from cogym_lab.runtime.hosting import SessionHost

log = logging.getLogger(__name__)

#: The end reason of a session whose kernel ended.
KERNEL_ENDED_REASON = "its notebook's kernel ended"


class KernelEnds:
    """Ends each running session of ``host`` whose kernel (in ``kernels``, the server's kernel
    manager: ``kernel_id in kernels``) is gone. Checks every ``every`` seconds once
    :meth:`start` ran on the server's loop."""

    def __init__(self, host: SessionHost, kernels: Any, every: float = 2.0) -> None:
        self.host = host
        self.kernels = kernels
        self.every = every
        self._seen: set[str] = set()  # sessions whose kernel was seen running
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.check()
            except Exception:  # one bad check must not stop the watch
                log.exception("checking the sessions' kernels failed")

    async def check(self) -> list[str]:
        """End the sessions whose kernel ended since the last check; their ids."""
        gone: list[str] = []
        running: set[str] = set()
        for hosted in list(self.host.sessions.values()):
            kernel_id = hosted.kernel_id
            if kernel_id is None or hosted.status != "running":
                continue
            session_id = hosted.session_id
            running.add(session_id)
            if kernel_id in self.kernels:
                self._seen.add(session_id)
            elif session_id in self._seen or not hosted.resumed:
                gone.append(session_id)
        self._seen &= running  # forget the sessions that ended
        for session_id in gone:
            self._seen.discard(session_id)
            log.info("session %s: ending: %s", session_id, KERNEL_ENDED_REASON)
            try:
                await self.host.end(session_id, KERNEL_ENDED_REASON)
            except Exception:
                log.exception("session %s: ending it after its kernel ended failed", session_id)
        return gone


__all__ = ["KERNEL_ENDED_REASON", "KernelEnds"]
