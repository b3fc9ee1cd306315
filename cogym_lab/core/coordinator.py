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
* an error notifies the actor only and changes nothing; when the task's own code raised (a
  failure, not a refusal: ``core.failures``) the error records it (``info["failed"]``), and
  replay repeats that failure rather than running the task again, where it might succeed;
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
  a step is the scoring protocol's rule: every act but waits (``every_act_is_a_step``), or task
  actions and refused attempts only;
* under strict turn-taking (``interaction="turns"``, the paper's §5.3 ablation) the rules of
  :mod:`cogym_lab.core.turns` replace the notifications above: the members act in the team's
  order, each event notifies only the member whose turn it is after it, and an act out of turn
  is refused and changes nothing. The turn is part of the state: every event's
  ``info["turn"]`` records it, and replay rebuilds it.

What the coordinator is given is admitted first, at its entry points (``handle``,
``apply_follow_up`` and ``apply_observed``, which share one path; ``deferred_failed``; ``end``):
every path into the shared state passes one of them, whether it came over a bus, from a Python
caller, from deferred work or from the env's own observations, and replay feeds the log back
through the same path.
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

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import cogym_lab.core.collaboration as acts
from cogym_lab.core.actions import Action, ActionError, ActionSpec
from cogym_lab.core.confirmations import Confirmations, request_on_behalf
from cogym_lab.core.env import MIN_TICK_SECONDS, CoEnv, StepResult
from cogym_lab.core.failures import (
    FAILED,
    TaskFailed,
    failure_info,
    failure_marks,
    recorded_failure,
)
from cogym_lab.core.grammar import RawAction, format_action, parse_action
from cogym_lab.core.live_edits import LiveEdits
from cogym_lab.core.messages import (
    ChatMessage,
    Event,
    EventType,
    SessionContext,
    TeamMember,
    Turn,
    Update,
)
from cogym_lab.core.observation import Observation
from cogym_lab.core.shared_texts import SharedTexts
from cogym_lab.core.team_acts import TeamActs
from cogym_lab.core.text import clean, clean_text
from cogym_lab.core.transition import NO_REQUEST, StepContext, Transition
from cogym_lab.core.turns import NOTIFICATIONS, TURNS, TurnTaking, check_interaction, refuse_clocked
from cogym_lab.core.updates import UpdateWriter
from cogym_lab.core.view_versions import Prints

DEFAULT_AGENT_STEP_LIMIT = 30
#: A collaboration act's handler: (the step, the acting member, the act, now) -> its transition.
Act = Callable[[StepContext, TeamMember, Action, float], Transition]


def default_step_limits(team: Iterable[TeamMember], agent_limit: int = DEFAULT_AGENT_STEP_LIMIT
                        ) -> dict[str, int]:
    """Agents get ``agent_limit`` task actions each; the human side is not limited."""
    return {member.role: agent_limit for member in team if member.kind == "agent"}


class Coordinator:
    """Applies steps to a team's shared state and decides who is notified of what.

    It composes the parts each concern keeps: :class:`TeamActs` (the chat, paused agents),
    :class:`Confirmations` (the requests waiting for an answer), :class:`SharedTexts` (the
    shared texts' documents and their merges) with :class:`LiveEdits` (a panel's typing),
    :class:`TurnTaking` (the turn, under strict turn-taking) and :class:`UpdateWriter` (what
    each member is sent). The acts they handle make their events through the coordinator (it
    is their :class:`~cogym_lab.core.transition.Emitter`). Each input's circumstances travel
    down the calls as a :class:`StepContext`: nothing about the request being handled is kept
    on ``self``.
    """

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
        self.step_counts = dict.fromkeys(roles, 0)
        self.idle_ticks = 0  # ticks in a row with no act but waits
        self.clock_ticks = 0  # ticks of a clocked env's world so far (see clock)
        #: A person played (see :meth:`_plays`): a clock that waits for a person starts.
        self.person_played = False
        self.done = False
        self.end_reason: str | None = None
        self._task_specs = {spec.name: spec for spec in env.action_specs(include_internal=True)}
        self._texts = SharedTexts(self._task_specs.values())
        self._updates = UpdateWriter(self, self.team, self._texts)
        self.confirmations = Confirmations(self, self._texts)
        self.pending = self.confirmations.pending  # request id -> the open request
        self._live = LiveEdits(self, self._texts, self.team)
        self._team = TeamActs(self, self.team)
        self.chat = self._team.chat  # the messages, in seq order
        self.paused = self._team.paused  # the agents paused now
        self.interaction = check_interaction(interaction)
        refuse_clocked(self.interaction, env.name, _tick_period(env))
        #: The turn state under strict turn-taking (core.turns); ``None`` in the default mode.
        self.turns = TurnTaking(roles) if self.interaction == TURNS else None
        self._all_specs = _all_specs(self._task_specs)
        self._acts: dict[str, Act] = {
            acts.SEND_TEAMMATE_MESSAGE.name: self._team.message,
            acts.WAIT_TEAMMATE_CONTINUE.name: self._team.wait,
            acts.FINISH.name: self._finish,
            acts.REQUEST_TEAMMATE_CONFIRM.name: self.confirmations.request,
            acts.ACCEPT_CONFIRMATION.name: self.confirmations.accept,
            acts.REJECT_CONFIRMATION.name: self.confirmations.reject,
            acts.PAUSE_AGENT.name: self._team.pause_or_resume,
            acts.RESUME_AGENT.name: self._team.pause_or_resume,
            acts.EDIT_TEXT.name: self._live.edit,
        }

    # -- inputs ------------------------------------------------------------------------------

    def start(self, now: float, *, seed: int | None = None) -> Transition:
        """Reset the env and tell every member the session has begun."""
        return self._start(NO_REQUEST, now, seed)

    def _start(self, step: StepContext, now: float, seed: int | None) -> Transition:
        self.env.reset(seed=seed)
        self.started_at = now
        return self.emit(step, now, EventType.START, None, self.team_roles(),
                         info={"seed": seed})

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
        request_id = clean_text(request_id) if isinstance(request_id, str) else None
        base = clean_text(base) if isinstance(base, str) else None
        return self._step(StepContext(role=_admit_role(role), request_id=request_id,
                                      base_text=base, seen_seq=_admit_seq(seen_seq)), raw, now)

    def apply_follow_up(self, role: str, raw: RawAction, now: float,
                        seen_seq: int | None = None) -> Transition:
        """Apply the action that ``role``'s deferred work produced (internal actions allowed).

        ``seen_seq`` is the event that started the work: a text it produced is merged with the
        edits made since then.
        """
        return self._step(StepContext(role=_admit_role(role), seen_seq=_admit_seq(seen_seq),
                                      follow_up=True), raw, now)

    def apply_observed(self, role: str, raw: RawAction, now: float) -> Transition:
        """Record what the env saw ``role`` do outside the session (a person running a cell in
        their own kernel) as ``role``'s step. Only in-process code holding the env calls this, so
        internal actions are allowed; no member can send one. Logged with ``info.observed``."""
        return self._step(StepContext(role=_admit_role(role), observed=True), raw, now)

    def _step(self, step: StepContext, raw: Any, now: float) -> Transition:
        """One step of ``step.role``'s, whichever entry point it came through."""
        role = step.role
        assert role is not None
        raw = _admit_action(raw)
        # Typing in a shared text is no turn: it neither needs one nor passes it.
        if self._out_of_turn(step) and not _is_live_edit(raw):  # refused before it is counted
            return self._not_your_turn(step, raw, now)
        counted = self._counts_as_step(step, raw) and not _is_live_edit(raw)
        if counted:  # before the act, so that its notifications show the new count
            self.step_counts[role] += 1
        transition = self._act(step, raw, now)
        if any(event.type is not EventType.WAIT for event in transition.events):
            self.idle_ticks = 0  # any act but a wait is activity, refused ones included
        if counted:
            self._check_limit(step, role, transition, now)
        return self._end_if_idle_rounds(step, transition, now)

    def _counts_as_step(self, step: StepContext, raw: Any) -> bool:
        """Under ``every_act_is_a_step``, whether this input is one of its actor's acts (what
        the env observed it do outside the session is; the result of its deferred work is
        not). A wait never is: the Co-Gym release drops ``WAIT_TEAMMATE_CONTINUE`` before its
        event log, which is what it counts (``TaskEnvNode.event_handler``)."""
        return (self.every_act_is_a_step and not self.done and step.role in self.step_counts
                and not step.follow_up and not self._is_wait(raw))

    def _is_wait(self, raw: Any) -> bool:
        """Whether ``raw`` parses as a wait (parsed again by ``_act``: parsing changes nothing)."""
        try:
            parsed, _ = parse_action(raw, self._all_specs)
        except ActionError:
            return False
        return parsed.name == acts.WAIT_TEAMMATE_CONTINUE.name

    def _plays(self, parsed: Action) -> bool:
        """Whether ``parsed`` plays the task, so that a clock waiting for a person starts when a
        person sends it: the explicit start (``WAIT_TEAMMATE_CONTINUE``, the panel's Start) or
        a task action the env calls play (:meth:`CoEnv.starts_play`), refused or not. Chat
        and the other collaboration acts do not."""
        if parsed.name == acts.WAIT_TEAMMATE_CONTINUE.name:
            return True
        return parsed.name in self._task_specs and self.env.starts_play(parsed)

    def _act(self, step: StepContext, raw: RawAction, now: float) -> Transition:
        role = step.role
        assert role is not None
        if self.done:
            return Transition()
        member = self.members.get(role)
        if member is None:
            return self.refuse(step, now, role, raw, f"Unknown role {role!r}; the team is "
                                                     f"{', '.join(self.members)}.", notify=False)
        if role in self.paused:
            return self.refuse(step, now, role, raw,
                               "You are paused and may not act until resumed.", notify=False)
        try:
            # The one parse of this action: from here on it travels typed, with its spec, and
            # is written as text only for the log and for prompts.
            parsed, spec = parse_action(raw, self._all_specs)
            if member.kind == "person" and not self.person_played:
                self.person_played = self._plays(parsed)
            act = self._acts.get(parsed.name)
            if act is not None:
                return act(step, member, parsed, now)
            self.admit_internal(step, spec)
            if member.kind == "agent" and self.env.needs_confirmation(role, parsed):
                # The task wants a person to approve this first: ask on the agent's behalf.
                shown_as, act_text = request_on_behalf(parsed, spec)
                return self.confirmations.open(step, member, parsed, spec, shown_as, act_text,
                                               now)
            return self._task_action(step, member, parsed, spec, now)
        except ActionError as error:
            marks = {FAILED: error.failed} if isinstance(error, TaskFailed) else None
            return self.refuse(step, now, role, raw, str(error), info=marks)

    def admit_internal(self, step: StepContext, spec: ActionSpec) -> None:
        """Refuse an internal action (a cell's recorded outputs) unless it is the result of
        the actor's deferred work or a step the env observed it take."""
        if spec.internal and not (step.follow_up or step.observed):
            raise ActionError(f"{spec.name} is applied by the environment, not sent by a "
                              "member.")

    def tick(self, now: float) -> Transition:
        """Inactivity passed the threshold: notify everyone, or end after enough in a row."""
        return self._tick(NO_REQUEST, now)

    def _tick(self, step: StepContext, now: float) -> Transition:
        if self.done:
            return Transition()
        if self.idle_ticks >= self.max_idle_ticks:
            return self._end(step, now, "idle", {"idle_ticks": self.idle_ticks})
        self.idle_ticks += 1
        transition = self.emit(step, now, EventType.TICK, None, self.team_roles(),
                               info={"idle_ticks": self.idle_ticks})
        return self._end_if_idle_rounds(step, transition, now)

    def clock(self, now: float) -> Transition:
        """One tick of a clocked env's world (:meth:`CoEnv.advance`): what members asked for
        since the previous tick takes effect now, all at once.

        Logged as a ``clock`` event whose ``info`` holds the tick's number and what the env
        said happened, so replay re-runs the same ticks between the same actions. Only the
        members whose view changed are told. A game over ends the session (``time_up``); a
        task that fails to advance ends it too (``task_failed``), as a world that cannot move
        on cannot be played.
        """
        return self._clock(NO_REQUEST, now)

    def _clock(self, step: StepContext, now: float) -> Transition:
        if self.done:
            return Transition()
        try:
            result = self.env.advance()
        except Exception as error:  # noqa: BLE001 - a bug in a task must end it cleanly
            return self._end(step, now, "task_failed",
                             {"error": f"{type(error).__name__}: {error}"})
        self.clock_ticks += 1
        roles = [r for r in self.team_roles() if r not in self.paused]
        views = self.env.views(roles)
        prints: Prints = {}
        told = [r for r in roles if self._updates.versions.differs(r, views[r], prints)]
        transition = self.emit(step, now, EventType.CLOCK, None, told, reward=result.reward,
                               info={"tick": self.clock_ticks, **(_admit_json(result.info) or {})},
                               views=views, prints=prints)
        if result.done:
            transition.extend(self._end(step, now, "time_up", {"ticks": self.clock_ticks}))
        return transition

    def end(self, now: float, reason: str, **info: Any) -> Transition:
        """End the session; every member, paused or not, gets a final notification."""
        return self._end(NO_REQUEST, now, reason, info)

    def _end(self, step: StepContext, now: float, reason: str,
             info: Mapping[str, Any]) -> Transition:
        if self.done:
            return Transition()
        reason, admitted = clean_text(str(reason)), _admit_json(dict(info)) or {}
        transition = self._announce_edits(step, now)  # the last typing is news for agents too
        self.done, self.end_reason = True, reason
        return transition.extend(self.emit(step, now, EventType.END, None, self.team_roles(),
                                           skip_paused=False,
                                           info={"reason": reason, **admitted}))

    def sync(self, role: str, now: float) -> Update | None:
        """The current state for ``role``, for a member that (re)joins. Not an event.

        ``None`` for a paused agent: it receives nothing until resumed, when it is told all.
        """
        if not isinstance(role, str) or role not in self.members or role in self.paused:
            return None
        return self._updates.whole(role, self.seq, now)

    def watch(self, role: str, now: float) -> Update | None:
        """What ``role`` sees now, as a whole ``sync`` update for someone watching over its
        shoulder (a read-only panel). Changes nothing: the member's own updates go on as if
        nobody watched. ``None`` before the start and for a role not in the team."""
        if self.seq == 0 or not isinstance(role, str) or role not in self.members:
            return None
        return self._updates.whole(role, self.seq, now, watcher=True)

    def replay(self, event: Event) -> Transition:
        """Re-apply a logged event to a fresh coordinator, through the entry point that made
        it; its logged merges are taken rather than merged again."""
        step = StepContext(replaying=event)
        if event.type is EventType.START:
            return self._start(step, event.time, event.info.get("seed"))
        if event.type is EventType.TICK:
            return self._tick(step, event.time)
        if event.type is EventType.CLOCK:
            if event.info.get("tick") != self.clock_ticks + 1:  # a log with a tick missing
                raise ValueError(f"Event {event.seq} is tick {event.info.get('tick')}, but the "
                                 f"replay is at tick {self.clock_ticks}")
            return self._clock(step, event.time)
        if event.type is EventType.END:
            info = dict(event.info)
            info.pop("turn", None)  # not an argument of the end: the turn it left is recorded
            return self._end(step, event.time, info.pop("reason", "ended"), info)
        if event.actor is None or event.action is None:
            raise ValueError(f"Event {event.seq} ({event.type}) has no actor or action to replay")
        if event.type is EventType.ACTION and "live" in event.info:
            return self._announce_edits(step, event.time)  # the edits were replayed already
        if event.type is EventType.ERROR and event.info.get("deferred"):
            return self._deferred_failed(step, event.actor, event.action, event.error or "",
                                         event.time, event.info.get(FAILED))
        # A refused structured action is logged as its JSON: re-read it as the same structure.
        raw: RawAction = json.loads(event.action) if event.info.get("structured") \
            else event.action
        return self._step(replace(step, role=_admit_role(event.actor),
                                  follow_up=bool(event.info.get("follow_up")),
                                  observed=bool(event.info.get("observed"))
                                  and not event.info.get("follow_up")), raw, event.time)

    # -- views -------------------------------------------------------------------------------

    def team_roles(self) -> list[str]:
        return [member.role for member in self.team]

    def current_turn(self) -> Turn | None:
        """Whose turn it is, under strict turn-taking; ``None`` in the default mode."""
        return self.turns.current() if self.turns is not None else None

    def context(self, role: str) -> SessionContext:
        """What ``role`` needs to start (see :meth:`UpdateWriter.context`)."""
        return self._updates.context(role)

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

    # -- the acts (and what the parts it composes use: core.transition.Emitter) -------------

    def last_shown(self, role: str) -> int | None:
        """The seq of the last update ``role`` was sent."""
        return self._updates.last_shown(role)

    def parse_task_action(self, raw: RawAction) -> tuple[Action, ActionSpec]:
        """Parse a task action that arrived inside an act (a request's ``pending_action``), or
        a logged merge on replay: the one parse of that text."""
        return parse_action(raw, self._task_specs)

    def apply(self, step: StepContext, role: str, action: Action, *, count: bool = True,
              on_behalf: bool = False) -> StepResult:
        """Run a task action on the env; a success counts as one of ``role``'s steps (unless
        ``count`` is false: a live edit is typing, not a step). Under ``every_act_is_a_step``
        the act that led here was counted already, except for an action run ``on_behalf`` of
        ``role`` by a teammate's acceptance: the Co-Gym release logs that one as the
        requester's event too, so it counts as one of the requester's steps.

        The task's code raising is a failure, not a refusal (:mod:`cogym_lab.core.failures`):
        its result's ``info`` says so, for the error event to record. Replaying such an event
        repeats the recorded failure and leaves the task alone: run again, it might succeed.
        """
        recorded = recorded_failure(step.replayed(self.seq + 1))
        if recorded is not None:
            return StepResult(observation=self.env.view(role), private=True, info=recorded)
        try:
            result = self.env.apply(role, action)  # parsed where it entered: not again
        except Exception as error:  # noqa: BLE001 - a bug in a task must not end the session
            return StepResult(observation=self.env.view(role), private=True,
                              info=failure_info(error))
        if count and not result.error and (on_behalf or not self.every_act_is_a_step):
            self.step_counts[role] += 1
        return result

    def after_task_action(self, step: StepContext, role: str, result: StepResult,
                          transition: Transition, now: float) -> Transition:
        if result.done:
            return transition.extend(self._end(step, now, "task_done", {}))
        return self._check_limit(step, role, transition, now)

    def _check_limit(self, step: StepContext, role: str, transition: Transition,
                     now: float) -> Transition:
        limit = self.step_limits.get(role)
        if limit is not None and self.step_counts.get(role, 0) >= limit and not self.done:
            transition.extend(self._end(step, now, "step_limit", {"role": role}))
        return transition

    def _task_action(self, step: StepContext, member: TeamMember, action: Action,
                     spec: ActionSpec, now: float) -> Transition:
        base = self._texts.base_for(spec, step, self.last_shown(member.role))
        worked = self._texts.edit_for(action, spec, step, seq=self.seq + 1, author=member.role,
                                      base=base)
        applied = worked[0] if worked else action
        result = self.apply(step, member.role, applied)
        if result.error:  # the document is left as it was: the edit is committed only now
            return self.refuse(step, now, member.role, format_action(applied, spec),
                               result.error, info=failure_marks(result.info))
        info = {k: v for k, v in result.info.items() if k != "action"}
        if worked is not None:
            self._texts.commit_edit(spec, worked[1], seq=self.seq + 1, author=member.role,
                                    info=info)
        if result.deferred is not None:
            info["deferred"] = result.deferred.label or True
        transition = self.emit(
            step, now, EventType.ACTION, member.role,
            [member.role] if result.private else self.team_roles(),
            action=format_action(applied, spec), private=result.private,
            reward=result.reward, info=info,
        )
        if result.deferred is not None:
            transition.deferred.append((member.role, result.deferred))
        return self.after_task_action(step, member.role, result, transition, now)

    def deferred_failed(self, role: str, action_text: str, error: str, now: float, *,
                        failed: str = "Exception") -> Transition:
        """Slow work started by ``role``'s action failed (raising an exception of type
        ``failed``): tell the actor, and let the env release what the action held for the work
        (:meth:`CoEnv.work_failed`). The log records the failure; replay applies it from there
        and never runs the work again."""
        return self._deferred_failed(NO_REQUEST, role, action_text, error, now,
                                     clean_text(str(failed)) or "Exception")

    def _deferred_failed(self, step: StepContext, role: str, action_text: str, error: str,
                         now: float, failed: str | None) -> Transition:
        if self.done or not isinstance(role, str) or role not in self.members:
            return Transition()
        info: dict[str, Any] = {"deferred": True}
        if failed:  # a log from before failures were recorded replays as it ran: no release
            info[FAILED] = failed
            with contextlib.suppress(Exception):  # a hook that fails leaves it held, as before
                self.env.work_failed(role)
        return self.emit(step, now, EventType.ERROR, role, [role],
                         action=clean_text(str(action_text)), status="error",
                         error=clean_text(str(error)), private=True, info=info)

    def _finish(self, step: StepContext, member: TeamMember, action: Action,
                now: float) -> Transition:
        transition = self.emit(step, now, EventType.FINISH, member.role, [],
                               action=format_action(action))
        return transition.extend(self._end(step, now, "finished", {"by": member.role}))

    # -- live edits (core.live_edits) -------------------------------------------------------

    def announce_edits(self, now: float) -> Transition:
        """Tell the members who are not people of the live edits made since the last time:
        one ``action`` event per person and text, as if the person had replaced the text with
        what it is now (``info["live"]`` names the first of the edits)."""
        return self._announce_edits(NO_REQUEST, now)

    def _announce_edits(self, step: StepContext, now: float) -> Transition:
        return Transition() if self.done else self._live.announce(step, now)

    # -- strict turn-taking (core.turns) -----------------------------------------------------

    def _out_of_turn(self, step: StepContext) -> bool:
        """Whether a step must be refused as out of turn. An unknown role gets its own error;
        what the env observed is recorded whatever the turn."""
        role = step.role
        if self.turns is None or self.done or role not in self.members or step.observed:
            return False
        assert role is not None
        return self.turns.refuses(role, self.paused, follow_up=step.follow_up)

    def _not_your_turn(self, step: StepContext, raw: RawAction, now: float) -> Transition:
        """Refuse an act out of turn: logged (replay refuses it again), shown to nobody, and
        nothing changes: no step counted, no activity, the turn where it was."""
        assert self.turns is not None and step.role is not None
        info: dict[str, Any] = {"out_of_turn": True}
        if not isinstance(raw, str):
            info["structured"] = True  # see _as_text
        error = "You are paused and may not act until resumed." if step.role in self.paused \
            else self.turns.refusal(step.role)
        return self.emit(step, now, EventType.ERROR, step.role, [], action=_as_text(raw),
                         status="error", error=error, private=True, info=info)

    def _end_if_idle_rounds(self, step: StepContext, transition: Transition,
                            now: float) -> Transition:
        """Under turn-taking, end the session after ``max_idle_ticks`` whole rounds in a row
        in which nobody acted (everyone waited or let the turn go by), as the default mode
        ends after that many idle ticks."""
        turns = self.turns
        if turns is not None and not self.done \
                and turns.idle_rounds() >= max(1, self.max_idle_ticks):
            transition.extend(self._end(step, now, "idle",
                                        {"idle_rounds": turns.idle_rounds()}))
        return transition

    # -- events and notifications ------------------------------------------------------------

    def refuse(self, step: StepContext, now: float, role: str, raw: RawAction, message: str,
               *, notify: bool = True, also: Sequence[str] = (),
               info: dict[str, Any] | None = None) -> Transition:
        if notify and role in self.step_counts and not self.every_act_is_a_step:
            # Refused attempts count as steps, so an LM stuck on bad output still meets its limit.
            self.step_counts[role] += 1
        info = dict(info or {})
        if not isinstance(raw, str):
            info["structured"] = True  # see _as_text: replay reads it back as JSON
        transition = self.emit(step, now, EventType.ERROR, role,
                               ([role] if notify else []) + list(also), action=_as_text(raw),
                               status="error", error=message, private=True, info=info)
        return self._check_limit(step, role, transition, now)

    def emit(self, step: StepContext, now: float, type_: EventType, actor: str | None,
             recipients: Sequence[str], *, skip_paused: bool = True,
             views: Mapping[str, Observation] | None = None, prints: Prints | None = None,
             **fields: Any) -> Transition:
        """Log one event and write the updates it owes (``fields`` are the event's)."""
        self.seq += 1
        marks = step.marks(actor)
        if marks:
            fields["info"] = {**fields.get("info", {}), **marks}
        if self.turns is not None:  # the turn decides who is woken, and is logged
            if not _typing(type_, fields.get("info", {})):
                recipients = self.turns.wakes(type_, actor, fields.get("info", {}), recipients,
                                              self.paused)
            fields["info"] = {**fields.get("info", {}),
                              "turn": self.turns.current().model_dump(exclude_defaults=True)}
        delivered = [r for r in dict.fromkeys(recipients)
                     if r in self.members and not (skip_paused and r in self.paused)]
        if views is None:
            views = self.env.views(delivered)
        if self._texts:
            view = next(iter(views.values()), None) or self.env.view(self.team[0].role)
            fields["info"] = self._texts.follow_event(view, step, seq=self.seq, author=actor,
                                                      info=dict(fields.get("info", {})))
        event = Event(seq=self.seq, time=now, type=type_, actor=actor, recipients=delivered,
                      request_id=step.request_of(actor), **fields)
        # Whole updates (with the context) only where it may be news: everyone at the start and
        # at the end (the last state, whole, even to a member that missed updates), and the
        # agents a RESUME wakes (they were told nothing while paused).
        given_context = set(delivered) if type_ in (EventType.START, EventType.END) else set(
            event.info.get("agents", ())) if type_ is EventType.RESUME else set()
        transition = Transition(events=[event], updates=self._updates.for_event(
            event.as_sent(), delivered, now, given_context=given_context, views=views,
            prints={} if prints is None else prints))
        # A clocked game's own ticks do not count: its length is the game's to say; nor does a
        # person's typing.
        if (self.seq - self.clock_ticks - self._live.count >= self.max_events
                and type_ is not EventType.END and not self.done):
            transition.extend(self._end(step, now, "event_limit", {}))
        return transition


def _tick_period(env: CoEnv) -> float | None:
    """How often a clocked env ticks (``None``: it does not); ``ValueError`` for too often."""
    period = env.tick_seconds
    if period is not None and not period >= MIN_TICK_SECONDS:  # NaN is refused too
        raise ValueError(f"{type(env).__name__} ticks every {period!r} s; a clocked env may "
                         f"not tick faster than every {MIN_TICK_SECONDS} s.")
    return period


def _all_specs(task_specs: Mapping[str, ActionSpec]) -> dict[str, ActionSpec]:
    """The task's actions and every collaboration act: every act parses for everyone, so that
    a forbidden one gets a precise error. ``ValueError`` for a task action with an act's name."""
    clash = set(task_specs) & {spec.name for spec in acts.ALL_ACTS}
    if clash:
        raise ValueError(f"Task actions may not reuse collaboration act names: {clash}")
    return {**task_specs, **{spec.name: spec for spec in acts.ALL_ACTS}}


def _typing(type_: EventType, info: Mapping[str, Any]) -> bool:
    """Whether an event is a person's typing or its announcement: no turn is taken or passed."""
    return type_ is EventType.EDIT or (type_ is EventType.ACTION and "live" in info)


def _is_live_edit(raw: Any) -> bool:
    """Whether an admitted action is a panel's live edit, which is typing, not a step."""
    name = raw.get("name") if isinstance(raw, dict) else raw if isinstance(raw, str) else None
    return isinstance(name, str) and name.lstrip().startswith(acts.EDIT_TEXT.name)


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


def _admit_seq(seen_seq: Any) -> int | None:
    """A ``seen_seq`` as sent: an int, or ``None`` for anything else (a bool included)."""
    if not isinstance(seen_seq, int) or isinstance(seen_seq, bool):
        return None
    return seen_seq


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
