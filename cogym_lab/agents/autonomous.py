"""Fully Autonomous Agent: task actions only; it works alone and finishes by itself."""

from __future__ import annotations

from cogym_lab.agents.base import LMAgent, merge_specs
from cogym_lab.agents.templates import agent_prompt
from cogym_lab.core import Notification


class AutonomousAgent(LMAgent):
    agent_type = "autonomous"
    collaborates = False

    async def decide(self, notification: Notification) -> str | None:
        specs = merge_specs(self.task_specs, {"FINISH": self.collaboration_specs["FINISH"]})
        instruction = agent_prompt("act", actions=self.actions_text(specs),
                                   action_guidance=agent_prompt("act_autonomous_guidance"))
        return await self.ask_action(self.system_prompt(notification), instruction, specs, "act")
