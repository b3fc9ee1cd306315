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
(:attr:`OutsideAgent.usage`, :attr:`OutsideAgent.model`); the record lands in
``ROLE/member.json`` beside the other members', and ``ROLE/usage.json`` in the form the reports
read every agent's (agent type, model, tokens).
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
from cogym_lab.core.member import MemberSetup, SeatDriverFailed
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.endpoint import SeatEndpoint

log = logging.getLogger(__name__)


class OutsideAgent(ABC):
    """A member that is an outside agent launched by the session (see the module docstring).

    ``kind`` is ``"agent"``: the seat it takes is the agent's. ``member_type`` is the team
    file's type (``"mcp-client"``, ``"acp"``): the agent type reports group it under.
    ``teammate`` names it in its record (``"ACP agent: claude-code-acp"``).

    When it ends before its session does, :meth:`drive` says so as the
    :class:`~cogym_lab.core.member.SeatDriver` contract asks: :meth:`run_agent` returning is
    the agent leaving, raising (a :class:`~cogym_lab.core.member.SeatDriverFailed` that says
    how, or anything else) is its failure."""

    kind: ClassVar[str] = "agent"
    member_type: ClassVar[str] = "outside"
    #: Seconds the session waits after its end for the agent to wind down before it cancels
    #: ``drive`` (a subclass or an option may ask for more).
    end_grace: float = 5.0

    def __init__(self, setup: MemberSetup) -> None:
        self.setup = setup
        #: What the agent reported of its work: ``prompt_tokens``, ``completion_tokens``,
        #: ``calls`` (cogym_lab's names; a subclass maps its agent's to them).
        self.usage: dict[str, int] = {}
        #: The model the agent ran on, as it reported it or the team file named it.
        self.model: str | None = None
        #: Why the agent stopped before the session ended, when it did (its exit, a crash).
        self.stopped: str | None = None
        self.seconds = 0.0
        #: The session's results folder, once ``drive`` runs (``None``: it writes none).
        self.results_dir: Path | None = None

    @property
    @abstractmethod
    def teammate(self) -> str:
        """What the agent is, in a few words, for its record."""

    @abstractmethod
    async def run_agent(self, seat: BusSeat, endpoint: SeatEndpoint) -> None:
        """Run the agent on ``seat`` until the session ends (the session cancels this then).
        ``endpoint.url`` and ``endpoint.headers`` reach the seat's MCP server. Return when the
        agent stopped of its own accord; raise when it failed."""

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
        self.results_dir = results_dir
        seat = BusSeat(bus, session_id, role)
        started = time.monotonic()
        await seat.start()  # before the env starts: it waits for the seat to join
        try:
            async with SeatEndpoint(seat) as endpoint:
                await self.run_agent(seat, endpoint)
            if not seat.ended:
                self.stopped = self.stopped or "it stopped before the session ended"
        except SeatDriverFailed as failed:
            self.stopped = self.stopped or failed.reason  # a subclass may have said more
            raise
        except Exception as error:  # said as the agent's failure (the session records it)
            self.stopped = f"its driver failed: {type(error).__name__}: {error}"
            raise SeatDriverFailed(self.stopped, agent=self.teammate) from error
        finally:
            self.seconds = time.monotonic() - started
            try:
                self._write_record(seat, results_dir)
            except OSError:  # a full disk must not hide why the agent stopped
                log.exception("%s: the outside agent's record could not be written", role)
            with contextlib.suppress(Exception):
                await seat.close()

    def lm_usage(self) -> dict[str, Any] | None:
        """The agent's token use as the batch runner records an LM's (``session.json``'s
        ``lm_usage``, ``run.json``'s tokens); ``None`` when it reported none."""
        if not self.usage:
            return None
        return {"model": self.model or f"{self.member_type} (model not reported)",
                "prompt_tokens": self.usage.get("prompt_tokens", 0),
                "completion_tokens": self.usage.get("completion_tokens", 0),
                "calls": self.usage.get("calls", 0), "failures": 0}

    def record(self, seat: BusSeat) -> dict[str, Any]:
        """What ``ROLE/member.json`` holds of this member."""
        current = seat.current
        return {"role": seat.role, "kind": self.kind, "teammate": self.teammate,
                "type": self.member_type, "model": self.model,
                "stats": seat.stats, "usage": self.usage, "seconds": round(self.seconds, 3),
                "stopped": self.stopped,
                "end_reason": current.end_reason if current is not None and current.done
                else None}

    def usage_record(self) -> dict[str, Any]:
        """``ROLE/usage.json``, in the form the reports read every agent's: its type, model and
        tokens, so an outside agent sits in the tables beside the built-in ones."""
        return {"agent_type": self.member_type, "model": self.model,
                "prompt_tokens": self.usage.get("prompt_tokens", 0),
                "completion_tokens": self.usage.get("completion_tokens", 0),
                "calls": self.usage.get("calls", 0), "reported": bool(self.usage),
                "seconds": round(self.seconds, 3)}

    def _write_record(self, seat: BusSeat, results_dir: Path | None) -> None:
        if results_dir is None or not results_dir.is_dir():
            return
        folder = results_dir / seat.role
        folder.mkdir(exist_ok=True)
        (folder / "member.json").write_text(json.dumps(self.record(seat), indent=2))
        (folder / "usage.json").write_text(json.dumps(self.usage_record(), indent=2))


__all__ = ["OutsideAgent"]
