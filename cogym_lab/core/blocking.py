"""Running a coroutine to its end from code that may or may not be inside an event loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def close_lm_clients_of_this_loop() -> None:
    """Close the LM clients still open on the running loop, for a loop about to end: no LM
    could close them once it has. An LM made outside the loop (a script's, a caller's judge)
    opens a new client when next used."""
    # Only if an LM client was ever made: importing the module would load aiohttp.
    if (clients := sys.modules.get("cogym_lab.lm.shared_clients")) is not None:
        await clients.close_this_loops_clients()


async def lm_clients_closed_after(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine``'s result; then :func:`close_lm_clients_of_this_loop`, however it ended."""
    try:
        return await coroutine
    finally:
        await close_lm_clients_of_this_loop()


def run_to_end(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``; called from a running loop (a notebook cell, a coroutine),
    the coroutine runs on a thread of its own with a loop of its own, and this call waits.
    Either loop is this call's own: the LM clients left open on it are closed before it ends
    (:func:`lm_clients_closed_after`)."""
    closing = lm_clients_closed_after(coroutine)
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # the usual case: no event loop is running here
        return asyncio.run(closing)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, closing).result()
