"""Event-loop lag while a session builds its paper index: the figure behind "the server never
freezes".

Run from the repository root::

    python benchmarks/index_build_lag.py [--data-dir DIR] [--limit N] [--on-loop]

It prints figures and checks nothing. In a fresh cache folder (deleted afterwards) it builds the
Related Work paper index the way a session does (``Session.prepare``: ``RelatedWorkEnv.prepare``
in a worker thread, its progress reported to a listener) while the event loop runs a ticker that
wakes every 10 ms and records how late each wake-up was, as a server's other requests would
feel it. It prints the build's duration, the number of progress reports, and the ticker's lag
at p50, p99 and max. ``--on-loop`` builds on the loop itself instead (how it was before), to
compare: the loop then does nothing else until the build ends. ``--limit N`` indexes only the
first N papers (the default is the whole corpus: about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time

from cogym_lab.core.progress import Progress
from cogym_lab.envs.related_work import RelatedWorkEnv

TICK = 0.010


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        planned = loop.time() + TICK
        await asyncio.sleep(TICK)
        lags.append(max(0.0, loop.time() - planned))


async def measure(data_dir: str | None, limit: int | None, on_loop: bool) -> None:
    cache = tempfile.mkdtemp(prefix="cogym-index-lag-")
    env = RelatedWorkEnv(instance=0, data_dir=data_dir, index_limit=limit, index_cache=cache)
    reports: list[Progress] = []
    lags: list[float] = []
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(0.1)  # the ticker is running before the build starts
    started = time.monotonic()
    try:
        if on_loop:
            env.prepare(reports.append)
        else:
            await asyncio.to_thread(env.prepare, reports.append)
    finally:
        built = time.monotonic() - started
        stop.set()
        await ticking
        shutil.rmtree(cache, ignore_errors=True)
    ordered = sorted(lags)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    papers = len(env.search) if env.search is not None else 0  # type: ignore[arg-type]
    how = "on the loop" if on_loop else "as a session does (a worker thread, a child process)"
    print(f"index of {papers:,} papers built {how} "
          f"in {built:.1f} s; {len(reports)} progress reports")
    print(f"event-loop lag over {len(lags)} ticks of {TICK * 1000:.0f} ms: "
          f"p50 {statistics.median(lags) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
          f"max {ordered[-1] * 1000:.1f} ms")
    last = reports[-1] if reports else None
    if last is not None:
        print(f"last report: {last.phase or 'done'} {last.fraction:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--on-loop", action="store_true")
    options = parser.parse_args()
    asyncio.run(measure(options.data_dir, options.limit, options.on_loop))


if __name__ == "__main__":
    main()
