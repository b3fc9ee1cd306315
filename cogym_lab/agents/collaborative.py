"""Collaborative Agent: one ReAct step over task actions and collaboration acts together."""

from __future__ import annotations

from cogym_lab.agents.base import LMAgent
from cogym_lab.core import Notification


class CollaborativeAgent(LMAgent):
    agent_type = "collaborative"

    async def decide(self, notification: Notification) -> str | None:
        return await self.collaborative_step(notification)
