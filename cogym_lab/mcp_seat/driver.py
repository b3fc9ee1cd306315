"""The base of member types whose member is an outside agent that the session launches.

A team file may name an agent cogym_lab did not build as a member (``type = "acp"`` launches
an Agent Client Protocol agent; ``type = "mcp-client"`` a program that is an MCP client). Such
a member holds its seat itself (:class:`~cogym_lab.core.member.SeatDriver`): the session runs
:meth:`OutsideAgent.drive` instead of a member node. It joins the seat on the session's bus
(:class:`~cogym_lab.mcp_seat.bus_seat.BusSeat`), serves the seat's MCP server on a loopback
port (:class:`~cogym_lab.mcp_seat.endpoint.SeatEndpoint`), and hands the agent that endpoint:
the agent acts through the same tools an MCP client gets from ``cogym-lab mcp``, under the
same protocol, limits and confirmations, and is scored in the seat's place.

A subclass says how to run its agent (:meth:`OutsideAgent.run_agent`) and what to record of it
(:attr:`OutsideAgent.usage`); the record lands in ``ROLE/member.json`` beside the other members'.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from cogym_lab.bus import Bus
from cogym_lab.core.member import MemberSetup
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.endpoint import SeatEndpoint

log = logging.getLogger(__name__)


class OutsideAgent(ABC):
    """A member that is an outside agent launched by the session (see the module docstring).

    ``kind`` is ``"agent"``: the seat it takes is the agent's. ``teammate`` names it in its
    record (``"ACP agent: claude-code-acp"``)."""

    kind: ClassVar[str] = "agent"

    def __init__(self, setup: MemberSetup) -> None:
        self.setup = setup
        #: What the agent reported of its work: ``input_tokens``, ``output_tokens``, ``calls``...
        self.usage: dict[str, int] = {}
        #: Why the agent stopped before the session ended, when it did (its exit, a crash).
        self.stopped: str | None = None
        self.seconds = 0.0

    @property
    @abstractmethod
    def teammate(self) -> str:
        """What the agent is, in a few words, for its record."""

    @abstractmethod
    async def run_agent(self, seat: BusSeat, endpoint: SeatEndpoint) -> None:
        """Run the agent on ``seat`` until the session ends (the session cancels this then).
        ``endpoint.url`` and ``endpoint.headers`` reach the seat's MCP server."""

    # The Member protocol's hooks: an outside agent is told everything through its seat.
    def start(self, context: Any) -> None:
        return None

    async def act(self, notification: Any) -> None:
        return None

    def end(self, final: Any) -> None:
        return None

    async def drive(self, bus: Bus, session_id: str, role: str,
                    results_dir: Path | None) -> None:
        """Hold ``role``'s seat with the agent until the session ends (the
        :class:`~cogym_lab.core.member.SeatDriver` contract)."""
        seat = BusSeat(bus, session_id, role)
        started = time.monotonic()
        await seat.start()  # before the env starts: it waits for the seat to join
        try:
            async with SeatEndpoint(seat) as endpoint:
                await self.run_agent(seat, endpoint)
        finally:
            self.seconds = time.monotonic() - started
            self._write_record(seat, results_dir)
            with contextlib.suppress(Exception):
                await seat.close()

    def record(self, seat: BusSeat) -> dict[str, Any]:
        """What ``ROLE/member.json`` holds of this member."""
        current = seat.current
        return {"role": seat.role, "kind": self.kind, "teammate": self.teammate,
                "stats": seat.stats, "usage": self.usage, "seconds": round(self.seconds, 3),
                "stopped": self.stopped,
                "end_reason": current.end_reason if current is not None and current.done
                else None}

    def _write_record(self, seat: BusSeat, results_dir: Path | None) -> None:
        if results_dir is None or not results_dir.is_dir():
            return
        folder = results_dir / seat.role
        folder.mkdir(exist_ok=True)
        (folder / "member.json").write_text(json.dumps(self.record(seat), indent=2))


__all__ = ["OutsideAgent"]
