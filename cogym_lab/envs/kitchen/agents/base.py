"""What the kitchen's LM agents share: reading notifications, the game history, the prompt
sections, one LM call measured, reading assigned tasks, and the results folder.

They do not subclass :class:`~cogym_lab.agents.base.LMAgent`: that one is built around one
LM-decided action per notification, while here the game is played every tick, mostly by the
FSM, and the LM works beside it. Every LM call goes through the member's own LM
(``setup.lm``), whose call log the session keeps; an LM that fails is logged and tried again
later, never an error out of ``act``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from cogym_lab.core import ActionError, Notification, SessionContext
from cogym_lab.core.actions import ActionSpec
from cogym_lab.core.grammar import format_action, parse_action
from cogym_lab.envs.kitchen.agents.chat import ChatHeard, message_action, say_block
from cogym_lab.envs.kitchen.agents.history import GameHistory
from cogym_lab.envs.kitchen.agents.policy_code import (
    PolicyRejected,
    extract_tasks_text,
    parse_assigned_tasks,
)
from cogym_lab.envs.kitchen.agents.prompting import (
    kitchen_prompt,
    literal,
    state_example,
    text_block,
)
from cogym_lab.envs.kitchen.agents.records import AgentRecords
from cogym_lab.envs.kitchen.policies.fsm import ActionTask, AssignedTask, KitchenFSM
from cogym_lab.envs.kitchen.policies.members import clock_infos, kitchen_content, plan_content
from cogym_lab.envs.kitchen.policies.plan_follower import (
    PlanFollower,
    before_the_clock,
    is_plan_action,
    plan_is_on,
    plan_section,
)
from cogym_lab.envs.kitchen.policies.situation import game_state
from cogym_lab.lm import LM, LMError, Messages

log = logging.getLogger(__name__)


class KitchenAgent:
    """Base of the kitchen's LM agents (see the module doc).

    ``history_scenes``: history lines in a prompt; ``retry_ticks``: ticks to wait before
    calling an LM that failed again; ``chat_kept``: chat messages a prompt shows.
    """

    agent_type: ClassVar[str] = "kitchen"
    #: A failed LM call does not stop the agent: its rule-based half keeps cooking and the LM
    #: is asked again ``retry_ticks`` later, so the session plays on (its failures recorded).
    recovers_from_lm_failure: ClassVar[bool] = True
    #: An agent makes no game move before a planned kitchen's clock starts (:meth:`holds_moves`).
    waits_for_the_clock: ClassVar[bool] = True

    def __init__(self, lm: LM, *, history_scenes: int = 25, retry_ticks: int = 20,
                 chat_kept: int = 8) -> None:
        self.lm = lm
        self.history_scenes = history_scenes
        self.retry_ticks = retry_ticks
        self.role = ""
        self.context: SessionContext | None = None
        self.specs: dict[str, ActionSpec] = {}
        self.history = GameHistory()
        self.heard = ChatHeard(chat_kept)
        self.to_say: list[str] = []  # messages the LM wrote for the teammate, not sent yet
        self.records = AgentRecords(None)
        self.fsm = KitchenFSM("")
        #: In a planned kitchen, the plan's agent steps come before the FSM's own choices.
        self.follower = PlanFollower("")
        self.plan: Mapping[str, Any] | None = None
        #: Divisions of labour the LM wrote for a planned kitchen (DPT), proposed in place of
        #: the rule's; ``proposing`` while that LM call runs.
        self.written_proposals: list[dict[str, Any]] | None = None
        self.proposing = False
        self.thought = ""  # the LM's last thought with its tasks (ReAct, DPT)
        self.tick = 0
        self.content: Mapping[str, Any] | None = None
        self.lm_calls = 0
        self._failures_in_a_row = 0
        self._sent_at = -1
        self._waker: Callable[[], None] | None = None  # asks the node for another act

    @property
    def lm_failing(self) -> bool:
        """The last LM call failed (the node then shows the agent as failed)."""
        return self._failures_in_a_row > 0

    # -- the member interface ------------------------------------------------------------------

    def start(self, context: SessionContext) -> None:
        self.context = context
        self.role = context.role
        self.heard = ChatHeard(self.heard.kept, role=context.role)
        self.specs = {spec.name: spec for spec in context.action_specs}
        self.fsm = KitchenFSM(context.role)
        self.follower = PlanFollower(context.role)
        self.records = AgentRecords(context.results_dir)
        if context.results_dir:
            self.lm.log_to(Path(context.results_dir) / "lm_calls.jsonl")

    def set_waker(self, wake: Callable[[], None]) -> None:
        """Take the member node's ``wake``, which has ``act`` called again on the current state
        (``Member`` in ``core.member``): for background work that has something to send when no
        notification would come (before the clock starts)."""
        self._waker = wake

    def wake(self) -> None:
        """Ask to act again now (nothing happens without a member node that gave a waker)."""
        if self._waker is not None:
            self._waker()

    def observe(self, notification: Notification) -> Mapping[str, Any] | None:
        """Take in a notification: the ticks it stands for and the newest view. Returns the
        view's kitchen content (``None`` when it has none)."""
        content = kitchen_content(notification)
        infos = clock_infos(notification)
        for info in infos:
            self.fsm.note_tick(info)
            self.follower.note_tick(info)
        self.plan = plan_content(notification) or self.plan
        if content is not None:
            self.history.observe(infos, content)
            self.tick = int(content.get("tick", self.tick))
            self.content = content
        self.heard.read(notification.chat, self.tick)
        return content

    def free(self, content: Mapping[str, Any] | None) -> bool:
        """Whether my chef may get a new action now: the game is on, and the world moved since
        my last one (it shows an action at the next tick)."""
        return content is not None and not content.get("done") \
            and int(content.get("tick", 0)) > self._sent_at

    def holds_moves(self, content: Mapping[str, Any]) -> bool:
        """Whether my chef makes no game move now, whoever decides it (the FSM or the LM):
        before a planned kitchen's clock starts (:func:`before_the_clock`, the rule-based
        chefs' own rule), since the person may still change the division of labour. Chat and
        plan actions are not held."""
        return self.waits_for_the_clock and before_the_clock(content, self.plan)

    def opening(self, notification: Notification) -> tuple[Mapping[str, Any] | None, str | None]:
        """Take in a notification and open my turn: the kitchen content, or ``None`` when my
        chef may not get a new action now (also while :meth:`holds_moves`); and a waiting
        teammate message sent as this turn's action, or ``None``."""
        content = self.observe(notification)
        if content is None or not self.free(content):
            return None, None
        said = self.speak()
        if said is not None:
            return content, self.sent(said)
        return (None, None) if self.holds_moves(content) else (content, None)

    def sent(self, action: str | None) -> str | None:
        """Note an action as sent this tick (one per tick at most) and return it."""
        if action is not None:
            self._sent_at = self.tick
        return action

    def speak(self) -> str | None:
        """The next message the LM wrote for the teammate, as an action (sent in place of the
        chef's next action: one tick's delay), or ``None``. Dropped when the session takes no
        messages."""
        if not self.to_say:
            return None
        text = self.to_say.pop(0)
        if self.context is not None and not any(
                spec.name == "SEND_TEAMMATE_MESSAGE" for spec in self.context.collaboration_specs):
            return None
        return message_action(text)

    def heard_from_lm(self, reply: str) -> None:
        """Keep the ``say`` block of a reply, if any, to send."""
        said = say_block(reply)
        if said:
            self.to_say.append(said)

    def system1(self, content: Mapping[str, Any]) -> str | None:
        """The FSM's decision, as System 1 makes it on every notification; in a planned
        kitchen, while a plan is on, the plan's agent steps instead (the LM's assigned tasks
        wait until the plan is done); with neither a plan nor proposals, the rule's divisions
        of labour are proposed first."""
        if not self.proposing:  # while its LM writes proposals, the FSM plays on
            proposal = self.follower.propose(content, self.plan, self.written_proposals)
            if proposal is not None:
                return proposal
        if self.holds_moves(content):
            return None  # the division of labour may still change: no move yet
        if plan_is_on(self.plan):
            action = self.follower.decide(content, self.plan)
            if is_plan_action(action):
                return action
            return self.sent(action) if self.free(content) else None
        if not self.free(content):
            return None
        return self.sent(self.fsm.decide(content))

    def end(self, final: Notification) -> Any:
        self.records.write_json("usage.json", {
            "agent_type": self.agent_type, "model": self.lm.config.model,
            **self.lm.meter.to_dict()})
        self.records.write_json("mind.json", self.mind())

    def mind(self) -> dict[str, Any]:
        """What the agent ended the game with (its notes, its tasks), for ``mind.json``."""
        return {"assigned_tasks": [task.describe() for task in self.fsm.assigned],
                "policy_rejections": len(self.records.rejections),
                "lm_failures": len(self.records.failures)}

    # -- prompts ---------------------------------------------------------------------------------

    @property
    def partner(self) -> str:
        """The role of the other chef (as the view shows it)."""
        for chef in (self.content or {}).get("chefs") or ():
            if isinstance(chef, Mapping) and chef.get("role") != self.role:
                return str(chef.get("role"))
        return "nobody"

    def system_prompt(self) -> str:
        seconds = (self.content or {}).get("tick_seconds", 0.25)
        return kitchen_prompt("system", tick_seconds=f"{seconds:g}")

    def game_sections(self, assigned: bool = True) -> str:
        """The game's rules, the state format, and (for FSM agents) the assigned tasks."""
        parts = [kitchen_prompt("game", task_description=self.context.task_description
                                if self.context else "", role=self.role, partner=self.partner),
                 kitchen_prompt("state", state_example=state_example())]
        if assigned:
            parts.append(kitchen_prompt("tasks"))
        return "\n\n".join(parts)

    def situation(self, extra: str = "", scenes: int | None = None) -> str:
        """The history, the current state and the chat, with ``extra`` sections after them."""
        content = self.content or {}
        state = game_state(content, self.role) if content else {}
        ticks = int(content.get("ticks", 0))
        return kitchen_prompt(
            "situation", history=self.history.render(self.role, scenes or self.history_scenes),
            tick=self.tick, ticks=ticks, time_left=max(ticks - self.tick, 0),
            score=content.get("score", 0), role=self.role, state=literal(state),
            extra="\n\n".join(part for part in (plan_section(self.plan), self.heard.section(),
                                                  extra) if part))

    def messages(self, output: str, extra: str = "", assigned: bool = True,
                 scenes: int | None = None) -> Messages:
        user = "\n\n".join([self.game_sections(assigned), self.situation(extra, scenes), output])
        return [{"role": "system", "content": self.system_prompt()},
                {"role": "user", "content": user}]

    def assigned_section(self) -> str:
        return f"## Current assigned tasks\n\n{self.fsm.describe_assigned()}"

    # -- the LM ----------------------------------------------------------------------------------

    async def ask(self, messages: Messages, purpose: str) -> tuple[str, float]:
        """One LM call: the reply's text and the call's seconds. Raises ``LMError``."""
        self.lm_calls += 1
        started = time.monotonic()
        try:
            completion = await self.lm.complete(messages, purpose=purpose)
        except LMError:
            self._failures_in_a_row += 1
            raise
        self._failures_in_a_row = 0
        return completion.text, time.monotonic() - started

    def lm_failed(self, kind: str, tick: int, error: BaseException) -> None:
        """Log a failed LM call; the caller tries again later."""
        log.warning("%s: %s LM call failed: %s", self.role, kind, error)
        self.records.failure(kind, tick, f"{type(error).__name__}: {error}")

    # -- assigned tasks ----------------------------------------------------------------------------

    def read_tasks(self, reply: str) -> list[AssignedTask]:
        """The assigned tasks of a reply, each action checked against the env's own action
        specs. Raises :class:`PolicyRejected` saying why they cannot be used."""
        tasks = parse_assigned_tasks(extract_tasks_text(reply))
        if not self.specs:
            return tasks
        checked: list[AssignedTask] = []
        for task in tasks:
            if isinstance(task, ActionTask):
                try:
                    action, spec = parse_action(task.action, self.specs)
                except ActionError as error:
                    raise PolicyRejected(f"the task {task.describe()[:80]} is not an action "
                                         f"of this task: {error}") from None
                checked.append(replace(task, action=format_action(action, spec)))
            else:
                checked.append(task)
        return checked

    async def steer(self, tick: int, messages: Messages) -> bool:
        """Ask the LM for assigned tasks (code as policy) and hand them to the FSM; a refused
        policy is logged and the last good one stays. Times the output either way. Whether the
        FSM took the new tasks."""
        started = time.monotonic()
        reply, seconds = await self.ask(messages, "policy")
        self.heard_from_lm(reply)
        try:
            tasks = self.read_tasks(reply)
        except PolicyRejected as problem:
            self.reject(tick, problem.reason, reply)
            self.records.latency("policy", time.monotonic() - started, tick, calls=[seconds],
                                 accepted=False)
            return False
        self.fsm.assign(tasks)
        self.thought = text_block(reply) or self.thought
        self.records.latency("policy", time.monotonic() - started, tick, calls=[seconds])
        return True

    def reject(self, tick: int, reason: str, reply: str, kind: str = "policy") -> None:
        """Log a refused policy (the last good one stays)."""
        log.info("%s: %s rejected: %s", self.role, kind, reason)
        self.records.rejection(tick, reason, reply, kind)


__all__ = ["KitchenAgent"]
