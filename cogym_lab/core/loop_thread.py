"""An event loop on a thread of its own, for work that must not hold up the caller's loop.

A few hundred sessions keep a core busy. On the loop of a notebook kernel, a Jupyter server or a
script, they would keep it from answering anyone for seconds at a time. On a loop of their own,
they hold the interpreter only until the caller's loop asks for it: CPython hands it to a
waiting thread after ``sys.getswitchinterval()`` (5 ms). What it cannot interrupt is compiled
code that holds the interpreter, the garbage collector above all, and a thread that releases it
often for I/O may win it back several times in a row. The thread's loop is watched
(:attr:`LoopThread.lag`): a loop that lags seconds runs its sessions' own timers late.

Users: the in-process batch engine (:mod:`cogym_lab.eval.batch.engines.loop_thread`) and the
Jupyter server's hosted sessions (:mod:`cogym_lab.server.sessions_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

from cogym_lab.core.loop_lag import LoopLag, LoopLagMonitor

T = TypeVar("T")
#: Wake-ups of the lag monitor kept: the last hour, at its 100 ms interval.
LAG_WINDOW = 36_000

ExceptionHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]


class LoopThread:
    """``async with LoopThread() as thread: await thread.run(coroutine)``; or, from code that
    is not async (a server extension being set up), :meth:`start` and later :meth:`stop`.

    :meth:`run` runs a coroutine on the thread's loop and waits for it from the caller's loop;
    cancelling the caller cancels the coroutine there and waits until it has unwound. Leaving the
    block stops the loop (``asyncio.run``'s clean-up: tasks left are cancelled, async generators
    and the default executor shut down) and joins the thread. ``exception_handler`` is the
    loop's handler of errors nobody awaited (asyncio's default when ``None``).
    """

    def __init__(self, name: str = "cogym-sessions",
                 exception_handler: ExceptionHandler | None = None) -> None:
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._monitor = LoopLagMonitor(window=LAG_WINDOW)
        self._failed: BaseException | None = None
        self._exception_handler = exception_handler

    # -- the thread ----------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # noqa: BLE001 - reported to the caller by start
            self._failed = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        if self._exception_handler is not None:
            self._loop.set_exception_handler(self._exception_handler)
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
    def running(self) -> bool:
        """Whether the thread's loop runs (started, not yet stopped)."""
        return self._thread.is_alive() and self._loop is not None and not self._loop.is_closed()

    @property
    def lag(self) -> LoopLag:
        """How late the thread's loop woke, over its last hour (exact once the thread ended; a
        snapshot from any thread while it runs)."""
        return self._monitor.summary()

    def start(self) -> None:
        """Start the thread and wait (blocking) until its loop runs."""
        self._thread.start()
        self._ready.wait()
        if self._failed is not None:
            raise RuntimeError("the sessions' event loop could not start") from self._failed

    def stop(self) -> None:
        """Ask the loop to stop (its clean-up then runs on the thread); returns at once."""
        if self._stop is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop closed already
                self._loop.call_soon_threadsafe(self._stop.set)

    async def __aenter__(self) -> LoopThread:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.stop()
        await asyncio.to_thread(self._thread.join)

    async def join(self) -> None:
        """Wait, without blocking the caller's loop, until the thread has ended."""
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


__all__ = ["LAG_WINDOW", "ExceptionHandler", "LoopThread"]
