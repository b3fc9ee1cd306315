"""The plan-aware agent: a fourth agent type, which works with its teammate through interactive
plans (Cocoa, ``docs/plans.md``) in a task made with plans. It is Co-Gym's collaborative agent
with situational planning (:class:`~cogym_lab.agents.planning.PlanningAgent`) that also follows
the plans.

Its moves come in two kinds. **Plan-driven moves** are decided by the plans' state, and only
their content comes from the LM:

* a plan with nothing proposed yet (the first, or one a teammate started with ``NEW_PLAN``), it
  proposes one to three plans for, with plans made earlier in the same results folder as
  examples (the paper's "learning from previous plans"); then it waits for the person side to
  pick one, and reminds them once on an idle tick;
* a picked plan that has not run yet is the person's to shape and run: the agent says so once,
  and runs it (``RUN_ALL``) only if nobody acts for a while (an idle tick);
* a running agent step, it carries out with the task's own actions and completes (or fails)
  with what it produced, at most ``max_step_actions`` actions per run of a step;
* a person step that needs input, it tells the person about, once per run of the step (waiting
  for the person is not counted as being stuck);
* when every step of a plan is done, it writes that plan's output into the workspace;
* when a teammate rewrites a step so that the plan's course may change, it asks its LM whether
  the later steps still follow and, if not, offers to replan them (``OFFER_REPLAN``, Cocoa's
  §4.1.4, rule in :mod:`cogym_lab.agents.replanning`); when a teammate adds a step, it offers
  two or three completions of its text (``OFFER_COMPLETIONS``).

Every other move is the situational planning of :class:`PlanningAgent`: a new message from a
teammate is answered first (the LM decides whether to act, with the plan actions among the task
actions, to answer, or to wait), and so is a moment when no plan has anything for the agent and
none waits for the person (a plan paused half-way, a failed step, every output written).

A session may hold several plans (``interactive_plan``, ``interactive_plan_2``, ...), run side by
side. The agent works with each: every plan act it sends names its plan (``plan``, the
component's name), what it remembers of a plan (the steps it last saw, teammates' edits and new
steps, the person steps it told about, its actions per step) is kept per plan, and plans take
turns: after a move on one plan, the next plan in order gets the first chance at the next move,
so two running agent steps advance one action each in turn.

Other edits, reassignments and reruns need nothing special: each decision reads the plans as
they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.agents.base import WAIT, merge_specs
from cogym_lab.agents.plan_examples import earlier_plans
from cogym_lab.agents.planning import PlanningAgent
from cogym_lab.agents.replanning import (
    may_change_course,
    read_completions,
    read_replan,
    steps_text,
)
from cogym_lab.agents.templates import agent_prompt
from cogym_lab.core import ActionError, Notification
from cogym_lab.core.actions import Action, format_action
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.messages import EventType
from cogym_lab.core.plan_env import (
    MAX_PLANS,
    PLAN_COMPONENT,
    Planning,
    is_plan_component,
    plan_component,
)
from cogym_lab.core.plans import MAX_PROPOSALS

#: The plan actions the agent takes while it works on a step.
STEP_ACTS = ("COMPLETE_STEP", "FAIL_STEP")
#: Every plan action (not a task's own): a step is carried out with the task's actions only.
_PLAN_ACTS = frozenset(Planning._specs)


@dataclass
class PlanMemory:
    """What the agent keeps about one plan between decisions."""

    proposed: bool = False  # it proposed plans for it
    announced: bool = False  # told the person the picked plan is theirs to shape and run
    asked_to_pick: bool = False  # reminded the person to pick one of the proposals
    told: set[tuple[str, int]] = field(default_factory=set)  # (step, runs) person steps told
    actions_on: dict[tuple[str, int], int] = field(default_factory=dict)  # actions per run
    seen: dict[str, str] = field(default_factory=dict)  # each step's description when last seen
    edited: dict[str, str] = field(default_factory=dict)  # steps a teammate rewrote: old text
    added: list[str] = field(default_factory=list)  # steps a teammate added: to complete


class PlanAwareAgent(PlanningAgent):
    """Situational planning (:class:`PlanningAgent`), with the plans' own moves first.

    A subclass, not a wrapper around one: the plan-aware agent *is* a collaborative agent with
    situational planning, and both kinds of move share one history, scratchpad, loop guard and
    LM meter, which a wrapped second agent would keep apart (its actions missing from the
    other's history, its waits unseen by the other's guard)."""

    agent_type = "plan-aware"

    def __init__(self, *args: Any, max_step_actions: int = 6, examples: int = 3,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_step_actions = max_step_actions
        self.examples = examples
        self.memory: dict[str, PlanMemory] = {}  # by plan component name
        self._waiting_for_person = False  # this decision waits for the person, as planned
        self._last_plan: str | None = None  # the plan that got the last plan-driven move

    async def decide(self, notification: Notification) -> str | None:
        self._waiting_for_person = False
        plans = plan_states(notification)
        if plans:
            acted = self._teammate_acts(notification)
            for name, plan in plans.items():
                self._note_teammate_edits(name, plan, acted)
        if not plans or any(m.sender != self.role for m in notification.new_messages):
            return await super().decide(notification)  # situational planning answers
        move = await self._plan_move(notification, plans)
        if move is not None:
            return move
        if self._waiting_for_person:
            return WAIT
        return await super().decide(notification)  # nothing due: act, speak or wait?

    def _memory(self, name: str) -> PlanMemory:
        return self.memory.setdefault(name, PlanMemory())

    async def _plan_move(self, notification: Notification,
                         plans: Mapping[str, Mapping[str, Any]]) -> str | None:
        """The most pressing plan-driven move over every plan, or ``None`` (then
        ``_waiting_for_person`` says whether some plan waits for the person). Within each kind
        of move the plans take turns (:meth:`_in_turn`)."""
        order = self._in_turn(plans)
        for name in order:  # questions about the plan as it now stands come first
            plan = plans[name]
            if plan["plan"] is not None:
                offer = await self._offer_after_edits(notification, name, plan)
                if offer is not None:
                    return self._took(name, offer)
        for name in order:
            plan = plans[name]
            if plan["plan"] is None and not plan["proposals"] \
                    and not self._memory(name).proposed:
                return self._took(name, await self._propose(notification, name, plan))
        for name in order:
            if plans[name]["plan"] is not None and plans[name]["awaiting_output"]:
                return self._took(name, await self._write_output(notification, name,
                                                                 plans[name]))
        for name in order:
            busy = _in_progress(plans[name])
            if busy is not None and busy["status"] == "running" and busy["assignee"] == "agent":
                return self._took(name, await self._work_on(notification, name, plans[name],
                                                             busy))
        for name in order:
            busy = _in_progress(plans[name])
            if busy is not None and busy["status"] == "needs_input":
                told = self._memory(name).told
                if (busy["id"], busy["runs"]) not in told:
                    told.add((busy["id"], busy["runs"]))
                    return self._took(name, self._tell_person_step(name, plans, busy))
                self._waiting_for_person = True
        tick = notification.event.type is EventType.TICK
        for name in order:
            plan, memory = plans[name], self._memory(name)
            if plan["plan"] is None or not all(s["status"] == "not_run"
                                               for s in plan["plan"]["steps"]):
                continue
            if plan.get("replan") or plan.get("completions"):
                self._waiting_for_person = True  # an offer is a question: not run over it
            elif not memory.announced:
                memory.announced = True
                return self._took(name, self.message(agent_prompt(
                    "plan_ready", which=_capital(_which(name, plans)))))
            elif tick:
                return self._took(name, self._plan_act("RUN_ALL", name))
            else:
                self._waiting_for_person = True  # the person may shape and run it first
        for name in order:
            plan, memory = plans[name], self._memory(name)
            if plan["plan"] is not None or not (plan["proposals"] or memory.proposed):
                continue
            if tick and plan["proposals"] and not memory.asked_to_pick:
                memory.asked_to_pick = True  # nothing happened for a while: ask, once
                return self._took(name, self.message(agent_prompt(
                    "plan_pick", count=len(plan["proposals"]), which=_which(name, plans))))
            self._waiting_for_person = True  # the person side picks
        return None

    def _in_turn(self, plans: Mapping[str, Any]) -> list[str]:
        """The plans in the order they get a chance at this move: the one after the plan that
        got the last move first, round the list, so no plan waits behind another."""
        names = list(plans)
        if self._last_plan not in names:
            return names
        after = names.index(self._last_plan) + 1
        return names[after:] + names[:after]

    def _took(self, name: str, action: str) -> str:
        self._last_plan = name
        self._waiting_for_person = False  # a move, not a wait: the loop guard sees it
        return action

    def _tell_person_step(self, name: str, plans: Mapping[str, Any],
                          step: Mapping[str, Any]) -> str:
        steps = plans[name]["plan"]["steps"]
        number = [s["id"] for s in steps].index(step["id"]) + 1
        return self.message(agent_prompt("plan_person_step", number=number,
                                         which=_which(name, plans),
                                         step_description=step["description"]))

    def _plan_act(self, act: str, plan: str, **args: Any) -> str:
        """A plan action naming its plan, in canonical form."""
        return format_action(Action(name=act, args={**args, "plan": plan}),
                             self.task_specs.get(act))

    def _guard(self, action: str | None) -> str | None:
        if self._waiting_for_person:  # waiting for the person is the plan, not being stuck
            self._recent.clear()
            return action
        return super()._guard(action)

    # -- replanning and completions (Cocoa §4.1.4) ---------------------------------------------

    def _teammate_acts(self, notification: Notification) -> list[tuple[str, str | None]]:
        """The actions teammates took since the last notification: (name, the plan it named,
        or ``None`` when that cannot be read, e.g. an action shortened for the update)."""
        acts: list[tuple[str, str | None]] = []
        for event in (notification.event, *notification.merged_events):
            if event.type is not EventType.ACTION or event.actor in (None, self.role):
                continue
            text = event.action or ""
            try:
                action, _ = parse_action(text, self.task_specs)
            except ActionError:
                acts.append((text.split("(", 1)[0].strip(), None))
                continue
            acts.append((action.name, plan_key(action.args.get("plan", ""))))
        return acts

    def _note_teammate_edits(self, name: str, plan: Mapping[str, Any],
                             acted: list[tuple[str, str | None]]) -> None:
        """Remember which steps of plan ``name`` a teammate rewrote or added since the last
        notification (an act whose plan cannot be read counts for every plan)."""
        memory = self._memory(name)
        steps = (plan["plan"] or {}).get("steps", [])
        names = {act for act, where in acted if where in (None, name)}
        for step in steps:
            old = memory.seen.get(step["id"])
            if old is None and "ADD_STEP" in names and memory.seen:
                memory.added.append(step["id"])
            elif old is not None and old != step["description"] and "EDIT_STEP" in names:
                memory.edited.setdefault(step["id"], old)
        memory.seen = {step["id"]: step["description"] for step in steps}

    async def _offer_after_edits(self, notification: Notification, name: str,
                                 plan: Mapping[str, Any]) -> str | None:
        """An offer to replan after a course-changing edit, or completions for a new step."""
        memory = self._memory(name)
        steps = plan["plan"]["steps"]
        ids = [s["id"] for s in steps]
        # While an offer is open, edits wait to be judged: once it is answered, the plan as it
        # then stands is what they are judged against (an accepted offer removed the steps).
        while memory.edited and not plan.get("replan"):
            step_id, old = memory.edited.popitem()
            if step_id not in ids:
                continue
            position = ids.index(step_id)
            later = steps[position + 1:]
            if any(s["status"] in ("running", "needs_input") for s in later):
                continue  # the later steps are in use: not the moment to replace them
            new = steps[position]["description"]
            if not may_change_course(old, new, len(later)):
                continue
            instruction = agent_prompt("plan_replan", number=position + 1, old=old, new=new,
                                       steps=steps_text(steps))
            choices = await self.ask_field(self.system_prompt(notification), instruction,
                                           "Replan", "plan:replan", read_replan)
            if choices is None:
                continue
            reason = (f"Step {position + 1} now reads differently, so the steps after it may "
                      "no longer follow.")
            return self._plan_act("OFFER_REPLAN", name, step=step_id, reason=reason,
                                  choices=choices)
        while memory.added:
            step_id = memory.added.pop(0)
            if step_id not in ids:
                continue
            position = ids.index(step_id)
            instruction = agent_prompt("plan_complete", number=position + 1,
                                       text=steps[position]["description"],
                                       steps=steps_text(steps))
            texts = await self.ask_field(self.system_prompt(notification), instruction,
                                         "Completions", "plan:complete", read_completions)
            return self._plan_act("OFFER_COMPLETIONS", name, step=step_id, choices=texts)
        return None

    # -- the moves -----------------------------------------------------------------------------

    async def _propose(self, notification: Notification, name: str,
                       plan: Mapping[str, Any]) -> str:
        self._memory(name).proposed = True
        folder = self.context.results_dir if self.context else None
        examples = earlier_plans(folder, self.examples)
        instruction = agent_prompt(
            "plan_propose", request=plan["request"],
            guidance=plan["guidance"] or "(use the actions as they fit)",
            actions=self.actions_text(self.task_specs),
            examples="\n".join(json.dumps(e, ensure_ascii=False) for e in examples) or "(none)")
        proposals = await self.ask_field(self.system_prompt(notification), instruction,
                                         "Plans", "plan:propose", _read_plans)
        return self._plan_act("PROPOSE_PLANS", name, plans=proposals)

    async def _work_on(self, notification: Notification, name: str, plan: Mapping[str, Any],
                       step: Mapping[str, Any]) -> str:
        memory = self._memory(name)
        key = (step["id"], step["runs"])
        done = memory.actions_on.get(key, 0)
        finishing = done >= self.max_step_actions
        acts = {act: self.task_specs[act] for act in STEP_ACTS if act in self.task_specs}
        specs = acts if finishing else merge_specs(
            {n: s for n, s in self.task_specs.items() if n not in _PLAN_ACTS}, acts)
        progress = (f"You have taken {done} actions on this step: complete it now with what "
                    "you have." if finishing else f"Actions taken on this step so far: {done}.")
        instruction = agent_prompt(
            "plan_step", step_id=step["id"], step_description=step["description"],
            plan=_plan_words(name, plan),
            guidance=plan["guidance"] or "(use the actions as they fit)",
            context=_context_text(plan), progress=progress, actions=self.actions_text(specs))
        action = await self.ask_action(self.system_prompt(notification), instruction, specs,
                                       "plan:step")
        if action.startswith(STEP_ACTS):  # whatever plan the LM named: this step's own
            act, _ = parse_action(action, specs)
            args = {k: v for k, v in act.args.items() if k != "plan"}
            return self._plan_act(act.name, name, **args)
        memory.actions_on[key] = done + 1
        return action

    async def _write_output(self, notification: Notification, name: str,
                            plan: Mapping[str, Any]) -> str:
        instruction = agent_prompt("plan_output", request=plan["request"],
                                   context=_context_text(plan))
        text = await self.ask_field(self.system_prompt(notification), instruction, "Output",
                                    "plan:output")
        return self._plan_act("WRITE_PLAN_OUTPUT", name, text=text)


def plan_key(value: Any) -> str | None:
    """The component name a plan action's ``plan`` argument names (as ``Planning.board``
    reads it: empty for the first, a number, or the name), or ``None`` if it names none."""
    text = value.strip() if isinstance(value, str) else str(value)
    if not text:
        return PLAN_COMPONENT
    if text.isdigit():
        return plan_component(int(text)) if 0 < int(text) <= MAX_PLANS else None
    return text if is_plan_component(text) else None


def plan_states(notification: Notification) -> dict[str, dict[str, Any]]:
    """Every plan component's content by name, first plan first (none in a task made without
    plans)."""
    found = {component.name: component.content for component in notification.view.components
             if is_plan_component(component.name) and isinstance(component.content, dict)}
    return dict(sorted(found.items(), key=lambda pair: _number(pair[0])))


def _number(name: str) -> int:
    return 1 if name == PLAN_COMPONENT else int(name[len(PLAN_COMPONENT) + 1:])


def _in_progress(plan: Mapping[str, Any]) -> Mapping[str, Any] | None:
    steps = (plan["plan"] or {}).get("steps", [])
    return next((s for s in steps if s["status"] in ("running", "needs_input")), None)


def _which(name: str, plans: Mapping[str, Any]) -> str:
    """How a message names a plan: "the plan" while there is one, "plan 2" beside others."""
    return "the plan" if len(plans) == 1 else f"plan {_number(name)}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _plan_words(name: str, plan: Mapping[str, Any]) -> str:
    """Which plan a step prompt's step is in: by number and component name (what ``plan``
    takes), and, for any but the first, by the request it answers."""
    if name == PLAN_COMPONENT:
        return f"The step is in the first plan ({name})."
    return f"The step is in plan {_number(name)} ({name}), which answers: {plan['request']}"


def _context_text(plan: Mapping[str, Any]) -> str:
    lines = []
    for entry in plan.get("context", ()):
        items = "; ".join(_item_text(item) for item in entry["items"])
        lines.append(f"- {entry['step']} ({entry['description']}): {entry['text']}"
                     + (f" [items: {items}]" if items else ""))
    return "\n".join(lines) or "(nothing yet)"


def _item_text(item: Mapping[str, Any]) -> str:
    """An output item for a prompt: its id (what actions take) and its title, if it has them."""
    shown = [str(item[key]) for key in ("id", "title") if item.get(key)]
    return " - ".join(shown) or json.dumps(item, ensure_ascii=False)


def _read_plans(value: str | None) -> list[dict[str, Any]]:
    """The proposed plans, as JSON; ``ValueError`` (a repair prompt) when they are not."""
    if value is None:
        raise ValueError("the reply had no 'Plans:' line")
    try:
        plans = json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"the plans are not JSON: {error.msg}") from None
    if isinstance(plans, dict):
        plans = [plans]
    if not isinstance(plans, list) or not 1 <= len(plans) <= MAX_PROPOSALS or not all(
            isinstance(p, dict) and isinstance(p.get("steps"), list) and p["steps"]
            for p in plans):
        raise ValueError(f"give 1 to {MAX_PROPOSALS} plans, each with a non-empty 'steps' "
                         "list")
    return plans


__all__ = ["PlanAwareAgent", "PlanMemory", "plan_key", "plan_states"]
