"""The notification protocol (Co-Gym Listing 1) as a pure, deterministic state machine.

``Coordinator`` holds the env and everything the team shares besides it: the chat, pending
confirmations, paused agents, step counts. It turns each step into a logged :class:`Event` plus the
notifications that event owes, and does no I/O, keeps no clock of its own and makes no random
choice, so the same events fed to a fresh coordinator rebuild the same states (that is replay).
``EnvNode`` adds the bus and the inactivity timer around it.

The rules:

* a private change notifies the actor only; a shared change notifies every member;
* a message notifies its recipients and its sender (as Listing 1 notifies every member of a
  shared change), so the sender's next act sees its own message; a wait is logged and notifies
  nobody;
* a tick (inactivity past the threshold) notifies everyone;
* an error notifies the actor only and changes nothing;
* a paused agent receives nothing and may not act;
* a component that an action replaces whole (``@action(replaces=...)``) is a shared text, a CRDT
  document (``core.shared_texts``): an edit made on an older version is merged with the edits
  made since, where they overlap both versions are kept and the actor is told
  (``info["overlap"]``), and the log records the merged text and the document's operations
  (``info["text_updates"]``), so replay does not merge again;
* a person's panel edits a shared text live (``EDIT_TEXT``, a Yjs update): each edit is an
  ``edit`` event told to the people at once; the others are told once the typing pauses
  (:meth:`Coordinator.announce_edits`, an ``action`` event with ``info["live"]``). Live edits
  do not count toward ``max_events``, nor as steps;
* an action may start deferred work (an LM draft, a kernel cell): the EnvNode runs it and hands
  its result back through ``apply_follow_up`` as the actor's next step; internal actions (a
  cell's recorded outputs) are accepted only that way, or through ``apply_observed`` for what the
  env saw happen outside the session (a person running a cell in their own kernel);
* an agent's task action that the env wants approved first (``CoEnv.needs_confirmation``) becomes
  a confirmation request on the agent's behalf;
* the session ends on FINISH, when the task says it is done, when a member reaches its step
  limit, after ``max_idle_ticks`` ticks in a row, or after ``max_events`` events. What counts as
  a step is the scoring protocol's rule: every act (``every_act_is_a_step``), or task actions and
  refused attempts only;
* under strict turn-taking (``interaction="turns"``, the paper's §5.3 ablation) the rules of
  :mod:`cogym_lab.core.turns` replace the notifications above: the members act in the team's
  order, each event notifies only the member whose turn it is after it, and an act out of turn
  is refused and changes nothing. The turn is part of the state: every event's
  ``info["turn"]`` records it, and replay rebuilds it.

What the coordinator is given is admitted first, at its entry points (``handle``, and through it
``apply_follow_up`` and ``apply_observed``; ``deferred_failed``; ``end``): every path into the
shared state passes one of them, whether it came over a bus, from a Python caller, from deferred
work or from the env's own observations, and replay feeds the log back through the same ones.
Admitting means the text policy (:mod:`cogym_lab.core.text`: no lone surrogate reaches any
state) and JSON: a structured action is kept as the JSON the log can hold, so a refused one is
re-read on replay exactly as it was refused live. A role that is not a string is refused like an
unknown one.

What a member is sent is an :class:`Update`: the event and what it changed for that member (the
components whose content changed, the messages sent since its previous update), never the whole
chat or the untouched parts of its view, so its size does not grow with the session's length
(``docs/notifications.md``). Members keep their own copy (``core.member_copy``). Nor does it grow
with the number of seats: it carries the step counts of its recipient and of the members who are
not people (agents and simulated users), its event lists no other people among the recipients,
and the team's context goes to a member only with a whole update (its first, START, END, a sync,
and to an agent again when it is resumed), listing for a person only the non-people and itself.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cogym_lab.core.collaboration as acts
from cogym_lab.core.actions import Action, ActionError, ActionSpec
from cogym_lab.core.env import MIN_TICK_SECONDS, CoEnv, Deferred, StepResult
from cogym_lab.core.grammar import RawAction, format_action, parse_action
from cogym_lab.core.messages import (
    ChatMessage,
    Confirmation,
    Event,
    EventType,
    SessionContext,
    TeamMember,
    Update,
)
from cogym_lab.core.observation import Observation
from cogym_lab.core.shared_text import TextEdit, TextVersion
from cogym_lab.core.shared_texts import UPDATES, SharedTexts, TextPayloads
from cogym_lab.core.text import clean, clean_text
from cogym_lab.core.turns import NOTIFICATIONS, TURNS, TurnTaking, check_interaction, refuse_clocked
from cogym_lab.core.view_versions import Prints, ViewVersions

DEFAULT_AGENT_STEP_LIMIT = 30


def default_step_limits(team: Iterable[TeamMember], agent_limit: int = DEFAULT_AGENT_STEP_LIMIT
                        ) -> dict[str, int]:
    """Agents get ``agent_limit`` task actions each; the human side is not limited."""
    return {member.role: agent_limit for member in team if member.kind == "agent"}


@dataclass
class Transition:
    """What one input produced: the events to log, the updates to send (one per member it
    notifies), and slow work (role, Deferred) that actions started, for the EnvNode to run."""

    events: list[Event] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    deferred: list[tuple[str, Deferred]] = field(default_factory=list)

    def extend(self, other: Transition) -> Transition:
        self.events += other.events
        self.updates += other.updates
        self.deferred += other.deferred
        return self


class Coordinator:
    """Applies steps to a team's shared state and decides who is notified of what."""

    def __init__(
        self,
        env: CoEnv,
        team: Sequence[TeamMember],
        *,
        session_id: str,
        task: str | None = None,
        step_limits: Mapping[str, int] | None = None,
        max_idle_ticks: int = 3,
        max_events: int = 2000,
        every_act_is_a_step: bool = False,
        interaction: str = NOTIFICATIONS,
    ) -> None:
        roles = [member.role for member in team]
        if not roles or len(set(roles)) != len(roles):
            raise ValueError(f"A team needs at least one member and unique roles, got {roles}")
        self.env = env
        env.bind_team(team)  # a task whose rules depend on who is a person (plans) reads it
        self.session_id = session_id
        self.task = task or env.name
        self.team = list(team)
        self.members = {member.role: member for member in team}
        self.step_limits = dict(default_step_limits(team) if step_limits is None else step_limits)
        self.max_idle_ticks = max_idle_ticks
        self.max_events = max_events
        self.every_act_is_a_step = every_act_is_a_step

        self.seq = 0
        self.started_at = 0.0
        self.chat: list[ChatMessage] = []
        self.pending: dict[str, Confirmation] = {}
        self.paused: set[str] = set()
        self.step_counts = dict.fromkeys(roles, 0)
        # Whose counts (and receipt of an event) every notification shows: people's are left
        # off other people's notifications.
        self._shown_counts = [member.role for member in team if member.kind != "person"]
        self._people = {member.role for member in team if member.kind == "person"}
        self._not_people = [member for member in team if member.kind != "person"]
        # The last event's recipients without people, worked out once for all its recipients.
        self._trimmed: tuple[Event | None, list[str]] = (None, [])
        self.idle_ticks = 0  # ticks in a row with no act but waits
        self.clock_ticks = 0  # ticks of a clocked env's world so far (see clock)
        self.done = False
        self.end_reason: str | None = None
        self._confirmations_made = 0
        self._last_seq: dict[str, int] = {}  # role -> the seq of the last update it was sent
        self._versions = ViewVersions()  # what each role was shown, for its next update
        self._request: tuple[str, str | None] | None = None  # (role, request id) being handled
        self._task_specs = {spec.name: spec for spec in env.action_specs(include_internal=True)}
        self._follow_up_of: str | None = None  # the role whose deferred result is being applied
        self._observed_by: str | None = None  # the role an observed outside step is recorded for
        self._texts = SharedTexts(self._task_specs.values())
        self._base_hint: tuple[str | None, int | None] = (None, None)  # (base text, seen seq)
        # request id -> the version of the text the requester edited
        self._confirm_bases: dict[str, TextVersion] = {}
        self.live_edits = 0  # EDIT events so far: they do not count toward max_events
        # (person, shared text) -> the seq of its first live edit not yet announced
        self._unannounced: dict[tuple[str, str], int] = {}
        # request id -> the pending action as parsed when it was requested: never parsed again
        self._pending_actions: dict[str, tuple[Action, ActionSpec]] = {}
        self._replaying: Event | None = None  # the logged event being re-applied
        period = env.tick_seconds
        if period is not None and not period >= MIN_TICK_SECONDS:  # NaN is refused too
            raise ValueError(f"{type(env).__name__} ticks every {period!r} s; a clocked env may "
                             f"not tick faster than every {MIN_TICK_SECONDS} s.")
        self.interaction = check_interaction(interaction)
        refuse_clocked(self.interaction, env.name, period)
        #: The turn state under strict turn-taking (core.turns); ``None`` in the default mode.
        self.turns = TurnTaking(roles) if self.interaction == TURNS else None
        clash = set(self._task_specs) & {spec.name for spec in acts.ALL_ACTS}
        if clash:
            raise ValueError(f"Task actions may not reuse collaboration act names: {clash}")
        # Every act parses for everyone, so that a forbidden one gets a precise error.
        self._all_specs = {**self._task_specs, **{spec.name: spec for spec in acts.ALL_ACTS}}

    # -- inputs ------------------------------------------------------------------------------

    def start(self, now: float, *, seed: int | None = None) -> Transition:
        """Reset the env and tell every member the session has begun."""
        self.env.reset(seed=seed)
        self.started_at = now
        return self._emit(now, EventType.START, None, self.team_roles(), info={"seed": seed})

    def handle(self, role: str, raw: RawAction | None, now: float,
               request_id: str | None = None, *, base: str | None = None,
               seen_seq: int | None = None) -> Transition:
        """Apply one step from ``role``. Bad input becomes an error event; nothing raises.

        For an action that replaces a whole text, ``base`` (the text the sender edited) or
        ``seen_seq`` (the event whose view it acted on) says where the sender started from;
        without either, the last text shown to ``role`` is its base.

        Every argument is admitted first (see the module docstring): text is cleaned, a
        structured action becomes plain JSON, and a value of the wrong type is refused or
        ignored, never raised on.
        """
        role = _admit_role(role)
        raw = _admit_action(raw)
        request_id = clean_text(request_id) if isinstance(request_id, str) else None
        base = clean_text(base) if isinstance(base, str) else None
        if not isinstance(seen_seq, int) or isinstance(seen_seq, bool):
            seen_seq = None
        self._request = (role, request_id)
        self._base_hint = (base, seen_seq)
        # Typing in a shared text is no turn: it neither needs one nor passes it.
        if self._out_of_turn(role) and not _is_live_edit(raw):  # refused before it is counted
            try:
                return self._not_your_turn(role, raw, now)
            finally:
                self._request = None
                self._base_hint = (None, None)
        counted = self._counts_as_step(role) and not _is_live_edit(raw)
        if counted:  # before the act, so that its notifications show the new count
            self.step_counts[role] += 1
        try:
            transition = self._handle(role, raw, now)
        finally:
            self._request = None
            self._base_hint = (None, None)
        if any(event.type is not EventType.WAIT for event in transition.events):
            self.idle_ticks = 0  # any act but a wait is activity, refused ones included
        if counted:
            self._check_limit(role, transition, now)
        return self._end_if_idle_rounds(transition, now)

    def _counts_as_step(self, role: str) -> bool:
        """Under ``every_act_is_a_step``, whether this input is one of ``role``'s acts (what the
        env observed it do outside the session is; the result of its deferred work is not)."""
        return (self.every_act_is_a_step and not self.done and role in self.step_counts
                and role != self._follow_up_of)

    def _handle(self, role: str, raw: RawAction, now: float) -> Transition:
        if self.done:
            return Transition()
        member = self.members.get(role)
        if member is None:
            return self._error(now, role, raw, f"Unknown role {role!r}; the team is "
                                               f"{', '.join(self.members)}.", notify=False)
        if role in self.paused:
            return self._error(now, role, raw, "You are paused and may not act until resumed.",
                               notify=False)
        try:
            # The one parse of this action: from here on it travels typed, with its spec, and
            # is written as text only for the log and for prompts.
            parsed, spec = parse_action(raw, self._all_specs)
            handler = _COLLABORATION_HANDLERS.get(parsed.name)
            if handler is not None:
                return handler(self, member, parsed, now)
            self._admit_internal(role, spec)
            if member.kind == "agent" and self.env.needs_confirmation(role, parsed):
                # The task wants a person to approve this first: ask on the agent's behalf.
                pending_text = format_action(parsed, spec)
                request = Action(name=acts.REQUEST_TEAMMATE_CONFIRM.name,
                                 args={"pending_action": pending_text})
                return self._open_request(member, parsed, spec, pending_text,
                                          format_action(request, acts.REQUEST_TEAMMATE_CONFIRM),
                                          now)
            return self._task_action(member, parsed, spec, now)
        except ActionError as error:
            return self._error(now, role, raw, str(error))

    def _admit_internal(self, role: str, spec: ActionSpec) -> None:
        """Refuse an internal action (a cell's recorded outputs) unless it is the result of
        ``role``'s deferred work or a step the env observed ``role`` take."""
        if spec.internal and role not in (self._follow_up_of, self._observed_by):
            raise ActionError(f"{spec.name} is applied by the environment, not sent by a "
                              "member.")

    def tick(self, now: float) -> Transition:
        """Inactivity passed the threshold: notify everyone, or end after enough in a row."""
        if self.done:
            return Transition()
        if self.idle_ticks >= self.max_idle_ticks:
            return self.end(now, "idle", idle_ticks=self.idle_ticks)
        self.idle_ticks += 1
        transition = self._emit(now, EventType.TICK, None, self.team_roles(),
                                info={"idle_ticks": self.idle_ticks})
        return self._end_if_idle_rounds(transition, now)

    def clock(self, now: float) -> Transition:
        """One tick of a clocked env's world (:meth:`CoEnv.advance`): what members asked for
        since the previous tick takes effect now, all at once.

        Logged as a ``clock`` event whose ``info`` holds the tick's number and what the env
        said happened, so replay re-runs the same ticks between the same actions. Only the
        members whose view changed are told. A game over ends the session (``time_up``); a
        task that fails to advance ends it too (``task_failed``), as a world that cannot move
        on cannot be played.
        """
        if self.done:
            return Transition()
        try:
            result = self.env.advance()
        except Exception as error:  # noqa: BLE001 - a bug in a task must end it cleanly
            return self.end(now, "task_failed", error=f"{type(error).__name__}: {error}")
        self.clock_ticks += 1
        roles = [r for r in self.team_roles() if r not in self.paused]
        views = self.env.views(roles)
        prints: Prints = {}
        told = [r for r in roles if self._versions.differs(r, views[r], prints)]
        transition = self._emit(now, EventType.CLOCK, None, told, reward=result.reward,
                                info={"tick": self.clock_ticks, **(_admit_json(result.info) or {})},
                                views=views, prints=prints)
        if result.done:
            transition.extend(self.end(now, "time_up", ticks=self.clock_ticks))
        return transition

    def end(self, now: float, reason: str, **info: Any) -> Transition:
        """End the session; every member, paused or not, gets a final notification."""
        if self.done:
            return Transition()
        reason, info = clean_text(str(reason)), _admit_json(info) or {}
        transition = self.announce_edits(now)  # the last typing is news for the agents too
        self.done, self.end_reason = True, reason
        return transition.extend(self._emit(now, EventType.END, None, self.team_roles(),
                                            skip_paused=False, info={"reason": reason, **info}))

    def sync(self, role: str, now: float) -> Update | None:
        """The current state for ``role``, for a member that (re)joins. Not an event.

        ``None`` for a paused agent: it receives nothing until resumed, when it is told all.
        """
        if not isinstance(role, str) or role not in self.members or role in self.paused:
            return None
        event = Event(seq=self.seq, time=now, type=EventType.SYNC, recipients=[role])
        return self._update(role, event, now, with_context=True)

    def watch(self, role: str, now: float) -> Update | None:
        """What ``role`` sees now, as a whole ``sync`` update for someone watching over its
        shoulder (a read-only panel). Changes nothing: the member's own updates go on as if
        nobody watched. ``None`` before the start and for a role not in the team."""
        if self.seq == 0 or not isinstance(role, str) or role not in self.members:
            return None
        event = Event(seq=self.seq, time=now, type=EventType.SYNC, recipients=[role])
        return self._update(role, event, now, with_context=True, watcher=True)

    def replay(self, event: Event) -> Transition:
        """Re-apply a logged event to a fresh coordinator."""
        self._replaying = event
        try:
            return self._replay(event)
        finally:
            self._replaying = None

    def _replay(self, event: Event) -> Transition:
        if event.type is EventType.START:
            return self.start(event.time, seed=event.info.get("seed"))
        if event.type is EventType.TICK:
            return self.tick(event.time)
        if event.type is EventType.CLOCK:
            if event.info.get("tick") != self.clock_ticks + 1:  # a log with a tick missing
                raise ValueError(f"Event {event.seq} is tick {event.info.get('tick')}, but the "
                                 f"replay is at tick {self.clock_ticks}")
            return self.clock(event.time)
        if event.type is EventType.END:
            info = dict(event.info)
            info.pop("turn", None)  # not an argument of the end: the turn it left is recorded
            return self.end(event.time, info.pop("reason", "ended"), **info)
        if event.actor is None or event.action is None:
            raise ValueError(f"Event {event.seq} ({event.type}) has no actor or action to replay")
        if event.type is EventType.ACTION and "live" in event.info:
            return self.announce_edits(event.time)  # changes nothing: the edits were replayed
        if event.type is EventType.ERROR and event.info.get("deferred"):
            return self.deferred_failed(event.actor, event.action, event.error or "", event.time)
        # A refused structured action is logged as its JSON: re-read it as the same structure.
        raw: RawAction = json.loads(event.action) if event.info.get("structured") \
            else event.action
        if event.info.get("follow_up"):
            return self.apply_follow_up(event.actor, raw, event.time)
        if event.info.get("observed"):
            return self.apply_observed(event.actor, raw, event.time)
        return self.handle(event.actor, raw, event.time)

    # -- views -------------------------------------------------------------------------------

    def team_roles(self) -> list[str]:
        return [member.role for member in self.team]

    def context(self, role: str) -> SessionContext:
        """What ``role`` needs to start. Its ``team`` lists every member for an agent or a
        simulated user (they address teammates by role), but for a person only the other
        members who are not people, and the person itself: a session may seat thousands of
        people, and a team list per seat would grow with the square of that."""
        member = self.members[role]
        team = self.team if member.kind != "person" else [*self._not_people, member]
        return SessionContext(
            session_id=self.session_id, task=self.task, task_description=self.env.task_description,
            role=role, kind=member.kind, team=team, action_specs=self.env.action_specs(),
            collaboration_specs=acts.collaboration_specs(member.kind),
            step_limit=self.step_limits.get(role),
        )

    def visible_chat(self, role: str) -> list[ChatMessage]:
        return [message for message in self.chat if message.visible_to(role)]

    def snapshot(self) -> dict[str, Any]:
        """The whole shared state as plain data, for replay checks and results."""
        return {
            "seq": self.seq,
            "views": {role: view.model_dump(mode="json")
                      for role, view in self.env.views(list(self.members)).items()},
            "chat": [message.model_dump(mode="json") for message in self.chat],
            "pending_confirmations": [c.model_dump(mode="json") for c in self.pending.values()],
            "paused": sorted(self.paused),
            "step_counts": dict(self.step_counts),
            "done": self.done,
            "end_reason": self.end_reason,
            "outcome": self.env.outcome(),
            # Only under turn-taking: the final states of sessions saved before it stay equal.
            **({"turn": self.turns.snapshot()} if self.turns is not None else {}),
        }

    # -- the acts ----------------------------------------------------------------------------

    def _apply(self, role: str, action: Action, *, count: bool = True) -> StepResult:
        """Run a task action on the env; a success counts as one of ``role``'s steps (unless
        ``count`` is false: a live edit is typing, not a step)."""
        try:
            result = self.env.apply(role, action)  # parsed where it entered: not again
        except Exception as error:  # noqa: BLE001 - a bug in a task must not end the session
            return StepResult(observation=self.env.view(role), private=True, info={
                "error": f"The task failed on this action: {type(error).__name__}: {error}"})
        if count and not result.error and not self.every_act_is_a_step:
            self.step_counts[role] += 1
        return result

    def _after_task_action(self, role: str, result: StepResult, transition: Transition,
                           now: float) -> Transition:
        if result.done:
            return transition.extend(self.end(now, "task_done"))
        return self._check_limit(role, transition, now)

    def _check_limit(self, role: str, transition: Transition, now: float) -> Transition:
        limit = self.step_limits.get(role)
        if limit is not None and self.step_counts.get(role, 0) >= limit and not self.done:
            transition.extend(self.end(now, "step_limit", role=role))
        return transition

    def _task_action(self, member: TeamMember, action: Action, spec: ActionSpec,
                     now: float) -> Transition:
        worked = self._text_edit(member.role, action, spec, self._sender_base(member.role, spec))
        applied = worked[0] if worked else action
        result = self._apply(member.role, applied)
        if result.error:  # the document is left as it was: the edit is committed only now
            return self._error(now, member.role, format_action(applied, spec), result.error)
        info = {k: v for k, v in result.info.items() if k != "action"}
        if worked is not None:
            self._commit_text(spec, worked[1], member.role, info)
        if result.deferred is not None:
            info["deferred"] = result.deferred.label or True
        transition = self._emit(
            now, EventType.ACTION, member.role,
            [member.role] if result.private else self.team_roles(),
            action=format_action(applied, spec), private=result.private,
            reward=result.reward, info=info,
        )
        if result.deferred is not None:
            transition.deferred.append((member.role, result.deferred))
        return self._after_task_action(member.role, result, transition, now)

    def apply_follow_up(self, role: str, raw: RawAction, now: float,
                        seen_seq: int | None = None) -> Transition:
        """Apply the action that ``role``'s deferred work produced (internal actions allowed).

        ``seen_seq`` is the event that started the work: a text it produced is merged with the
        edits made since then.
        """
        self._follow_up_of = _admit_role(role)
        try:
            return self.handle(role, raw, now, seen_seq=seen_seq)
        finally:
            self._follow_up_of = None

    def apply_observed(self, role: str, raw: RawAction, now: float) -> Transition:
        """Record what the env saw ``role`` do outside the session (a person running a cell in
        their own kernel) as ``role``'s step. Only in-process code holding the env calls this, so
        internal actions are allowed; no member can send one. Logged with ``info.observed``."""
        self._observed_by = _admit_role(role)
        try:
            return self.handle(role, raw, now)
        finally:
            self._observed_by = None

    def deferred_failed(self, role: str, action_text: str, error: str, now: float) -> Transition:
        """Slow work started by ``role``'s action failed: tell the actor; nothing changes."""
        if self.done or not isinstance(role, str) or role not in self.members:
            return Transition()
        return self._emit(now, EventType.ERROR, role, [role], action=clean_text(str(action_text)),
                          status="error", error=clean_text(str(error)), private=True,
                          info={"deferred": True})

    def _message(self, member: TeamMember, action: Action, now: float) -> Transition:
        to = action.args["to"] or None
        if to is not None and (to not in self.members or to == member.role):
            others = [role for role in self.members if role != member.role]
            raise ActionError(f"Cannot message {to!r}; teammates are {', '.join(others)}.")
        # The message takes the seq that _emit is about to give its event.
        message = ChatMessage(seq=self.seq + 1, time=now, sender=member.role,
                              text=action.args["message"], to=to)
        self.chat.append(message)
        # The sender hears back too: its next act must see its own message (Listing 1).
        recipients = [to, member.role] if to else self.team_roles()
        return self._emit(now, EventType.MESSAGE, member.role, recipients,
                          action=format_action(action, acts.SEND_TEAMMATE_MESSAGE))

    def _wait(self, member: TeamMember, action: Action, now: float) -> Transition:
        return self._emit(now, EventType.WAIT, member.role, [], action=format_action(action))

    def _finish(self, member: TeamMember, action: Action, now: float) -> Transition:
        transition = self._emit(now, EventType.FINISH, member.role, [],
                                action=format_action(action))
        return transition.extend(self.end(now, "finished", by=member.role))

    def _request_confirm(self, member: TeamMember, action: Action, now: float) -> Transition:
        """A member's REQUEST_TEAMMATE_CONFIRM: its ``pending_action`` is an action of its own,
        sent as text inside the act, so it is parsed here, once."""
        try:
            pending, spec = parse_action(action.args["pending_action"], self._task_specs)
        except ActionError as error:
            raise ActionError(f"REQUEST_TEAMMATE_CONFIRM needs a task action: {error}") from None
        self._admit_internal(member.role, spec)
        return self._open_request(member, pending, spec, format_action(pending, spec),
                                  format_action(action, acts.REQUEST_TEAMMATE_CONFIRM), now)

    def _open_request(self, member: TeamMember, pending: Action, spec: ActionSpec,
                      pending_text: str, act_text: str, now: float) -> Transition:
        """Hold ``pending`` (parsed, with its spec) for a teammate's answer; the request shows
        it as ``pending_text`` and the log records the act as ``act_text``."""
        self._confirmations_made += 1
        request_id = f"c{self._confirmations_made}"
        base = self._sender_base(member.role, spec)
        if base is not None:  # merged with what changes meanwhile once it is accepted
            self._confirm_bases[request_id] = base
        self._pending_actions[request_id] = (pending, spec)
        self.pending[request_id] = Confirmation(
            request_id=request_id, requester=member.role, seq=self.seq + 1, time=now,
            pending_action=pending_text,
        )
        return self._emit(now, EventType.CONFIRM_REQUEST, member.role, self.team_roles(),
                          action=act_text, info={"request_id": request_id})

    def _resolve(self, member: TeamMember, action: Action) -> Confirmation:
        request = self.pending.get(action.args["request_id"])
        if request is None:
            open_ids = ", ".join(self.pending) or "none"
            raise ActionError(f"No pending request {action.args['request_id']!r}; "
                              f"open requests: {open_ids}.")
        if request.requester == member.role:
            raise ActionError("You cannot answer your own confirmation request.")
        return self.pending.pop(request.request_id)

    def _accept(self, member: TeamMember, action: Action, now: float) -> Transition:
        request = self._resolve(member, action)
        pending, spec = self._pending_actions.pop(request.request_id)
        base = self._confirm_bases.pop(request.request_id, None)
        worked: tuple[Action, TextEdit] | None = None
        if self._replaying is not None:  # the logged result of a merge, not a new merge
            applied = self._replaying.info.get("applied_action")
            merged = parse_action(applied, self._task_specs)[0] if applied else None
        else:
            worked = self._text_edit(request.requester, pending, spec, base)
            merged = worked[0] if worked and worked[0] is not pending else None
        result = self._apply(request.requester, merged or pending)
        # Logged as the ACCEPT act by the acceptor, so that replay re-does the acceptance.
        accept = format_action(action, acts.ACCEPT_CONFIRMATION)
        info: dict[str, Any] = {"request_id": request.request_id, "requester": request.requester,
                                "pending_action": request.pending_action}
        if merged is not None:
            info["applied_action"] = format_action(merged, spec)
        if result.error:
            return self._error(now, member.role, accept, result.error, also=[request.requester],
                               info=info)
        if worked is not None:
            self._commit_text(spec, worked[1], request.requester, info)
        recipients = [request.requester, member.role] if result.private else self.team_roles()
        if result.deferred is not None:
            info["deferred"] = result.deferred.label or True
        transition = self._emit(now, EventType.CONFIRM_ACCEPT, member.role, recipients,
                                action=accept, private=result.private, reward=result.reward,
                                info=info)
        if result.deferred is not None:  # the approved action's slow work runs as the requester's
            transition.deferred.append((request.requester, result.deferred))
        return self._after_task_action(request.requester, result, transition, now)

    def _reject(self, member: TeamMember, action: Action, now: float) -> Transition:
        request = self._resolve(member, action)
        self._confirm_bases.pop(request.request_id, None)
        self._pending_actions.pop(request.request_id, None)
        return self._emit(now, EventType.CONFIRM_REJECT, member.role,
                          [request.requester, member.role],
                          action=format_action(action, acts.REJECT_CONFIRMATION),
                          info={"request_id": request.request_id, "requester": request.requester,
                                "pending_action": request.pending_action})

    def _pause_or_resume(self, member: TeamMember, action: Action, now: float) -> Transition:
        pausing = action.name == acts.PAUSE_AGENT.name
        if not member.is_human:
            raise ActionError(f"{action.name} is for the human side of the team.")
        agents = [m.role for m in self.team if m.kind == "agent"]
        target = action.args["agent"]
        if target is not None and target not in agents:
            raise ActionError(f"{target!r} is not an agent; agents are {', '.join(agents)}.")
        targets = [target] if target else agents
        if pausing:
            self.paused.update(targets)
        else:
            self.paused.difference_update(targets)
        return self._emit(now, EventType.PAUSE if pausing else EventType.RESUME, member.role,
                          self.team_roles(), action=format_action(action),
                          info={"agents": targets})

    # -- shared texts (core.shared_texts) ----------------------------------------------------

    def _sender_base(self, role: str, spec: ActionSpec) -> TextVersion | None:
        """The version of ``spec.replaces`` that ``role`` edited: what the request said (the
        update it acted on, or the text it started from), else its last update's text."""
        if spec.replaces is None or spec.replaces not in self._texts.texts:
            return None
        text, seen_seq = self._base_hint
        return self._texts.base(spec.replaces, text=text, seen_seq=seen_seq,
                                last_shown=self._last_seq.get(role))

    def _text_edit(self, role: str, action: Action, spec: ActionSpec, base: TextVersion | None
                   ) -> tuple[Action, TextEdit] | None:
        """``action``, which replaces a shared text whole, worked out on its document: the
        action with the text it makes, and the edit to commit if the task takes it. ``None``
        for any other action, and on replay (the log holds the merged text)."""
        if spec.replaces is None or self._replaying is not None \
                or spec.replaces not in self._texts.texts:
            return None
        return self._texts.replacement(spec.replaces, action, seq=self.seq + 1, author=role,
                                       base=base)

    def _commit_text(self, spec: ActionSpec, edit: TextEdit, author: str,
                     info: dict[str, Any]) -> None:
        assert spec.replaces is not None
        self._texts.commit(spec.replaces, edit, seq=self.seq + 1, author=author, info=info)

    def _edit_text(self, member: TeamMember, action: Action, now: float) -> Transition:
        """A person's panel edits a shared text live (EDIT_TEXT): its Yjs update is merged into
        the document, the task takes the new text, and the people are told at once; the
        others once the typing pauses (:meth:`announce_edits`)."""
        if member.kind != "person":
            raise ActionError("EDIT_TEXT is a person's panel typing; to change a shared text, "
                              "send the task's action that replaces it.")
        component = action.args["component"]
        spec = self._texts.spec(component)
        shared = self._texts.text(component)
        info: dict[str, Any] = {}
        if self._replaying is not None:  # the logged operations, not a new merge
            logged = self._replaying.info.get(UPDATES, {}).get(component)
            if isinstance(logged, str):
                self._texts.follow_logged(component, logged, seq=self.seq + 1,
                                          author=member.role, client=action.args["client"],
                                          own=action.args["update"],
                                          repaired=self._replaying.info.get("settled")
                                          == component)
            text = shared.text
            edit = None
        else:
            seen_seq = self._base_hint[1]
            if seen_seq is None:
                raise ActionError("EDIT_TEXT needs the step's seen_seq: the update whose "
                                  "shared texts the edit was made on.")
            base = self._texts.base(component, text=None, seen_seq=seen_seq, last_shown=None)
            edit = self._texts.live_update(component, action.args["update"],
                                           client=action.args["client"], author=member.role,
                                           base=base)
            text = edit.text
        result = self._apply(member.role, Action(name=spec.name, args={"text": text}),
                             count=False)
        if result.error:
            raise ActionError(result.error)
        if edit is not None:
            self._texts.commit(component, edit, seq=self.seq + 1, author=member.role, info=info)
        self.live_edits += 1
        self._unannounced.setdefault((member.role, component), self.seq + 1)
        return self._emit(now, EventType.EDIT, member.role, sorted(self._people),
                          action=format_action(action, acts.EDIT_TEXT), info=info)

    def announce_edits(self, now: float) -> Transition:
        """Tell the members who are not people of the live edits made since the last time:
        one ``action`` event per person and text, as if the person had replaced the text with
        what it is now (``info["live"]`` names the first of the edits)."""
        transition = Transition()
        if self.done:
            return transition
        pending, self._unannounced = self._unannounced, {}
        for (role, component), first in pending.items():
            spec = self._texts.spec(component)
            action = Action(name=spec.name, args={"text": self._texts.text(component).text})
            transition.extend(self._emit(
                now, EventType.ACTION, role, [m.role for m in self._not_people],
                action=format_action(action, spec),
                info={"live": {"component": component, "since": first}}))
        return transition

    # -- strict turn-taking (core.turns) -----------------------------------------------------

    def _out_of_turn(self, role: str) -> bool:
        """Whether ``handle`` must refuse ``role``'s step as out of turn (a paused agent is
        never in turn). An unknown role gets its own error; what the env observed is recorded
        whatever the turn; the result of a member's slow work is applied if that work runs."""
        turns = self.turns
        if turns is None or self.done or role not in self.members or role == self._observed_by:
            return False
        if role == self._follow_up_of:  # (a paused member's result is refused as paused)
            return not turns.work.get(role)
        return role in self.paused or not turns.may_act(role)

    def _not_your_turn(self, role: str, raw: RawAction, now: float) -> Transition:
        """Refuse an act out of turn: logged (replay refuses it again), shown to nobody, and
        nothing changes: no step counted, no activity, the turn where it was."""
        assert self.turns is not None
        info: dict[str, Any] = {"out_of_turn": True}
        if not isinstance(raw, str):
            info["structured"] = True  # see _as_text
        error = "You are paused and may not act until resumed." if role in self.paused \
            else self.turns.refusal(role)
        return self._emit(now, EventType.ERROR, role, [], action=_as_text(raw), status="error",
                          error=error, private=True, info=info)

    def _turn_recipients(self, type_: EventType, actor: str | None, info: Mapping[str, Any],
                         recipients: Sequence[str]) -> list[str]:
        """Under turn-taking, move the turn on as ``type_`` by ``actor`` requires, and return
        who is woken: the member in turn after it (nobody while slow work holds the turn), or
        everyone for the END."""
        turns = self.turns
        assert turns is not None
        if type_ is EventType.END:
            return list(recipients)
        if type_ is EventType.START:
            turns.begin()
            return [turns.role]
        if type_ is EventType.TICK:  # the member in turn let it go by (unless work holds it)
            if turns.busy:
                return []
            turns.pass_turn(self.paused, idle=True)
            return [turns.role]
        if actor is None or info.get("out_of_turn") or info.get("observed") \
                or type_ is EventType.FINISH:
            return []
        if info.get("follow_up") or (type_ is EventType.ERROR and info.get("deferred")):
            # The result of slow work (or its failure): the turn it held may pass now.
            if not turns.finished_work(actor):
                return []
            if type_ is not EventType.ERROR and info.get("deferred"):
                turns.started_work(actor)  # its result started more work
            return self._pass_unless_busy()
        if type_ is EventType.ERROR:  # a refused act: the member in turn tries again
            return [actor] if actor == turns.role else []
        if actor != turns.role:  # handle() lets nobody else act
            return []
        if info.get("deferred"):  # the act started slow work: it holds the turn
            worker = info.get("requester") if type_ is EventType.CONFIRM_ACCEPT else actor
            turns.started_work(str(worker))
            return []
        turns.pass_turn(self.paused, idle=type_ is EventType.WAIT)
        return [turns.role]

    def _pass_unless_busy(self) -> list[str]:
        assert self.turns is not None
        if self.turns.busy:
            return []
        self.turns.pass_turn(self.paused, idle=False)
        return [self.turns.role]

    def _end_if_idle_rounds(self, transition: Transition, now: float) -> Transition:
        """Under turn-taking, end the session after ``max_idle_ticks`` whole rounds in a row
        in which nobody acted (everyone waited or let the turn go by), as the default mode
        ends after that many idle ticks."""
        turns = self.turns
        if turns is not None and not self.done \
                and turns.idle_rounds() >= max(1, self.max_idle_ticks):
            transition.extend(self.end(now, "idle", idle_rounds=turns.idle_rounds()))
        return transition

    # -- events and notifications ------------------------------------------------------------

    def _error(self, now: float, role: str, raw: RawAction, message: str, *, notify: bool = True,
               also: Sequence[str] = (), info: dict[str, Any] | None = None) -> Transition:
        if notify and role in self.step_counts and not self.every_act_is_a_step:
            # Refused attempts count as steps, so an LM stuck on bad output still meets its limit.
            self.step_counts[role] += 1
        info = dict(info or {})
        if not isinstance(raw, str):
            info["structured"] = True  # see _as_text: replay reads it back as JSON
        transition = self._emit(now, EventType.ERROR, role, ([role] if notify else []) + list(also),
                                action=_as_text(raw), status="error", error=message, private=True,
                                info=info)
        return self._check_limit(role, transition, now)

    def _emit(self, now: float, type_: EventType, actor: str | None, recipients: Sequence[str],
              *, skip_paused: bool = True, views: Mapping[str, Observation] | None = None,
              prints: Prints | None = None, **fields: Any) -> Transition:
        self.seq += 1
        request_id = self._request[1] if self._request and actor == self._request[0] else None
        if self._follow_up_of is not None and actor == self._follow_up_of:
            fields["info"] = {**fields.get("info", {}), "follow_up": True}
        if self._observed_by is not None and actor == self._observed_by:
            fields["info"] = {**fields.get("info", {}), "observed": True}
        if self.turns is not None:  # the turn decides who is woken, and is logged
            if not _typing(type_, fields.get("info", {})):
                recipients = self._turn_recipients(type_, actor, fields.get("info", {}),
                                                   recipients)
            fields["info"] = {**fields.get("info", {}),
                              "turn": self.turns.current().model_dump(exclude_defaults=True)}
        delivered = [r for r in dict.fromkeys(recipients)
                     if r in self.members and not (skip_paused and r in self.paused)]
        if views is None:
            views = self.env.views(delivered)
        if self._texts:
            fields["info"] = self._follow_texts(actor, views, dict(fields.get("info", {})))
        event = Event(seq=self.seq, time=now, type=type_, actor=actor, recipients=delivered,
                      request_id=request_id, **fields)
        # Whole updates (with the context) only where it may be news: everyone at the start and
        # at the end (the last state, whole, even to a member that missed updates), and the
        # agents a RESUME wakes (they were told nothing while paused).
        given_context = set(delivered) if type_ in (EventType.START, EventType.END) else set(
            event.info.get("agents", ())) if type_ is EventType.RESUME else set()
        sent = event.as_sent()  # once for all its recipients
        if prints is None:
            prints = {}  # each shared component fingerprinted once for all of them too
        texts: TextPayloads = {}  # and each document's news worked out once per replica state
        transition = Transition(
            events=[event],
            updates=[self._update(r, sent, now, r in given_context, views[r], prints=prints,
                                  texts=texts) for r in delivered],
        )
        # A clocked game's own ticks do not count: its length is the game's to say; nor does a
        # person's typing.
        if (self.seq - self.clock_ticks - self.live_edits >= self.max_events
                and type_ is not EventType.END and not self.done):
            transition.extend(self.end(now, "event_limit"))
        return transition

    def _follow_texts(self, actor: str | None, views: Mapping[str, Observation],
                      info: dict[str, Any]) -> dict[str, Any]:
        """The shared texts' documents follow the task's text as of the event being emitted
        (replaying, the event's logged operations first); ``info`` with the updates made."""
        view = next(iter(views.values()), None) or self.env.view(self.team[0].role)
        replayed = self._replaying if self._replaying is not None \
            and self._replaying.seq == self.seq else None
        self._texts.follow(view, seq=self.seq, author=actor, info=info,
                           logged=replayed.info.get(UPDATES) if replayed else None)
        return info

    def _update(self, role: str, event: Event, now: float, with_context: bool = False,
                view: Observation | None = None, watcher: bool = False,
                prints: Prints | None = None, texts: TextPayloads | None = None) -> Update:
        """``role``'s update for ``event``: what changed for it since its previous update, or
        its whole state when it gets the context (its first update, START, END, a sync, a
        RESUME that wakes it) or watches. For a ``watcher``, it records nothing about what the
        member was shown."""
        prev_seq = None if watcher else self._last_seq.get(role)
        whole = with_context or prev_seq is None
        view = view or self.env.view(role)
        changed, versions = self._versions.diff(role, view, event.seq, record=not watcher,
                                                cache=prints)
        if not watcher:
            self._last_seq[role] = event.seq
        news = self._texts.payload(role, whole=whole, record=not watcher, cache=texts) \
            if self._texts and role in self._people else None
        # Every part is already a validated model: skip re-validating on the hot path.
        return Update.model_construct(
            session_id=self.session_id,
            seq=event.seq,
            prev_seq=prev_seq,
            recipient=role,
            event=self._event_for(role, event),
            whole=whole,
            components=list(view.components) if whole else changed,
            versions=versions,
            messages=self._chat_since(role, None if whole else prev_seq),
            pending_confirmations=list(self.pending.values()),
            step_counts=self._counts_for(role, self.step_counts),
            step_limits=self._counts_for(role, self.step_limits),
            paused=sorted(self.paused),
            started_at=self.started_at,
            time=now,
            done=self.done,
            end_reason=self.end_reason,
            context=self.context(role) if whole else None,
            turn=self.turns.current() if self.turns is not None else None,
            texts=news,
        )

    def _chat_since(self, role: str, seq: int | None) -> list[ChatMessage]:
        """The messages ``role`` may see that were sent after event ``seq`` (all for ``None``):
        a search, not a scan, since the chat is in ``seq`` order."""
        start = 0 if seq is None else bisect.bisect_right(self.chat, seq, key=_message_seq)
        return [message for message in self.chat[start:] if message.visible_to(role)]

    def _event_for(self, role: str, event: Event) -> Event:
        """``event`` as ``role`` is sent it: its recipients without the other people (the
        log keeps them all), so that a broadcast to every seat does not carry every seat."""
        if not self._people or len(event.recipients) <= 1:
            return event
        trimmed_of, trimmed = self._trimmed
        if trimmed_of is not event:  # once per event, not once per recipient
            trimmed = [r for r in event.recipients if r not in self._people]
            self._trimmed = (event, trimmed)
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


def _typing(type_: EventType, info: Mapping[str, Any]) -> bool:
    """Whether an event is a person's typing or its announcement: no turn is taken or passed."""
    return type_ is EventType.EDIT or (type_ is EventType.ACTION and "live" in info)


def _is_live_edit(raw: Any) -> bool:
    """Whether an admitted action is a panel's live edit, which is typing, not a step."""
    name = raw.get("name") if isinstance(raw, dict) else raw if isinstance(raw, str) else None
    return isinstance(name, str) and name.lstrip().startswith(acts.EDIT_TEXT.name)


def _message_seq(message: ChatMessage) -> int:
    return message.seq


def _as_text(raw: Any) -> str:
    """How a refused action is logged: a string as sent; anything else (already plain JSON, see
    ``_admit_action``) as its JSON text, marked ``structured`` so that replay parses the same
    structure again rather than reading the JSON as an LM's text."""
    if isinstance(raw, str):
        return raw
    return json.dumps(raw, ensure_ascii=False)


def _admit_role(role: Any) -> str:
    """``role`` as the text the coordinator works with. A value that is not a string becomes a
    name no member can have (roles are ``[A-Za-z0-9_.-]+``), so it is refused as unknown, on
    replay too."""
    if isinstance(role, str):
        return clean_text(role)
    return f"<{type(role).__name__}>"


def _admit_json(value: Any) -> Any:
    """``value`` as the plain JSON the log will hold (tuples become lists, keys strings, other
    objects their ``str``), with every text cleaned; ``None`` if JSON cannot hold it."""
    try:
        return json.loads(json.dumps(clean(value), ensure_ascii=False, default=str))
    except Exception:  # noqa: BLE001 - a cycle, too deep a nesting, a __str__ that raises
        return None


def _admit_action(raw: Any) -> Any:
    """An action as sent, admitted: a string cleaned; an :class:`Action` or a mapping as plain
    JSON (``{"name", "args"}`` for an Action); anything else as plain JSON, to be refused. What
    JSON cannot hold (a set, a cycle, a nesting too deep) is refused as a text that says so:
    what the coordinator sees live is then exactly what replay reads back from the log."""
    if isinstance(raw, str):
        return clean_text(raw)
    if isinstance(raw, Action):
        raw = {"name": raw.name, "args": raw.args}
    elif isinstance(raw, Mapping):
        raw = dict(raw)
    try:
        return json.loads(json.dumps(clean(raw), ensure_ascii=False))
    except Exception as error:  # noqa: BLE001 - whatever stops JSON, the action is unreadable
        return f"(not an action: JSON cannot hold it: {type(error).__name__})"


_COLLABORATION_HANDLERS = {
    acts.SEND_TEAMMATE_MESSAGE.name: Coordinator._message,
    acts.WAIT_TEAMMATE_CONTINUE.name: Coordinator._wait,
    acts.FINISH.name: Coordinator._finish,
    acts.REQUEST_TEAMMATE_CONFIRM.name: Coordinator._request_confirm,
    acts.ACCEPT_CONFIRMATION.name: Coordinator._accept,
    acts.REJECT_CONFIRMATION.name: Coordinator._reject,
    acts.PAUSE_AGENT.name: Coordinator._pause_or_resume,
    acts.RESUME_AGENT.name: Coordinator._pause_or_resume,
    acts.EDIT_TEXT.name: Coordinator._edit_text,
}
