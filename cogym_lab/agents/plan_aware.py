"""The plan-aware agent: a fourth agent type, which works with its teammate through an
interactive plan (Cocoa, ``docs/plans.md``) in a task made with plans.

What it does is decided by the plan's state, and only the content of each move comes from the
LM:

* a new message from a teammate is answered first, as the collaborative agent would, with the
  plan actions among its choices (the teammate may ask to change the plan);
* with no plan yet, it proposes one to three, with plans made earlier in the same results
  folder as examples (the paper's "learning from previous plans"); then it waits for the
  person side to pick one;
* a picked plan that has not run yet is the person's to shape and run: the agent says so once,
  and runs it (``RUN_ALL``) only if nobody acts for a while (an idle tick);
* a running agent step, it carries out with the task's own actions and completes (or fails)
  with what it produced, at most ``max_step_actions`` actions per run of a step;
* a person step that needs input, it tells the person about, once per run of the step (waiting
  for the person is not counted as being stuck);
* when every step is done, it writes the plan output (the last step's output rewritten to
  answer the request) into the workspace;
* when a teammate rewrites a step so that the plan's course may change, it asks its LM whether
  the later steps still follow and, if not, offers to replan them (``OFFER_REPLAN``, Cocoa's
  §4.1.4, rule in :mod:`cogym_lab.agents.replanning`); when a teammate adds a step, it offers
  two or three completions of its text (``OFFER_COMPLETIONS``).

Other edits, reassignments and reruns need nothing special: each decision reads the plan as it
is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cogym_lab.agents.base import WAIT, LMAgent, merge_specs
from cogym_lab.agents.plan_examples import earlier_plans
from cogym_lab.agents.replanning import (
    may_change_course,
    read_completions,
    read_replan,
    steps_text,
)
from cogym_lab.agents.templates import agent_prompt
from cogym_lab.core import Notification
from cogym_lab.core.messages import EventType
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.core.plans import MAX_PROPOSALS
from cogym_lab.core.step_outputs import format_words

#: The plan actions the agent takes while it works on a step.
STEP_ACTS = ("COMPLETE_STEP", "FAIL_STEP")


class PlanAwareAgent(LMAgent):
    agent_type = "plan-aware"

    def __init__(self, *args: Any, max_step_actions: int = 6, examples: int = 3,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_step_actions = max_step_actions
        self.examples = examples
        self._proposed = False
        self._announced = False  # told the person the picked plan is theirs to shape and run
        self._asked_to_pick = False  # reminded the person to pick one of the proposals
        self._waiting_for_person = False  # this decision waits for the person, as planned
        self._told: set[tuple[str, int]] = set()  # (step, runs) person steps announced
        self._actions_on: dict[tuple[str, int], int] = {}  # task actions per run of a step
        self._seen: dict[str, str] = {}  # each step's description when last seen
        self._edited: dict[str, str] = {}  # steps a teammate rewrote: their text before
        self._added: list[str] = []  # steps a teammate added, to offer completions for

    async def decide(self, notification: Notification) -> str | None:
        self._waiting_for_person = False
        plan = _plan_state(notification)
        if plan is not None:
            self._note_teammate_edits(notification, plan)
        if plan is None or any(m.sender != self.role for m in notification.new_messages):
            return await self._converse(notification)
        if plan["plan"] is None:
            if plan["proposals"] and notification.event.type is EventType.TICK \
                    and not self._asked_to_pick:
                self._asked_to_pick = True  # nothing happened for a while: ask, once
                return self.message(agent_prompt("plan_pick", count=len(plan["proposals"])))
            if plan["proposals"] or self._proposed:
                return self._wait_for_person()  # the person side picks
            return await self._propose(notification, plan)
        steps = plan["plan"]["steps"]
        offer = await self._offer_after_edits(notification, plan)
        if offer is not None:
            return offer
        if plan["awaiting_output"]:
            return await self._write_output(notification, plan)
        busy = next((s for s in steps if s["status"] in ("running", "needs_input")), None)
        if busy is not None and busy["status"] == "running" and busy["assignee"] == "agent":
            return await self._work_on(notification, plan, busy)
        if busy is not None and busy["status"] == "needs_input":
            key = (busy["id"], busy["runs"])
            if key in self._told:
                return self._wait_for_person()
            self._told.add(key)
            number = [s["id"] for s in steps].index(busy["id"]) + 1
            return self.message(agent_prompt("plan_person_step", number=number,
                                             step_description=busy["description"]))
        if all(s["status"] == "not_run" for s in steps):
            if plan.get("replan") or plan.get("completions"):
                return self._wait_for_person()  # an offer is a question: not run over it
            return self._start_when_left_alone(notification)
        return WAIT

    def _start_when_left_alone(self, notification: Notification) -> str:
        """A picked plan that has not run: the person may reshape it first (reassign steps,
        edit them) and run it themselves. The agent says so once, and runs it only when
        nobody did anything for a while (an idle tick)."""
        if not self._announced:
            self._announced = True
            return self.message(agent_prompt("plan_ready"))
        if notification.event.type is EventType.TICK:
            return "RUN_ALL()"
        return self._wait_for_person()

    def _wait_for_person(self) -> str:
        """Wait, without the loop guard counting it: waiting for the person is the plan."""
        self._waiting_for_person = True
        return WAIT

    def _guard(self, action: str | None) -> str | None:
        if self._waiting_for_person:
            self._recent.clear()
            return action
        return super()._guard(action)

    # -- replanning and completions (Cocoa §4.1.4) ---------------------------------------------

    def _note_teammate_edits(self, notification: Notification, plan: Mapping[str, Any]) -> None:
        """Remember which steps a teammate rewrote or added since the last notification."""
        steps = (plan["plan"] or {}).get("steps", [])
        names = {(e.action or "").split("(", 1)[0] for e in
                 (notification.event, *notification.merged_events)
                 if e.type is EventType.ACTION and e.actor not in (None, self.role)}
        for step in steps:
            old = self._seen.get(step["id"])
            if old is None and "ADD_STEP" in names and self._seen:
                self._added.append(step["id"])
            elif old is not None and old != step["description"] and "EDIT_STEP" in names:
                self._edited.setdefault(step["id"], old)
        self._seen = {step["id"]: step["description"] for step in steps}

    async def _offer_after_edits(self, notification: Notification,
                                 plan: Mapping[str, Any]) -> str | None:
        """An offer to replan after a course-changing edit, or completions for a new step."""
        steps = plan["plan"]["steps"]
        ids = [s["id"] for s in steps]
        while self._edited:
            step_id, old = self._edited.popitem()
            if step_id not in ids or plan.get("replan"):
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
            return (f'OFFER_REPLAN(step="{step_id}", reason={json.dumps(reason)}, '
                    f"choices={json.dumps(choices, ensure_ascii=False)})")
        while self._added:
            step_id = self._added.pop(0)
            if step_id not in ids:
                continue
            position = ids.index(step_id)
            instruction = agent_prompt("plan_complete", number=position + 1,
                                       text=steps[position]["description"],
                                       steps=steps_text(steps))
            texts = await self.ask_field(self.system_prompt(notification), instruction,
                                         "Completions", "plan:complete", read_completions)
            return (f'OFFER_COMPLETIONS(step="{step_id}", '
                    f"choices={json.dumps(texts, ensure_ascii=False)})")
        return None

    # -- the moves -----------------------------------------------------------------------------

    async def _converse(self, notification: Notification) -> str:
        """Answer the teammate as the collaborative agent does, every action at hand."""
        return await self.collaborative_step(notification)

    async def _propose(self, notification: Notification, plan: Mapping[str, Any]) -> str:
        self._proposed = True
        folder = self.context.results_dir if self.context else None
        examples = earlier_plans(folder, self.examples)
        instruction = agent_prompt(
            "plan_propose", guidance=plan["guidance"] or "(use the actions as they fit)",
            actions=self.actions_text(self.task_specs),
            examples="\n".join(json.dumps(e, ensure_ascii=False) for e in examples) or "(none)")
        plans = await self.ask_field(self.system_prompt(notification), instruction, "Plans",
                                     "plan:propose", _read_plans)
        return f"PROPOSE_PLANS(plans={json.dumps(plans, ensure_ascii=False)})"

    async def _work_on(self, notification: Notification, plan: Mapping[str, Any],
                       step: Mapping[str, Any]) -> str:
        key = (step["id"], step["runs"])
        done = self._actions_on.get(key, 0)
        finishing = done >= self.max_step_actions
        acts = {name: self.task_specs[name] for name in STEP_ACTS if name in self.task_specs}
        specs = acts if finishing else merge_specs(
            {n: s for n, s in self.task_specs.items() if n not in _PLAN_ACTS}, acts)
        progress = (f"You have taken {done} actions on this step: complete it now with what "
                    "you have." if finishing else f"Actions taken on this step so far: {done}.")
        instruction = agent_prompt(
            "plan_step", step_id=step["id"], step_description=step["description"],
            guidance=plan["guidance"] or "(use the actions as they fit)",
            output_format=format_words(step.get("output_format")),
            context=_context_text(plan), progress=progress, actions=self.actions_text(specs))
        action = await self.ask_action(self.system_prompt(notification), instruction, specs,
                                       "plan:step")
        if not action.startswith(STEP_ACTS):
            self._actions_on[key] = done + 1
        return action

    async def _write_output(self, notification: Notification, plan: Mapping[str, Any]) -> str:
        instruction = agent_prompt("plan_output", request=plan["request"],
                                   context=_context_text(plan))
        text = await self.ask_field(self.system_prompt(notification), instruction, "Output",
                                    "plan:output")
        return f"WRITE_PLAN_OUTPUT(text={json.dumps(text, ensure_ascii=False)})"


_PLAN_ACTS = frozenset({
    "PROPOSE_PLANS", "SELECT_PLAN", "ADD_STEP", "EDIT_STEP", "SUGGEST_STEP", "UNDO_SUGGESTION",
    "OFFER_REPLAN", "ACCEPT_REPLAN", "DISMISS_REPLAN", "OFFER_COMPLETIONS", "PICK_COMPLETION",
    "DISMISS_COMPLETIONS", "DELETE_STEP", "MOVE_STEP", "ASSIGN_STEP", "RUN_STEP", "RUN_ALL",
    "RUN_REMAINING",
    "PAUSE_AFTER_STEP", "COMPLETE_STEP", "FAIL_STEP", "EDIT_STEP_OUTPUT", "WRITE_PLAN_OUTPUT",
    "SET_STEP_FORMAT"})


def _plan_state(notification: Notification) -> dict[str, Any] | None:
    """The plan component's content, or ``None`` in a task made without plans."""
    if PLAN_COMPONENT not in notification.view:
        return None
    content = notification.view[PLAN_COMPONENT].content
    return content if isinstance(content, dict) else None


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


__all__ = ["PlanAwareAgent"]
