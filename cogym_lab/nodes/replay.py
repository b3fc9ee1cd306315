"""Rebuild every intermediate state of a finished (or interrupted) session from its event log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.core import Coordinator, Event, Member
from cogym_lab.core.protocol import recorded_protocol
from cogym_lab.envs import make_env
from cogym_lab.nodes.restore import ReplayMismatch, replay_events  # noqa: F401 - re-exported
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.nodes.session import SessionConfig, build_coordinator


@dataclass(frozen=True)
class ReplayFrame:
    event: Event
    state: dict[str, Any]  # Coordinator.snapshot() after the event


@dataclass
class Replay:
    session: dict[str, Any]
    frames: list[ReplayFrame]

    @property
    def final_state(self) -> dict[str, Any]:
        return self.frames[-1].state if self.frames else {}

    def state_at(self, seq: int) -> dict[str, Any]:
        """The state right after event ``seq``."""
        for frame in self.frames:
            if frame.event.seq == seq:
                return frame.state
        raise KeyError(f"No event {seq}; the log has 1..{len(self.frames)}")


def rebuild_coordinator(session: dict[str, Any]) -> Coordinator:
    """A fresh coordinator (and env) set up as the session recorded in ``session.json`` was."""
    config = SessionConfig(**{k: v for k, v in (session.get("config") or {}).items()
                              if k in SessionConfig.__dataclass_fields__})
    team = [Member.model_validate(m) for m in session["team"]]
    env_args = {k: v for k, v in (session.get("env_args") or {}).items() if k != "protocol"}
    env = make_env(session["task"], protocol=recorded_protocol(session), **env_args)
    return build_coordinator(env, team, session["session_id"], config, session["task"])


def replay(results_dir: str | Path) -> Replay:
    """Re-run a session's events on a fresh env and return the state after every event."""
    session = read_session(results_dir)
    coordinator = rebuild_coordinator(session)
    frames = [ReplayFrame(event=event, state=coordinator.snapshot())
              for event, _ in replay_events(coordinator, read_events(results_dir))]
    return Replay(session=session, frames=frames)
