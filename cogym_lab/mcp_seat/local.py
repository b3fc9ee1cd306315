"""A new session run in this process, with one seat left for an outside agent.

:class:`LocalSeatSession` builds the session a spec describes, as ``cogym-lab run`` does, but
leaves the member of one role unbuilt: that seat keeps the kind the team gives it (an agent's
step limit, its confirmations, its place in the scores) and is driven through a
:class:`~cogym_lab.mcp_seat.bus_seat.BusSeat` instead. The session runs in the background on its
bus (in-process or Redis) and writes its results folder as any session does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path

from cogym_lab.bus import Bus
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.nodes.session import OUTSIDE_AGENT_LEFT, Session, SessionResult
from cogym_lab.sessions import SessionSpec, build_session

log = logging.getLogger(__name__)

#: The end reason of a session whose outside agent went away before it ended.
LEFT_REASON = OUTSIDE_AGENT_LEFT


class LocalSeatSession:
    """The session ``spec`` describes, with ``role`` taken from outside. Building raises
    :class:`~cogym_lab.sessions.SessionBuildError`; ``results_parent`` holds its results
    folder."""

    def __init__(self, spec: SessionSpec, role: str, *, bus: Bus,
                 results_parent: str | Path) -> None:
        self.role = role
        self.bus = bus
        self.session: Session = build_session(spec, bus=bus, outside=[role])
        self.session.results_dir = Path(results_parent) / self.session.session_id
        self.seat = BusSeat(bus, self.session.session_id, role)
        self.runner: asyncio.Task[SessionResult] | None = None
        self.result: SessionResult | None = None

    @property
    def kind(self) -> str:
        return next(member.kind for member in self.session.team if member.role == self.role)

    async def start(self) -> BusSeat:
        """Connect, join the seat and start the session in the background."""
        await self.bus.connect()
        await self.seat.start()  # before the run: the env reads the step channel from its start
        self.runner = asyncio.create_task(self.session.run())
        return self.seat

    async def finish(self, reason: str = LEFT_REASON, wait: float = 30.0
                     ) -> SessionResult | None:
        """End the session if it still runs (``reason`` is its end reason), wait for its
        results, write the seat's record and let go of the bus."""
        runner = self.runner
        try:
            if runner is not None and not runner.done():
                await self._stop(runner, reason, wait)
            if runner is not None and runner.done() and not runner.cancelled():
                self.result = runner.result() if runner.exception() is None else None
                if runner.exception() is not None:
                    log.error("session %s failed: %r", self.session.session_id,
                              runner.exception())
        finally:
            self._write_seat_record()
            await self.seat.close()
            with contextlib.suppress(Exception):
                await self.bus.close()
        return self.result

    async def _stop(self, runner: asyncio.Task[SessionResult], reason: str,
                    wait: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while self.session.env_node is None and not runner.done():
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.01)  # run() has not built its env node yet
        if self.session.env_node is not None:
            await self.session.env_node.stop(reason)
        else:
            runner.cancel()
        await asyncio.wait({runner}, timeout=max(0.0, deadline - loop.time()))

    def _write_seat_record(self) -> None:
        """``ROLE/member.json`` beside the other members', as a member node writes it."""
        folder = self.session.results_dir
        if folder is None or not folder.is_dir():
            return
        current = self.seat.current
        record = {"role": self.role, "kind": self.kind, "teammate": "outside agent (MCP)",
                  "stats": self.seat.stats,
                  "end_reason": current.end_reason if current is not None and current.done
                  else None}
        (folder / self.role).mkdir(exist_ok=True)
        (folder / self.role / "member.json").write_text(json.dumps(record, indent=2))


__all__ = ["LEFT_REASON", "LocalSeatSession"]
