"""Python's cyclic garbage collector, set for many sessions in one process while they run: a
large in-process batch (:mod:`cogym_lab.eval.batch.engines.inprocess`), or a Jupyter server's
hosted sessions (:mod:`cogym_lab.server.sessions_loop`).

A thousand sessions hold a heap of millions of small objects, and allocate faster still. With
CPython's default thresholds (700, 10, 10) the collector ran thousands of times in a batch of
1,000 sessions, and its full passes over the whole heap, about 30 of them, took up to 1.2 s each
with the interpreter held: every event loop of the process stood still meanwhile, the caller's
too. Most of what a session allocates is freed by reference counting anyway, so the collector
can run far less often:

* the young generation's threshold is raised to :data:`YOUNG_THRESHOLD` allocations;
* what the process held before the batch (modules, the caller's data) is frozen
  (``gc.freeze``) out of the full passes, and thawed again afterwards.

A Jupyter server's sessions want short pauses more than few of them: a pass holds the
interpreter, so the server's own loop (people's panels, REST) waits for it, and a pass costs
about half a microsecond per object it looks at. With a young threshold of 20,000, the young and
middle passes of 250 hosted sessions took 20-80 and 120-320 ms. The server therefore uses
:data:`HOSTED`: a young threshold of 2,000 (most young passes then take under a millisecond;
middle ones up to about 85 ms), with full passes over the whole heap (hundreds of ms) no more
often than at 20,000, a hundred middle passes apart instead of ten. A young pass can still see
far more objects than its threshold: CPython counts allocations less deallocations, so while
finished sessions are freed the young generation grows uncounted.

Measured in ``docs/evaluation-runs.md`` ("Throughput") and ``docs/server.md`` ("The sessions'
loop"). Batches that overlap in one process (and a server's sessions) share the setting: the
first one sets it, the last one to end puts back what it found.

While such a block is open, every collection's pause is recorded (:func:`collector_pauses`): a
pass holds the interpreter, so every thread of the process, an event loop serving people
included, waits for it; a Jupyter server reports them beside its loops' lag.
"""

from __future__ import annotations

import contextlib
import gc
import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

#: Allocations (less deallocations) between two collections of the young generation, during a
#: batch (CPython's default is 700).
YOUNG_THRESHOLD = 20_000

#: The hosted sessions' setting (young threshold, young passes between middle ones, middle
#: passes between full ones): see above.
HOSTED = (2_000, 10, 100)

#: Pauses kept (generation, when it ended, seconds): enough for a minute of a busy process.
PAUSES_KEPT = 4096

_lock = threading.Lock()
_batches = 0
_saved: tuple[int, int, int] | None = None
_pauses: deque[tuple[int, float, float]] = deque(maxlen=PAUSES_KEPT)
_pause_started = threading.local()


class CollectorPauses(BaseModel):
    """The collector's passes over a window, in milliseconds (NaN when there were none)."""

    window_s: float
    collections: dict[str, int]  # by generation: "0", "1", "2"
    p99_ms: float
    max_ms: float
    #: The longest pass of each generation.
    max_by_generation_ms: dict[str, float]
    #: Share of the window the interpreter spent collecting.
    busy_share: float


def _time_pass(phase: str, info: dict[str, Any]) -> None:
    # Called by the interpreter around every collection, on the collecting thread.
    now = time.perf_counter()
    if phase == "start":
        _pause_started.at = now
        return
    began = getattr(_pause_started, "at", None)
    if began is not None:
        _pauses.append((int(info["generation"]), now, now - began))


def collector_pauses(window: float = 60.0) -> CollectorPauses:
    """The passes recorded over the last ``window`` seconds (while a batch block was open)."""
    since = time.perf_counter() - window
    recent = [(generation, seconds) for generation, ended, seconds in list(_pauses)
              if ended >= since]
    ordered = sorted(seconds for _, seconds in recent)
    counts = {str(generation): 0 for generation in range(3)}
    longest = {str(generation): 0.0 for generation in range(3)}
    for generation, seconds in recent:
        counts[str(generation)] += 1
        longest[str(generation)] = max(longest[str(generation)], seconds * 1e3)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3 if ordered else math.nan
    return CollectorPauses(window_s=window, collections=counts, p99_ms=p99,
                           max_ms=ordered[-1] * 1e3 if ordered else math.nan,
                           max_by_generation_ms=longest, busy_share=sum(ordered) / window)


@contextlib.contextmanager
def batch_collector(young_threshold: int = YOUNG_THRESHOLD, middle_every: int | None = None,
                    full_every: int | None = None) -> Iterator[None]:
    """Within the block, the collector runs as this module says; afterwards as before.

    ``young_threshold``: allocations between young passes (at least CPython's); ``middle_every``:
    young passes between middle ones; ``full_every``: middle passes between full ones (``None``:
    as before).
    """
    global _batches, _saved
    with _lock:
        if _batches == 0:
            _saved = gc.get_threshold()
            gc.freeze()
            young, middle, full = _saved
            if young:  # 0: the caller switched collection off, and it stays off
                gc.set_threshold(max(young, young_threshold), middle_every or middle,
                                 full_every or full)
            gc.callbacks.append(_time_pass)
        _batches += 1
    try:
        yield
    finally:
        with _lock:
            _batches -= 1
            if _batches == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                gc.unfreeze()
                _saved = None
                with contextlib.suppress(ValueError):
                    gc.callbacks.remove(_time_pass)


__all__ = ["HOSTED", "YOUNG_THRESHOLD", "CollectorPauses", "batch_collector", "collector_pauses"]
