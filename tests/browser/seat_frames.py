"""Update frames for a seat whose whole view is one component, as the stand-in page's tests feed
them to the panel: one event per frame, each a delta on the previous one (or whole)."""

from __future__ import annotations

from typing import Any


class OneComponentSeat:
    """Makes the frames of ``role``'s seat whose view is the single component ``name``.

    Each frame is one event of ``event_type`` by ``actor``; ``counted`` names the member whose
    step count grows by one a frame (``None``: no counts). A frame marked ``done`` ends the
    session for ``end_reason``."""

    def __init__(self, name: str, *, session: str, context: dict[str, Any],
                 role: str = "user", event_type: str = "action", actor: str = "agent",
                 counted: str | None = None, end_reason: str = "finished") -> None:
        self.name, self.session, self.context, self.role = name, session, context, role
        self.event_type, self.actor, self.counted = event_type, actor, counted
        self.end_reason = end_reason
        self.seq = 0

    def frame(self, content: dict[str, Any], whole: bool = False,
              done: bool = False) -> dict[str, Any]:
        self.seq += 1
        seq = self.seq
        return {
            "session_id": self.session, "seq": seq, "prev_seq": None if whole else seq - 1,
            "recipient": self.role, "whole": whole,
            "event": {"seq": seq, "time": 1000.0 + seq, "type": self.event_type,
                      "actor": self.actor, "status": "ok"},
            "components": [{"name": self.name, "render_type": self.name,
                            "title": self.name.capitalize(), "content": content}],
            "versions": {self.name: seq}, "messages": [], "pending_confirmations": [],
            "step_counts": {self.counted: seq} if self.counted else {}, "step_limits": {},
            "paused": [], "started_at": 1000.0, "time": 1000.0 + seq, "done": done,
            "end_reason": self.end_reason if done else None,
            "context": self.context if whole else None,
        }
