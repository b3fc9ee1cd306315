"""The hosted sessions' own event loop, apart from the Jupyter server's.

With a few hundred sessions, their members, envs, buses and timers keep a core busy. On the
server's loop they made every panel and REST call wait (0.3-0.5 s at p99 with 250 sessions);
so the :class:`~cogym_lab.runtime.hosting.SessionHost` and everything it starts (sessions,
their buses, the panels' feeds, the outside seats' MCP endpoints) live on a loop of their own,
on a thread (:class:`~cogym_lab.core.loop_thread.LoopThread`). The server's loop only reads
requests, checks them and writes answers.

The rule for crossing: session state is touched on the sessions' loop only. A handler hands
its work over with :meth:`SessionsLoop.run` (a coroutine) or :meth:`SessionsLoop.call` (a plain
function, for reads: the host's dictionaries change on the other thread) and awaits the
answer; what must reach a browser (a WebSocket frame, an MCP answer's bytes) is handed back
with :meth:`SessionsLoop.to_server`, since tornado's streams belong to the server's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from cogym_lab.core.collector import HOSTED, batch_collector
from cogym_lab.core.loop_lag import LoopLag
from cogym_lab.core.loop_thread import LoopThread

T = TypeVar("T")


class SessionsLoop:
    """The sessions' loop thread, and the server's loop it answers to.

    :meth:`start` from the server extension while it is set up; ``server_loop`` is then
    the loop the server will run (tornado's current one).
    """

    def __init__(self, server_loop: asyncio.AbstractEventLoop | None = None,
                 name: str = "cogym-hosted-sessions") -> None:
        self.thread = LoopThread(name)
        self._server_loop = server_loop
        self._collector: contextlib.AbstractContextManager[None] | None = None

    def start(self) -> None:
        # Hundreds of sessions in the server's process: the collector's passes over their heap
        # hold the interpreter, and so the server's loop; short young passes, rare full ones.
        self._collector = batch_collector(*HOSTED)
        self._collector.__enter__()
        self.thread.start()

    async def stop(self) -> None:
        """Stop the loop (tasks left on it are cancelled) and wait for its thread."""
        self.thread.stop()
        await self.thread.join()
        collector, self._collector = self._collector, None
        if collector is not None:
            collector.__exit__(None, None, None)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The sessions' loop."""
        return self.thread.loop

    @property
    def server_loop(self) -> asyncio.AbstractEventLoop:
        if self._server_loop is None:
            raise RuntimeError("the server's loop is not known yet")
        return self._server_loop

    @server_loop.setter
    def server_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._server_loop = loop

    @property
    def lag(self) -> LoopLag:
        """How late the sessions' loop woke, over its last hour."""
        return self.thread.lag

    def on_sessions_loop(self) -> bool:
        """Whether the caller runs on the sessions' loop."""
        try:
            return asyncio.get_running_loop() is self.thread.loop
        except RuntimeError:
            return False

    # -- from the server's loop ----------------------------------------------------------------

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``await coroutine`` on the sessions' loop (at once when already there); cancelling
        the caller cancels it there."""
        if self.on_sessions_loop():
            return await coroutine
        return await self.thread.run(coroutine)

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on the sessions' loop; its result or its exception."""
        if self.on_sessions_loop():
            return function(*args)
        return await self.thread.run(_call(function, args))

    def spawn(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coroutine`` on the sessions' loop without waiting for it; cancelling the
        returned future (from any thread) cancels it there."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.thread.loop)

    def soon(self, function: Callable[..., Any], *args: Any) -> None:
        """Call ``function(*args)`` on the sessions' loop soon, in the order asked (a panel
        opening before it closes)."""
        self.thread.loop.call_soon_threadsafe(function, *args)

    # -- from the sessions' loop ---------------------------------------------------------------

    async def to_server(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``await coroutine`` on the server's loop (tornado's streams live there); cancelling
        the caller cancels it there."""
        loop = self.server_loop
        try:
            if asyncio.get_running_loop() is loop:
                return await coroutine
        except RuntimeError:
            pass
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


async def _call(function: Callable[..., T], args: tuple[Any, ...]) -> T:
    return function(*args)


__all__ = ["SessionsLoop"]
