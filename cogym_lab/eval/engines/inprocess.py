"""The in-process engine: every session of the batch on this process's event loop, at most
``concurrency`` at a time (LM calls are I/O-bound, so sessions share one loop, each on its own
in-process bus)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cogym_lab.eval.batch_manifest import SessionEntry
from cogym_lab.eval.batch_plan import SessionKey
from cogym_lab.eval.engines import Ended

RunOne = Callable[[SessionKey], Awaitable[SessionEntry]]


class InProcess:
    """Runs each session with ``run_one``, which writes its folder and returns its entry."""

    def __init__(self, run_one: RunOne, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.run_one = run_one
        self.concurrency = concurrency
        self.gate = None  # this process's own gate

    def describe(self) -> dict[str, Any]:
        return {"engine": "inprocess", "concurrency": self.concurrency}

    async def run(self, keys: Sequence[SessionKey], ended: Ended) -> None:
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(key: SessionKey) -> None:
            async with semaphore:
                entry = await self.run_one(key)
            ended(entry)

        tasks = [asyncio.create_task(one(key)) for key in keys]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["InProcess", "RunOne"]
