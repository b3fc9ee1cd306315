"""A rule-based chef that works an interactive plan's agent steps (``make_env("kitchen",
plans=True)``): the plan's division of labour becomes the chef's task list.

While a plan is picked and not finished, the chef works only the plan's agent steps, in plan
order, each as the kitchen job its text names (:func:`~cogym_lab.envs.kitchen.plan_bridge.
read_step`), and nothing of its own beyond putting out a fire it can reach. A step is complete
when its job is done as many times as it says: the chef then sends ``COMPLETE_STEP`` with what
it did. While an earlier person step still waits for the person, the chef works ahead on its
next agent steps and completes each as soon as its turn comes (the plan's steps run in order;
cooking does not wait). A step that names no kitchen job is failed with ``FAIL_STEP`` and the
reason, so the person is asked to do it. Person steps are the person's share: the chef leaves
them alone. Before a plan is picked, when it is paused or stopped, the chef only waits; once
every step is done, the plan is over and the chef plays by its own rules again.

A macro of the chef's own from before the pick is dropped as soon as a plan is picked (the
plan may give that job to the person), and a burger the chef assembled is put down for the
other side when no agent step left serves. Before a planned kitchen's clock starts, the chef
makes no game move at all (:func:`before_the_clock`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogym_lab.core.actions import Action, format_action
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.envs.kitchen.plan_bridge import KitchenJob, NotAKitchenJob, read_step
from cogym_lab.envs.kitchen.plan_proposals import propose as proposals_for
from cogym_lab.envs.kitchen.policies.choices import (
    assemble_choice,
    fire_choice,
    hand_over_choice,
    park_choice,
    prepare_choice,
    serve_choice,
)
from cogym_lab.envs.kitchen.policies.situation import (
    CENTER,
    DIRECTIONS,
    FLOOR,
    MACROS,
    READY_STATUS,
    TOOL_OF,
    Situation,
    chef_pos,
    macro,
    macro_food,
    macro_name,
)
from cogym_lab.envs.kitchen.policies.situation import step as next_tile
from cogym_lab.envs.kitchen.policies.watch import FAILED_MACRO_PAUSE

#: The plan's component in a planned task's view.
PLAN = PLAN_COMPONENT
IN_PROGRESS = ("running", "needs_input", "failed")


def plan_steps(plan: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The picked plan's steps from the plan component's content (empty: no plan picked)."""
    chosen = plan.get("plan") if isinstance(plan, Mapping) else None
    steps = chosen.get("steps") if isinstance(chosen, Mapping) else None
    return [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []


def plan_is_on(plan: Mapping[str, Any] | None) -> bool:
    """Whether a plan is picked and not finished: the chef then works the plan only."""
    steps = plan_steps(plan)
    return bool(steps) and any(step.get("status") != "done" for step in steps)


def is_plan_action(action: str | None) -> bool:
    """Whether ``action`` is a plan action (which is no chef's action: any time, no tick)."""
    return action is not None and action.startswith(("COMPLETE_STEP(", "FAIL_STEP(",
                                                     "PROPOSE_PLANS("))


def before_the_clock(content: Mapping[str, Any], plan: Mapping[str, Any] | None) -> bool:
    """Whether a planned kitchen's clock has not started yet (tick 0): the chef then makes no
    game move, as the person may still pick or change the division of labour (a clock with a
    person in the team waits for their first game action; co-planning does not start it)."""
    return plan is not None and int(content.get("tick", 0) or 0) == 0


def wants_proposals(plan: Mapping[str, Any] | None) -> bool:
    """Whether a planned kitchen's (first) plan has neither a plan nor proposals: the agent
    side then proposes divisions of labour for the person to pick from."""
    return isinstance(plan, Mapping) and plan.get("plan") is None and not plan.get("proposals")


def plan_section(plan: Mapping[str, Any] | None) -> str:
    """The picked plan as a prompt section: each step's side, status and text, so an LM agent
    knows the division of labour it works to and the person's share (empty: no plan)."""
    steps = plan_steps(plan)
    if not steps:
        return ""
    lines = "\n".join(f"{n}. ({step.get('assignee')}, {step.get('status')}) "
                      f"{' '.join(str(step.get('description', '')).split())[:200]}"
                      for n, step in enumerate(steps, 1))
    return ("## The plan (co-planned division of labour: your chef works the agent steps, "
            f"your teammate the person steps)\n\n{lines}")


def step_action(name: str, **args: Any) -> str:
    return format_action(Action(name=name, args=args))


class PlanFollower:
    """The plan side of one chef (see the module doc): :meth:`decide` gives a plan action or a
    macro for the plan's current agent job, and :meth:`note_tick` counts the jobs done."""

    def __init__(self, role: str) -> None:
        self.role = role
        #: Units of work done per step run: (step id, its runs, its text) -> count.
        self.done: dict[tuple[str, int, str], int] = {}
        self.working: tuple[tuple[str, int, str], KitchenJob] | None = None
        self.told: set[tuple[str, int, str]] = set()  # steps completed or failed already
        self.state = "idle"
        self.tick = 0
        self.rest_until = -1  # after a job's macro failed, the tick until which it rests
        self.sent: str | None = None  # the last macro sent under the plan
        self.proposed = False  # proposals are made once a session: a refusal is not retried

    # -- what happened ---------------------------------------------------------------------

    def note_tick(self, info: Mapping[str, Any]) -> None:
        """Count a job of mine that this tick finished: the macro I sent for it is done (a
        served dish, for serving and whole orders)."""
        self.tick = int(info.get("tick", self.tick))
        if self.working is None:
            return
        key, job = self.working
        for happened in info.get("happened") or ():
            if not isinstance(happened, Mapping) or happened.get("chef") != self.role:
                continue
            kind = happened.get("kind")
            if job.macro in ("SERVE", "ORDER"):
                finished = kind == "served" and (not job.food or happened.get("dish") == job.food)
            else:
                finished = kind == "macro_done" and happened.get("macro") == job.macro
            if finished:
                self.done[key] = self.done.get(key, 0) + 1
                if job.macro not in ("ORDER",):
                    self.working = None
            elif kind == "macro_failed":
                # tried again when the chef is next free, after a rest: it would fail at once
                self.working = None
                self.rest_until = self.tick + FAILED_MACRO_PAUSE

    # -- deciding ----------------------------------------------------------------------------

    def propose(self, content: Mapping[str, Any], plan: Mapping[str, Any] | None,
                plans: list[dict[str, Any]] | None = None) -> str | None:
        """``PROPOSE_PLANS`` with divisions of labour (``plans``, or the rule's from
        :func:`~cogym_lab.envs.kitchen.plan_proposals.propose`) when the plan has neither a
        plan nor proposals and this chef has not proposed yet; else ``None``. Pure reading of
        the view: it never waits for anything, so the clock never waits for it."""
        if self.proposed or not wants_proposals(plan):
            return None
        offered = plans if plans else proposals_for(content, self.role)
        if not offered:
            return None
        self.proposed = True
        return step_action("PROPOSE_PLANS", plans=offered)

    def decide(self, content: Mapping[str, Any], plan: Mapping[str, Any] | None) -> str | None:
        """The chef's next action under the plan: ``COMPLETE_STEP`` or ``FAIL_STEP`` for an
        agent step, a macro for the current job, or ``None`` (busy, or nothing to do now)."""
        steps = plan_steps(plan)
        started = next((n for n, s in enumerate(steps) if s.get("status") in IN_PROGRESS),
                       None)
        situation = Situation.read(content, self.role)
        if started is None or situation.me is None or situation.done:
            self.state = "plan_waits"
            return self._idle(situation)
        ahead = [s for s in steps[started:]
                 if s.get("assignee") == "agent" and s.get("status") != "done"]
        for step in ahead:
            key = (str(step.get("id")), int(step.get("runs") or 0), str(step.get("description")))
            running = step.get("status") == "running"
            try:
                job = read_step(str(step.get("description", "")))
            except NotAKitchenJob as refusal:
                if running and key not in self.told:
                    self.told.add(key)
                    self.state = "plan_fail"
                    return step_action("FAIL_STEP", step=key[0], reason=str(refusal)[:300])
                break  # the steps after it wait for it, as the plan's do
            if not job.standing and (self.done.get(key, 0) >= job.count
                                     or nothing_to_pass(situation, job)):
                if running and key not in self.told:
                    self.told.add(key)  # a view that has not caught up must not send it twice
                    self.state = "plan_complete"
                    return step_action("COMPLETE_STEP", step=key[0],
                                       text=f"The chef did it: {job.describe()}.")
                if running:
                    return None  # completed already; the view has not caught up yet
                continue  # done ahead of its turn: on to the next agent step
            return self._work(situation, key, job)
        self.state = "plan_waits"
        if not situation.busy and not serves_any(steps):
            handed = pass_held_burger(situation)  # held, the burger would never be served
            if handed is not None:
                return self._send(handed)
        return self._idle(situation)

    def _work(self, situation: Situation, key: tuple[str, int, str], job: KitchenJob
              ) -> str | None:
        if situation.busy and self._mine(situation):
            self.state = "plan_busy"
            return None
        fire = fire_choice(situation) if job.macro != "PUT_OUT_FIRE" else None
        if fire is not None:
            self.state = "fire"
            return self._send(fire)
        action = job_action(situation, job) if self.tick > self.rest_until else None
        if action is None:
            self.state = "plan_waits"
            return park_choice(situation) or self._drop(situation)
        self.working = (key, job)
        self.state = "plan"
        return self._send(action)

    def _mine(self, situation: Situation) -> bool:
        """Whether the macro my chef runs was sent under the plan (the same macro on the same
        food): one from before the plan, by the chef's own rules, is dropped at once, since the
        plan may give that job to the person."""
        running = situation.running(situation.me)
        return running[0] is None or running == (macro_name(self.sent), macro_food(self.sent))

    def _drop(self, situation: Situation) -> str | None:
        """A turn in place that stops a macro of my chef's own from before the plan (any atomic
        action cancels a macro; turning to a counter moves nothing), or ``None``."""
        if self._mine(situation) or situation.running(situation.me)[0] == "PUT_OUT_FIRE":
            return None  # a fire is fought under any plan
        self.sent = None
        return turn_in_place(situation)

    def _send(self, action: str | None) -> str | None:
        if action is not None and macro_name(action) in MACROS:
            self.sent = action
        return action

    def _idle(self, situation: Situation) -> str | None:
        if situation.me is None or situation.done:
            return None
        if situation.busy:  # the plan's macro goes on; one of my own is dropped
            return self._drop(situation)
        return self._send(fire_choice(situation)) or park_choice(situation)


def job_action(situation: Situation, job: KitchenJob) -> str | None:
    """The macro that does ``job`` now, or ``None`` when nothing can be done for it yet (the
    ingredients are not ready, there is nothing to serve)."""
    dishes = [job.food] if job.food else None
    if job.macro == "PREPARE":
        if not job.food:
            return prepare_choice(situation)
        if not situation.can_prepare(job.food):
            return None
        return make_room(situation, job.food) or macro("PREPARE", food=job.food)
    if job.macro == "ASSEMBLE":
        return assemble_choice(situation, dishes)
    if job.macro == "SERVE":
        return serve_choice(situation, dishes) or hand_over_choice(situation)
    if job.macro == "ORDER":
        wanted = dishes or situation.open_orders() or situation.order_dishes()
        return serve_choice(situation, wanted) or hand_over_choice(situation) \
            or assemble_choice(situation, wanted) or prepare_choice(situation, wanted)
    if job.macro == "PASS_ON":
        if not job.food:
            return pass_burger(situation)
        status = READY_STATUS.get(job.food, "")
        # only a ready one: raw lettuce or beef on the other side helps nobody
        return macro("PASS_ON", thing=job.food, **({"thing_status": status} if status else {}))
    if job.macro == "PUT_OUT_FIRE":
        return macro("PUT_OUT_FIRE") if situation.fires else None
    if job.macro == "CLEAN_A_COUNTER":
        return macro("CLEAN_A_COUNTER")
    return None


def serves_any(steps: list[Mapping[str, Any]]) -> bool:
    """Whether an agent step not done yet serves dishes (a serve or a whole-dish step)."""
    for step in steps:
        if step.get("assignee") != "agent" or step.get("status") == "done":
            continue
        try:
            if read_step(str(step.get("description", ""))).macro in ("SERVE", "ORDER"):
                return True
        except NotAKitchenJob:
            continue
    return False


def pass_held_burger(situation: Situation) -> str | None:
    """A ``PASS_ON`` of a made burger an order wants that my chef holds (an assembling step
    ends with the burger in hand), so the side that serves can take it; else ``None``."""
    held = situation.holding(situation.me)
    if held is not None and held[0] in situation.order_dishes():
        return macro("PASS_ON", thing=held[0])
    return None


def turn_in_place(situation: Situation) -> str | None:
    """A ``MOVE`` towards a tile next to my chef that is not floor or wall: the chef only
    turns to face it (``None`` when there is none)."""
    mine = chef_pos(situation.me)
    if mine is None:
        return None
    for direction in DIRECTIONS:
        if situation.tiles.get(next_tile(mine, direction)) not in (None, FLOOR, "wall"):
            return format_action(Action(name="MOVE", args={"direction": direction}))
    return None


def pass_burger(situation: Situation) -> str | None:
    """A ``PASS_ON`` of a made burger an order wants that my chef holds or that lies on my
    side (not on a center counter already), or ``None``."""
    mine = situation.holding(situation.me)
    for dish in situation.order_dishes():
        here = [p for p in situation.lying(dish) if p.kind != CENTER and situation.reaches(p.pos)]
        if mine == (dish, "") or here:
            return macro("PASS_ON", thing=dish)
    return None


def nothing_to_pass(situation: Situation, job: KitchenJob) -> bool:
    """Whether a step passing burgers over is done early: my chef is free and no made burger
    is left on its side (an assembled one may have been put down on a center counter
    already, so the passes do not always add up to the step's count)."""
    return job.macro == "PASS_ON" and not job.food and not situation.busy \
        and pass_burger(situation) is None


def make_room(situation: Situation, food: str) -> str | None:
    """When every pan (for beef) or board (for lettuce) my chef reaches holds a ready one that
    nobody took, a ``PASS_ON`` that moves one to a counter, so the next can be prepared."""
    tool = TOOL_OF.get(food)
    if tool is None:
        return None
    tools = [pos for pos, kind in situation.tiles.items()
             if kind == tool and situation.reaches(pos)]
    ready = situation.lying(food, READY_STATUS[food], kinds=(tool,))
    taken = {placed.pos for placed in situation.placed if placed.kind == tool}
    if tools and all(pos in taken for pos in tools) and ready:
        return macro("PASS_ON", thing=food, thing_status=READY_STATUS[food])
    return None


__all__ = ["PLAN", "PlanFollower", "before_the_clock", "is_plan_action", "job_action",
           "pass_burger", "pass_held_burger", "plan_is_on", "plan_section", "plan_steps",
           "serves_any", "turn_in_place", "wants_proposals"]
