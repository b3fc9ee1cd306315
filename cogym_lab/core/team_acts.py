"""The collaboration acts that change the team's own state, not the task's: messages between
members (the chat), waits, and pausing or resuming agents.

:class:`TeamActs` keeps the chat and the paused agents; the coordinator reads them for every
update and makes the events (:class:`~cogym_lab.core.transition.Emitter`). The rules are the
coordinator's (its module docstring): a message notifies its recipients and its sender, a wait
is logged and notifies nobody, a paused agent receives nothing and may not act.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

import cogym_lab.core.collaboration as acts
from cogym_lab.core.actions import Action, ActionError
from cogym_lab.core.grammar import format_action
from cogym_lab.core.messages import ChatMessage, EventType, TeamMember, TextSelection
from cogym_lab.core.transition import Emitter, StepContext, Transition


class TeamActs:
    """The chat and the paused agents of a session, and the acts that change them."""

    def __init__(self, emitter: Emitter, team: Sequence[TeamMember]) -> None:
        self._emitter = emitter
        self._roles = [member.role for member in team]
        self._agents = [member.role for member in team if member.kind == "agent"]
        self.chat: list[ChatMessage] = []
        self.paused: set[str] = set()

    def message(self, step: StepContext, member: TeamMember, action: Action,
                now: float) -> Transition:
        """``SEND_TEAMMATE_MESSAGE``: to one teammate, or to all when ``to`` is empty."""
        emitter = self._emitter
        to = action.args["to"] or None
        if to is not None and (to not in self._roles or to == member.role):
            others = [role for role in self._roles if role != member.role]
            raise ActionError(f"Cannot message {to!r}; teammates are {', '.join(others)}.")
        selection = read_selection(action.args.get("selection"))
        # The message takes the seq that emit is about to give its event.
        self.chat.append(ChatMessage(seq=emitter.seq + 1, time=now, sender=member.role,
                                     text=action.args["message"], to=to, selection=selection))
        # The sender hears back too: its next act must see its own message (Listing 1).
        recipients = [to, member.role] if to else emitter.team_roles()
        return emitter.emit(step, now, EventType.MESSAGE, member.role, recipients,
                            action=format_action(action, acts.SEND_TEAMMATE_MESSAGE))

    def wait(self, step: StepContext, member: TeamMember, action: Action,
             now: float) -> Transition:
        """``WAIT_TEAMMATE_CONTINUE``: logged; it notifies nobody."""
        return self._emitter.emit(step, now, EventType.WAIT, member.role, [],
                                  action=format_action(action))

    def pause_or_resume(self, step: StepContext, member: TeamMember, action: Action,
                        now: float) -> Transition:
        """``PAUSE_AGENT`` / ``RESUME_AGENT`` from the human side: one agent, or all."""
        pausing = action.name == acts.PAUSE_AGENT.name
        if not member.is_human:
            raise ActionError(f"{action.name} is for the human side of the team.")
        target = action.args["agent"]
        if target is not None and target not in self._agents:
            raise ActionError(f"{target!r} is not an agent; agents are "
                              f"{', '.join(self._agents)}.")
        targets = [target] if target else list(self._agents)
        if pausing:
            self.paused.update(targets)
        else:
            self.paused.difference_update(targets)
        return self._emitter.emit(step, now, EventType.PAUSE if pausing else EventType.RESUME,
                                  member.role, self._emitter.team_roles(),
                                  action=format_action(action), info={"agents": targets})


def read_selection(raw: object) -> TextSelection | None:
    """A message's ``selection`` (see :class:`TextSelection`), or a refusal that says its form."""
    if raw is None:
        return None
    try:
        return TextSelection.model_validate(raw)
    except ValidationError as error:
        problem = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'selection'}: {e['msg']}"
                            for e in error.errors()[:3])
        raise ActionError('A selection is {"component": "...", "text": "...", "start": 0, '
                          f'"end": 0}} with end not before start ({problem}).') from None


__all__ = ["TeamActs", "read_selection"]
