"""The event-loop lag the benchmarks measure: a ticker that wakes every ``TICK`` seconds and
records how late each wake-up was, and its summary line. Imported by the benchmark scripts that
run beside it (``python benchmarks/<script>.py`` puts this folder on the path)."""

from __future__ import annotations

import asyncio
import statistics

TICK = 0.010


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    """Wake every ``TICK`` seconds until ``stop`` is set, appending each wake-up's lateness."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        planned = loop.time() + TICK
        await asyncio.sleep(TICK)
        lags.append(max(0.0, loop.time() - planned))


def lag_summary(lags: list[float]) -> str:
    """``lag over N ticks of 10 ms: p50 …, p99 …, max …`` (milliseconds)."""
    ordered = sorted(lags)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return (f"lag over {len(lags)} ticks of {TICK * 1000:.0f} ms: "
            f"p50 {statistics.median(lags) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"max {ordered[-1] * 1000:.1f} ms")
