"""Collaborative Agent with Situational Planning: decide the kind of step first (task action,
message, or wait, from in-context examples), then produce that step.

The ``Decision:`` line is read strictly (:func:`~cogym_lab.agents.choice.read_choice`): exactly
one of 1, 2 or 3, the whole number (``12`` is not 1). Anything else gets one repair prompt, and
then counts as unusable output like any other (:meth:`LMAgent._on_unusable`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from cogym_lab.agents.base import WAIT, LMAgent, merge_specs
from cogym_lab.agents.choice import read_choice
from cogym_lab.agents.templates import agent_prompt
from cogym_lab.core import Notification


class Plan(Enum):
    TASK_ACTION = "1"
    MESSAGE = "2"
    WAIT = "3"


PLAN_NUMBERS = tuple(int(plan.value) for plan in Plan)


class PlanningAgent(LMAgent):
    agent_type = "collaborative-planning"

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # LMAgent's, passed on as given
        super().__init__(*args, **kwargs)
        self.plans: list[Plan] = []  # every decision, for analysis

    async def decide(self, notification: Notification) -> str | None:
        system = self.system_prompt(notification)
        plan = await self.plan(system)
        self.plans.append(plan)
        if plan is Plan.WAIT:
            return WAIT
        if plan is Plan.MESSAGE:
            text = await self.ask_field(system, agent_prompt("message"), "Message", "message")
            return self.message(text)
        specs = merge_specs(self.task_specs, {name: self.collaboration_specs[name] for name in
                                              ("REQUEST_TEAMMATE_CONFIRM", "FINISH")})
        instruction = agent_prompt("act", actions=self.actions_text(specs),
                                   action_guidance=agent_prompt("act_task_only_guidance"))
        return await self.ask_action(system, instruction, specs, "act")

    async def plan(self, system: str) -> Plan:
        def read(value: str | None) -> Plan:
            return Plan(str(read_choice(value, PLAN_NUMBERS, "Decision")))

        return await self.ask_field(system, agent_prompt("plan"), "Decision", "plan", read)
