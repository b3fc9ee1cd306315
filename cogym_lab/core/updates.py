"""What a member is sent for each event: an :class:`~cogym_lab.core.messages.Update` holding what
the event changed for that member (``docs/notifications.md``).

:class:`UpdateWriter` remembers what each member was last shown (the seq of its last update and
the versions of its components), so that an update carries only the news; its size grows
neither with the session's length nor with the number of seats. It reads the team's shared
state through :class:`TeamState`, which the coordinator is.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Protocol

import cogym_lab.core.collaboration as acts
from cogym_lab.core.env import CoEnv
from cogym_lab.core.messages import (
    ChatMessage,
    Confirmation,
    Event,
    EventType,
    SessionContext,
    TeamMember,
    Turn,
    Update,
)
from cogym_lab.core.observation import Observation
from cogym_lab.core.shared_texts import SharedTexts, TextPayloads
from cogym_lab.core.view_versions import Prints, ViewVersions


class TeamState(Protocol):
    """The shared state an update shows, as the coordinator holds it."""

    @property
    def session_id(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def env(self) -> CoEnv: ...
    @property
    def chat(self) -> Sequence[ChatMessage]: ...
    @property
    def pending(self) -> Mapping[str, Confirmation]: ...
    @property
    def step_counts(self) -> Mapping[str, int]: ...
    @property
    def step_limits(self) -> Mapping[str, int]: ...
    @property
    def paused(self) -> set[str]: ...
    @property
    def started_at(self) -> float: ...
    @property
    def done(self) -> bool: ...
    @property
    def end_reason(self) -> str | None: ...
    def current_turn(self) -> Turn | None: ...


class UpdateWriter:
    """Writes each member's updates, and remembers what each was shown."""

    def __init__(self, state: TeamState, team: Sequence[TeamMember], texts: SharedTexts) -> None:
        self._state = state
        self._texts = texts
        self.versions = ViewVersions()  # what each role was shown, for its next update
        self._last_seq: dict[str, int] = {}  # role -> the seq of the last update it was sent
        # Whose counts (and receipt of an event) every update shows: people's are left off
        # other people's updates.
        self._shown_counts = [member.role for member in team if member.kind != "person"]
        self._people = {member.role for member in team if member.kind == "person"}
        self._team = list(team)
        self._members = {member.role: member for member in team}
        self._not_people = [member for member in team if member.kind != "person"]

    def context(self, role: str) -> SessionContext:
        """What ``role`` needs to start. Its ``team`` lists every member for an agent or a
        simulated user (they address teammates by role), but for a person only the other
        members who are not people, and the person itself: a session may seat thousands of
        people, and a team list per seat would grow with the square of that."""
        state = self._state
        member = self._members[role]
        team = self._team if member.kind != "person" else [*self._not_people, member]
        return SessionContext(
            session_id=state.session_id, task=state.task,
            task_description=state.env.task_description, role=role, kind=member.kind,
            team=team, action_specs=state.env.action_specs(),
            collaboration_specs=acts.collaboration_specs(member.kind),
            step_limit=state.step_limits.get(role),
        )

    def last_shown(self, role: str) -> int | None:
        """The seq of the last update ``role`` was sent (``None`` before its first)."""
        return self._last_seq.get(role)

    def for_event(self, event: Event, recipients: Sequence[str], now: float, *,
                  given_context: set[str], views: Mapping[str, Observation], prints: Prints
                  ) -> list[Update]:
        """Every recipient's update for ``event`` (already :meth:`Event.as_sent`); what they
        share (the event's recipients as people are shown them, each component's fingerprint,
        each document's news per replica state) is worked out once for all of them."""
        trimmed = [r for r in event.recipients if r not in self._people] \
            if self._people and len(event.recipients) > 1 else None
        texts: TextPayloads = {}
        return [self.update(role, event, now, role in given_context, views[role], prints=prints,
                            texts=texts, trimmed=trimmed) for role in recipients]

    def whole(self, role: str, seq: int, now: float, *, watcher: bool = False) -> Update:
        """``role``'s whole state as of event ``seq``, as a ``sync`` update (not an event): for
        a member that (re)joins, or for a ``watcher`` over its shoulder."""
        event = Event(seq=seq, time=now, type=EventType.SYNC, recipients=[role])
        return self.update(role, event, now, with_context=True, watcher=watcher)

    def update(self, role: str, event: Event, now: float, with_context: bool = False,
               view: Observation | None = None, watcher: bool = False,
               prints: Prints | None = None, texts: TextPayloads | None = None,
               trimmed: list[str] | None = None) -> Update:
        """``role``'s update for ``event``: what changed for it since its previous update, or
        its whole state when it gets the context (its first update, START, END, a sync, a
        RESUME that wakes it) or watches. For a ``watcher``, it records nothing about what the
        member was shown. ``trimmed``: the event's recipients who are not people, when worked
        out already."""
        state = self._state
        prev_seq = None if watcher else self._last_seq.get(role)
        whole = with_context or prev_seq is None
        view = view or state.env.view(role)
        changed, versions = self.versions.diff(role, view, event.seq, record=not watcher,
                                               cache=prints)
        if not watcher:
            self._last_seq[role] = event.seq
        news = self._texts.payload(role, whole=whole, record=not watcher, cache=texts) \
            if self._texts and role in self._people else None
        # Every part is already a validated model: skip re-validating on the hot path.
        return Update.model_construct(
            session_id=state.session_id,
            seq=event.seq,
            prev_seq=prev_seq,
            recipient=role,
            event=self._event_for(role, event, trimmed),
            whole=whole,
            components=list(view.components) if whole else changed,
            versions=versions,
            messages=self._chat_since(role, None if whole else prev_seq),
            pending_confirmations=list(state.pending.values()),
            step_counts=self._counts_for(role, state.step_counts),
            step_limits=self._counts_for(role, state.step_limits),
            paused=sorted(state.paused),
            started_at=state.started_at,
            time=now,
            done=state.done,
            end_reason=state.end_reason,
            context=self.context(role) if whole else None,
            turn=state.current_turn(),
            texts=news,
        )

    def _chat_since(self, role: str, seq: int | None) -> list[ChatMessage]:
        """The messages ``role`` may see that were sent after event ``seq`` (all for ``None``):
        a search, not a scan, since the chat is in ``seq`` order."""
        chat = self._state.chat
        start = 0 if seq is None else bisect.bisect_right(chat, seq, key=_message_seq)
        return [message for message in chat[start:] if message.visible_to(role)]

    def _event_for(self, role: str, event: Event, trimmed: list[str] | None) -> Event:
        """``event`` as ``role`` is sent it: its recipients without the other people (the
        log keeps them all), so that a broadcast to every seat does not carry every seat."""
        if not self._people or len(event.recipients) <= 1:
            return event
        if trimmed is None:
            trimmed = [r for r in event.recipients if r not in self._people]
        shown = [*trimmed, role] if role in self._people else trimmed
        if len(shown) == len(event.recipients):
            return event
        return event.model_copy(update={"recipients": shown})

    def _counts_for(self, role: str, counts: Mapping[str, int]) -> dict[str, int]:
        """The entries of ``counts`` that ``role`` is shown: its own, and those of the members
        who are not people. Constant in the number of seats, unlike the whole table."""
        shown = {r: counts[r] for r in self._shown_counts if r in counts}
        if role in counts:
            shown[role] = counts[role]
        return shown


def _message_seq(message: ChatMessage) -> int:
    return message.seq


__all__ = ["TeamState", "UpdateWriter"]
