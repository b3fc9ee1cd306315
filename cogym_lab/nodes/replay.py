"""Rebuild every intermediate state of a finished (or interrupted) session from its event log."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.core import Coordinator, Event, Member
from cogym_lab.envs import make_env
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.nodes.session import SessionConfig, build_coordinator


class ReplayMismatch(RuntimeError):
    """The log does not replay to the same events: the task is not deterministic, or the log
    was edited."""


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
    return build_coordinator(make_env(session["task"], **session.get("env_args", {})), team,
                             session["session_id"], config, session["task"])


def replay_events(coordinator: Coordinator, events: Iterable[Event]) -> Iterator[Event]:
    """Apply logged ``events`` to ``coordinator`` one at a time, yielding each once applied.

    An event that followed from the one before it (the END after a FINISH) is checked, not
    re-applied. Raises :class:`ReplayMismatch` when the env does not produce the logged event.
    """
    produced: list[Event] = []
    for event in events:
        if not produced:
            produced = coordinator.replay(event).events
        again = produced.pop(0) if produced else None
        if again is None or (again.seq, again.type, again.actor, again.status) != (
                event.seq, event.type, event.actor, event.status):
            raise ReplayMismatch(f"Event {event.seq} ({event.type} by {event.actor}) replayed as "
                                 f"{again.type if again else 'nothing'}")
        yield event


def replay(results_dir: str | Path) -> Replay:
    """Re-run a session's events on a fresh env and return the state after every event."""
    session = read_session(results_dir)
    coordinator = rebuild_coordinator(session)
    frames = [ReplayFrame(event=event, state=coordinator.snapshot())
              for event in replay_events(coordinator, read_events(results_dir))]
    return Replay(session=session, frames=frames)
