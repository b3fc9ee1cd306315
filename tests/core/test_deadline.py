"""Waits with a time limit keep a cancellation that comes with their result
(``cogym_lab.core.deadline.within``), and nothing in the package waits with
``asyncio.wait_for``, which drops it on Python 3.11."""

from __future__ import annotations

import asyncio
import re

import pytest

from cogym_lab.core.deadline import within
from tests.support.paths import REPO_ROOT


async def test_the_result_or_a_timeout() -> None:
    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    done.set_result("answer")
    assert await within(1.0, done) == "answer"
    assert await within(None, asyncio.sleep(0, "no limit")) == "no limit"
    never = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await within(0.02, asyncio.shield(never))
    assert not never.cancelled()  # a shielded wait leaves what it waited for alone


async def test_a_cancellation_that_comes_with_the_result_is_kept() -> None:
    result: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(within(5.0, asyncio.shield(result)))
    await asyncio.sleep(0)  # it waits
    result.set_result("late")  # in the same turn as the cancellation
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter


def test_the_package_never_waits_with_asyncio_wait_for() -> None:
    call = re.compile(r"\bwait_for\(")
    found = [f"{path.relative_to(REPO_ROOT)}:{number}"
             for path in sorted((REPO_ROOT / "cogym_lab").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if call.search(line) and "asyncio" in line]
    assert found == [], "use cogym_lab.core.deadline.within: " + ", ".join(found)
