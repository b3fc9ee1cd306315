"""Scripted LM replies for agent and simulated-user tests, served by the loopback server.

``classify`` tells which of our prompts a request is. ``TodoRolePlay`` answers like a sensible
agent and user on the todo task, reading the state from the prompt itself, so whole sessions run
the same way however notifications happen to be merged.
"""

from __future__ import annotations

import re
from typing import Any

from cogym_lab.testing import Reply

# A phrase from each prompt template, checked in this order (a repair quotes the first ask).
PROMPT_KINDS = [
    ("repair", "could not be used"),
    ("repair", "Please answer again and include a line"),
    ("scratchpad", "update your scratchpad"),
    ("plan", "Decide what kind of step to take next"),
    ("message", "You have decided to send a message"),
    ("act", "Choose your next action"),
    ("user-decide", "Decide what to do next. Choose one option"),
    ("user-answer", "Answer the agent's latest question"),
    ("user-feedback", "Tell the agent, unprompted"),
    ("user-action", "Make a change in the workspace yourself"),
]

IDEAS = ["tent", "sleeping bag", "stove", "water filter", "map", "first aid kit", "headlamp"]


def classify(body: dict[str, Any]) -> str:
    last = body["messages"][-1]["content"]
    for kind, phrase in PROMPT_KINDS:
        if phrase in last:
            return kind
    return "unknown"


#: How the simulated user's decide prompt words each move (its option numbers depend on the
#: persona, so scripts choose by wording).
MOVE_WORDS = {"answer": "answer the agent", "feedback": "give the agent feedback",
              "task_action": "make a change in the workspace", "nothing": "do nothing",
              "finish": "finish"}


def user_choice(body: dict[str, Any], move: str) -> str:
    """The ``Choice: N`` line that picks ``move`` in a simulated user's decide prompt."""
    options = re.findall(r"^(\d+)\. (.+)$", body["messages"][-1]["content"], re.M)
    for number, text in options:
        if text.startswith(MOVE_WORDS[move]):
            return f"Choice: {number}"
    raise AssertionError(f"the decide prompt offers no {move!r}: {options}")


def system_text(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"]


def checklist(body: dict[str, Any]) -> list[str]:
    """The item texts of the rendered checklist in the prompt."""
    return re.findall(r"^- \[[ x]\] #\d+ (.+?)(?: \(added by [^)]+\))?$", system_text(body), re.M)


def chat_lines(body: dict[str, Any]) -> list[str]:
    parts = re.split(r"^# (?:The c|C)hat so far$", system_text(body), maxsplit=1, flags=re.M)
    if len(parts) < 2:
        return []
    chat = parts[1].split("\n# ", 1)[0]
    return [line for line in chat.splitlines() if line.startswith("[")]


class TodoRolePlay:
    """The responder: a helpful agent (model ``agent-lm``) and a user (model ``user-lm``) who
    wants rain gear. Unknown requests get an HTTP 500 so a test fails loudly."""

    def __init__(self, min_items: int = 6) -> None:
        self.min_items = min_items
        self.kinds: list[tuple[str, str]] = []

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        self.kinds.append((body["model"], kind))
        handler = getattr(self, kind.replace("-", "_"), None)
        if handler is None:
            return Reply(status=500, error=f"no scripted reply for {kind}")
        return handler(body)

    # the agent
    def scratchpad(self, body: dict[str, Any]) -> str:
        if "rain jacket" in " ".join(chat_lines(body)) and "rain jacket" not in system_text(
                body).split("# Your scratchpad", 1)[1].split("# What you see now")[0]:
            return 'Thought: worth keeping.\nAction: ADD_NOTE(note="user needs a rain jacket")'
        return "Thought: nothing new.\nAction: DO_NOTHING()"

    def plan(self, body: dict[str, Any]) -> str:
        lines, items = chat_lines(body), checklist(body)
        if lines and lines[-1].startswith("[user]"):
            if "rain jacket" in lines[-1] and "rain jacket" not in items:
                return "Thought: the user asked for something.\nDecision: 1"
            return "Thought: reply to the user.\nDecision: 2"
        if len(items) < self.min_items:
            return "Thought: keep building.\nDecision: 1"
        if not any(line.startswith("[you]") for line in lines):
            return "Thought: report.\nDecision: 2"
        return "Thought: the user should look.\nDecision: 3"

    def message(self, body: dict[str, Any]) -> str:
        items = checklist(body)
        return f"Thought: report.\nMessage: The list has {len(items)} items now: {', '.join(items)}."

    def act(self, body: dict[str, Any]) -> str:
        items = checklist(body)
        wanted = ["rain jacket"] if "rain jacket" in " ".join(chat_lines(body)) else []
        for item in wanted + IDEAS:
            if item not in items:
                return f'Thought: add {item}.\nAction: ADD_ITEM(text="{item}")'
        return "Thought: done.\nAction: FINISH()"

    # the simulated user
    def user_decide(self, body: dict[str, Any]) -> str:
        items, lines = checklist(body), chat_lines(body)
        if not any(line.startswith("[you]") for line in lines):
            return "Thought: tell them what matters.\n" + user_choice(body, "feedback")
        if len(items) >= self.min_items and "rain jacket" in items and any(
                line.startswith("[agent]") for line in lines):
            return "Thought: good enough.\n" + user_choice(body, "finish")
        return "Thought: let them work.\n" + user_choice(body, "nothing")

    def user_feedback(self, body: dict[str, Any]) -> str:
        return "Thought: rain is forecast.\nMessage: It will rain, so please pack a rain jacket."

    def user_answer(self, body: dict[str, Any]) -> str:
        return "Thought: answer.\nMessage: Yes, that works for me."
