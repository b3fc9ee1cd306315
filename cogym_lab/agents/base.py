"""What the three Co-Gym agents share: ReAct prompting over any env's action specs, a scratchpad,
bounded history, one repair attempt for unusable output, a loop guard, and LM-failure handling.

Subclasses implement :meth:`LMAgent.decide`. Nothing here raises out of ``act``: an LM that keeps
failing or answers nonsense leads to a clear message to the teammate, a wait, or (for an agent
that works alone) a finish.

An LM that fails (it errs, hangs or trickles past ``LMConfig.deadline``: every call ends by then)
is reported to the teammate once, in plain words (``LMError.reason``, never the HTTP details),
until a decision succeeds again; meanwhile the agent waits quietly and its node shows it as
failed (:attr:`LMAgent.lm_failing`).
"""

from __future__ import annotations

import abc
import json
import logging
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar, overload

from cogym_lab.agents import render as show
from cogym_lab.agents.scratchpad import SPECS as SCRATCHPAD_SPECS
from cogym_lab.agents.scratchpad import Scratchpad
from cogym_lab.agents.templates import agent_prompt
from cogym_lab.core import Action, ActionError, Notification, SessionContext
from cogym_lab.core.actions import ActionSpec, describe_actions
from cogym_lab.core.grammar import format_action, parse_action
from cogym_lab.core.messages import Event, EventType
from cogym_lab.errors import CogymError
from cogym_lab.lm import LM, LMError, Messages

log = logging.getLogger(__name__)

WAIT = "WAIT_TEAMMATE_CONTINUE()"
FINISH = "FINISH()"

Value = TypeVar("Value")


@dataclass
class Step:
    """One action this agent sent, and what came of it."""

    action: str
    status: str = "pending"  # pending | ok | error
    error: str | None = None

    def render(self) -> str:
        result = {"pending": "sent", "ok": "done"}.get(self.status, f"failed: {self.error}")
        return f"- {self.action} -> {result}"


class UnusableOutput(CogymError):
    """The LM's reply could not be used, even after the repair attempt."""


class LMAgent(abc.ABC):
    """Base class of the LM agents. Implements the member interface: start, act, end."""

    agent_type: ClassVar[str] = "base"
    collaborates: ClassVar[bool] = True  # sees the chat and may use the collaboration acts

    def __init__(self, lm: LM, *, history_window: int = 10, chat_window: int = 20,
                 use_scratchpad: bool = True, stuck_after: int = 3) -> None:
        self.lm = lm
        self.history_window = history_window
        self.chat_window = chat_window
        self.use_scratchpad = use_scratchpad
        self.stuck_after = stuck_after
        self.scratchpad = Scratchpad()
        self.history: deque[Step] = deque(maxlen=history_window)
        self.steps = 0
        self.context: SessionContext | None = None
        self._recent: deque[str | None] = deque(maxlen=stuck_after)
        self._asked_for_help = False
        self._reported_lm_failure = False
        self._lm_failures_in_a_row = 0

    @property
    def lm_failing(self) -> bool:
        """The LM failed on the last attempt to act (its node reports the agent as failed)."""
        return self._lm_failures_in_a_row > 0

    # -- the member interface ----------------------------------------------------------------

    def start(self, context: SessionContext) -> None:
        self.context = context
        self.role = context.role
        self.task_specs = {s.name: s for s in context.action_specs}
        self.collaboration_specs = {s.name: s for s in context.collaboration_specs}
        if context.results_dir:
            self.lm.log_to(Path(context.results_dir) / "lm_calls.jsonl")

    async def act(self, notification: Notification) -> str | None:
        self._observe(notification)
        try:
            if self.use_scratchpad:
                await self._update_scratchpad(notification)
            action = await self.decide(notification)
            self._lm_failures_in_a_row = 0
            self._reported_lm_failure = False
        except LMError as error:
            # Not through the loop guard: waiting on a failing LM is not going round in circles,
            # and the failure is reported once already.
            action = self._on_lm_failure(error)
        except UnusableOutput as error:
            action = self._guard(self._on_unusable(str(error)))
        else:
            action = self._guard(action)
        if action is not None:
            self.steps += 1
            self.history.append(Step(action))
        return action

    def end(self, final: Notification) -> None:
        if self.context and self.context.results_dir:
            folder = Path(self.context.results_dir)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "scratchpad.json").write_text(
                json.dumps(self.scratchpad.to_dict(), indent=2, ensure_ascii=False))
            (folder / "usage.json").write_text(json.dumps(
                {"agent_type": self.agent_type, "steps": self.steps, "model": self.lm.config.model,
                 **self.lm.meter.to_dict()}, indent=2))

    @abc.abstractmethod
    async def decide(self, notification: Notification) -> str | None:
        """The next action string, or ``None`` to wait."""

    # -- prompts -------------------------------------------------------------------------------

    def system_prompt(self, notification: Notification) -> str:
        assert self.context is not None
        teammates = [m.role for m in self.context.team if m.role != self.role]
        return agent_prompt(
            "system",
            role=self.role,
            teammates=", ".join(teammates) or "none",
            collaboration_note=agent_prompt(
                "collaboration_note" if self.collaborates else "autonomous_note"),
            task_description=self.context.task_description,
            scratchpad=self.scratchpad.render() if self.use_scratchpad else "(not used)",
            observation=show.render_observation(notification.view),
            chat=show.render_chat(notification.chat, self.role, self.chat_window)
            if self.collaborates else "(you work alone)",
            action_history="\n".join(step.render() for step in self.history) or "(none yet)",
            latest=self._describe_latest(notification),
        )

    def _describe_latest(self, notification: Notification) -> str:
        lines = []
        for event in notification.merged_events or [notification.event]:
            lines.append(_describe(event, self.role))
        if notification.pending_confirmations:
            for c in notification.pending_confirmations:
                lines.append(f"Pending confirmation {c.request_id} from {c.requester}: "
                             f"{c.pending_action}")
        return "\n".join(line for line in lines if line) or "Nothing new."

    async def collaborative_step(self, notification: Notification) -> str:
        """One ReAct step over the task actions and the collaboration acts together (the
        collaborative agent's every step)."""
        specs = merge_specs(self.task_specs, self.collaboration_specs)
        instruction = agent_prompt("act", actions=self.actions_text(specs),
                                   action_guidance=agent_prompt("act_collaborative_guidance"))
        return await self.ask_action(self.system_prompt(notification), instruction, specs, "act")

    async def ask(self, messages: Messages, purpose: str) -> str:
        completion = await self.lm.complete(messages, purpose=purpose)
        return completion.text

    async def ask_action(self, system: str, instruction: str, specs: dict[str, ActionSpec],
                         purpose: str) -> str:
        """Ask for a ReAct reply and return its action in canonical form (one repair attempt)."""
        messages: Messages = [{"role": "system", "content": system},
                              {"role": "user", "content": instruction}]
        reply = await self.ask(messages, purpose)
        try:
            return _canonical(reply, specs)
        except ActionError as error:
            messages += [{"role": "assistant", "content": reply},
                         {"role": "user", "content": agent_prompt(
                             "repair", error=error,
                             forms="\n".join(s.signature() for s in specs.values()))}]
        reply = await self.ask(messages, purpose + ":repair")
        try:
            return _canonical(reply, specs)
        except ActionError as error:
            raise UnusableOutput(str(error)) from None

    @overload
    async def ask_field(self, system: str, instruction: str, field: str,
                        purpose: str) -> str: ...

    @overload
    async def ask_field(self, system: str, instruction: str, field: str, purpose: str,
                        read: Callable[[str | None], Value]) -> Value: ...

    async def ask_field(self, system: str, instruction: str, field: str, purpose: str,
                        read: Callable[[str | None], Any] | None = None) -> Any:
        """Ask for a reply with a ``Field: value`` line; the value, as ``read`` reads it.

        ``read`` gets the text after the last ``Field:`` marker (``None`` when there is none) and
        raises ``ValueError`` (such as :class:`~cogym_lab.agents.choice.UnusableChoice`) saying
        why when the value cannot be used; without it any non-empty value is used as it is. An
        unusable first reply gets one repair prompt that says what was wrong; a second raises
        :class:`UnusableOutput`.
        """
        reader = read or _non_empty(field)
        messages: Messages = [{"role": "system", "content": system},
                              {"role": "user", "content": instruction}]
        reply = await self.ask(messages, purpose)
        try:
            return reader(extract_field(reply, field))
        except ValueError as problem:
            messages += [{"role": "assistant", "content": reply},
                         {"role": "user", "content": agent_prompt(
                             "repair_field", error=problem, field=field)}]
        try:
            return reader(extract_field(await self.ask(messages, purpose + ":repair"), field))
        except ValueError as problem:
            raise UnusableOutput(str(problem)) from None

    def actions_text(self, specs: dict[str, ActionSpec]) -> str:
        return describe_actions(list(specs.values()))

    # -- scratchpad, history, guards ---------------------------------------------------------

    async def _update_scratchpad(self, notification: Notification) -> None:
        messages: Messages = [
            {"role": "system", "content": self.system_prompt(notification)},
            {"role": "user", "content": agent_prompt(
                "scratchpad",
                scratchpad_actions=describe_actions(list(SCRATCHPAD_SPECS.values())))},
        ]
        reply = await self.ask(messages, "scratchpad")
        try:
            self.scratchpad.apply(reply)
        except ActionError as error:  # a bad scratchpad edit costs nothing but the edit
            log.info("%s: scratchpad reply not used: %s", self.role, error)

    def _observe(self, notification: Notification) -> None:
        """Mark our own sent actions done or failed from the events we are told about."""
        if any(m.sender != self.role for m in notification.new_messages):
            self._asked_for_help = False  # a teammate spoke: whatever loop we were in is over
            self._recent.clear()
        for event in notification.merged_events or [notification.event]:
            if event.actor != self.role or not event.action:
                continue
            for step in reversed(self.history):
                if step.status == "pending" and event.records(step.action):
                    step.status, step.error = event.status, event.error
                    break

    def _guard(self, action: str | None) -> str | None:
        """Break loops: waiting on every notification, or sending one action again and again."""
        self._recent.append(None if action in (None, WAIT) else action)
        if len(self._recent) < self.stuck_after:
            return action
        if all(a is None for a in self._recent):
            reason = f"waited {self.stuck_after} times in a row"
        elif len(set(self._recent)) == 1:  # said by the step's name: no action syntax in chat
            reason = f"repeated the same step ({_step_words(action)}) {self.stuck_after} times"
        else:
            return action
        self._recent.clear()
        if not self.collaborates:
            return FINISH  # nobody to ask: deliver what there is
        if self._asked_for_help:  # asked already: wait for the answer, and repeat nothing
            return WAIT
        self._asked_for_help = True
        return self.message(agent_prompt("stuck_message", reason=reason))

    def _on_lm_failure(self, error: LMError) -> str | None:
        """Tell the teammate once, in plain words; the details go to the log only."""
        log.warning("%s: LM failed: %s", getattr(self, "role", "agent"), error)
        self._lm_failures_in_a_row += 1
        if not self.collaborates:
            return FINISH if self._lm_failures_in_a_row >= self.stuck_after else None
        if self._reported_lm_failure:
            return None
        self._reported_lm_failure = True
        reason = getattr(error, "reason", None) or "it gave no usable answer"
        return self.message(agent_prompt("lm_failure_message", reason=_short(reason)))

    def _on_unusable(self, error: str) -> str | None:
        """Ask the teammate once, in plain words; what was wrong with the reply (a parse error
        in action syntax) goes to the log only."""
        log.info("%s: unusable LM output: %s", self.role, error)
        if not self.collaborates or self._asked_for_help:
            return None
        self._asked_for_help = True
        return self.message("I could not work out a valid next step: my language model's "
                            "replies did not name a step I can take, so I did nothing. What "
                            "would you like me to do?")

    def message(self, text: str, to: str | None = None) -> str:
        return format_action(Action(name="SEND_TEAMMATE_MESSAGE",
                                    args={"message": text, **({"to": to} if to else {})}))


def _canonical(reply: str, specs: dict[str, ActionSpec]) -> str:
    action, spec = parse_action(reply, specs)
    return format_action(action, spec)


def _non_empty(field: str) -> Callable[[str | None], str]:
    """The reader :meth:`LMAgent.ask_field` uses by default: any text after ``Field:``."""

    def read(value: str | None) -> str:
        if value is None:
            raise ValueError(f"the reply had no '{field}:' line")
        return value

    return read


def extract_field(reply: str, field: str) -> str | None:
    """The text after the last ``Field:`` marker, up to the end of the reply."""
    matches = list(re.finditer(rf"(?im)^\W*{re.escape(field)}\W*:", reply))
    if not matches:
        return None
    value = reply[matches[-1].end():].strip().strip("`").strip()
    return value or None


def _step_words(action: str | None) -> str:
    """An action by its name in plain words ("SEARCH_PAPER(query=...)" -> "search paper"),
    for messages to a person, who should not have to read action syntax."""
    name = (action or "").split("(", 1)[0].strip()
    return name.replace("_", " ").lower() or "an unreadable step"


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _describe(event: Event, me: str) -> str:
    actor = "You" if event.actor == me else event.actor
    if event.type is EventType.START:
        return "The session has started."
    if event.type is EventType.MESSAGE:
        return f"{actor} sent a message."
    if event.type is EventType.ERROR and event.actor == me:
        return f"Your action {event.action} failed: {event.error}"
    if event.type is EventType.TICK:
        return "Nobody has acted for a while."
    if event.type is EventType.ACTION and "live" in event.info:
        live = event.info["live"]
        return f"{actor} has been editing the {live.get('component', 'text')} (the view shows it " \
               "as it is now)." + _overlap_note(event, me)
    if event.type in (EventType.ACTION, EventType.CONFIRM_ACCEPT):
        # The view shows the result in full; a whole text or a cell's outputs twice would crowd
        # the prompt.
        return f"{actor} did {_short(event.action or '', 400)}." + _overlap_note(event, me)
    if event.type is EventType.EDIT:
        return f"{actor} typed in the text." + _overlap_note(event, me)
    if event.type is EventType.CONFIRM_REJECT:
        reason = event.info.get("pending_action", "")
        return f"{actor} rejected the request to run {reason}."
    if event.type is EventType.CONFIRM_REQUEST:
        return f"{actor} asked for a confirmation: {event.action}."
    if event.type in (EventType.PAUSE, EventType.RESUME):
        return f"{actor} {'paused' if event.type is EventType.PAUSE else 'resumed'} the agent."
    if event.type is EventType.SYNC:
        return "You reconnected; this is the current state."
    return ""


def _overlap_note(event: Event, me: str) -> str:
    """What an agent is told when an edit overlapped another (``info["overlap"]``): which lines
    keep both versions, so it can check them and tidy up."""
    overlap = event.info.get("overlap")
    if not isinstance(overlap, dict):
        return ""
    what = overlap.get("text") or f"the {overlap.get('component', 'text')}"
    spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in overlap.get("lines", [])
                      if isinstance(a, int) and isinstance(b, int))
    where = f" (lines {spans})" if spans else ""
    if event.actor == me:
        others = ", ".join(overlap.get("with", [])) or "a teammate"
        return (f" Your edit of {what} overlapped {others}'s edit of the same lines made while "
                f"you worked: both versions were kept, one after the other{where}. Check them "
                "and tidy up.")
    if me in overlap.get("with", []):
        return (f" Their edit of {what} overlapped yours: both versions were kept, one after "
                f"the other{where}. Check them.")
    return ""


def merge_specs(*groups: dict[str, ActionSpec]) -> dict[str, ActionSpec]:
    merged: dict[str, ActionSpec] = {}
    for group in groups:
        merged.update(group)
    return merged


__all__ = ["FINISH", "WAIT", "LMAgent", "Step", "UnusableOutput", "extract_field", "merge_specs"]

