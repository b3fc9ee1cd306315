"""What a hosted session keeps once it has ended, and the memory it gives back.

A running session holds its coordinator, env, member objects (agents with their LMs and
prompts) and a bus whose channels keep recent notifications. None of that is read after the
end: the summary needs a few fields, the REST snapshot the final state and the result (which
``session.json`` holds), and a panel that connects late its seat's last view and the agents'
last statuses. :class:`EndedSession` is that much, built once when the run is over; the host
then drops the rest, so that a server hosting many sessions in a row stays the same size.

Views are kept as compact JSON text: one string per member is cheap to hold (the garbage
collector never scans it) and is what a socket sends anyway.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.bus import Bus, MemoryBus
from cogym_lab.core.messages import TeamMember, status_channel
from cogym_lab.nodes.results import SESSION_FILE, read_session
from cogym_lab.nodes.session import Session

log = logging.getLogger(__name__)

#: Seconds a finished session stays hosted (its end views and statuses in memory) before only
#: its results folder is left (servers and kernels; ``c.CogymLab.finished_session_ttl``).
DEFAULT_FINISHED_TTL = 600.0

#: How long to wait for one more status from a network bus when reading a channel's history
#: (an in-process bus hands its whole history over at once).
_HISTORY_WAIT = 0.5


def _compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass
class EndedSession:
    """The part of a :class:`~cogym_lab.nodes.session.Session` a host keeps after its end.

    It answers the attributes of a session the rest of the package reads after the end
    (``session_id``, ``team``, ``results_dir``, ``interrupted``), so a hosted session's
    ``session`` may be either.
    """

    session_id: str
    team: list[TeamMember]
    protocol: str
    results_dir: Path | None
    interrupted: str | None
    status: str  # finished, failed or interrupted
    end_reason: str | None
    #: role -> the member's view at the end, as a whole ``sync`` update in JSON text.
    views: dict[str, str] = field(default_factory=dict)
    #: The final state snapshot in JSON text, kept only when ``session.json`` does not hold it.
    state: str | None = None
    #: Whether ``session.json`` holds the final state and the outcome (a finished session's
    #: does): they are read from there when asked for, not kept here.
    on_disk: bool = False
    ended_at: float = field(default_factory=time.time)

    @classmethod
    def of(cls, session: Session, status: str) -> EndedSession:
        """The record of ``session``, which has ended with ``status``."""
        coordinator = session.coordinator
        now = time.time()
        views = {}
        for member in session.team:
            update = coordinator.watch(member.role, now)  # None if it never started
            if update is not None:
                views[member.role] = _compact(update.model_dump(mode="json"))
        directory = session.results_dir
        on_disk = status == "finished" and directory is not None and (
            directory / SESSION_FILE).is_file()
        state = None
        if not on_disk and coordinator.started_at:
            state = _compact(coordinator.snapshot())
        return cls(session_id=session.session_id, team=list(session.team),
                   protocol=session.env.protocol, results_dir=directory,
                   interrupted=session.interrupted, status=status,
                   end_reason=coordinator.end_reason, views=views, state=state, on_disk=on_disk)

    def view(self, role: str) -> dict[str, Any] | None:
        """Member ``role``'s view at the end (``None`` if the session never started)."""
        text = self.views.get(role)
        return None if text is None else json.loads(text)

    def final(self) -> tuple[dict[str, Any] | None, Any]:
        """The final state and the outcome: from ``session.json`` when it holds them, else the
        state kept here (and no outcome: the result kept beside this record has it)."""
        if self.on_disk and self.results_dir is not None:
            try:
                run = read_session(self.results_dir)
            except (OSError, ValueError) as error:  # removed or edited by hand since
                log.warning("session %s: session.json cannot be read: %s", self.session_id,
                            error)
                return None, None
            return run.get("final_state"), run.get("outcome")
        return (json.loads(self.state) if self.state is not None else None), None


def latest_statuses(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last status of each agent, the last set-up report, the last notebook notice and the
    graded end, in the order they were last published: what a panel that connects after the end
    needs of the status channel's history."""
    kept: dict[str, dict[str, Any]] = {}
    for message in messages:
        if "grading" in message:
            key = "grading"
        elif "setup" in message:
            key = "setup"
        elif "notebook" in message:
            key = "notebook"
        else:
            key = f"agent:{message.get('role')}"
        kept.pop(key, None)  # re-inserted: the order is that of the last publication
        kept[key] = message
    return list(kept.values())


async def read_statuses(bus: Bus, session_id: str) -> list[dict[str, Any]]:
    """The session's status history as ``bus`` keeps it (read before the bus closes)."""
    wait = 0.0 if isinstance(bus, MemoryBus) else _HISTORY_WAIT
    messages: list[dict[str, Any]] = []
    try:
        subscription = await bus.subscribe(status_channel(session_id), from_beginning=True)
        try:
            while (message := await subscription.get(timeout=wait)) is not None:
                messages.append(message)
        finally:
            await subscription.close()
    except Exception:  # a lost transport costs the late panels their statuses, nothing more
        log.warning("session %s: its last statuses could not be read", session_id,
                    exc_info=True)
    return latest_statuses(messages)


async def end_bus(session_id: str, statuses: list[dict[str, Any]]) -> MemoryBus:
    """A small in-process bus that stands in for an ended session's own: it holds the last
    statuses for panels that connect late (they subscribe to its status channel from the
    beginning) and carries the end views the host publishes to them."""
    # Views pass through, never kept: the record holds them already.
    bus = MemoryBus(history=max(1, len(statuses)), depths={"/obs": 0, "/step": 0})
    for status in statuses:
        await bus.publish(status_channel(session_id), status)
    return bus
