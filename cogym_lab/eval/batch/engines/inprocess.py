"""The in-process engine: every session of the batch in this process, at most ``concurrency``
at a time, all on one event loop of their own (LM calls are I/O-bound, so sessions share a loop,
each on its own in-process bus).

That loop runs on a thread (:class:`~cogym_lab.eval.batch.engines.loop_thread.LoopThread`), so that
the caller's loop stays responsive however busy the sessions keep it; the caller's loop gets each
session's entry as it ends, as the Ray engine's driver does, and writes the manifest. How late
the sessions' loop woke is kept (:attr:`InProcess.lag`) for ``run.json``. While the batch runs,
the garbage collector runs less often (:mod:`~cogym_lab.eval.batch.engines.collector`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cogym_lab.core.loop_lag import LoopLag
from cogym_lab.eval.batch.engines import Ended
from cogym_lab.eval.batch.engines.collector import batch_collector
from cogym_lab.eval.batch.engines.loop_thread import LoopThread
from cogym_lab.eval.batch.manifest import SessionEntry
from cogym_lab.eval.batch.plan import SessionKey

RunOne = Callable[[SessionKey], Awaitable[SessionEntry]]
#: A sessions' loop lag p99 above this (milliseconds) is worth a warning at the end of the batch.
LAG_WARNING_MS = 1000.0
log = logging.getLogger(__name__)


class InProcess:
    """Runs each session with ``run_one`` (on the sessions' loop), which writes its folder and
    returns its entry."""

    def __init__(self, run_one: RunOne, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.run_one = run_one
        self.concurrency = concurrency
        self.gate = None  # this process's own gate
        #: How late the sessions' loop woke during the last :meth:`run` (``None`` before one).
        self.lag: LoopLag | None = None
        self.lags: list[LoopLag] | None = None  # one loop: its lag is ``lag``

    def describe(self) -> dict[str, Any]:
        return {"engine": "inprocess", "concurrency": self.concurrency}

    async def run(self, keys: Sequence[SessionKey], ended: Ended) -> None:
        caller = asyncio.get_running_loop()
        failures: list[BaseException] = []
        batch: asyncio.Future[None] | None = None

        def deliver(entry: SessionEntry) -> None:  # on the caller's loop
            try:
                ended(entry)
            except Exception as error:  # noqa: BLE001 - raised by run(): the batch stops
                failures.append(error)
                if batch is not None:
                    batch.cancel()

        def ended_there(entry: SessionEntry) -> None:  # on the sessions' loop
            caller.call_soon_threadsafe(deliver, entry)

        thread = LoopThread()
        with batch_collector():
            try:
                async with thread:
                    batch = asyncio.ensure_future(thread.run(self._run_all(keys, ended_there)))
                    try:
                        await batch
                    except asyncio.CancelledError:
                        if not failures:
                            raise
            finally:  # the thread has ended: its monitor is still
                lag = thread.lag
                self.lag = lag if lag.samples else None  # shorter than one wake-up
        if failures:
            raise failures[0]
        if self.lag is not None and self.lag.p99_ms > LAG_WARNING_MS:
            log.warning("the sessions' event loop woke up to %.1f s late (p99 %.1f s): this "
                        "process was short of CPU for %d sessions at once, and their own timers "
                        "(idle limits, a simulated user's pauses) ran that late; run fewer at "
                        "once, on worker processes (--workers N), or on Ray, if timing "
                        "matters to what you measure",
                        self.lag.max_ms / 1000, self.lag.p99_ms / 1000, self.concurrency)

    async def _run_all(self, keys: Sequence[SessionKey], ended: Ended) -> None:
        """Every session, on the sessions' loop, at most ``concurrency`` at a time."""
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(key: SessionKey) -> None:
            async with semaphore:
                entry = await self.run_one(key)
            ended(entry)

        tasks = [asyncio.create_task(one(key)) for key in keys]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["LAG_WARNING_MS", "InProcess", "RunOne"]
