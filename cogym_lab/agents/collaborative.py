"""Collaborative Agent: one ReAct step over task actions and collaboration acts together."""

from __future__ import annotations

from cogym_lab.agents.base import LMAgent, merge_specs
from cogym_lab.agents.templates import agent_prompt
from cogym_lab.core import Notification


class CollaborativeAgent(LMAgent):
    agent_type = "collaborative"

    async def decide(self, notification: Notification) -> str | None:
        specs = merge_specs(self.task_specs, self.collaboration_specs)
        instruction = agent_prompt("act", actions=self.actions_text(specs),
                                   action_guidance=agent_prompt("act_collaborative_guidance"))
        return await self.ask_action(self.system_prompt(notification), instruction, specs, "act")
