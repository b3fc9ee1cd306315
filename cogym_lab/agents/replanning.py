"""Automatic replanning (Cocoa §4.1.4) for the plan-aware agent: which person edits may change
the plan's course, and reading the LM's replanning choices and step completions.

The rule is two-stage: a cheap check first (the edited step has steps after it and its words
changed by at least a third), so small fixes never cost an LM call; then the agent's LM judges
whether the later steps still follow, and answers ``none`` or the choices. ``docs/plans.md``
describes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cogym_lab.core.plans import MAX_COMPLETIONS, MAX_PROPOSALS

#: The share of words an edit must change (of the old and new words together) to be judged.
CHANGED_SHARE = 1 / 3
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if len(word) > 2}


def words_changed(old: str, new: str) -> float:
    """The share of the two texts' words that only one of them has (0: same words)."""
    before, after = _words(old), _words(new)
    both = before | after
    return len(before ^ after) / len(both) if both else 0.0


def may_change_course(old: str, new: str, later_steps: int) -> bool:
    """Whether an edit is worth asking the LM about: steps follow it, and it changed enough."""
    return later_steps > 0 and words_changed(old, new) >= CHANGED_SHARE


def steps_text(steps: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(f"{n}. ({s['assignee']}) {s['description']}" for n, s in enumerate(steps, 1))


def read_replan(value: str | None) -> list[list[dict[str, Any]]] | None:
    """The replanning choices (``None`` for ``none``); ``ValueError`` when unusable."""
    if value is None:
        raise ValueError("the reply had no 'Replan:' line")
    if value.strip().strip(".").lower() in ("none", "no", "[]"):
        return None
    try:
        choices = json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"the choices are not JSON: {error.msg}") from None
    if isinstance(choices, list) and choices and all(isinstance(c, dict) for c in choices):
        choices = [choices]  # one rest of the plan, given as a list of steps
    if not isinstance(choices, list) or not 1 <= len(choices) <= MAX_PROPOSALS or not all(
            isinstance(c, list) and c and all(isinstance(s, dict) for s in c) for c in choices):
        raise ValueError(f"give none, or 1 to {MAX_PROPOSALS} choices, each a non-empty list "
                         'of steps {"description": "...", "assignee": "agent" or "person"}')
    return choices


def read_completions(value: str | None) -> list[str]:
    """Two or three completions of a step's text; ``ValueError`` when unusable."""
    if value is None:
        raise ValueError("the reply had no 'Completions:' line")
    try:
        texts = json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"the completions are not JSON: {error.msg}") from None
    if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts) \
            or len(texts) < 2:
        raise ValueError(f"give 2 to {MAX_COMPLETIONS} completions, each a non-empty text")
    return [t.strip() for t in texts[:MAX_COMPLETIONS]]


__all__ = ["CHANGED_SHARE", "may_change_course", "read_completions", "read_replan",
           "steps_text", "words_changed"]
