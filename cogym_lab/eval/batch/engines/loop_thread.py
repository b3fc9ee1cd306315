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
import logging
from typing import Any

from cogym_lab.core.loop_thread import LAG_WINDOW
from cogym_lab.core.loop_thread import LoopThread as _LoopThread
from cogym_lab.eval.batch.disk import disk_full_cause

log = logging.getLogger(__name__)


class LoopThread(_LoopThread):
    """:class:`cogym_lab.core.loop_thread.LoopThread` whose loop does not show the errors of a
    full disk (:func:`quiet_when_disk_full`)."""

    def __init__(self, name: str = "cogym-sessions") -> None:
        super().__init__(name, exception_handler=quiet_when_disk_full)


def quiet_when_disk_full(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler of errors nobody awaited: a full disk's are not shown. The batch stops
    on the first one with a line that says so (:mod:`cogym_lab.eval.batch.disk`); the sessions
    it cancels then fail to write their last files too, each in a task nobody awaits any more,
    and their tracebacks would bury that line."""
    if disk_full_cause(context.get("exception")) is not None:
        log.debug("after the disk filled up: %s", context.get("message"))
        return
    loop.default_exception_handler(context)


__all__ = ["LAG_WINDOW", "LoopThread", "quiet_when_disk_full"]
