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

Measured in ``docs/evaluation-runs.md`` ("Throughput") and ``docs/server.md`` ("The sessions'
loop"). Batches that overlap in one process (and a server's sessions) share the setting: the
first one sets it, the last one to end puts back what it found.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: Allocations (less deallocations) between two collections of the young generation, during a
#: batch (CPython's default is 700).
YOUNG_THRESHOLD = 20_000

_lock = threading.Lock()
_batches = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def batch_collector() -> Iterator[None]:
    """Within the block, the collector runs as this module says; afterwards as before."""
    global _batches, _saved
    with _lock:
        if _batches == 0:
            _saved = gc.get_threshold()
            gc.freeze()
            young, *older = _saved
            if young:  # 0: the caller switched collection off, and it stays off
                gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
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


__all__ = ["YOUNG_THRESHOLD", "batch_collector"]
