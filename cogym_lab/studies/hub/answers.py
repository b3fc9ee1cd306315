"""Questionnaire answers as a participant's browser sends them, checked against the items.

Every answer is checked before anything is stored: a Likert point within the scale, a choice
among the options, a ranking that orders exactly the labels asked about, a task-load form with
its six subscales on 0-100 in steps of 5, and free text that is text (UTF-8 without lone
surrogates or NUL, at most :data:`MAX_TEXT` characters). Markup is kept as typed: it is only
ever shown as text.
"""

from __future__ import annotations

from typing import Any

from cogym_lab.errors import CogymError
from cogym_lab.studies.design import (
    ChoiceItem,
    FreeTextItem,
    Item,
    LikertItem,
    Questionnaire,
    RankingItem,
    TaskLoadItem,
)

#: The longest free-text answer, in characters.
MAX_TEXT = 5_000
#: The task-load form's subscales (NASA-TLX), in the form's order.
TASK_LOAD_SCALES = ("mental", "physical", "temporal", "performance", "effort", "frustration")


class AnswerError(CogymError, ValueError):
    """An answer that does not fit its item; the message names the item."""


def check_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise AnswerError(f"{where}: the answer must be text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise AnswerError(f"{where}: the text has a broken character (a lone surrogate)"
                          ) from None
    if "\x00" in value:
        raise AnswerError(f"{where}: the text has a NUL character")
    if len(value) > MAX_TEXT:
        raise AnswerError(f"{where}: the text is {len(value)} characters; at most {MAX_TEXT}")
    return value


def _whole(value: Any, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AnswerError(f"{where}: the answer must be a whole number from {low} to {high}")
    if not low <= value <= high:
        raise AnswerError(f"{where}: {value} is not from {low} to {high}")
    return value


def check_item(item: Item, value: Any, labels: list[str]) -> list[tuple[str, str]]:
    """The (part, value) rows one item's answer gives; ``AnswerError`` when it does not fit.
    ``labels``: what a ranking orders (the neutral labels the participant met)."""
    where = f"item {item.name!r}"
    if isinstance(item, LikertItem):
        return [("", str(_whole(value, where, 1, item.points)))]
    if isinstance(item, FreeTextItem):
        text = check_text("" if value is None else value, where)
        if item.required and not text.strip():
            raise AnswerError(f"{where}: an answer is needed")
        return [("", text)]
    if isinstance(item, ChoiceItem):
        if value not in item.options:
            raise AnswerError(f"{where}: choose one of {', '.join(item.options)}")
        return [("", str(value))]
    if isinstance(item, RankingItem):
        if (not isinstance(value, list) or not all(isinstance(v, str) for v in value)
                or sorted(value) != sorted(labels)):
            raise AnswerError(f"{where}: rank each of {', '.join(labels)} once, best first")
        return [(label, str(place)) for place, label in enumerate(value, start=1)]
    if isinstance(item, TaskLoadItem):
        if not isinstance(value, dict) or set(value) != set(TASK_LOAD_SCALES):
            raise AnswerError(f"{where}: give each of {', '.join(TASK_LOAD_SCALES)}")
        rows = []
        for scale in TASK_LOAD_SCALES:
            number = _whole(value[scale], f"{where} ({scale})", 0, 100)
            if number % 5:
                raise AnswerError(f"{where} ({scale}): {number} is not a step of 5")
            rows.append((scale, str(number)))
        return rows
    raise AnswerError(f"{where}: unknown kind")  # pragma: no cover - the design forbids it


def check_answers(questionnaire: Questionnaire, given: Any, labels: list[str]
                  ) -> list[tuple[str, str, str, str]]:
    """Every (item, kind, part, value) row of a questionnaire's answers; ``AnswerError`` for
    the first that does not fit, an item missing or one that is not asked."""
    if not isinstance(given, dict):
        raise AnswerError("answers must be an object of item -> answer")
    names = {item.name for item in questionnaire.items}
    unknown = sorted(str(name) for name in given if name not in names)
    if unknown:
        raise AnswerError(f"questionnaire {questionnaire.name!r} has no item "
                          f"{unknown[0][:80]!a}")
    rows: list[tuple[str, str, str, str]] = []
    for item in questionnaire.items:
        optional = isinstance(item, FreeTextItem) and not item.required
        if item.name not in given and not optional:
            raise AnswerError(f"item {item.name!r}: an answer is needed")
        for part, value in check_item(item, given.get(item.name), labels):
            rows.append((item.name, item.kind, part, value))
    return rows


__all__ = ["MAX_TEXT", "TASK_LOAD_SCALES", "AnswerError", "check_answers", "check_item",
           "check_text"]
