"""Which sessions have a person's panel open, and ending the sessions nobody follows any more.

A person follows a seat through a panel: a WebSocket on the server, a widget comm in local mode.
The host counts them per session. When a running session with person seats has no panel open,
a timer runs for the grace period; a panel that (re)connects within it (a browser reload) stops
the timer, and otherwise the session ends with a reason that says what happened. Without this, a
session whose panel was replaced or closed would go on calling its agents' LMs, unseen, until its
idle limit.

A session that no panel has reached yet is timed from its start the same way, so that a create
request whose panel never appears does not run on. A person's action sent without a panel (over
REST, or from a notebook handle's ``send``) shows that someone is at the seat: it starts the grace
period afresh. Sessions without a person seat are never timed.

All methods run on the host's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

#: Seconds a session with person seats may go on with no panel open (servers and kernels).
DEFAULT_PANEL_GRACE = 120.0

#: What a session ended for lack of panels starts its end reason with.
NO_PANEL_REASON = "no panel was open for"

EndSession = Callable[[str, str], Awaitable[object]]


def no_panel_reason(grace: float, ever_opened: bool) -> str:
    """The end reason of a session that had no panel open for ``grace`` seconds, in plain words
    (it is what the END event, ``session.json`` and the listing show)."""
    how = "the last one was closed" if ever_opened else "none was opened"
    return f"{NO_PANEL_REASON} {grace:g} s ({how})"


class PanelWatch:
    """Counts each session's open panels by role and ends a timed session when its grace runs
    out with none open.

    ``end(session_id, reason)`` ends a session. ``grace`` (seconds; ``None``, zero or less turns
    the watch off) is read whenever a timer starts, so changing it affects later timers only.
    """

    def __init__(self, grace: float | None, end: EndSession) -> None:
        self.grace = grace
        self._end = end
        self._open: dict[str, Counter[str]] = {}  # session -> role -> panels open
        self._timed: set[str] = set()  # running sessions with person seats
        self._ever_opened: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._ending: set[asyncio.Task[None]] = set()  # held: the loop keeps weak references

    @property
    def enabled(self) -> bool:
        return self.grace is not None and self.grace > 0

    def count(self, session_id: str, role: str | None = None) -> int:
        """Panels open on ``session_id`` (on its seat ``role`` only, when given)."""
        open_ = self._open.get(session_id)
        if not open_:
            return 0
        return open_[role] if role is not None else sum(open_.values())

    def waiting(self, session_id: str) -> bool:
        """Whether the session's grace period is running (no panel open)."""
        return session_id in self._timers

    # -- what the host reports ----------------------------------------------------------------

    def started(self, session_id: str, timed: bool) -> None:
        """A session started (or resumed); ``timed``: it has person seats. Its grace starts now,
        unless a panel is open already."""
        if not timed:
            return
        self._timed.add(session_id)
        if not self.count(session_id):
            self._arm(session_id)

    def ended(self, session_id: str) -> None:
        """The session is over: nothing to time any more."""
        self._timed.discard(session_id)
        self._ever_opened.discard(session_id)
        self._disarm(session_id)

    def opened(self, session_id: str, role: str) -> None:
        """A panel connected to ``role``'s seat."""
        self._open.setdefault(session_id, Counter())[role] += 1
        self._ever_opened.add(session_id)
        self._disarm(session_id)

    def closed(self, session_id: str, role: str) -> None:
        """A panel of ``role``'s seat went away; the last one of a timed session starts its
        grace."""
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
        the grace starts afresh."""
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
        assert self.grace is not None
        grace = self.grace
        loop = asyncio.get_running_loop()
        self._timers[session_id] = loop.call_later(grace, self._expire, session_id, grace)
        log.info("session %s: no panel open; it ends in %g s unless one connects", session_id,
                 grace)

    def _disarm(self, session_id: str) -> None:
        timer = self._timers.pop(session_id, None)
        if timer is not None:
            timer.cancel()

    def _expire(self, session_id: str, grace: float) -> None:
        self._timers.pop(session_id, None)
        if session_id not in self._timed or self.count(session_id):
            return  # ended meanwhile, or a panel came back in the same loop turn
        reason = no_panel_reason(grace, session_id in self._ever_opened)
        log.info("session %s: ending: %s", session_id, reason)
        self._timed.discard(session_id)
        task = asyncio.ensure_future(self._end_quietly(session_id, reason))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def _end_quietly(self, session_id: str, reason: str) -> None:
        try:
            await self._end(session_id, reason)
        except Exception:  # a timer has no caller to tell: the log must
            log.exception("session %s: ending it after its panels closed failed", session_id)
