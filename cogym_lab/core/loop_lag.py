"""How late an event loop that hosts sessions runs: a ticker that wakes every ``interval``
seconds and keeps the lateness of its last wake-ups.

A loop that lags seconds answers no one: not the panels' WebSockets, not the REST calls, not
the sessions' own timers. The monitor makes that visible, at the cost of one wake-up every
100 ms: the server reports its loop's (``GET /cogym/api/status``), and a batch run records the
lag of the loop its sessions ran on (``run.json``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque

from pydantic import BaseModel

DEFAULT_INTERVAL = 0.1  # seconds between wake-ups
DEFAULT_WINDOW = 600  # wake-ups kept: the last minute at the default interval


class LoopLag(BaseModel):
    """The loop's lateness over its last wake-ups, in milliseconds (NaN before the first)."""

    samples: int
    interval_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else math.nan


class LoopLagMonitor:
    """Measures the running loop's lag; :meth:`start` from that loop, :meth:`stop` to end."""

    def __init__(self, interval: float = DEFAULT_INTERVAL, window: int = DEFAULT_WINDOW) -> None:
        if interval <= 0 or window < 1:
            raise ValueError("the interval must be positive and the window at least 1")
        self.interval = interval
        self.lags: deque[float] = deque(maxlen=window)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start ticking on the running loop (again after :meth:`stop`; once otherwise)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._tick())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            planned = loop.time() + self.interval
            await asyncio.sleep(self.interval)
            self.lags.append(max(0.0, loop.time() - planned))

    def summary(self) -> LoopLag:
        ordered = sorted(self.lags)
        return LoopLag(samples=len(ordered), interval_ms=self.interval * 1000,
                       p50_ms=_percentile(ordered, 0.50) * 1000,
                       p99_ms=_percentile(ordered, 0.99) * 1000,
                       max_ms=(ordered[-1] if ordered else math.nan) * 1000)
