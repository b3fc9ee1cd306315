"""Event-loop lag while a session builds its paper index: the figure behind "the server never
freezes", and the build's phase times behind its progress bar's estimate of the time left.

Run from the repository root::

    python benchmarks/index_build_lag.py [--data-dir DIR] [--limit N] [--where child|thread|loop]

It prints figures and checks nothing. In a fresh cache folder (deleted afterwards) it builds the
Related Work paper index while the event loop runs a ticker that wakes every 10 ms and records
how late each wake-up was, as a server's other requests would feel it. Where the build runs:

* ``child`` (the default): as a session does (``Session.prepare``): ``RelatedWorkEnv.prepare``
  in a worker thread, the build itself in a child process;
* ``thread``: the whole build in a worker thread of this process (how it was first done);
* ``loop``: on the event loop itself (how it was before that): the loop does nothing else.

It prints the build's duration and each phase's time (the shares ``BM25PaperIndex.BUILD_PHASES``
should follow), and the ticker's lag at p50, p99 and max. ``--limit N`` indexes only the first N
papers (the default is the whole corpus: about a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time

from loop_lag import lag_summary, ticker  # beside this script

from cogym_lab.core.progress import Progress
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.related_work.corpus import corpus_files
from cogym_lab.envs.related_work.search import BM25PaperIndex


def phase_times(reports: list[tuple[float, Progress]], end: float) -> list[tuple[str, float]]:
    """How long each phase lasted, from when its reports began."""
    starts: list[tuple[str, float]] = []
    for at, progress in reports:
        if progress.phase and (not starts or starts[-1][0] != progress.phase):
            starts.append((progress.phase, at))
    ends = [at for _, at in starts[1:]] + [end]
    return [(phase, finish - begun) for (phase, begun), finish in zip(starts, ends, strict=True)]


async def measure(data_dir: str | None, limit: int | None, where: str) -> None:
    cache = tempfile.mkdtemp(prefix="cogym-index-lag-")
    reports: list[tuple[float, Progress]] = []
    lags: list[float] = []
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(0.1)  # the ticker is running before the build starts
    started = time.monotonic()

    def listen(progress: Progress) -> None:
        reports.append((time.monotonic() - started, progress))

    try:
        if where == "child":
            env = RelatedWorkEnv(instance=0, data_dir=data_dir, index_limit=limit,
                                 index_cache=cache)
            await asyncio.to_thread(env.prepare, listen)
        else:
            def build() -> None:
                BM25PaperIndex.from_corpus(corpus_files(data_dir), cache, limit=limit,
                                           progress=BM25PaperIndex.build_meter(listen))
            await (asyncio.to_thread(build) if where == "thread" else asyncio.sleep(0, build()))
    finally:
        built = time.monotonic() - started
        stop.set()
        await ticking
        shutil.rmtree(cache, ignore_errors=True)
    print(f"index built in {built:.1f} s (where: {where}); {len(reports)} progress reports")
    for phase, seconds in phase_times(reports, built):
        print(f"  {phase:<24} {seconds:6.1f} s")
    print(f"event-loop {lag_summary(lags)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--where", choices=("child", "thread", "loop"), default="child")
    options = parser.parse_args()
    asyncio.run(measure(options.data_dir, options.limit, options.where))


if __name__ == "__main__":
    main()
