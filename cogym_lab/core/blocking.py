"""Running a coroutine to its end from code that may or may not be inside an event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_to_end(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``; called from a running loop (a notebook cell, a coroutine),
    the coroutine runs on a thread of its own with a loop of its own, and this call waits."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the usual case: no event loop is running here
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
