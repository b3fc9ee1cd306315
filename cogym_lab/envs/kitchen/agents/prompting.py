"""The kitchen agents' prompts: the templates in ``prompts/*.md``, the game state written as the
Python literal the preconditions read, and reading text blocks back out of replies."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from cogym_lab.envs.kitchen.view import COUNT_KEYS
from cogym_lab.prompts import render

#: Characters of a text block (a thought, a belief, a guideline) kept from a reply.
MAX_NOTE = 1200


def kitchen_prompt(name: str, **values: object) -> str:
    """Fill the kitchen agents' template ``prompts/NAME.md``."""
    return render("cogym_lab.envs.kitchen.agents", name, **values)


def literal(value: Any, indent: int = 0) -> str:
    """``value`` as a Python literal (tuples as tuples, ``None``, ``True``), one entry a line
    for dicts, so that what the prompt shows is what a precondition indexes."""
    pad = " " * indent
    if isinstance(value, Mapping | list) and _flat(value):
        return compact_line(value)
    if isinstance(value, Mapping) and value:
        inner = ",\n".join(f"{pad}  {literal(key)}: {literal(item, indent + 2)}"
                           for key, item in value.items())
        return "{\n" + inner + f"\n{pad}}}"
    if isinstance(value, list) and value:
        inner = ",\n".join(f"{pad}  {literal(item, indent + 2)}" for item in value)
        return "[\n" + inner + f"\n{pad}]"
    if isinstance(value, tuple):
        return "(" + ", ".join(literal(item) for item in value) + ("," if len(value) == 1
                                                                      else "") + ")"
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list):
        return "[]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


#: Characters up to which a dict or list of plain values is written on one line.
ONE_LINE = 72


def _flat(value: Mapping[Any, Any] | list[Any]) -> bool:
    """A short dict or list with no dict or list inside: one line reads better."""
    items = list(value.values()) if isinstance(value, Mapping) else value
    return bool(items) and not any(isinstance(item, Mapping | list) for item in items) \
        and len(compact_line(value)) <= ONE_LINE


def compact_line(value: Any) -> str:
    """``value`` as a one-line Python literal."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{compact_line(k)}: {compact_line(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(compact_line(item) for item in value) + "]"
    return literal(value)


def state_example() -> str:
    """The game state of the prompt's example (see ``state.md``), made up for it."""
    counts = dict.fromkeys(COUNT_KEYS, 0)
    counts.update({("Beef", "In-progress"): 1, ("Lettuce", "Chopped"): 1,
                   ("BeefBurger", ""): 1, ("Plate", "Empty"): 1, ("FireExtinguisher", ""): 1})
    return literal({
        "objects": counts,
        "counters": {"Empty": 24},
        "orders": [{"name": "BeefBurger", "remain_time": 35},
                   {"name": "LettuceBurger", "remain_time": 150}],
        "inventory_other_player": {"user": ("Plate", "Empty")},
        "inventory_self": None,
        "score": 20,
        "time_left": 380,
    })


_BLOCK = re.compile(r"```([A-Za-z]*)[ \t]*\n?(.*?)```", re.S)


def text_block(reply: str) -> str | None:
    """The first ``text`` code block of a reply (else the first untagged one), stripped and cut
    to :data:`MAX_NOTE` characters; ``None`` when the reply has neither."""
    blocks = _BLOCK.findall(reply)
    chosen = next((body for tag, body in blocks if tag.lower() in ("text", "txt")), None)
    if chosen is None:
        chosen = next((body for tag, body in blocks if not tag), None)
    if chosen is None:
        return None
    return chosen.strip()[:MAX_NOTE] or None


def note(reply: str) -> str:
    """A reply's text block, or the reply itself when it has none (cut to the same length)."""
    found = text_block(reply)
    return found if found is not None else reply.strip()[:MAX_NOTE]


__all__ = ["MAX_NOTE", "compact_line", "kitchen_prompt", "literal", "note", "state_example",
           "text_block"]
