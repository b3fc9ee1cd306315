"""A scripted stand-in for the LM of every kitchen agent, so the experiment runs with no hosted
model: it reads the game state out of each prompt and answers in the format that prompt asks
for, with simple, sensible play. It is not a good cook; it is a fixed, fast, free one, and
with the server's latency (``ScriptedOpenAIServer(latency=...)``) it shows what waiting for a
model costs each agent design.

What it answers, by the heading of the prompt's last message:

* ``# Your move`` (the LM as System 1): one macro action for the most urgent order: serve its
  burger when one is made, else prepare a missing ingredient (beef is missing unless some is
  cooking or cooked), else assemble it.
* ``# Your turn`` / ``# Code-as-policy`` (ReAct, Reflexion, DPT-Agent): a thought and the
  assigned tasks "make the two most urgent orders' burgers".
* ``# Your teammate``, ``# Behaviour guideline``, ``# Look back``: a short fixed note.

Anything else gets an HTTP 500, so a new prompt shows up as an LM failure in the chat, not as a
silent wrong answer.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from cogym_lab.testing import Reply

#: The ingredients of each burger, in the order they are prepared, with the statuses that mean
#: "cooking or ready" (beef on the pan counts, so it is not started twice).
INGREDIENTS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "BeefBurger": [("Beef", ("In-progress", "Well-cooked")), ("Bread", ("",))],
    "LettuceBurger": [("Lettuce", ("Chopped",)), ("Bread", ("",))],
    "BeefLettuceBurger": [("Beef", ("In-progress", "Well-cooked")),
                          ("Lettuce", ("Chopped",)), ("Bread", ("",))],
}
_CODE = re.compile(r"```[A-Za-z]*\n(.*?)```", re.S)


def last_message(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content", "") if isinstance(messages[-1], dict) else ""
    return content if isinstance(content, str) else ""


def game_state(body: dict[str, Any]) -> dict[str, Any]:
    """The state block after the last ``## Now`` of the prompt (``{}`` when there is none)."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or []
                     if isinstance(m, dict))
    _, _, now = text.rpartition("## Now")
    for block in _CODE.findall(now):
        try:
            state = ast.literal_eval(block.strip())
        except (ValueError, SyntaxError):
            continue
        if isinstance(state, dict) and "orders" in state:
            return state
    return {}


def _orders(state: dict[str, Any]) -> list[str]:
    return [str(o.get("name")) for o in state.get("orders") or []
            if isinstance(o, dict) and o.get("name") in INGREDIENTS]


def next_macro(state: dict[str, Any]) -> dict[str, Any]:
    """The macro action for the most urgent order (see the module)."""
    objects = state.get("objects") or {}
    orders = _orders(state)
    dish = orders[0] if orders else "BeefBurger"
    if objects.get((dish, ""), 0) > 0:
        return {"action": "serve", "args": {"food": dish}}
    for food, statuses in INGREDIENTS[dish]:
        if not any(objects.get((food, status), 0) for status in statuses):
            return {"action": "prepare", "args": {"food": food, "plate": False}}
    return {"action": "assemble", "args": {"food": dish}}


def _text(note: str) -> str:
    return f"```text\n{note}\n```"


def reply_to(body: dict[str, Any]) -> str | Reply:
    """The scripted answer to one chat request."""
    asked = last_message(body)
    state = game_state(body)
    if "# Your move" in asked:
        return "```json\n" + json.dumps(next_macro(state)) + "\n```"
    if "# Your turn" in asked or "# Code-as-policy" in asked:
        tasks = _orders(state)[:2] or ["BeefBurger"]
        return (_text(f"Make the most urgent burgers first: {', '.join(tasks)}.")
                + "\n\n```json\n" + repr(tasks) + "\n```")
    if "# Your teammate" in asked:
        return _text("My teammate assembles and serves burgers from ready ingredients; I "
                     "should keep beef, lettuce and bread coming and leave serving to them.")
    if "# Behaviour guideline" in asked:
        return _text("Prepare ingredients for the most urgent order first, never start a "
                     "second beef while one is cooking, and serve before orders run out.")
    if "# Look back" in asked:
        return _text("Things are going well")
    return Reply(status=500, error="the scripted kitchen LM has no answer for this prompt")
