"""Waiting for something with a time limit, without losing a cancellation.

``asyncio.wait_for`` on Python 3.11 returns the awaited result and drops a cancellation that
comes in the same turn as that result: the cancelled task runs on as if nothing had happened (a
batch past Ctrl-C, a follower loop that never stops). ``asyncio.timeout`` keeps it, so every
wait with a limit in cogym_lab goes through :func:`within`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(seconds: float | None, awaitable: Awaitable[T]) -> T:
    """``await awaitable``, or ``TimeoutError`` after ``seconds`` (``None``: no limit), as
    ``asyncio.wait_for`` does, but a cancellation of the caller is never dropped."""
    async with asyncio.timeout(seconds):
        return await awaitable


__all__ = ["within"]
