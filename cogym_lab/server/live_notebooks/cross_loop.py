"""A notebook link used from the hosted sessions' loop, while the notebook lives on the server's.

The notebook's kernel client, its live document and its file belong to the Jupyter server's
loop (tornado's); the session that writes into them runs on the sessions' own loop
(:mod:`cogym_lab.server.sessions_loop`). :class:`CrossLoopLink` is what the session is given: each
of its coroutines runs the real link's on the server's loop and waits for it, and the person's
happenings come across one by one. Plain attributes (``person``, ``path``, ``kernel_id``) are
read through.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from cogym_lab.kernels import CellResult, Happening
from cogym_lab.server.live_notebooks.server_kernel import ServerKernelExecutor
from cogym_lab.server.sessions_loop import SessionsLoop

_END = object()


class CrossLoopExecutor:
    """The notebook kernel's executor, driven from the sessions' loop (see the module)."""

    def __init__(self, executor: ServerKernelExecutor, loops: SessionsLoop) -> None:
        self._executor = executor
        self._loops = loops

    @property
    def cwd(self) -> Path:
        return self._executor.cwd

    @property
    def kernel_id(self) -> str:
        return self._executor.kernel_id

    @property
    def alive(self) -> bool:
        return self._executor.alive

    def owns(self, parent_header: dict[str, Any]) -> bool:
        return self._executor.owns(parent_header)

    async def start(self) -> None:
        await self._loops.to_server(self._executor.start())

    async def execute(self, code: str, *, timeout: float | None = None) -> CellResult:
        return await self._loops.to_server(self._executor.execute(code, timeout=timeout))

    async def interrupt(self) -> None:
        await self._loops.to_server(self._executor.interrupt())

    async def restart(self) -> None:
        await self._loops.to_server(self._executor.restart())

    async def shutdown(self) -> None:
        await self._loops.to_server(self._executor.shutdown())


class CrossLoopLink:
    """A :class:`~cogym_lab.kernels.NotebookLink` whose work runs on the server's loop."""

    def __init__(self, link: Any, loops: SessionsLoop) -> None:
        """``link``: a :class:`~cogym_lab.server.live_notebooks.link.ServerNotebookLink` (which
        makes this one, so it is not imported here)."""
        self._link = link
        self._loops = loops
        self.executor = CrossLoopExecutor(link.executor, loops)
        self.person = link.person

    @property
    def path(self) -> str:
        return self._link.path

    @property
    def kernel_id(self) -> str:
        return self._link.kernel_id

    @property
    def live(self) -> bool:
        return self._link.live

    def follow_record(self, cells: Callable[[], list[dict[str, Any]]]) -> None:
        # Read from the server's loop: a copy taken on the sessions' loop, where the env
        # changes its record.
        self._link.follow_record(lambda: list(cells()))

    async def start(self, session_id: str) -> None:
        await self._loops.to_server(self._link.start(session_id))

    async def show_cell(self, role: str, code: str) -> str | None:
        return await self._loops.to_server(self._link.show_cell(role, code))

    async def show_outputs(self, handle: Any, result: CellResult) -> None:
        await self._loops.to_server(self._link.show_outputs(handle, result))

    async def close(self) -> None:
        await self._loops.to_server(self._link.close())

    def notice(self) -> dict[str, Any]:
        return self._link.notice()

    async def happenings(self) -> AsyncIterator[Happening]:
        """The person's happenings, read on the server's loop and handed over in order."""
        here = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def pump() -> None:
            try:
                async for happening in self._link.happenings():
                    here.call_soon_threadsafe(queue.put_nowait, happening)
            except BaseException as error:
                here.call_soon_threadsafe(queue.put_nowait, _Failed(error))
                raise
            here.call_soon_threadsafe(queue.put_nowait, _END)

        running = asyncio.run_coroutine_threadsafe(pump(), self._loops.server_loop)
        try:
            while (item := await queue.get()) is not _END:
                if isinstance(item, _Failed):
                    if isinstance(item.error, asyncio.CancelledError):
                        return
                    raise item.error
                yield item
        finally:
            running.cancel()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


__all__ = ["CrossLoopExecutor", "CrossLoopLink"]
