"""``kitchen-act``: the LM as System 1 (the paper's "Act"). Each decision is one LM call that
returns one macro action; while the call runs the chef does nothing, which is the point of the
baseline: its latency shows as idle time in the game.

It talks as the other kitchen agents do (``chat.py``): the reply may add a ``say`` block, sent
as a chat message in place of the chef's next action. The paper's Act did not talk (no agent
of the paper did); chat is ours, for every agent alike, so that the baselines stay comparable
with DPT-Agent in sessions with chat.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from cogym_lab.core import Notification
from cogym_lab.envs.kitchen.agents.base import KitchenAgent
from cogym_lab.envs.kitchen.agents.chat import without_say
from cogym_lab.envs.kitchen.agents.policy_code import PolicyRejected, checked_macro
from cogym_lab.envs.kitchen.agents.prompting import kitchen_prompt
from cogym_lab.envs.kitchen.policies.situation import Situation
from cogym_lab.lm import LMError


class ActAgent(KitchenAgent):
    """Asks its LM for the next macro action whenever its chef is free."""

    agent_type: ClassVar[str] = "kitchen-act"

    def __init__(self, lm: Any, **options: Any) -> None:
        super().__init__(lm, **options)
        self._retry_at = 0  # the tick from which a failed LM may be asked again
        self.last_action: str | None = None

    async def act(self, notification: Notification) -> str | None:
        content, said = self.opening(notification)
        if content is None or said is not None:
            return said
        if self.tick < self._retry_at:
            return None
        situation = Situation.read(content, self.role)
        if situation.me is None or situation.busy:
            return None
        tick, started = self.tick, time.monotonic()
        messages = self.messages(kitchen_prompt("act_output"), extra=self._recent(),
                                 assigned=False)
        try:
            reply, seconds = await self.ask(messages, "macro")
        except LMError as error:
            self.lm_failed("macro", tick, error)
            self._retry_at = tick + self.retry_ticks
            return None
        self.heard_from_lm(reply)
        reply = without_say(reply)
        try:
            action = checked_macro(reply, self.specs)
        except PolicyRejected as problem:
            self.reject(tick, problem.reason, reply, kind="macro")
            self.records.latency("macro", time.monotonic() - started, tick, calls=[seconds],
                                 accepted=False)
            return None
        self.records.latency("macro", time.monotonic() - started, tick, calls=[seconds])
        self.last_action = action
        return self.sent(action)

    def _recent(self) -> str:
        if self.last_action is None:
            return "## Your last macro action\n\n(none yet)"
        return f"## Your last macro action\n\n{self.last_action}"


__all__ = ["ActAgent"]
