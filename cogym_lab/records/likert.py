"""The Likert items of the rating form (Cocoa, Feng et al., §6.1 and Appendix H): their names
and statements, the three-item general-utility composite, and the names ratings used before
the nine items existed.

The names and statements are the study kit's (``cogym_lab/studies/designs/cocoa.toml``), so a
session's rating and a study's questionnaire say the same thing under the same name. The form
of a session with an interactive plan asks all nine (:data:`COCOA_ITEMS`); any other session's
form asks :data:`CORE_ITEMS`. Every item is optional.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The nine 5-point items, in the form's order: name -> statement (our paraphrase).
STATEMENTS: dict[str, str] = {
    "useful_outputs": "What the assistant produced helped me explore the research problem.",
    "insights": "Using the assistant gave me new insights I can use.",
    "clear_steps": "The assistant made clear to me what steps this problem needs.",
    "understanding": "I now understand the possible solutions to this problem better than "
                     "before.",
    "easy_to_use": "The assistant was easy to use.",
    "steerable": "I could readily get the assistant to do something helpful.",
    "fits_workflow": "I could see this assistant becoming part of how I work.",
    "artifact": "I am happy with what I produced (the text and my next steps) with the "
                "assistant.",
    "next_steps": "After this session I feel sure about what to do next.",
}
COCOA_ITEMS: tuple[str, ...] = tuple(STATEMENTS)
#: What a form without plans asks: the three items the form asked before the nine.
CORE_ITEMS: tuple[str, ...] = ("steerable", "easy_to_use", "useful_outputs")
#: The general-utility composite (the paper's "utility"): the mean of these three items.
UTILITY = "utility"
UTILITY_ITEMS: tuple[str, ...] = ("understanding", "insights", "useful_outputs")
#: The names of the three items ratings had before the nine, and the items they now are.
#: A rating saved under an old name reads as the new one; the old single ``utility`` item
#: ("the outputs were useful to me") is ``useful_outputs``, so an old rating's composite is it.
LEGACY_NAMES: dict[str, str] = {"steerability": "steerable", "ease_of_use": "easy_to_use",
                                "utility": "useful_outputs"}


def renamed(answers: Mapping[str, Any]) -> dict[str, Any]:
    """``answers`` with the old item names replaced by the new ones (a new name wins when
    both are given)."""
    out = {name: value for name, value in answers.items() if name not in LEGACY_NAMES}
    for old, new in LEGACY_NAMES.items():
        if old in answers and new not in answers:
            out[new] = answers[old]
    return out


def utility_composite(answers: Mapping[str, Any]) -> float | None:
    """The mean of the utility items answered (whole numbers 1-5); ``None`` when none is."""
    values = [answers[item] for item in UTILITY_ITEMS
              if isinstance(answers.get(item), int) and not isinstance(answers[item], bool)]
    return sum(values) / len(values) if values else None


__all__ = ["COCOA_ITEMS", "CORE_ITEMS", "LEGACY_NAMES", "STATEMENTS", "UTILITY",
           "UTILITY_ITEMS", "renamed", "utility_composite"]
