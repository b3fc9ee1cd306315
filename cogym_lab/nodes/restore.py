"""Bring a live coordinator back to the state an event log ends in, so a session can go on.

Unlike :func:`cogym_lab.nodes.replay.replay`, which rebuilds every intermediate state of a log for
inspection, this restores one coordinator in place and says what the log left unfinished: slow
work (a cell, a draft) that an action started but whose result never reached the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from cogym_lab.core import Deferred
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import Event, EventType
from cogym_lab.errors import CogymError
from cogym_lab.nodes.replay_tools import tools_as_logged


class ReplayMismatch(CogymError, RuntimeError):
    """The log does not replay to the same events: the task is not deterministic, or the log
    was edited."""


def replay_events(coordinator: Coordinator,
                  events: Iterable[Event]) -> Iterator[tuple[Event, Transition | None]]:
    """Apply logged ``events`` to ``coordinator`` one at a time, yielding each once applied.

    Each comes with the transition that applied it, or ``None`` for an event that followed from
    the one before (the END after a FINISH), which is checked, not re-applied. Raises
    :class:`ReplayMismatch` when the env does not produce the logged event.
    """
    produced: list[Event] = []
    for event in events:
        transition = None
        if not produced:
            with tools_as_logged(coordinator.env, event):  # the log says whether it had an LM
                transition = coordinator.replay(event)
            produced = list(transition.events)
        again = produced.pop(0) if produced else None
        if again is None or (again.seq, again.type, again.actor, again.status) != (
                event.seq, event.type, event.actor, event.status):
            raise ReplayMismatch(
                f"Event {event.seq} ({event.type.value} by {event.actor}) replayed as "
                f"{again.type.value if again else 'nothing'}: the log cannot be restored.")
        # Under strict turn-taking every event records whose turn it left: replay must agree.
        if again.info.get("turn") != event.info.get("turn"):
            raise ReplayMismatch(
                f"Event {event.seq} ({event.type.value} by {event.actor}) left the turn at "
                f"{event.info.get('turn')} but replays to {again.info.get('turn')}: the log "
                "cannot be restored.")
        yield event, transition


@dataclass(frozen=True)
class PendingWork:
    """Deferred work started by ``started_by`` whose follow-up is not in the log."""

    role: str
    deferred: Deferred
    started_by: Event


@dataclass
class Restored:
    """What a restore left behind for the EnvNode that carries the session on."""

    events: int = 0
    pending: list[PendingWork] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)  # steps already applied: never again


def restore(coordinator: Coordinator, events: Iterable[Event]) -> Restored:
    """Re-apply ``events`` (a session's log, in order) to a fresh ``coordinator``.

    Follow-ups and failures of deferred work are applied from the log, so nothing calls an LM or a
    kernel. Raises :class:`ReplayMismatch` if an event replays differently.
    """
    restored = Restored()
    for event, transition in replay_events(coordinator, events):
        if transition is not None:
            if event.actor and (event.info.get("follow_up") or (
                    event.type is EventType.ERROR and event.info.get("deferred"))):
                _settle(restored.pending, event.actor)
            restored.pending += [PendingWork(role, deferred, transition.events[0])
                                 for role, deferred in transition.deferred]
        restored.events += 1
        if event.request_id:
            restored.request_ids.append(event.request_id)
    return restored


def _settle(pending: list[PendingWork], role: str) -> None:
    """The oldest unfinished work of ``role`` has its result in the log now."""
    for index, work in enumerate(pending):
        if work.role == role:
            del pending[index]
            return
