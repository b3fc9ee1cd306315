"""The in-process engine on worker processes: a batch's sessions spread over several processes
of this machine, each with an event loop of its own.

One loop carries about :data:`SESSIONS_PER_LOOP` sessions of 1 s LM calls: each call costs it
1.6 to 2.5 ms of CPU, and past that its timers (idle limits, timeouts, a simulated user's
pauses) run late. So above that many sessions at once a batch runs on
:func:`worker_count` processes by default: one per :data:`SESSIONS_PER_LOOP` sessions, up to the
cores less one (the caller keeps one), at least one. A single worker process still helps: the
caller's loop (a notebook kernel's) then shares no interpreter with the sessions.

:class:`ProcessWorkers` is the caller's side. It starts the workers
(:mod:`.process_worker`, ``spawn`` method), sends each the next session whenever it has a free
place (its share of ``concurrency``), so a fast worker takes more, and reads the one queue they
all answer on. Each entry reaches the runner's ``ended`` on the caller's loop exactly as the
in-process engine's do: ``run.json``, resuming, the progress bar and the cost are the runner's,
unchanged. Sessions write their folders into the run folder themselves (same machine).

Stopping. When the batch is cancelled (Ctrl-C) or fails, each worker is told to stop: it cancels
its sessions (they stay pending, and a rerun redoes them) and says it is done; entries that
arrive meanwhile are still recorded. A worker that does not answer within :data:`STOP_SECONDS`
is terminated. A worker whose caller died sees its pipe close and stops as well.

Provider limits: each worker gets an equal share of every limit (:func:`share_limits`); a limit
smaller than the number of workers caps their number (or, asked for explicitly, is refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import multiprocessing
import os
import pickle
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.core.deadline import within
from cogym_lab.core.loop_lag import LoopLag
from cogym_lab.eval.batch.engines import Ended, EngineError
from cogym_lab.eval.batch.engines.process_worker import serve
from cogym_lab.eval.batch.manifest import SessionEntry, TokenCount
from cogym_lab.eval.batch.plan import BatchPlan, SessionKey
from cogym_lab.eval.batch.progress import CostMeter
from cogym_lab.lm.limit_rules import FIELDS, Limit, ProviderLimits

#: Sessions one event loop carries with headroom at 1 s LM calls (docs/evaluation-runs.md,
#: "Throughput"): above this many at once, a batch runs on worker processes by default.
SESSIONS_PER_LOOP = 250
#: Seconds a stopping worker has to unwind its sessions before it is terminated.
STOP_SECONDS = 60.0
#: Seconds between two checks that every worker is still alive.
WATCH_SECONDS = 1.0
log = logging.getLogger(__name__)


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_count(concurrency: int, cores: int | None = None) -> int:
    """How many worker processes a batch of ``concurrency`` sessions at once runs on by default:
    none (one loop, in this process) up to :data:`SESSIONS_PER_LOOP`; above it, one per
    :data:`SESSIONS_PER_LOOP`, up to the cores, at least one. (This process only collects
    entries, a few ms of lag at p99: on 2 cores, 2 workers ran 1,000 sessions 1.3 times faster
    than 1, docs/evaluation-runs.md.)"""
    if concurrency <= SESSIONS_PER_LOOP:
        return 0
    cores = usable_cores() if cores is None else cores
    return max(1, min(math.ceil(concurrency / SESSIONS_PER_LOOP), cores))


def smallest_limit(limits: ProviderLimits | None) -> int | None:
    """The smallest number any of ``limits`` allows (``None``: no limit)."""
    if limits is None:
        return None
    values = [getattr(limit, name) for limit in (limits.default, *limits.rules.values())
              for name in FIELDS]
    numbers = [value for value in values if value is not None]
    return min(numbers, default=None)


def share_limits(limits: ProviderLimits | None, workers: int) -> ProviderLimits | None:
    """One worker's share of ``limits``: each limit divided by ``workers``, rounded down (so the
    workers together never pass it). Callers make sure no limit is below ``workers``."""
    if limits is None or limits.is_empty or workers <= 1:
        return limits

    def part(limit: Limit) -> Limit:
        return Limit(**{name: None if getattr(limit, name) is None
                        else max(1, getattr(limit, name) // workers) for name in FIELDS})

    return limits.model_copy(update={"default": part(limits.default),
                                     "rules": {key: part(value)
                                               for key, value in limits.rules.items()}})


def portable_task(task: str) -> Any:
    """The factory of ``task`` when it was registered at run time (a worker process would not
    know it), else ``None``; raises ``ValueError`` when it cannot be sent to another process."""
    from cogym_lab.envs.registry import registered_env

    factory = registered_env(task)
    if factory is None:
        return None
    try:
        pickle.dumps(factory)
    except Exception as error:  # noqa: BLE001 - any pickling failure says the same
        raise ValueError(f"task {task!r} was registered in this process with a factory that "
                         f"cannot be sent to a worker process ({type(error).__name__}: "
                         f"{error}); define it at the top level of an importable module, or "
                         "run with workers=0 (--workers 0)") from None
    return factory


def worst_lag(lags: Sequence[LoopLag]) -> LoopLag | None:
    """One lag for ``run.json`` from several loops': the worst p50, p99 and max of any."""
    measured = [lag for lag in lags if lag.samples]
    if not measured:
        return None
    return LoopLag(samples=sum(lag.samples for lag in measured),
                   interval_ms=measured[0].interval_ms,
                   p50_ms=max(lag.p50_ms for lag in measured),
                   p99_ms=max(lag.p99_ms for lag in measured),
                   max_ms=max(lag.max_ms for lag in measured))


def _shares(concurrency: int, workers: int) -> list[int]:
    """``concurrency`` split over ``workers`` as evenly as it goes."""
    base, extra = divmod(concurrency, workers)
    return [base + (index < extra) for index in range(workers)]


async def next_message(inbox: asyncio.Queue[tuple[Any, ...]], seconds: float
                       ) -> tuple[Any, ...] | None:
    """The inbox's next message, or ``None`` after ``seconds`` without one.

    A Ctrl-C that comes as a message arrives stops the batch (:func:`within`), and the message
    stays in the inbox.
    """
    try:
        return await within(seconds, inbox.get())
    except TimeoutError:
        return None


@dataclass
class _Worker:
    process: Any
    commands: Any  # the caller's end of its pipe
    share: int
    running: int = 0
    ready: bool = False
    done: bool = False
    lag: LoopLag | None = None

    def send(self, *message: Any) -> None:
        with contextlib.suppress(OSError, ValueError):  # it died: the watch says so
            self.commands.send(message)


@dataclass
class ProcessWorkers:
    """The in-process engine on ``workers`` processes (see the module)."""

    plan: BatchPlan
    out: Path
    meter: CostMeter
    concurrency: int
    workers: int
    limits: ProviderLimits | None = None
    task_factory: Any = None
    #: The caller's gate shows the limits (the workers each hold their share).
    gate: Any = None
    #: The worst of the workers' loop lags (:func:`worst_lag`), for ``run.json``.
    lag: LoopLag | None = None
    #: Each worker's loop lag, by worker, after :meth:`run`.
    lags: list[LoopLag] | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")

    def describe(self) -> dict[str, Any]:
        return {"engine": "inprocess", "concurrency": self.concurrency,
                "workers": self.workers}

    async def run(self, keys: Sequence[SessionKey], ended: Ended) -> None:
        if not keys:
            return
        count = min(self.workers, self.concurrency, len(keys))
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        caller = asyncio.get_running_loop()
        inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        limits = share_limits(self.limits, count)
        workers: list[_Worker] = []
        reader = threading.Thread(target=_forward, args=(results, caller, inbox),
                                  name="cogym-worker-results", daemon=True)
        reader.start()
        try:
            for number, share in enumerate(_shares(self.concurrency, count)):
                theirs_in, ours_out = context.Pipe(duplex=False)
                process = context.Process(
                    target=serve, name=f"cogym-worker-{number}", daemon=True,
                    args=(number, self.plan, str(self.out), limits, self.task_factory,
                          theirs_in, results))
                process.start()
                theirs_in.close()  # the worker's end: its closing tells the worker we are gone
                workers.append(_Worker(process=process, commands=ours_out, share=share))
            await self._feed(workers, deque(keys), inbox, ended)
        finally:
            await self._stop(workers, inbox, ended)
            results.put(None)  # the reader's end
            await asyncio.to_thread(reader.join, 10)
            results.close()
            for index in range(len(workers)):
                self.meter.report(("worker", index), {})
            self.lags = [worker.lag for worker in workers if worker.lag is not None]
            self.lag = worst_lag(self.lags)

    async def _feed(self, workers: list[_Worker], waiting: deque[SessionKey],
                    inbox: asyncio.Queue[tuple[Any, ...]], ended: Ended) -> None:
        """Give each worker sessions up to its share, and the next whenever one ends, until
        every session has ended."""
        unended = len(waiting)

        def fill(worker: _Worker) -> None:
            while worker.ready and waiting and worker.running < worker.share:
                number, trial = waiting.popleft()
                worker.running += 1
                worker.send("run", number, trial)

        while unended:
            message = await next_message(inbox, WATCH_SECONDS)
            if message is None:
                self._check_alive(workers, unended)
                continue
            kind, worker = message[0], workers[message[1]]
            if kind == "ready":
                worker.ready = True
                fill(worker)
            elif kind == "entry":
                worker.running -= 1
                unended -= 1
                self._deliver(message[2], ended)
                fill(worker)
            elif kind == "usage":
                self.meter.report(("worker", message[1]), _counts(message[2]))
            elif kind == "error":
                raise message[2]
            elif kind == "done":  # a worker stopped before it was told: its process failed
                worker.done = True
                self._check_alive(workers, unended)

    def _deliver(self, data: dict[str, Any], ended: Ended) -> None:
        entry = SessionEntry.model_validate(data)
        self.meter.add(entry.tokens.by_model)
        ended(entry)

    def _check_alive(self, workers: list[_Worker], unended: int) -> None:
        for number, worker in enumerate(workers):
            if worker.done or not worker.process.is_alive():
                raise EngineError(
                    f"worker process {number} ended (exit code {worker.process.exitcode}) with "
                    f"{unended} sessions of the batch not ended; they stay pending in run.json: "
                    "run the batch again to resume them (see its log for the cause)")

    async def _stop(self, workers: list[_Worker], inbox: asyncio.Queue[tuple[Any, ...]],
                    ended: Ended) -> None:
        """Tell every worker to stop and wait until each is done (recording the entries that
        still arrive), or terminate it after :data:`STOP_SECONDS`."""
        for worker in workers:
            worker.send("stop")
        deadline = time.monotonic() + STOP_SECONDS
        while any(not w.done and w.process.is_alive() for w in workers):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            message = await next_message(inbox, min(left, WATCH_SECONDS))
            if message is None:
                continue
            kind, worker = message[0], workers[message[1]]
            if kind == "entry":
                with contextlib.suppress(Exception):  # the batch is ending already
                    self._deliver(message[2], ended)
            elif kind == "done":
                worker.done = True
                worker.lag = LoopLag.model_validate(message[2])
        for worker in workers:
            await asyncio.to_thread(worker.process.join, 5)
            if worker.process.is_alive():
                log.warning("worker process %s did not stop; terminating it", worker.process.pid)
                worker.process.terminate()
                await asyncio.to_thread(worker.process.join, 5)
            if worker.process.is_alive():
                worker.process.kill()
            worker.commands.close()


def _counts(usage: dict[str, dict[str, int]]) -> dict[str, TokenCount]:
    return {model: TokenCount.model_validate(count) for model, count in usage.items()}


def _forward(results: Any, loop: asyncio.AbstractEventLoop,
             inbox: asyncio.Queue[tuple[Any, ...]]) -> None:
    """The thread that reads the workers' queue into the caller's loop, until ``None``."""
    while True:
        try:
            message = results.get()
        except (EOFError, OSError, ValueError):
            return
        if message is None:
            return
        try:
            loop.call_soon_threadsafe(inbox.put_nowait, message)
        except RuntimeError:  # the caller's loop has closed
            return


__all__ = ["SESSIONS_PER_LOOP", "STOP_SECONDS", "ProcessWorkers", "portable_task",
           "share_limits", "smallest_limit", "usable_cores", "worker_count", "worst_lag"]
