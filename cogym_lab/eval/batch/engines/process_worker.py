"""The worker side of the in-process engine's worker processes (:mod:`.processes`).

Each worker is a process started with the ``spawn`` method (the caller has threads and open
aiohttp sessions, which a forked child would inherit half-alive). It runs :func:`serve`: an
event loop of its own, which runs the sessions the caller sends it into the run folder (the
same machine, so they write their folders where the in-process engine would), and puts each
session's entry on the one queue back to the caller as it ends.

Messages, as plain tuples (cheap to pickle):

* caller to worker, on the worker's own pipe: ``("run", instance, trial)``, ``("stop",)``;
  a pipe that closes (the caller died) is a stop too, so no worker outlives its caller;
* worker to caller, on the shared queue: ``("ready", worker)``, ``("entry", worker, entry)``
  (the entry as JSON data), ``("usage", worker, {model: counts})`` every second (the running
  sessions' tokens, for the progress bar's cost), ``("error", worker, error)`` (what stops the
  batch: a full disk), ``("done", worker, lag)`` (its loop's lag, as JSON data), last.

The worker ignores SIGINT: a Ctrl-C in a terminal reaches the whole process group, and the
caller, which gets it too, stops its workers itself, so that each unwinds its sessions cleanly.
This module imports only the standard library at the top: a spawned worker imports it before
it can set that.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

#: Seconds between two reports of the running sessions' token use.
USAGE_SECONDS = 1.0


def serve(worker: int, plan: Any, out: str, limits: Any, task_factory: Any,
          commands: Any, results: Any) -> None:
    """The worker process's main: run sessions of ``plan`` into ``out`` as ``commands`` says.

    ``limits`` (:class:`~cogym_lab.lm.limit_rules.ProviderLimits` or ``None``): this worker's
    share of the run's provider limits. ``task_factory``: the task's factory when the caller
    registered it at run time (``register_env``), which a fresh process would not know."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller stops us (see the module)
    import asyncio

    if task_factory is not None:
        from cogym_lab.envs import register_env

        register_env(plan.task, task_factory)
    try:
        asyncio.run(_serve(worker, plan, Path(out), limits, commands, results))
    finally:
        results.close()
        results.join_thread()  # every message sent before the process ends


async def _serve(worker: int, plan: Any, out: Path, limits: Any, commands: Any,
                 results: Any) -> None:
    import asyncio
    import contextlib
    import threading

    from cogym_lab.core.loop_lag import LoopLagMonitor
    from cogym_lab.eval.batch.engines.collector import batch_collector
    from cogym_lab.eval.batch.engines.loop_thread import LAG_WINDOW, quiet_when_disk_full
    from cogym_lab.eval.batch.plan import run_planned_session
    from cogym_lab.eval.batch.progress import CostMeter
    from cogym_lab.eval.batch.sessions import session_dir_name
    from cogym_lab.lm.limits import current_gate

    loop = asyncio.get_running_loop()
    loop.set_exception_handler(quiet_when_disk_full)
    monitor = LoopLagMonitor(window=LAG_WINDOW)
    monitor.start()
    if limits is not None and not limits.is_empty:
        current_gate().add_limits(limits)
    meter = CostMeter()
    inbox: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()

    def read_commands() -> None:  # a thread: the pipe's reads block
        while True:
            try:
                message = commands.recv()
            except (EOFError, OSError):  # the caller is gone
                message = ("stop",)
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message[0] == "stop":
                return

    threading.Thread(target=read_commands, name="cogym-worker-commands", daemon=True).start()

    async def one(number: int, trial: int) -> None:
        try:
            entry = await run_planned_session(plan, out / session_dir_name(number, trial),
                                              number, trial, meter=meter)
        except Exception as error:  # noqa: BLE001 - a full disk: the caller stops the batch
            results.put(("error", worker, _portable(error)))
            return
        results.put(("entry", worker, entry.model_dump(mode="json")))

    async def report_usage() -> None:
        while True:
            await asyncio.sleep(USAGE_SECONDS)
            usage = {model: count.model_dump() for model, count in meter.live_totals().items()}
            results.put(("usage", worker, usage))

    sessions: set[asyncio.Task[None]] = set()
    usage = asyncio.create_task(report_usage())
    results.put(("ready", worker))
    with batch_collector():
        try:
            while True:
                message = await inbox.get()
                if message[0] != "run":
                    break
                task = asyncio.create_task(one(message[1], message[2]))
                sessions.add(task)
                task.add_done_callback(sessions.discard)
        finally:
            usage.cancel()
            for task in list(sessions):
                task.cancel()  # unfinished sessions stay pending: a rerun redoes them
            await asyncio.gather(usage, *sessions, return_exceptions=True)
            await monitor.stop()
            results.put(("done", worker, monitor.summary().model_dump(mode="json")))


def _portable(error: BaseException) -> BaseException:
    """``error`` as the caller can unpickle it: an ``OSError`` keeps its number (a full disk is
    known by it); anything else becomes a RuntimeError that names it."""
    if isinstance(error, OSError):
        return OSError(error.errno, error.strerror or str(error), error.filename)
    return RuntimeError(f"{type(error).__name__}: {error}")


__all__ = ["USAGE_SECONDS", "serve"]
