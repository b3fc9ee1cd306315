"""Which sessions have a person's panel open, and ending the sessions nobody has been at for
hours.

A person follows a seat through a panel: a WebSocket on the server, a widget comm in local mode.
The host counts them per session. A running session with person seats goes on while its panels
are closed (a closed tab, a notebook shut for the night): reopening the notebook re-attaches the
panel to it. Only when no one has been at the session for the unattended limit (hours by
default: no panel open on any seat, no person's action) does it end, with a reason that says so;
without that, a forgotten session would go on calling its agents' LMs, unseen, until its own
limits.

A session that no panel has reached yet is timed from its start the same way. A person's action
sent without a panel (over REST, or from a notebook handle's ``send``) shows that someone is at
the seat: it starts the limit afresh. Sessions without a person seat are never timed.

All methods run on the host's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

#: Seconds a session with person seats may go on with no one at it (no panel open, no action).
DEFAULT_UNATTENDED_SECONDS = 4 * 3600.0

#: What a session ended for lack of anyone at it starts its end reason with.
UNATTENDED_REASON = "no one was at the session for"

EndSession = Callable[[str, str], Awaitable[object]]


def plain_duration(seconds: float) -> str:
    """``seconds`` the way a person says it: ``4 h``, ``90 min``, ``1.5 s``."""
    if seconds >= 3600:
        return f"{round(seconds / 3600, 2):g} h"
    if seconds >= 60:
        return f"{round(seconds / 60, 1):g} min"
    return f"{round(seconds, 2):g} s"


def unattended_reason(seconds: float) -> str:
    """The end reason of a session no one was at for ``seconds``, in plain words (it is what
    the END event, ``session.json`` and the listing show)."""
    return f"{UNATTENDED_REASON} {plain_duration(seconds)}"


class PanelWatch:
    """Counts each session's open panels by role and ends a timed session that no one has been
    at for ``limit`` seconds.

    ``end(session_id, reason)`` ends a session. ``limit`` (seconds; ``None``, zero or less
    turns the watch off) is read whenever a timer starts, so changing it affects later timers
    only.
    """

    def __init__(self, limit: float | None, end: EndSession) -> None:
        self.limit = limit
        self._end = end
        self._open: dict[str, Counter[str]] = {}  # session -> role -> panels open
        self._timed: set[str] = set()  # running sessions with person seats
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._ending: set[asyncio.Task[None]] = set()  # held: the loop keeps weak references

    @property
    def enabled(self) -> bool:
        return self.limit is not None and self.limit > 0

    def count(self, session_id: str, role: str | None = None) -> int:
        """Panels open on ``session_id`` (on its seat ``role`` only, when given)."""
        open_ = self._open.get(session_id)
        if not open_:
            return 0
        return open_[role] if role is not None else sum(open_.values())

    def waiting(self, session_id: str) -> bool:
        """Whether the session's unattended time is running (no panel open)."""
        return session_id in self._timers

    # -- what the host reports ----------------------------------------------------------------

    def started(self, session_id: str, timed: bool) -> None:
        """A session started (or resumed); ``timed``: it has person seats. Its unattended time
        starts now, unless a panel is open already."""
        if not timed:
            return
        self._timed.add(session_id)
        if not self.count(session_id):
            self._arm(session_id)

    def ended(self, session_id: str) -> None:
        """The session is over: nothing to time any more."""
        self._timed.discard(session_id)
        self._disarm(session_id)

    def opened(self, session_id: str, role: str) -> None:
        """A panel connected to ``role``'s seat: someone is at the session."""
        self._open.setdefault(session_id, Counter())[role] += 1
        self._disarm(session_id)

    def closed(self, session_id: str, role: str) -> None:
        """A panel of ``role``'s seat went away; with the last one of a timed session gone, its
        unattended time starts."""
        open_ = self._open.get(session_id)
        if open_ is None or open_[role] <= 0:
            log.warning("session %s: a panel of %r closed that was not counted open", session_id,
                        role)
            return
        open_[role] -= 1
        if open_[role] == 0:
            del open_[role]
        if not open_:
            del self._open[session_id]
            if session_id in self._timed:
                self._arm(session_id)

    def acted(self, session_id: str) -> None:
        """A person acted without a panel (REST, a notebook handle): someone is at the seat, so
        the unattended time starts afresh."""
        if session_id in self._timers:
            self._arm(session_id)

    def close(self) -> None:
        """Stop every timer (the host shuts down: its sessions are interrupted, not ended)."""
        for session_id in list(self._timers):
            self._disarm(session_id)
        self._timed.clear()

    # -- timers -------------------------------------------------------------------------------

    def _arm(self, session_id: str) -> None:
        self._disarm(session_id)
        if not self.enabled:
            return
        assert self.limit is not None
        limit = self.limit
        loop = asyncio.get_running_loop()
        self._timers[session_id] = loop.call_later(limit, self._expire, session_id, limit)
        log.info("session %s: no panel open; it goes on, and ends if no one comes back within "
                 "%s", session_id, plain_duration(limit))

    def _disarm(self, session_id: str) -> None:
        timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()

    def _expire(self, session_id: str, limit: float) -> None:
        self._timers.pop(session_id, None)
        if session_id not in self._timed or self.count(session_id):
            return  # ended meanwhile, or a panel came back in the same loop turn
        reason = unattended_reason(limit)
        log.info("session %s: ending: %s", session_id, reason)
        self._timed.discard(session_id)
        task = asyncio.ensure_future(self._end_quietly(session_id, reason))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def _end_quietly(self, session_id: str, reason: str) -> None:
        try:
            await self._end(session_id, reason)
        except Exception:  # a timer has no caller to tell: the log must
            log.exception("session %s: ending it after no one was at it failed", session_id)
