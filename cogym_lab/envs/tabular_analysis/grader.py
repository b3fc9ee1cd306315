"""Grading Tabular Analysis results: a DiscoveryBench-style LM judge.

:func:`judge_hypothesis` asks an LM (purpose ``"judge"``) whether the agent's findings entail
the instance's gold hypothesis, split into DiscoveryBench's three parts:

* **context** (the conditions, subgroup or period the hypothesis holds in): ``1.0`` when the
  findings state the same context, else ``0.0``;
* **variables**: the judge lists the gold hypothesis' variables, the findings' variables and the
  gold variables the findings cover (``matched``); the score is an F1 computed here:
  ``2 * m / (len(gold) + len(findings))`` with ``m = min(len(set(matched)), len(gold),
  len(findings))`` (``1.0`` when both lists are empty, ``0.0`` when only one is);
* **relation** (how the variables relate): the judge's rating ``"exact"`` -> ``1.0``,
  ``"partial"`` -> ``0.5``, ``"none"`` -> ``0.0``.

The overall score is their product, ``context * variables * relation``, in ``[0, 1]``: a wrong
context zeroes the grade, as in DiscoveryBench where the variable and relation parts are only
scored once the context matches.

The judge must run at temperature 0: build its LM with ``make_lm(LMConfig(..., temperature=0))``;
anything else raises ``ValueError``. The reply must be one JSON object; code fences and prose
around it are tolerated. A reply that cannot be used gets one retry with a format reminder; a
second bad reply raises :class:`JudgeParseError`. Empty findings score 0 without calling the LM.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.agents.templates import render
from cogym_lab.lm import LM

__all__ = ["RELATION_SCORES", "HypothesisGrade", "JudgeParseError", "check_judge_temperature",
           "combine", "judge_hypothesis", "judge_messages", "parse_judgement", "variable_f1"]

PACKAGE = "cogym_lab.envs.tabular_analysis"
PURPOSE = "judge"
RELATION_SCORES: dict[str, float] = {"exact": 1.0, "partial": 0.5, "none": 0.0}
_RELATION_ALIASES = {"full": "exact", "match": "exact", "same": "exact", "close": "partial",
                     "partially": "partial", "no": "none", "different": "none",
                     "mismatch": "none", "missing": "none"}


class JudgeParseError(ValueError):
    """The judge's reply could not be read as a grade, even after one retry."""

    def __init__(self, message: str, replies: list[str]) -> None:
        super().__init__(message)
        self.replies = replies


@dataclass(frozen=True)
class HypothesisGrade:
    """One judged result. ``score = context * variables * relation``."""

    score: float
    context: float  # 0.0 or 1.0
    variables: float  # F1 in [0, 1]
    relation: float  # 0.0, 0.5 or 1.0
    reasoning: str
    raw: str  # the judge's (last) reply; "" when the LM was not called
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "context": self.context, "variables": self.variables,
                "relation": self.relation, "reasoning": self.reasoning, "raw": self.raw,
                "details": dict(self.details)}


def check_judge_temperature(lm: LM) -> None:
    """Raise ValueError unless ``lm`` samples at temperature 0 (``lm.config.temperature``, and a
    temperature given in ``config.extra`` if there is one)."""
    config = getattr(lm, "config", None)
    if config is None:
        raise ValueError("judge_hypothesis needs an LM with a config (temperature 0); got "
                         f"{type(lm).__name__}")
    settings: list[tuple[str, Any]] = [("temperature", getattr(config, "temperature", None))]
    extra = getattr(config, "extra", None) or {}
    if "temperature" in extra:
        settings.append(("extra['temperature']", extra["temperature"]))
    for name, value in settings:
        if not isinstance(value, int | float) or isinstance(value, bool) or value != 0:
            raise ValueError(f"The Tabular Analysis judge must run at temperature 0, but the LM "
                             f"config has {name} = {value!r}. Build the judge with "
                             "make_lm(LMConfig(..., temperature=0)).")


def judge_messages(findings: str, instance: Any) -> list[dict[str, str]]:
    """The judge's prompt for ``findings`` against ``instance.gold_hypothesis``."""
    return [{"role": "system", "content": render(PACKAGE, "judge_system")},
            {"role": "user", "content": render(
                PACKAGE, "judge", query=str(instance.query).strip(),
                gold=str(instance.gold_hypothesis).strip(), findings=findings.strip())}]


def variable_f1(gold: list[str], found: list[str], matched: list[str]) -> float:
    """F1 of the findings' variables against the gold ones (see the module docstring)."""
    if not gold and not found:
        return 1.0
    if not gold or not found:
        return 0.0
    m = min(len({v.strip().lower() for v in matched if v.strip()}), len(gold), len(found))
    return 2 * m / (len(gold) + len(found))


def combine(context: float, variables: float, relation: float) -> float:
    """The overall score: the product of the three parts, clamped to [0, 1]."""
    return min(1.0, max(0.0, context * variables * relation))


# -- reading the reply ---------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _json_objects(text: str) -> list[Any]:
    """Every JSON object found in ``text``: fenced blocks first, then any ``{...}`` in order."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    found: list[Any] = []
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, end = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            found.append(value)
            start = candidate.find("{", end)
    return found


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "match"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "0", "mismatch"):
        return False
    raise ValueError(f"context.match must be true or false, got {value!r}")


def _as_list(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list):
        raise ValueError(f"variables.{name} must be a list of strings, got {value!r}")  # noqa: TRY004
    return [str(v).strip() for v in value if str(v).strip()]


def _relation(value: Any) -> tuple[str, float]:
    if isinstance(value, int | float) and not isinstance(value, bool):
        for label, score in RELATION_SCORES.items():
            if math.isclose(float(value), score):
                return label, score
        raise ValueError(f"relation.rating must be exact, partial or none, got {value!r}")
    label = str(value or "").strip().lower()
    label = _RELATION_ALIASES.get(label, label)
    if label not in RELATION_SCORES:
        raise ValueError(f"relation.rating must be exact, partial or none, got {value!r}")
    return label, RELATION_SCORES[label]


def parse_judgement(text: str) -> HypothesisGrade:
    """Read one judge reply; ValueError saying what is wrong when it cannot be used."""
    objects = [o for o in _json_objects(text) if isinstance(o, dict)]
    usable = [o for o in objects if {"context", "variables", "relation"} <= o.keys()]
    if not usable:
        if objects:
            raise ValueError("the JSON object lacks one of the keys context, variables, relation")
        raise ValueError("no JSON object was found in the reply")
    data = usable[0]
    context_part = data["context"]
    match = context_part.get("match") if isinstance(context_part, dict) else context_part
    context = 1.0 if _as_bool(match) else 0.0
    variables_part = data["variables"]
    if not isinstance(variables_part, dict):
        raise ValueError("variables must be an object with gold, findings and matched lists")  # noqa: TRY004
    gold = _as_list(variables_part.get("gold"), "gold")
    found = _as_list(variables_part.get("findings"), "findings")
    matched = _as_list(variables_part.get("matched"), "matched")
    relation_part = data["relation"]
    rating = (relation_part.get("rating", relation_part.get("score"))
              if isinstance(relation_part, dict) else relation_part)
    label, relation = _relation(rating)
    variables = variable_f1(gold, found, matched)

    def reason(part: Any) -> str:
        return str(part.get("reason") or "").strip() if isinstance(part, dict) else ""

    return HypothesisGrade(
        score=combine(context, variables, relation), context=context, variables=variables,
        relation=relation, reasoning=str(data.get("reasoning") or "").strip(), raw=text,
        details={"context_reason": reason(context_part), "gold_variables": gold,
                 "found_variables": found, "matched_variables": matched,
                 "relation_rating": label, "relation_reason": reason(relation_part)})


# -- the judge -----------------------------------------------------------------------------------

async def judge_hypothesis(findings: str, instance: Any, lm: LM) -> HypothesisGrade:
    """Grade ``findings`` against ``instance.gold_hypothesis`` (see the module docstring).

    Raises ValueError when ``lm`` is not at temperature 0, :class:`JudgeParseError` after two
    unusable replies, and :class:`cogym_lab.lm.LMError` when the LM itself fails.
    """
    check_judge_temperature(lm)
    if not (findings or "").strip():
        return HypothesisGrade(score=0.0, context=0.0, variables=0.0, relation=0.0,
                               reasoning="No findings were reported.", raw="",
                               details={"empty_findings": True})
    messages = judge_messages(findings, instance)
    replies: list[str] = []
    problem = ""
    for _attempt in range(2):
        completion = await lm.complete(messages, purpose=PURPOSE)
        replies.append(completion.text)
        try:
            grade = parse_judgement(completion.text)
        except ValueError as exc:
            problem = str(exc)
            messages = [*messages, {"role": "assistant", "content": completion.text},
                        {"role": "user", "content": render(PACKAGE, "judge_retry",
                                                           problem=problem)}]
            continue
        return HypothesisGrade(**{**grade.__dict__, "details": {**grade.details,
                                                                "attempts": len(replies)}})
    raise JudgeParseError(
        f"The Tabular Analysis judge gave no usable grade for instance "
        f"{getattr(instance, 'key', '?')} in two attempts (last problem: {problem}). "
        f"Last reply: {replies[-1][:300]!r}", replies)
