"""A person's panel typing in a shared text (``EDIT_TEXT``, a Yjs update), and its news.

Each edit is merged into the text's document (:mod:`cogym_lab.core.shared_texts`), the task
takes the new text, and the edit is an ``edit`` event told to the people at once. The members
who are not people are told once the typing pauses (:meth:`LiveEdits.announce`): one ``action``
event per person and text, as if the person had replaced the text with what it is now. Live
edits are typing, not steps: they count neither as steps nor toward ``max_events``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cogym_lab.core.collaboration as acts
from cogym_lab.core.actions import Action, ActionError
from cogym_lab.core.failures import FAILED, TaskFailed
from cogym_lab.core.grammar import format_action
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.core.shared_texts import SharedTexts
from cogym_lab.core.transition import Emitter, StepContext, Transition


class LiveEdits:
    """The live edits of a session's people; ``emitter`` (the coordinator) makes the events."""

    def __init__(self, emitter: Emitter, texts: SharedTexts, team: Sequence[TeamMember]) -> None:
        self._emitter = emitter
        self._texts = texts
        self._people = sorted(member.role for member in team if member.kind == "person")
        self._not_people = [member.role for member in team if member.kind != "person"]
        self.count = 0  # EDIT events so far: they do not count toward max_events
        # (person, shared text) -> the seq of its first live edit not yet announced
        self._unannounced: dict[tuple[str, str], int] = {}

    def edit(self, step: StepContext, member: TeamMember, action: Action,
             now: float) -> Transition:
        """``EDIT_TEXT`` from ``member``'s panel: merged, taken by the task, told to the
        people; refused (:class:`ActionError`) from a member who is not a person."""
        if member.kind != "person":
            raise ActionError("EDIT_TEXT is a person's panel typing; to change a shared text, "
                              "send the task's action that replaces it.")
        emitter = self._emitter
        component = action.args["component"]
        spec = self._texts.spec(component)
        text, edit = self._texts.live_edit(component, action.args, step, seq=emitter.seq + 1,
                                           author=member.role)
        result = emitter.apply(step, member.role, Action(name=spec.name, args={"text": text}),
                               count=False)
        if result.error:
            failed = result.info.get(FAILED)
            raise TaskFailed(result.error, failed) if failed else ActionError(result.error)
        info: dict[str, Any] = {}
        if edit is not None:
            self._texts.commit(component, edit, seq=emitter.seq + 1, author=member.role,
                               info=info)
        self.count += 1
        self._unannounced.setdefault((member.role, component), emitter.seq + 1)
        return emitter.emit(step, now, EventType.EDIT, member.role, self._people,
                            action=format_action(action, acts.EDIT_TEXT), info=info)

    def announce(self, step: StepContext, now: float) -> Transition:
        """Tell the members who are not people of the live edits made since the last time
        (``info["live"]`` names the first of the edits)."""
        transition = Transition()
        pending, self._unannounced = self._unannounced, {}
        for (role, component), first in pending.items():
            spec = self._texts.spec(component)
            action = Action(name=spec.name, args={"text": self._texts.text(component).text})
            transition.extend(self._emitter.emit(
                step, now, EventType.ACTION, role, self._not_people,
                action=format_action(action, spec),
                info={"live": {"component": component, "since": first}}))
        return transition


__all__ = ["LiveEdits"]
