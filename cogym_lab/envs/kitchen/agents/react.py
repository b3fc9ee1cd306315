"""``kitchen-react`` and ``kitchen-reflexion``: ReAct and Reflexion steering the kitchen FSM
(the paper's baselines with an FSM-based System 1).

At each decision point (its chef is free) whose assigned tasks are used up, the agent asks its
LM for a thought and a new list of assigned tasks, then lets the FSM act on them: reason, then
act, in turn. The Reflexion agent first reflects on what went wrong (a fire, a missed order, a
wrong dish) since its last plan, and keeps its last few reflections in later prompts.

As in the paper, the agent blocks for every reply: while its LM thinks, its chef stands idle
(the latency penalty the paper measures). ``max_wait_seconds`` (a team-file option, off by
default) caps the wait: past it the FSM acts on its own and the reply is used when it comes. A
failed call is logged and tried again ``retry_ticks`` later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, ClassVar

from cogym_lab.core import Notification
from cogym_lab.envs.kitchen.agents.base import KitchenAgent
from cogym_lab.envs.kitchen.agents.prompting import kitchen_prompt, note
from cogym_lab.envs.kitchen.policies.situation import Situation
from cogym_lab.lm import LMError

log = logging.getLogger(__name__)


class ReActAgent(KitchenAgent):
    """ReAct + FSM (see the module doc)."""

    agent_type: ClassVar[str] = "kitchen-react"

    def __init__(self, lm: Any, *, max_wait_seconds: float | None = None,
                 **options: Any) -> None:
        super().__init__(lm, **options)
        if max_wait_seconds is not None and not (
                isinstance(max_wait_seconds, int | float) and not isinstance(max_wait_seconds, bool)
                and max_wait_seconds > 0):
            raise ValueError(f"max_wait_seconds must be a positive number of seconds (or left "
                             f"out, to wait for every reply), not {max_wait_seconds!r}.")
        #: None: block for every reply (the paper's baselines); a number caps each wait.
        self.max_wait_seconds = max_wait_seconds
        self._thinking: asyncio.Task[None] | None = None
        self._waited = False  # waited for the running call already: do not hold the chef again
        self._retry_at = 0

    async def act(self, notification: Notification) -> str | None:
        content = self.observe(notification)
        if content is None or not self.free(content):
            return None
        situation = Situation.read(content, self.role)
        if situation.me is None:
            return None
        if not situation.busy:
            await self._reason()
        return self.speak() or self.system1(content)

    async def end(self, final: Notification) -> None:
        if self._thinking is not None:
            self._thinking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._thinking
        super().end(final)

    def mind(self) -> dict[str, Any]:
        return {**super().mind(), "thought": self.thought}

    # -- reasoning ---------------------------------------------------------------------------

    async def _reason(self) -> None:
        """Start an LM call when the assigned tasks are used up, and wait for it (until it
        answers, or at most ``max_wait_seconds``)."""
        if self._thinking is None and not self.fsm.assigned and self.tick >= self._retry_at:
            self._thinking = asyncio.create_task(self._think(self.tick))
            self._waited = False
        task = self._thinking
        if task is None:
            return
        if not task.done() and not self._waited:
            self._waited = True
            await asyncio.wait({task}, timeout=self.max_wait_seconds)
        if task.done():
            self._thinking = None

    async def _think(self, tick: int) -> None:
        """One reasoning step: the LM's thought and tasks, given to the FSM if usable."""
        try:
            await self.before_plan(tick)
            await self._plan(tick)
        except LMError as error:
            self.lm_failed("policy", tick, error)
            self._retry_at = self.tick + self.retry_ticks
        except Exception:
            log.exception("%s: reasoning failed", self.role)
            self._retry_at = self.tick + self.retry_ticks

    async def before_plan(self, tick: int) -> None:
        """What happens before each plan (Reflexion reflects here)."""

    async def _plan(self, tick: int) -> None:
        await self.steer(tick, self.messages(kitchen_prompt("react_output"),
                                             extra=self.plan_extra()))

    def plan_extra(self) -> str:
        thought = self.thought or "(none yet)"
        return f"{self.assigned_section()}\n\n## Your previous thought\n\n{thought}"


class ReflexionAgent(ReActAgent):
    """Reflexion + FSM: ReAct with a reflection after each failure (see the module doc)."""

    agent_type: ClassVar[str] = "kitchen-reflexion"

    def __init__(self, lm: Any, *, reflections_kept: int = 3, **options: Any) -> None:
        super().__init__(lm, **options)
        self.reflections_kept = reflections_kept
        self.reflections: list[str] = []
        self._reflected_upto = 0  # failures up to this tick have been reflected on

    async def before_plan(self, tick: int) -> None:
        failures = self.history.failures_since(self._reflected_upto)
        if not failures:
            return
        started = time.monotonic()
        output = kitchen_prompt("reflexion_reflect", failures="; ".join(failures[-6:]) + ".")
        reply, seconds = await self.ask(self.messages(output, extra=self.plan_extra()),
                                        "reflection")
        self._reflected_upto = tick
        self.reflections = [*self.reflections, note(reply)][-self.reflections_kept:]
        self.records.latency("guideline", time.monotonic() - started, tick, calls=[seconds])

    def plan_extra(self) -> str:
        reflections = "\n".join(f"- {text}" for text in self.reflections) or "(none yet)"
        return f"{super().plan_extra()}\n\n## Your reflections\n\n{reflections}"

    def mind(self) -> dict[str, Any]:
        return {**super().mind(), "reflections": self.reflections}


__all__ = ["ReActAgent", "ReflexionAgent"]
