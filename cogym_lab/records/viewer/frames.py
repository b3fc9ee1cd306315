"""One session as the trajectory viewer shows it: every event, and the state right after each,
computed by replaying the log (:func:`cogym_lab.nodes.replay.replay_states`), so that what the
viewer shows at event ``seq`` is what ``replay(dir, keep=[seq]).state_at(seq)`` gives.

:func:`build_trajectory` walks the replay once. At each event it takes the coordinator's
snapshot and records only what changed: each member's components, the chat and the rest of the
state, as points in a :class:`~cogym_lab.records.viewer.values.ValueTable` (see
:mod:`~cogym_lab.records.viewer.payload`), and the differences the event made, named by
:func:`cogym_lab.core.state_diff.differences`. :class:`Trajectory` rebuilds the state at any
event from that, as the browser does.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.state_diff import differences, show
from cogym_lab.core.text import clean_text
from cogym_lab.nodes.replay import replay_states
from cogym_lab.records.trajectory import load_session
from cogym_lab.records.viewer.calls import match_calls, parse_calls
from cogym_lab.records.viewer.labels import read_labels
from cogym_lab.records.viewer.payload import (
    Change,
    ChatPoint,
    EventChanges,
    SessionSummary,
    StatePoint,
    TimelineEvent,
    TrajectoryPayload,
    ViewPoint,
    encode,
)
from cogym_lab.records.viewer.values import ValueTable, decode_entries

log = logging.getLogger(__name__)

#: An action longer than this shows cut on the timeline (its effect is in the views whole).
ACTION_CHARS = 4000
#: Differences listed per event; the count says how many there were in all.
MAX_CHANGES = 16
#: Characters of a value shown in a difference.
CHANGE_CHARS = 120
#: Characters of a text item kept from an event's ``info``.
INFO_CHARS = 200
#: Events between two clean-ups of the decoded values the table keeps as patch bases.
_FORGET_EVERY = 64

_VIEWS, _CHAT = "views", "chat"


@dataclass
class _Walk:
    """What :func:`build_trajectory` carries from one event to the next."""

    table: ValueTable = field(default_factory=ValueTable)
    views: dict[str, list[ViewPoint]] = field(default_factory=dict)
    chat: list[ChatPoint] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    state: list[StatePoint] = field(default_factory=list)
    changes: list[EventChanges] = field(default_factory=list)
    last_component: dict[tuple[str, str], int] = field(default_factory=dict)
    shown_chat: list[dict[str, Any]] = field(default_factory=list)  # the chat at the last point
    chat_start: int = 0
    before: dict[str, Any] = field(default_factory=dict)  # the last state, as diffed

    def add_event(self, index: int, seq: int, snapshot: dict[str, Any]) -> None:
        for role, view in snapshot.get(_VIEWS, {}).items():
            self._view(index, role, view)
        self._chat(index, snapshot.get(_CHAT, []))
        rest = {key: value for key, value in snapshot.items() if key not in (_VIEWS, _CHAT)}
        last = self.state[-1].value if self.state else None
        number = self.table.add(rest, base=last)
        if number != last:
            self.state.append(StatePoint(at=index, value=number))
        after = diffable(snapshot)
        self.changes.append(event_changes(seq, self.before, after))
        self.before = after
        if index % _FORGET_EVERY == 0:
            self.table.forget_decoded({*self.last_component.values(),
                                       *(point.value for point in self.state[-1:])})

    def _view(self, index: int, role: str, view: dict[str, Any]) -> None:
        numbers = []
        for component in view.get("components", []):
            key = (role, str(component.get("name")))
            number = self.table.add(component, base=self.last_component.get(key))
            self.last_component[key] = number
            numbers.append(number)
        rest = self.table.add({key: value for key, value in view.items()
                               if key != "components"})
        points = self.views.setdefault(role, [])
        if not points or points[-1].components != numbers or points[-1].rest != rest:
            points.append(ViewPoint(at=index, components=numbers, rest=rest))

    def _chat(self, index: int, chat: list[dict[str, Any]]) -> None:
        shown = self.shown_chat
        if self.chat and chat == shown:
            return
        if len(chat) >= len(shown) and chat[:len(shown)] == shown:  # it grew: append
            self.messages.extend(clean_message(m) for m in chat[len(shown):])
        else:  # changed otherwise (never, today): a fresh copy further down
            self.chat_start = len(self.messages)
            self.messages.extend(clean_message(m) for m in chat)
        self.shown_chat = list(chat)
        self.chat.append(ChatPoint(at=index, start=self.chat_start, length=len(chat)))


def clean_message(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message as the payload holds it (its texts valid Unicode)."""
    return {key: clean_text(value) if isinstance(value, str) else value
            for key, value in message.items()}


def diffable(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot arranged for reading its differences: a ``workspace`` of components by name
    (a shared component every member sees alike once; a private one, or a shared one members
    see differently, once per member as ``name (role)``),
    then the chat and the rest of the state. The event counter ``seq`` is left out: every
    event changes it."""
    owners: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    workspace: dict[str, Any] = {}
    for role, view in snapshot.get(_VIEWS, {}).items():
        for component in view.get("components", []):
            name = str(component.get("name"))
            if component.get("private"):  # always its member's: the key must not flip
                workspace[f"{name} ({role})"] = {k: v for k, v in component.items()
                                                 if k != "name"}
            else:
                owners.setdefault(name, []).append((role, component))
    for name, seen in owners.items():
        parts = [(role, {k: v for k, v in component.items() if k != "name"})
                 for role, component in seen]
        if all(part == parts[0][1] for _, part in parts):
            workspace[name] = parts[0][1]
        else:
            workspace.update({f"{name} ({role})": part for role, part in parts})
    rest = {key: value for key, value in snapshot.items() if key not in (_VIEWS, _CHAT, "seq")}
    return {"workspace": workspace, _CHAT: snapshot.get(_CHAT, []), **rest}


def _cut(text: str) -> str:
    text = clean_text(text)
    return text if len(text) <= CHANGE_CHARS else text[:CHANGE_CHARS - 1] + "…"


def event_changes(seq: int, before: dict[str, Any], after: dict[str, Any]) -> EventChanges:
    """The differences from ``before`` to ``after`` (both :func:`diffable`), the first
    :data:`MAX_CHANGES` of them spelled out."""
    listed: list[Change] = []
    count = 0
    for difference in differences(before, after):
        count += 1
        if len(listed) < MAX_CHANGES:
            listed.append(Change(path=_cut(difference.path), before=_cut(show(difference.expected)),
                                 after=_cut(show(difference.actual))))
    return EventChanges(seq=seq, count=count, changes=listed)


def timeline_event(event: Event) -> TimelineEvent:
    """``event`` as the timeline shows it: a long action cut, ``info`` kept short."""
    action = event.action
    cut = action is not None and len(action) > ACTION_CHARS
    info: dict[str, Any] = {}
    for key, value in event.info.items():
        if isinstance(value, bool | int | float) or value is None:
            info[key] = value
        elif isinstance(value, str):
            info[key] = value if len(value) <= INFO_CHARS else value[:INFO_CHARS - 1] + "…"
        else:
            info[key] = show(value)  # a list or an object, as short JSON text
    tick = event.info.get("tick") if event.type is EventType.CLOCK else None
    return TimelineEvent(
        seq=event.seq, time=event.time, type=event.type.value, actor=event.actor,
        action=(action[:ACTION_CHARS - 1] + "…") if cut and action else action,
        action_chars=len(action) if cut and action else None, status=event.status,
        error=event.error, private=event.private,
        tick=tick if isinstance(tick, int) else None, info=info)


def _finite_scores(scores: dict[str, float]) -> dict[str, float]:
    return {key: value for key, value in scores.items() if value == value and abs(value) != float(
        "inf")}


def build_trajectory(folder: str | Path) -> Trajectory:
    """Replay the session in ``folder`` and gather what the viewer shows of it.

    Raises ``FileNotFoundError`` when ``folder`` holds no session. A log that does not replay
    (:class:`~cogym_lab.nodes.replay.ReplayMismatch`, or a task that is not installed) still
    gives its timeline: the states stop at the last event that replayed, and the summary's
    ``replay_error`` says why.
    """
    folder = Path(folder)
    record = load_session(folder)  # FileNotFoundError without session.json
    walk = _Walk()
    replayed: list[Event] = []
    replay_error = None
    specs: list[dict[str, Any]] = []
    try:
        for index, (event, coordinator) in enumerate(replay_states(folder)):
            if not replayed:
                specs = [spec.model_dump(mode="json", exclude_none=True)
                         for spec in coordinator.env.action_specs()]
            replayed.append(event)
            walk.add_event(index, event.seq, coordinator.snapshot())
    except Exception as error:  # noqa: BLE001 - any failure to rebuild: shown, not raised
        replay_error = f"{type(error).__name__}: {error}"
        log.info("%s replays only up to event %d: %s", folder, len(replayed), replay_error)
    events = list(record.events)
    if replay_error is None and len(replayed) != len(events):
        replay_error = f"the log replays {len(replayed)} of its {len(events)} events"
    roles = list(record.roles) or sorted(walk.views)
    calls = {role: parse_calls(files.get("calls", []))
             for role, files in record.members.items() if files.get("calls")}
    matches, unmatched = match_calls(events, calls)
    labels, files, flagged = read_labels(folder, (event.seq for event in events))
    saved = record.session.get("final_state")
    summary = SessionSummary(
        session_id=record.session_id, folder=folder.name, task=record.task,
        instance=record.instance,
        team=[{"role": member.role, "kind": member.kind} for member in record.team],
        status=record.status, end_reason=record.end_reason,
        scores=_finite_scores(record.scores),
        ratings={role: rating.model_dump(mode="json", exclude_none=True)
                 for role, rating in record.ratings.items()},
        flagged=flagged,
        replay_note=None if saved is not None else (
            "session.json holds no final state, so the replayed states could not be checked "
            "against one"),
        replay_error=replay_error, files=files)
    payload = TrajectoryPayload(
        session=summary, roles=roles, action_specs=specs,
        events=[timeline_event(event) for event in events],
        values=walk.table.entries, views=walk.views, messages=walk.messages, chat=walk.chat,
        state=walk.state, changes=walk.changes, calls=calls, call_matches=matches,
        unmatched_calls=unmatched, labels=labels, replayed=len(replayed))
    return Trajectory(payload)


def _at(points: list[Any], index: int) -> Any:
    """The point in effect at event ``index``: the last one whose ``at`` is not after it."""
    position = bisect.bisect_right([point.at for point in points], index) - 1
    return points[position] if position >= 0 else None


class Trajectory:
    """One session for the viewer (:attr:`payload`), and the state at any event rebuilt from it
    exactly as the browser rebuilds it."""

    def __init__(self, payload: TrajectoryPayload) -> None:
        self.payload = payload
        self._index = {event.seq: index for index, event in enumerate(payload.events)}

    @cached_property
    def values(self) -> list[Any]:
        """Every entry of the value table, decoded."""
        return decode_entries(self.payload.values)

    @property
    def seqs(self) -> list[int]:
        """The events' numbers, in order."""
        return [event.seq for event in self.payload.events]

    def replayed(self, seq: int) -> bool:
        """Whether the state after event ``seq`` could be rebuilt."""
        return self._index[seq] < self.payload.replayed

    def state(self, seq: int) -> dict[str, Any]:
        """The whole state right after event ``seq``, as ``Coordinator.snapshot()`` gave it
        during the replay (so equal to ``replay(dir, keep=[seq]).state_at(seq)``). Raises
        ``KeyError`` for an event the log does not have or that did not replay."""
        index = self._index[seq]
        if index >= self.payload.replayed:
            raise KeyError(f"event {seq} did not replay: {self.payload.session.replay_error}")
        state = dict(self.values[_at(self.payload.state, index).value])
        state[_VIEWS] = {role: self.view(seq, role) for role in self.payload.views}
        state[_CHAT] = self._chat(index)
        return state

    def view(self, seq: int, role: str) -> dict[str, Any]:
        """``role``'s view right after event ``seq`` (``Observation`` as JSON)."""
        point = _at(self.payload.views[role], self._index[seq])
        if point is None:
            return {"components": []}
        return {**self.values[point.rest],
                "components": [self.values[number] for number in point.components]}

    def _chat(self, index: int) -> list[dict[str, Any]]:
        point = _at(self.payload.chat, index)
        if point is None:
            return []
        return self.payload.messages[point.start:point.start + point.length]

    def visible_chat(self, seq: int, role: str) -> list[dict[str, Any]]:
        """The chat ``role`` could read right after event ``seq`` (messages to everyone, and
        those it sent or was sent), as ``Coordinator.visible_chat`` gives it."""
        return [message for message in self._chat(self._index[seq])
                if message.get("to") is None or role in (message.get("to"),
                                                         message.get("sender"))]

    def changes(self, seq: int) -> EventChanges:
        """What event ``seq`` changed (nothing known for an event that did not replay)."""
        index = self._index[seq]
        if index >= len(self.payload.changes):
            return EventChanges(seq=seq, count=0, changes=[])
        return self.payload.changes[index]

    def labels(self, seq: int | None) -> list[Any]:
        """The labels at event ``seq`` (``None``: those on the whole session)."""
        return [label for label in self.payload.labels if label.seq == seq]

    def calls_behind(self, seq: int) -> Iterator[tuple[str, Any, list[Any]]]:
        """``(role, call, earlier calls)`` for the LM call behind event ``seq``, if any."""
        for match in self.payload.call_matches:
            if match.seq == seq:
                calls = self.payload.calls[match.role]
                yield match.role, calls[match.call], [calls[n] for n in match.earlier]

    def encoded(self) -> bytes:
        """The payload as the widget and the HTML export carry it (gzipped JSON)."""
        return encode(self.payload)
