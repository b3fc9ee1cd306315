"""An event loop on a thread of its own, where the in-process engine runs a batch's sessions.

A few hundred sessions keep a core busy. On the caller's loop (a notebook kernel's, a Jupyter
server's, a script's) they would keep it from answering anyone for seconds at a time. On a loop
of their own, they hold the interpreter only until the caller's loop asks for it: CPython hands
it to a waiting thread after ``sys.getswitchinterval()`` (5 ms). What it cannot interrupt is
compiled code that holds the interpreter, the garbage collector above all
(:mod:`~cogym_lab.eval.batch.engines.collector`), and a thread that releases it often for I/O may
win it back several times in a row; at 1,000 sessions on two cores the caller's loop still lags
about 0.1 s at p99, against seconds on the sessions' own. The sessions' loop is watched
(:attr:`LoopThread.lag`): a loop that lags seconds runs the sessions' own timers late.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

from cogym_lab.core.loop_lag import LoopLag, LoopLagMonitor
from cogym_lab.eval.batch.disk import disk_full_cause

T = TypeVar("T")
log = logging.getLogger(__name__)
#: Wake-ups of the lag monitor kept: the last hour, at its 100 ms interval.
LAG_WINDOW = 36_000


class LoopThread:
    """``async with LoopThread() as thread: await thread.run(coroutine)``.

    :meth:`run` runs a coroutine on the thread's loop and waits for it from the caller's loop;
    cancelling the caller cancels the coroutine there and waits until it has unwound. Leaving the
    block stops the loop (``asyncio.run``'s clean-up: tasks left are cancelled, async generators
    and the default executor shut down) and joins the thread.
    """

    def __init__(self, name: str = "cogym-sessions") -> None:
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._monitor = LoopLagMonitor(window=LAG_WINDOW)
        self._failed: BaseException | None = None

    # -- the thread ----------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # noqa: BLE001 - reported to the caller by __aenter__
            self._failed = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        self._loop.set_exception_handler(quiet_when_disk_full)
        self._monitor.start()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self._monitor.stop()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("the loop thread has not started: use it in an async with block")
        return self._loop

    @property
    def lag(self) -> LoopLag:
        """How late the thread's loop woke, over its last hour (exact once the thread ended; a
        snapshot from any thread while it runs)."""
        return self._monitor.summary()

    async def __aenter__(self) -> LoopThread:
        self._thread.start()
        await asyncio.to_thread(self._ready.wait)
        if self._failed is not None:
            raise RuntimeError("the sessions' event loop could not start") from self._failed
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        if self._stop is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop closed already
                self._loop.call_soon_threadsafe(self._stop.set)
        await asyncio.to_thread(self._thread.join)

    # -- running a coroutine there -------------------------------------------------------------

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``await coroutine`` on the thread's loop."""
        caller = asyncio.get_running_loop()
        outcome: asyncio.Future[T] = caller.create_future()
        started: list[asyncio.Task[T]] = []

        def start() -> None:
            task = self.loop.create_task(coroutine)
            started.append(task)
            task.add_done_callback(
                lambda done: caller.call_soon_threadsafe(_copy_outcome, done, outcome))

        def cancel() -> None:  # queued after start, so the task exists when this runs
            started[0].cancel()

        self.loop.call_soon_threadsafe(start)
        try:
            return await asyncio.shield(outcome)
        except asyncio.CancelledError:
            self.loop.call_soon_threadsafe(cancel)
            await asyncio.wait({outcome})  # its clean-up (closing LMs, writing results) too
            raise


def quiet_when_disk_full(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of errors nobody awaited: a full disk's are not shown. The batch stops
    on the first one with a line that says so (:mod:`cogym_lab.eval.batch.disk`); the sessions
    it cancels then fail to write their last files too, each in a task nobody awaits any more,
    and their tracebacks would bury that line."""
    if disk_full_cause(context.get("exception")) is not None:
        log.debug("after the disk filled up: %s", context.get("message"))
        return
    loop.default_exception_handler(context)


def _copy_outcome(task: asyncio.Task[T], outcome: asyncio.Future[T]) -> None:
    """Settle ``outcome`` (the caller's future) as ``task`` (on the thread's loop) ended."""
    if outcome.done():
        return
    if task.cancelled():
        outcome.cancel()
    elif (error := task.exception()) is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(task.result())


__all__ = ["LAG_WINDOW", "LoopThread", "quiet_when_disk_full"]
