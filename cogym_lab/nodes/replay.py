"""Rebuild every intermediate state of a finished (or interrupted) session from its event log.

Replay is honest: besides checking that every event replays as logged (its seq, type, actor and
status), it compares the state the log rebuilds with the final state the session saved
(``session.json`` → ``final_state``, :meth:`Coordinator.snapshot` at the end) and raises
:class:`FinalStateMismatch` naming the first difference. A task whose ``env_args()`` forgot a
constructor argument, or whose actions are not deterministic, replays event by event all the
same, but to another state: that is what this catches. A session with no saved final state (an
interrupted one, or one whose log could not be written) replays as before, with a note saying
that nothing could be compared.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import Event, TeamMember
from cogym_lab.core.protocol import recorded_protocol
from cogym_lab.core.state_diff import first_difference
from cogym_lab.core.text import clean
from cogym_lab.envs import make_env
from cogym_lab.nodes.restore import ReplayMismatch, replay_events  # ReplayMismatch: re-exported
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.nodes.session import SessionConfig, build_coordinator

log = logging.getLogger(__name__)


class FinalStateMismatch(ReplayMismatch):
    """Every event replayed as logged, but the rebuilt final state is not the one the session
    saved: the env was rebuilt differently (its ``env_args()`` forgot an argument) or a step is
    not deterministic."""


@dataclass
class Replay:
    """What replaying a session's log gave: its events, its final state, and the states after
    the events asked for (``keep``). Keeping a state per event would cost the square of the
    session's length (every state holds the chat so far): :func:`replay_states` walks them all
    instead, one at a time."""

    session: dict[str, Any]
    events: list[Event]
    final_state: dict[str, Any]
    #: seq -> the state right after that event, for the events ``replay`` was asked to keep.
    states: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: Whether the rebuilt final state was compared with a saved one (and matched).
    final_state_checked: bool = False
    #: Why it was not, when it was not: for the reader of the replay.
    note: str | None = None

    def state_at(self, seq: int) -> dict[str, Any]:
        """The state right after event ``seq`` (one of those ``replay`` was asked to keep)."""
        if seq in self.states:
            return self.states[seq]
        if not 1 <= seq <= len(self.events):
            raise KeyError(f"No event {seq}; the log has 1..{len(self.events)}")
        raise KeyError(f"The state after event {seq} was not kept: replay(..., keep=[{seq}])")


def rebuild_coordinator(session: dict[str, Any]) -> Coordinator:
    """A fresh coordinator (and env) set up as the session recorded in ``session.json`` was."""
    config = SessionConfig(**{k: v for k, v in (session.get("config") or {}).items()
                              if k in SessionConfig.__dataclass_fields__})
    team = [TeamMember.model_validate(m) for m in session["team"]]
    env_args = {k: v for k, v in (session.get("env_args") or {}).items() if k != "protocol"}
    env = make_env(session["task"], protocol=recorded_protocol(session), **env_args)
    return build_coordinator(env, team, session["session_id"], config, session["task"])


def replay_states(results_dir: str | Path) -> Iterator[tuple[Event, Coordinator]]:
    """Each logged event of ``results_dir``, once re-applied, with the coordinator in the state
    right after it (``coordinator.snapshot()`` gives it as plain data). Raises
    :class:`ReplayMismatch` when an event replays differently. Checks no final state:
    :func:`replay` does."""
    coordinator = rebuild_coordinator(read_session(results_dir))
    for event, _ in replay_events(coordinator, read_events(results_dir)):
        yield event, coordinator


def replay(results_dir: str | Path, *, keep: Iterable[int] = ()) -> Replay:
    """Re-run a session's events on a fresh env, check the final state, and return it with the
    states after the events ``keep`` names. Time and memory grow with the log's length.

    Raises :class:`ReplayMismatch` when an event replays differently, and its subclass
    :class:`FinalStateMismatch` when the rebuilt final state differs from the saved one.
    """
    session = read_session(results_dir)
    wanted = set(keep)
    events: list[Event] = []
    states: dict[int, dict[str, Any]] = {}
    coordinator: Coordinator | None = None
    for event, coordinator in replay_states(results_dir):
        events.append(event)
        if event.seq in wanted:
            states[event.seq] = coordinator.snapshot()
    final = coordinator.snapshot() if coordinator is not None else {}
    replayed = Replay(session=session, events=events, final_state=final, states=states)
    saved = session.get("final_state")
    if saved is None:
        replayed.note = (f"session.json holds no final state (status: "
                         f"{session.get('status', 'unknown')}), so the replayed state could "
                         f"not be checked against one")
        log.info("%s: %s", results_dir, replayed.note)
        return replayed
    check_final_state(saved, replayed.final_state)
    replayed.final_state_checked = True
    return replayed


def check_final_state(saved: Any, rebuilt: dict[str, Any]) -> None:
    """Raise :class:`FinalStateMismatch` unless ``rebuilt`` is the ``saved`` final state.

    The message does not name the results directory: whoever called :func:`replay` knows it
    (the CLI puts it first), as for the other :class:`ReplayMismatch` errors.
    """
    difference = first_difference(saved, as_written(rebuilt))
    if difference is not None:
        raise FinalStateMismatch(
            f"the log replays to another final state than the session saved, "
            f"{difference.describe('saved', 'rebuilt')}. {_likely_cause(difference.path)}")


def _likely_cause(path: str) -> str:
    """What to look at, given where the states first differ."""
    if path == "seq":  # the snapshot's first key: the event counts differ, not the env
        return ("The log holds another number of events than the session made: was "
                "events.jsonl cut short or edited?")
    return ("Does the task's env_args() give every argument its env was made with, and is "
            "every step deterministic?")


def as_written(state: dict[str, Any]) -> Any:
    """``state`` as ``session.json`` holds it: the ResultsWriter cleans every text and writes
    what JSON has no form for (a set, a path) as its ``str``, so the rebuilt state is compared
    in that form too."""
    return json.loads(json.dumps(clean(state), ensure_ascii=False, default=str))
