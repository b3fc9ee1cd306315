"""A seat, as an outside agent holds it: what the MCP server is built over.

A :class:`Seat` is one role of one session, seen from the member's side: its context (the task,
its action specs and acts), its current notification (view, chat, pending confirmations), the
news that reached it, and acting, which always comes back with the env's answer. The MCP server
(:mod:`cogym_lab.mcp_seat.server`) knows only this interface, so the same tools serve a seat of
a session this process runs (:class:`~cogym_lab.mcp_seat.bus_seat.BusSeat` over the session's
bus) and, later, a seat of a session a Jupyter server hosts (over its REST and WebSocket API).

A seat never says which role acts: it is fixed when the seat is made, and every action it
sends is that role's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core.messages import Event, Notification, SessionContext
from cogym_lab.core.settlements import Settlement
from cogym_lab.errors import CogymError


class SeatError(CogymError):
    """The seat cannot do what was asked (it never joined, or its session is gone)."""


@dataclass
class ActOutcome:
    """The env's answer to one action the seat sent.

    ``settlement`` says whether it was applied (logged) or refused (the session had ended);
    an applied action whose event is an ERROR carries the env's reason in
    ``settlement.error``. ``event`` is the seat's own notification of the action, when it came
    (a wait and a finish notify nobody)."""

    settlement: Settlement | None
    event: Event | None = None

    @property
    def applied(self) -> bool:
        return self.settlement is not None and self.settlement.applied

    @property
    def error(self) -> str | None:
        """Why the action did nothing, in the env's words; ``None`` when it took effect."""
        if self.settlement is None:
            return "The session did not answer this action in time; observe to see if it ran."
        if not self.settlement.applied:
            return self.settlement.message or "The session refused this action."
        return self.settlement.error


@dataclass
class News:
    """What reached the seat since a point: the events it was notified of (its own acts left
    out, as their tool calls answered them) and the messages it may see that came meanwhile."""

    events: list[Event] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.messages)


class Seat(ABC):
    """One role of one session, held by an outside agent (see the module docstring)."""

    role: str
    session_id: str

    @abstractmethod
    async def ready(self, timeout: float) -> SessionContext:
        """The seat's context once the session has started; ``SeatError`` if it does not
        start within ``timeout`` seconds."""

    @property
    @abstractmethod
    def context(self) -> SessionContext | None:
        """The task and the seat's actions, once the session has started."""

    @property
    @abstractmethod
    def current(self) -> Notification | None:
        """The seat's latest notification (its whole view and chat), ``None`` before the
        start."""

    @abstractmethod
    async def act(self, action: dict[str, Any], *, timeout: float = 60.0,
                  seen_seq: int | None = None) -> ActOutcome:
        """Send ``action`` (``{"name": ..., "args": {...}}``) as this seat's role and return the
        env's answer (``ActOutcome(None)`` if none came within ``timeout`` seconds).
        ``seen_seq``: the update the agent last saw, so that a whole-text replacement made on
        an older view is merged with the edits made since, not written over them."""

    @abstractmethod
    def news_since(self, seq: int) -> News:
        """What reached the seat after event ``seq`` from anyone but itself."""

    @abstractmethod
    async def wait_for_news(self, seq: int, timeout: float) -> News:
        """Wait up to ``timeout`` seconds until something reaches the seat after event ``seq``
        from anyone but itself (the end included); what did (empty on a timeout)."""

    @property
    def ended(self) -> bool:
        current = self.current
        return current is not None and current.done


__all__ = ["ActOutcome", "News", "Seat", "SeatError"]
