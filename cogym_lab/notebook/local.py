"""Sessions hosted inside this process, for kernels that no cogym_lab server extension serves.

In a Jupyter kernel the host lives on the kernel's own asyncio loop, which keeps running between
cells, so the session carries on while the person reads or types. Code in a cell runs inside
that loop and cannot block on it, so calls are started eagerly: a step that never has to wait
(creating a session on the in-process bus, posting an action) completes at once, and anything
left over carries on in the loop. Outside a kernel (a script, terminal IPython) the loop runs in
a background thread instead, and calls wait for their result.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
import types
from collections.abc import Coroutine, Generator
from pathlib import Path
from typing import Any, TypeVar

from cogym_lab.errors import CogymError
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.runtime.pairwise import BASELINE_ENV, baselines_from_env

log = logging.getLogger(__name__)
T = TypeVar("T")

RESULTS_ENV = "COGYM_RESULTS_DIR"


class StillRunning(CogymError, RuntimeError):
    """A call could not finish without waiting, and this code runs inside the loop it needs."""


def default_results_dir() -> Path:
    """``$COGYM_RESULTS_DIR``, else ``cogym-results`` in the working folder (a temporary
    folder when that is not writable)."""
    folder = Path(os.environ.get(RESULTS_ENV) or "cogym-results")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return folder.resolve()
    except OSError:
        return Path(tempfile.mkdtemp(prefix="cogym-results-"))


class LocalRuntime:
    """A :class:`SessionHost` in this process, and the loop it runs on."""

    def __init__(self, results_dir: str | Path | None = None) -> None:
        try:
            self.loop = asyncio.get_running_loop()
            self.thread: threading.Thread | None = None
        except RuntimeError:  # no loop runs here: give the host one of its own
            self.loop = asyncio.new_event_loop()
            self.thread = threading.Thread(target=self.loop.run_forever, name="cogym-host",
                                           daemon=True)
            self.thread.start()
        # On the kernel's own loop, `create` must finish without waiting (see `call`): the
        # session is built there, as a cell would; a loop of its own may wait for a thread.
        # The rating form's pairwise question finds the autonomous outcomes there.
        self.host = SessionHost(results_dir or default_results_dir(), redis_url=None,
                                build_in_thread=self.thread is not None,
                                baselines=baselines_from_env(os.environ.get(BASELINE_ENV)))

    @property
    def in_kernel_loop(self) -> bool:
        """True when sessions run on the loop this code is called from (a Jupyter kernel)."""
        return self.thread is None

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run ``coroutine`` on the host's loop and return its result.

        Inside the kernel's loop it must finish without waiting (see :func:`start_now`); if it
        cannot, it carries on in the background and :class:`StillRunning` is raised.
        """
        if self.thread is not None:
            return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)
        future = start_now(coroutine, self.loop)
        if not future.done():
            raise StillRunning("This step needs the event loop to finish; it goes on in the "
                               "background. Use `await` from an async cell to wait for it.")
        return future.result()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Future[Any] | Any:
        """Start ``coroutine`` and return without waiting for it to finish."""
        if self.thread is not None:
            return asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        future = start_now(coroutine, self.loop)
        future.add_done_callback(_log_failure)
        return future

    async def wait_for(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` on the host's loop from any loop."""
        if self.thread is None:
            return await coroutine
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self.loop))


def _log_failure(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("a background step of a local session failed", exc_info=future.exception())


def start_now(coroutine: Coroutine[Any, Any, T],
              loop: asyncio.AbstractEventLoop) -> asyncio.Future[T]:
    """Run ``coroutine`` right away, up to the first point where it really has to wait.

    Like Python 3.12's eager tasks: a coroutine that never waits is done when this returns (the
    future holds its result or exception); otherwise a task in ``loop`` carries it on from
    where it stopped.
    """
    try:
        pending = coroutine.send(None)
    except StopIteration as finished:
        future: asyncio.Future[T] = loop.create_future()
        future.set_result(finished.value)
        return future
    except BaseException as error:  # noqa: BLE001 - handed to the caller through the future
        future = loop.create_future()
        future.set_exception(error)
        return future

    async def carry_on() -> T:
        return await _resume(coroutine, pending)

    return loop.create_task(carry_on())


@types.coroutine
def _resume(coroutine: Coroutine[Any, Any, T], pending: Any) -> Generator[Any, Any, T]:
    """Hand a coroutine started by hand over to a task: yield what it waits on, pass results
    and exceptions (a cancellation) back in, until it returns."""
    to_yield = pending
    while True:
        try:
            value, error = (yield to_yield), None
        except BaseException as thrown:  # noqa: BLE001 - forwarded into the coroutine
            value, error = None, thrown
        try:
            to_yield = coroutine.throw(error) if error is not None else coroutine.send(value)
        except StopIteration as finished:
            return finished.value


_runtime: LocalRuntime | None = None


def local_runtime(results_dir: str | Path | None = None) -> LocalRuntime:
    """This process's local runtime, created on first use."""
    global _runtime
    if _runtime is None or (_runtime.thread is None and _runtime.loop.is_closed()):
        _runtime = LocalRuntime(results_dir)
    elif results_dir is not None:
        _runtime.host.results_dir = Path(results_dir)
    return _runtime
