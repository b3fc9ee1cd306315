"""``kitchen-dpt`` and ``kitchen-dpt-no-tom``: DPT-Agent, a fast System 1 and a slow System 2
that never makes it wait.

* **System 1** is the kitchen FSM, acting on every notification; ``act`` never awaits an LM.
* A **code-as-policy generator** rewrites the FSM's assigned tasks every ``policy_every``
  ticks (sooner after a failure or a new order) from the recent history, the latest belief
  and the behaviour guideline. A policy that cannot be used is refused with its reason (in
  ``policy_rejections.jsonl``) and the last good one stays.
* In a planned kitchen with neither a plan nor proposals, its LM writes one to three
  divisions of labour (``prompts/proposals_output.md``) in a background task; System 1
  proposes them (or the rule's, ``plan_proposals``, when the answer is unusable or the LM
  fails) and plays on meanwhile, never waiting for them: once written, they wake it
  (``KitchenAgent.wake``), clock or no clock. ``propose_with_lm=False`` proposes the rule's
  at once.
* **System 2** (the paper's Fig. 3): every ``belief_every`` ticks the Theory-of-Mind module
  updates a belief about the partner from the history, and the asynchronous reflection then
  analyses that fresh belief, with the history and the score feedback, into a new behaviour
  guideline: the belief feeds reflection, they do not run side by side.
  ``theory_of_mind=False`` leaves the ToM module out (``kitchen-dpt-no-tom``); reflection then
  runs on its own every ``guideline_every`` ticks.

The three run as background asyncio tasks, started by the first ``act`` (or ``start``, when an
event loop runs) and cancelled in ``end``. A failed or slow LM call costs only its own task's
turn: it is logged and tried again ``retry_ticks`` later while the FSM plays on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar

from cogym_lab.core import Notification, SessionContext
from cogym_lab.envs.kitchen.agents.base import KitchenAgent
from cogym_lab.envs.kitchen.agents.policy_code import PolicyRejected, extract_tasks_text
from cogym_lab.envs.kitchen.agents.prompting import kitchen_prompt, note
from cogym_lab.envs.kitchen.plan_proposals import checked_proposals, propose, reach_section
from cogym_lab.envs.kitchen.policies.plan_follower import wants_proposals
from cogym_lab.lm import LMError

log = logging.getLogger(__name__)

#: Happenings after which the policy is rewritten at once rather than on schedule.
URGENT = ("order", "missed", "wrong_served", "fire")


class DPTAgent(KitchenAgent):
    """DPT-Agent (see the module doc)."""

    agent_type: ClassVar[str] = "kitchen-dpt"

    def __init__(self, lm: Any, *, theory_of_mind: bool = True, policy_every: int = 40,
                 belief_every: int = 120, guideline_every: int = 120, policy_scenes: int = 12,
                 reflection_scenes: int = 40, propose_with_lm: bool = True,
                 **options: Any) -> None:
        super().__init__(lm, **options)
        self.theory_of_mind = theory_of_mind
        self.policy_every = policy_every
        self.belief_every = belief_every
        self.guideline_every = guideline_every
        self.policy_scenes = policy_scenes
        self.reflection_scenes = reflection_scenes
        self.belief = ""
        self.guideline = ""
        self.policies = 0  # policies given to the FSM
        self._tasks: list[asyncio.Task[None]] = []
        self._news = asyncio.Event()
        self._urgent = False
        self._seen_events = 0
        #: Whether System 2's LM writes the plan proposals of a planned kitchen (else the
        #: rule's, ``plan_proposals``, are proposed at once).
        self.propose_with_lm = propose_with_lm
        self._proposal_task: asyncio.Task[None] | None = None

    # -- the member interface ------------------------------------------------------------------

    def start(self, context: SessionContext) -> None:
        super().start(context)
        with contextlib.suppress(RuntimeError):  # no running loop: the first act starts them
            asyncio.get_running_loop()
            self._start_background()

    async def act(self, notification: Notification) -> str | None:
        """System 1: the FSM's answer at once. The LM work only hears that time moved on."""
        content = self.observe(notification)
        self._start_background()
        fresh = self.history.events[self._seen_events:]
        self._seen_events = len(self.history.events)
        if any(event.get("kind") in URGENT for _, event in fresh):
            self._urgent = True
        self._news.set()
        if content is None:
            return None
        self._ask_for_proposals(content)
        # never waits for the proposals: once written they wake System 1 (``wake``), as no
        # tick may come to do it before the clock starts
        return self.speak() or self.system1(content)

    async def end(self, final: Notification) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        super().end(final)

    def mind(self) -> dict[str, Any]:
        return {**super().mind(), "theory_of_mind": self.theory_of_mind, "belief": self.belief,
                "guideline": self.guideline, "thought": self.thought,
                "policies": self.policies}

    # -- the background tasks ------------------------------------------------------------------

    def _ask_for_proposals(self, content: Mapping[str, Any]) -> None:
        """In a planned kitchen with neither a plan nor proposals, have the LM write the
        divisions of labour in a background task (System 1 plays on meanwhile and proposes
        them when they come; the rule's when the answer is unusable or the LM fails)."""
        if not self.propose_with_lm or self._proposal_task is not None \
                or self.follower.proposed or not wants_proposals(self.plan):
            return
        self.proposing = True
        self._proposal_task = asyncio.create_task(self._write_proposals(content),
                                                  name=f"{self.role}-proposals")
        self._tasks.append(self._proposal_task)

    async def _write_proposals(self, content: Mapping[str, Any]) -> None:
        started, tick = time.monotonic(), self.tick
        example = propose(content, self.role)
        output = kitchen_prompt("proposals_output", partner=self.partner,
                                reach=reach_section(content, self.role),
                                example=json.dumps(example, indent=1))
        try:
            reply, seconds = await self.ask(self.messages(output, assigned=False, scenes=1),
                                            "proposals")
        except LMError as error:
            self.lm_failed("proposals", tick, error)
        else:
            try:
                written = checked_proposals(json.loads(extract_tasks_text(reply)))
            except (ValueError, PolicyRejected):
                written = None
            if written is None:
                self.reject(tick, "the proposals are not plans whose steps are kitchen jobs on "
                            "both sides; the rule's are proposed", reply, kind="proposals")
            self.written_proposals = written
            self.records.latency("proposals", time.monotonic() - started, tick,
                                 calls=[seconds], accepted=written is not None)
        finally:
            self.proposing = False
            self.wake()  # System 1 proposes them (or the rule's) on the state of now

    def _start_background(self) -> None:
        if self._tasks:
            return
        self._news = asyncio.Event()  # bound to the loop the game runs on
        loops: list[tuple[str, int, Callable[[int], Awaitable[None]]]] = [
            ("policy", self.policy_every, self._write_policy)]
        if self.theory_of_mind:  # ToM, then reflection on its output (the paper's Fig. 3)
            loops.append(("belief", self.belief_every, self._infer_then_reflect))
        else:
            loops.append(("guideline", self.guideline_every, self._reflect))
        self._tasks = [asyncio.create_task(self._every(kind, every, work),
                                           name=f"{self.role}-{kind}")
                       for kind, every, work in loops]

    async def _every(self, kind: str, every: int, work: Callable[[int], Awaitable[None]]
                     ) -> None:
        """Run ``work`` every ``every`` ticks of game time (the policy also when something
        urgent happened), for as long as the game lasts; a failure waits ``retry_ticks``."""
        due = 0 if kind == "policy" else every  # reflect and infer once there is history
        retrying = False  # after a failure, wait out the retry even when something is urgent
        while True:
            while self.tick < due and not (kind == "policy" and self._urgent and not retrying):
                self._news.clear()
                await self._news.wait()
            if kind == "policy":
                self._urgent = False
            tick = self.tick
            try:
                await work(tick)
            except LMError as error:
                self.lm_failed(kind, tick, error)
                due, retrying = self.tick + self.retry_ticks, True
                continue
            except Exception:
                log.exception("%s: the %s task failed", self.role, kind)
                due, retrying = self.tick + self.retry_ticks, True
                continue
            due, retrying = tick + every, False

    async def _write_policy(self, tick: int) -> None:
        """Code-as-policy: new assigned tasks for the FSM, from the recent history, the
        belief and the guideline."""
        output = kitchen_prompt("policy_output", belief_clause=self._belief_clause(
            " and what you believe about your teammate"))
        messages = self.messages(output, extra=self._notes(assigned=True),
                                 scenes=self.policy_scenes)
        if await self.steer(tick, messages):
            self.policies += 1

    async def _infer_belief(self, tick: int) -> None:
        """Theory of Mind: what the partner tends to do, from the history and the old belief."""
        started = time.monotonic()
        output = kitchen_prompt("belief_output", partner=self.partner)
        messages = self.messages(output, extra=self._notes(), assigned=False,
                                 scenes=self.reflection_scenes)
        reply, seconds = await self.ask(messages, "belief")
        self.belief = note(reply)
        self.records.latency("belief", time.monotonic() - started, tick, calls=[seconds])

    async def _infer_then_reflect(self, tick: int) -> None:
        """System 2 with ToM: a new belief, then a reflection that reads it."""
        await self._infer_belief(tick)
        try:
            await self._reflect(tick)
        except LMError as error:  # the belief stands; the next round reflects again
            self.lm_failed("guideline", tick, error)

    async def _reflect(self, tick: int) -> None:
        """Asynchronous reflection: a new behaviour guideline from the history, the belief and
        the old guideline."""
        started = time.monotonic()
        output = kitchen_prompt("guideline_output", belief_clause=self._belief_clause(
            ", given the belief about them you have just inferred"))
        messages = self.messages(output, extra=self._notes(), scenes=self.reflection_scenes)
        reply, seconds = await self.ask(messages, "guideline")
        self.guideline = note(reply)
        self.records.latency("guideline", time.monotonic() - started, tick, calls=[seconds])

    # -- prompt sections ---------------------------------------------------------------------------

    def _belief_clause(self, clause: str) -> str:
        return clause if self.theory_of_mind else ""

    def _notes(self, assigned: bool = False) -> str:
        """The belief (with ToM), the guideline and, for the policy, the current tasks and the
        last thought."""
        parts = []
        if assigned:
            parts += [self.assigned_section(),
                      f"## Your previous thought\n\n{self.thought or '(none yet)'}"]
        if self.theory_of_mind:
            parts.append(f"## What you believe about your teammate\n\n"
                         f"{self.belief or '(nothing yet)'}")
        parts.append(f"## Behaviour guideline\n\n{self.guideline or '(none yet)'}")
        return "\n\n".join(parts)


class DPTNoToMAgent(DPTAgent):
    """DPT-Agent without its Theory-of-Mind module: no belief about the partner."""

    agent_type: ClassVar[str] = "kitchen-dpt-no-tom"

    def __init__(self, lm: Any, **options: Any) -> None:
        super().__init__(lm, **{**options, "theory_of_mind": False})


__all__ = ["DPTAgent", "DPTNoToMAgent"]
