"""A scripted agent for the browser flows: each step fires once, when the person's chat has
asked for it, so the test (playing the person in the browser) decides when the agent acts.

The agent's prompt is read the way the other scripted LMs in ``tests/support`` read it: the
kind of request from its instruction, the state from the prompt itself.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action
from cogym_lab.testing import Reply
from tests.support.lm_scripts import classify, system_text

__all__ = ["AgentStep", "CueAgent"]


@dataclass
class AgentStep:
    """Take ``action`` once the prompt's chat holds ``cue`` (a phrase the person wrote)."""

    cue: str
    action: Action
    done: threading.Event = field(default_factory=threading.Event)


class CueAgent:
    """The responder for the agent's LM: the first step whose cue has appeared and that has not
    run yet, else a wait. Scratchpad requests keep the scratchpad as it is."""

    def __init__(self, steps: list[AgentStep]) -> None:
        self.steps = steps
        self.kinds: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        self.kinds.append(kind)
        if kind == "scratchpad":
            return "Thought: nothing to note.\nAction: DO_NOTHING()"
        if kind != "act":
            return Reply(status=500, error=f"the browser tests script no {kind!r} request")
        chat = _chat_section(system_text(body))
        with self._lock:
            for step in self.steps:
                if not step.done.is_set() and step.cue in chat:
                    step.done.set()
                    return f"Thought: the person asked.\nAction: {format_action(step.action)}"
        return "Thought: nothing asked of me.\nAction: WAIT_TEAMMATE_CONTINUE()"


def _chat_section(prompt: str) -> str:
    """The "Chat so far" part of the agent's system prompt."""
    after = prompt.split("# Chat so far", 1)[-1]
    return after.split("\n# ", 1)[0]
