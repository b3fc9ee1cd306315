"""Confirmation requests: task actions held until a teammate accepts or rejects them.

A member asks with ``REQUEST_TEAMMATE_CONFIRM``, or the coordinator asks on an agent's behalf
when the env wants the action approved first (``CoEnv.needs_confirmation``). The action is
held as it was parsed when it was requested, with its spec and, for an edit of a shared text,
the version the requester edited: it is never parsed again, and an accepted edit is merged
with what changed meanwhile. :class:`Confirmations` keeps the requests and makes their
events through the coordinator (:class:`~cogym_lab.core.transition.Emitter`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cogym_lab.core.collaboration as acts
from cogym_lab.core.actions import Action, ActionError, ActionSpec
from cogym_lab.core.failures import failure_marks
from cogym_lab.core.grammar import format_action
from cogym_lab.core.messages import Confirmation, EventType, TeamMember
from cogym_lab.core.shared_text import TextEdit, TextVersion
from cogym_lab.core.shared_texts import SharedTexts
from cogym_lab.core.transition import Emitter, StepContext, Transition


@dataclass(frozen=True)
class HeldAction:
    """A requested action as it waits for an answer: the request the team is shown, the
    action (parsed once, with its spec), and the text version it was made on, if any."""

    request: Confirmation
    action: Action
    spec: ActionSpec
    base: TextVersion | None = None


class Confirmations:
    """The open confirmation requests of a session, by request id (``c1``, ``c2``, ...), and
    the acts that open and answer them. ``emitter`` (the coordinator) makes their events;
    ``texts`` merges an accepted edit of a shared text with what changed meanwhile."""

    def __init__(self, emitter: Emitter, texts: SharedTexts) -> None:
        self._emitter = emitter
        self._texts = texts
        #: request id -> the request as members are shown it
        self.pending: dict[str, Confirmation] = {}
        self._held: dict[str, HeldAction] = {}
        self._made = 0

    # -- the acts ----------------------------------------------------------------------------

    def request(self, step: StepContext, member: TeamMember, action: Action,
                now: float) -> Transition:
        """A member's ``REQUEST_TEAMMATE_CONFIRM``: its ``pending_action`` is an action of its
        own, sent as text inside the act, so it is parsed here, once."""
        try:
            pending, spec = self._emitter.parse_task_action(action.args["pending_action"])
        except ActionError as error:
            raise ActionError(f"REQUEST_TEAMMATE_CONFIRM needs a task action: {error}") from None
        self._emitter.admit_internal(step, spec)
        return self.open(step, member, pending, spec, format_action(pending, spec),
                         format_action(action, acts.REQUEST_TEAMMATE_CONFIRM), now)

    def open(self, step: StepContext, member: TeamMember, pending: Action, spec: ActionSpec,
             shown_as: str, act_text: str, now: float) -> Transition:
        """Hold ``pending`` (parsed, with its spec) for a teammate's answer; the request shows
        it as ``shown_as`` and the log records the act as ``act_text``. An edit of a shared
        text keeps the version it was made on, to be merged with what changes meanwhile."""
        emitter = self._emitter
        base = self._texts.base_for(spec, step, emitter.last_shown(member.role))
        self._made += 1
        request = Confirmation(request_id=f"c{self._made}", requester=member.role,
                               seq=emitter.seq + 1, time=now, pending_action=shown_as)
        self.pending[request.request_id] = request
        self._held[request.request_id] = HeldAction(request, pending, spec, base)
        return emitter.emit(step, now, EventType.CONFIRM_REQUEST, member.role,
                            emitter.team_roles(), action=act_text,
                            info={"request_id": request.request_id})

    def accept(self, step: StepContext, member: TeamMember, action: Action,
               now: float) -> Transition:
        """``ACCEPT_CONFIRMATION``: the held action is applied as the requester's, logged as
        the acceptor's act (so that replay re-does the acceptance, taking the logged merge)."""
        emitter = self._emitter
        held = self._answer(member.role, action.args["request_id"])
        request, spec = held.request, held.spec
        worked: tuple[Action, TextEdit] | None = None
        if step.replaying is not None:  # the logged result of a merge, not a new merge
            applied = step.replaying.info.get("applied_action")
            merged = emitter.parse_task_action(applied)[0] if applied else None
        else:
            worked = self._texts.edit_for(held.action, spec, step, seq=emitter.seq + 1,
                                          author=request.requester, base=held.base)
            merged = worked[0] if worked and worked[0] is not held.action else None
        result = emitter.apply(step, request.requester, merged or held.action, on_behalf=True)
        accept = format_action(action, acts.ACCEPT_CONFIRMATION)
        info: dict[str, Any] = _answer_info(request)
        if merged is not None:
            info["applied_action"] = format_action(merged, spec)
        if result.error:
            return emitter.refuse(step, now, member.role, accept, result.error,
                                  also=[request.requester],
                                  info={**info, **failure_marks(result.info)})
        if worked is not None:
            self._texts.commit_edit(spec, worked[1], seq=emitter.seq + 1,
                                    author=request.requester, info=info)
        recipients = [request.requester, member.role] if result.private \
            else emitter.team_roles()
        if result.deferred is not None:
            info["deferred"] = result.deferred.label or True
        transition = emitter.emit(step, now, EventType.CONFIRM_ACCEPT, member.role, recipients,
                                  action=accept, private=result.private, reward=result.reward,
                                  info=info)
        if result.deferred is not None:  # the approved action's slow work runs as the requester's
            transition.deferred.append((request.requester, result.deferred))
        return emitter.after_task_action(step, request.requester, result, transition, now)

    def reject(self, step: StepContext, member: TeamMember, action: Action,
               now: float) -> Transition:
        """``REJECT_CONFIRMATION``: the held action is dropped; the requester is told."""
        request = self._answer(member.role, action.args["request_id"]).request
        return self._emitter.emit(step, now, EventType.CONFIRM_REJECT, member.role,
                                  [request.requester, member.role],
                                  action=format_action(action, acts.REJECT_CONFIRMATION),
                                  info=_answer_info(request))

    def _answer(self, role: str, request_id: str) -> HeldAction:
        """Close request ``request_id``, answered by ``role``; :class:`ActionError` for a
        request that is not open or is ``role``'s own."""
        request = self.pending.get(request_id)
        if request is None:
            open_ids = ", ".join(self.pending) or "none"
            raise ActionError(f"No pending request {request_id!r}; open requests: {open_ids}.")
        if request.requester == role:
            raise ActionError("You cannot answer your own confirmation request.")
        del self.pending[request_id]
        return self._held.pop(request_id)


def request_on_behalf(action: Action, spec: ActionSpec) -> tuple[str, str]:
    """The request an agent's action becomes when the env wants it approved first: the action
    as the request shows it, and the ``REQUEST_TEAMMATE_CONFIRM`` act the log records."""
    shown_as = format_action(action, spec)
    request = Action(name=acts.REQUEST_TEAMMATE_CONFIRM.name, args={"pending_action": shown_as})
    return shown_as, format_action(request, acts.REQUEST_TEAMMATE_CONFIRM)


def _answer_info(request: Confirmation) -> dict[str, Any]:
    """What the event that answers ``request`` records of it."""
    return {"request_id": request.request_id, "requester": request.requester,
            "pending_action": request.pending_action}


__all__ = ["Confirmations", "HeldAction", "request_on_behalf"]
