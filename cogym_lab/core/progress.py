"""Progress of slow set-up work (building an index, loading a dataset), for a terminal and a panel.

The work names its phases with their rough share of the whole and counts through them on a
:class:`ProgressMeter`. The meter turns that into one :class:`Progress` record (the share done
overall and an estimate of the time left) for a listener, such as a session telling its panels,
at most a few times a second; with ``echo`` it also draws each phase as a tqdm bar on stderr.

Code that used to take ``progress: bool`` for its tqdm bars takes ``bool | ProgressMeter`` and
counts with :func:`counting`, so a caller can pass a meter without that code knowing who listens.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from pydantic import BaseModel
from tqdm import tqdm

__all__ = ["Progress", "ProgressListener", "ProgressMeter", "counting"]


class Progress(BaseModel):
    """Where slow set-up work stands: sent to the panels in the session's status."""

    task: str  # what is being prepared, in words: "Building the paper search index"
    phase: str  # the step under way: "reading papers"
    fraction: float  # of the whole work, 0..1
    elapsed: float  # seconds since the work began
    seconds_left: float | None = None  # None until there is enough to estimate from


ProgressListener = Callable[[Progress], None]

#: An estimate of the time left from under this share of the work would mostly be noise.
_ESTIMATE_FROM = 0.02


class ProgressMeter:
    """Counts work through weighted phases and reports :class:`Progress` to ``listener``.

    ``phases`` maps each phase's name to its rough share of the whole (any positive numbers:
    they are normalised); a phase the map lacks counts for nothing. The listener is called
    from the thread doing the work, at most once per ``interval`` seconds, plus once at
    :meth:`finish`. Thread-safe."""

    def __init__(self, task: str, phases: Mapping[str, float], *,
                 listener: ProgressListener | None = None, echo: bool = False,
                 interval: float = 0.25, clock: Callable[[], float] = time.monotonic) -> None:
        total = sum(max(0.0, w) for w in phases.values()) or 1.0
        self.task = task
        self.shares = {name: max(0.0, w) / total for name, w in phases.items()}
        self.listener = listener
        self.echo = echo
        self.interval = interval
        self._clock = clock
        self._started = clock()
        self._last_report = float("-inf")
        self._lock = threading.Lock()
        self._finished_share = 0.0  # the shares of the phases already over
        self._phase = ""
        self._done = 0
        self._total: int | None = None

    @property
    def fraction(self) -> float:
        current = self.shares.get(self._phase, 0.0)
        inside = min(1.0, self._done / self._total) if self._total else 0.0
        return min(1.0, self._finished_share + current * inside)

    def snapshot(self) -> Progress:
        elapsed = self._clock() - self._started
        fraction = self.fraction
        left = (elapsed * (1 - fraction) / fraction if fraction >= _ESTIMATE_FROM else None)
        return Progress(task=self.task, phase=self._phase, fraction=round(fraction, 4),
                        elapsed=round(elapsed, 2),
                        seconds_left=None if left is None else round(left, 1))

    @contextmanager
    def phase(self, name: str, total: int | None = None,
              unit: str = " items") -> Iterator[Callable[[int], None]]:
        """Enter phase ``name`` (of ``total`` units, when known); yields ``advance(n)``."""
        with self._lock:
            self._phase, self._done, self._total = name, 0, total
        self._report(force=True)
        bar = tqdm(total=total, desc=f"  {name}", unit=unit, disable=not self.echo, leave=False)

        def advance(count: int = 1) -> None:
            bar.update(count)
            with self._lock:
                self._done += count
            self._report()

        try:
            yield advance
        finally:
            bar.close()
            with self._lock:
                self._finished_share += self.shares.get(name, 0.0)
                self._phase, self._done, self._total = "", 0, None

    def finish(self) -> None:
        """The whole work is done: report 100%."""
        with self._lock:
            self._finished_share = 1.0
        self._report(force=True)

    def _report(self, force: bool = False) -> None:
        if self.listener is None:
            return
        now = self._clock()
        with self._lock:
            if not force and now - self._last_report < self.interval:
                return
            self._last_report = now
            progress = self.snapshot()
        self.listener(progress)


#: How often a phase counted with ``progress=True`` prints a line when stderr is no terminal.
LINE_EVERY_SECONDS = 30.0


@contextmanager
def counting(progress: bool | ProgressMeter, phase: str, total: int | None = None,
             unit: str = " items") -> Iterator[Callable[[int], None]]:
    """Count one phase of work: on ``progress`` when it is a meter, else on stderr when
    ``progress`` is true (silently when false): a tqdm bar on a terminal, a line with the count
    every :data:`LINE_EVERY_SECONDS` elsewhere (a log has no use for redrawn bars), and a line
    with the count and the time taken when the phase ends. Yields ``advance(n)``."""
    if isinstance(progress, ProgressMeter):
        with progress.phase(phase, total, unit) as advance:
            yield advance
        return
    on_terminal = bool(progress) and sys.stderr.isatty()
    started = last_line = time.monotonic()
    done = 0

    def line(text: str) -> None:
        print(f"  {phase}: {text}", file=sys.stderr, flush=True)

    with tqdm(total=total, desc=f"  {phase}", unit=unit, disable=not on_terminal,
              leave=False) as bar:

        def advance(count: int = 1) -> None:
            nonlocal done, last_line
            bar.update(count)
            done += count
            if progress and not on_terminal and time.monotonic() - last_line >= LINE_EVERY_SECONDS:
                last_line = time.monotonic()
                of = f" of {total:,}" if total else ""
                line(f"{done:,}{of}{unit} so far ({last_line - started:.0f} s)")

        yield advance
    if progress:
        counted = f"{done:,}{unit}, " if done else ""
        line(f"done ({counted}{time.monotonic() - started:.1f} s)")
