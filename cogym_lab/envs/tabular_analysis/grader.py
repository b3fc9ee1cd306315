"""Grading Tabular Analysis results: an LM judge that answers DiscoveryBench's questions.

:func:`judge_hypothesis` asks an LM (purpose ``"judge"``), in one request, what DiscoveryBench's
evaluation asks in several: the sub-hypotheses of the gold hypothesis (HypoA) and of the
findings (HypoB) with their contexts, which contexts are the same, the variable counts
(``sizeA``, ``sizeB``, ``intersection``) and the relation answer (``A``/``B``/``C``). The prompt
shows what DiscoveryBench's judge is shown: the query, the datasets' and columns' descriptions
and both hypotheses (no workflows, as in the Co-Gym release). The answers
(:class:`HypothesisJudgment`) are scored two ways:

* **DiscoveryBench** (:mod:`.discoverybench_score`): ``recall_context`` and the HMS
  (``final_score``), exactly as the official code computes them from the same answers. The
  Co-Gym release reports ``recall_context`` as the task's performance.
* **cogym_lab's product** (:class:`ProductScore`): ``context * variables * relation`` in
  [0, 1], where context is 1.0 when every gold sub-hypothesis found a matching context,
  variables is an F1 of the counts, ``2 * m / (sizeA + sizeB)`` with ``m = min(intersection,
  sizeA, sizeB)`` (1.0 when both counts are 0, 0.0 when only one is), and relation is 1.0, 0.5
  or 0.0 for ``A``, ``B``, ``C`` (0.0 for an unusable answer).

``docs/tabular-scoring.md`` compares the two. The judge must run at temperature 0: build its LM
with ``make_lm(LMConfig(..., temperature=0))``; anything else raises ``ValueError``. The reply
must be one JSON object; code fences and prose around it are tolerated. A reply that cannot be
used gets one retry with a format reminder; a second bad reply raises :class:`JudgeParseError`.
A relation answer that names no option is *not* a format problem: DiscoveryBench scores it -1,
and so does this judge. Empty findings score 0 without calling the LM.

Replies in the shape this judge used before (``context.match``, variable lists, a relation
``rating``) are still read, as one sub-hypothesis on each side.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core.env import ScoreReport
from cogym_lab.core.protocol import get_protocol
from cogym_lab.envs.tabular_analysis.discoverybench_score import (
    RELATION_OPTIONS,
    DiscoveryBenchScore,
    SubHypothesis,
    VariableCounts,
    VariableScore,
    or_unsegmented,
    relation_score,
    score_hypothesis,
)
from cogym_lab.errors import CogymError
from cogym_lab.lm import LM
from cogym_lab.prompts import render

__all__ = ["HypothesisGrade", "HypothesisJudgment", "JudgeParseError", "ProductScore",
           "check_judge_temperature", "combine", "explain_grade", "grade_of", "judge_hypothesis",
           "judge_messages", "not_graded", "parse_judgment", "product_score", "variable_f1"]

PACKAGE = "cogym_lab.envs.tabular_analysis"
PURPOSE = "judge"


class JudgeParseError(CogymError, ValueError):
    """The judge's reply could not be read as a grade, even after one retry."""

    def __init__(self, message: str, replies: list[str]) -> None:
        super().__init__(message)
        self.replies = replies


# -- what the judge answered ---------------------------------------------------------------------

@dataclass(frozen=True)
class HypothesisJudgment:
    """The judge's answers to DiscoveryBench's questions about one pair of hypotheses."""

    gold: tuple[SubHypothesis, ...]  # HypoA's sub-hypotheses (never empty: see or_unsegmented)
    generated: tuple[SubHypothesis, ...]  # HypoB's
    same_context: frozenset[tuple[int, int]]  # (gold, generated) indices judged the same, 0-based
    variables: VariableCounts
    relation: str  # the relation answer as given, e.g. "A) very similar"
    explanations: dict[str, str] = field(default_factory=dict)

    def contexts(self, gold_index: int, generated_index: int) -> bool:
        return (gold_index, generated_index) in self.same_context

    def score(self) -> DiscoveryBenchScore:
        return score_hypothesis(self.gold, self.generated, contexts=self.contexts,
                                variables=self.variables, relation=self.relation)

    def to_dict(self) -> dict[str, Any]:
        def part(sub: SubHypothesis) -> dict[str, Any]:
            return {"text": sub.text, "context": sub.context, "variables": list(sub.variables),
                    "relations": sub.relations}

        return {"gold_sub_hypotheses": [part(s) for s in self.gold],
                "generated_sub_hypotheses": [part(s) for s in self.generated],
                "same_context": sorted([g, p] for g, p in self.same_context),
                "variables": {"sizeA": self.variables.size_gold,
                              "sizeB": self.variables.size_generated,
                              "intersection": self.variables.intersection},
                "relation": self.relation, "explanations": dict(self.explanations)}


# -- cogym_lab's product score -------------------------------------------------------------------

@dataclass(frozen=True)
class ProductScore:
    """cogym_lab's score: ``context * variables * relation``, each part in [0, 1]."""

    context: float  # 1.0 when every gold sub-hypothesis found a matching context
    variables: float  # F1 of the variable counts (see variable_f1)
    relation: float  # 1.0, 0.5 or 0.0

    @property
    def score(self) -> float:
        return combine(self.context, self.variables, self.relation)


def variable_f1(size_gold: float, size_found: float, shared: float) -> float:
    """cogym_lab's variable F1: bounded to [0, 1], and 1.0 when neither side names a variable."""
    if size_gold <= 0 and size_found <= 0:
        return 1.0
    if size_gold <= 0 or size_found <= 0:
        return 0.0
    matched = max(0.0, min(shared, size_gold, size_found))
    return 2 * matched / (size_gold + size_found)


def combine(context: float, variables: float, relation: float) -> float:
    """The product of the three parts, clamped to [0, 1]."""
    return min(1.0, max(0.0, context * variables * relation))


def product_score(judgment: HypothesisJudgment, discoverybench: DiscoveryBenchScore
                  ) -> ProductScore:
    """cogym_lab's parts, from the same answers DiscoveryBench's score uses (``discoverybench``
    is ``judgment.score()``, which says whether every gold context was found)."""
    counts = judgment.variables
    return ProductScore(
        context=1.0 if discoverybench.recall_context == 1.0 else 0.0,
        variables=variable_f1(counts.size_gold, counts.size_generated, counts.intersection),
        relation=max(0.0, relation_score(judgment.relation)))  # unusable (-1) counts as none


# -- the grade -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class HypothesisGrade:
    """One judged result, scored both ways."""

    discoverybench: DiscoveryBenchScore
    product: ProductScore
    judgment: HypothesisJudgment | None  # None when the LM was not called
    raw: str  # the judge's (last) reply; "" when the LM was not called
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def recall_context(self) -> float:
        return self.discoverybench.recall_context

    @property
    def hms(self) -> float:
        return self.discoverybench.final_score

    def to_dict(self) -> dict[str, Any]:
        return {"recall_context": self.recall_context, "hms": self.hms,
                "context_f1_relation": self.product.score,
                "product": {"context": self.product.context,
                            "variables": self.product.variables,
                            "relation": self.product.relation},
                "judgment": self.judgment.to_dict() if self.judgment is not None else None,
                "raw": self.raw, "details": dict(self.details)}


def grade_of(judgment: HypothesisJudgment, raw: str, **details: Any) -> HypothesisGrade:
    """``judgment`` scored both ways; ``raw`` is the reply it was read from."""
    discoverybench = judgment.score()
    return HypothesisGrade(discoverybench=discoverybench,
                           product=product_score(judgment, discoverybench),
                           judgment=judgment, raw=raw, details=details)


def not_graded() -> HypothesisGrade:
    """The grade of empty findings: 0 everywhere, without asking the LM."""
    nothing = DiscoveryBenchScore(recall_context=0.0, mean_accuracy_score=0.0, final_score=0.0,
                                  pairs=(), variables=VariableScore(0.0, 0.0, 0.0), relation=0.0)
    return HypothesisGrade(discoverybench=nothing, product=ProductScore(0.0, 0.0, 0.0),
                           judgment=None, raw="", details={"empty_findings": True})


# -- the prompt ----------------------------------------------------------------------------------

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
    describe = getattr(instance, "datasets_for_judge", None)
    datasets = describe() if callable(describe) else str(
        getattr(instance, "dataset_descriptions", "") or "").strip()
    return [{"role": "system", "content": render(PACKAGE, "judge_system")},
            {"role": "user", "content": render(
                PACKAGE, "judge", query=str(instance.query).strip(),
                datasets=datasets or "(no descriptions)",
                gold=str(instance.gold_hypothesis).strip(), findings=findings.strip())}]


# -- reading the reply ---------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_NEW_KEYS = {"gold_sub_hypotheses", "generated_sub_hypotheses"}
_LEGACY_RATINGS = {"exact": "A", "full": "A", "match": "A", "same": "A", "partial": "B",
                   "close": "B", "partially": "B", "none": "C", "no": "C", "different": "C",
                   "mismatch": "C", "missing": "C"}


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


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _count(part: dict[str, Any], key: str) -> float:
    value = part.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"variables.{key} must be a number, got {value!r}")
    return value


def _sub_hypotheses(value: Any, name: str) -> list[SubHypothesis]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"{name} must be a list of objects with text and context")
    return [SubHypothesis(text=_text(item.get("text")), context=_text(item.get("context")),
                          variables=_names(item.get("variables")),
                          relations=_text(item.get("relations")))
            for item in value]


def _names(value: Any) -> tuple[str, ...]:
    """A sub-hypothesis' variables: informative only, so whatever shape they come in."""
    items = value if isinstance(value, list) else [value]
    return tuple(name for name in map(_text, items) if name)


def _same_context(items: list[Any], gold_count: int) -> frozenset[tuple[int, int]]:
    pairs: set[tuple[int, int]] = set()
    for generated_index, item in enumerate(items):
        numbers = item.get("same_context_as_gold") or []
        if not isinstance(numbers, list):
            numbers = [numbers]
        for number in numbers:
            if isinstance(number, bool) or not isinstance(number, int) \
                    or not 1 <= number <= gold_count:
                raise ValueError(f"same_context_as_gold must list HypoA sub-hypothesis numbers "
                                 f"from 1 to {gold_count}, got {number!r}")
            pairs.add((number - 1, generated_index))
    return frozenset(pairs)


def _relation_answer(value: Any) -> str:
    answer = value.get("answer") if isinstance(value, dict) else value
    if not isinstance(answer, str):
        raise ValueError(  # noqa: TRY004 - a reply problem, caught with the others
            f"relation.answer must be one of the options as text, got {answer!r}")
    return answer


def _judgment(data: dict[str, Any], gold_hypothesis: str, findings: str) -> HypothesisJudgment:
    gold = or_unsegmented(gold_hypothesis, _sub_hypotheses(data.get("gold_sub_hypotheses"),
                                                            "gold_sub_hypotheses"))
    generated_items = data.get("generated_sub_hypotheses") or []
    generated = or_unsegmented(findings, _sub_hypotheses(generated_items,
                                                         "generated_sub_hypotheses"))
    variables = data["variables"]
    if not isinstance(variables, dict):
        raise ValueError(  # noqa: TRY004 - a reply problem, caught with the others
            "variables must be an object with sizeA, sizeB and intersection")
    counts = VariableCounts(_count(variables, "sizeA"), _count(variables, "sizeB"),
                            _count(variables, "intersection"))
    relation = data["relation"]
    return HypothesisJudgment(
        gold=tuple(gold), generated=tuple(generated),
        same_context=_same_context(generated_items, len(gold)), variables=counts,
        relation=_relation_answer(relation),
        explanations={"variables": _text(variables.get("explanation")),
                      "relation": _text(relation.get("explanation")
                                        if isinstance(relation, dict) else "")})


def _legacy_judgment(data: dict[str, Any], gold_hypothesis: str,
                     findings: str) -> HypothesisJudgment:
    """The earlier reply shape, as one sub-hypothesis on each side."""
    context = data["context"]
    match = context.get("match") if isinstance(context, dict) else context
    if not isinstance(match, bool):
        raise ValueError(f"context.match must be true or false, got {match!r}")  # noqa: TRY004
    variables = data["variables"]
    if not isinstance(variables, dict):
        raise ValueError("variables must be an object")  # noqa: TRY004

    def listed(name: str) -> set[str]:
        value = variables.get(name) or []
        return {_text(v).casefold() for v in (value if isinstance(value, list) else [value])
                if _text(v)}

    relation = data["relation"]
    rating = relation.get("rating") if isinstance(relation, dict) else relation
    option = _LEGACY_RATINGS.get(_text(rating).casefold())
    if option is None:
        raise ValueError(f"relation.rating must be exact, partial or none, got {rating!r}")
    # Contexts named after the hypotheses themselves, so that only the verdict decides.
    gold = SubHypothesis(gold_hypothesis, f"context of: {gold_hypothesis}")
    generated = SubHypothesis(findings, f"context of: {findings}")
    return HypothesisJudgment(
        gold=(gold,), generated=(generated,),
        same_context=frozenset({(0, 0)}) if match else frozenset(),
        variables=VariableCounts(len(listed("gold")), len(listed("findings")),
                                 len(listed("matched"))),
        relation=RELATION_OPTIONS[option])


def parse_judgment(text: str, gold_hypothesis: str, findings: str) -> HypothesisJudgment:
    """Read one judge reply; ValueError saying what is wrong when it cannot be used."""
    objects = [o for o in _json_objects(text) if isinstance(o, dict)]
    usable = [o for o in objects if {"variables", "relation"} <= o.keys()
              and (_NEW_KEYS & o.keys() or "context" in o)]
    if not usable:
        if objects:
            raise ValueError("the JSON object lacks one of the keys gold_sub_hypotheses, "
                             "generated_sub_hypotheses, variables, relation")
        raise ValueError("no JSON object was found in the reply")
    data = usable[0]
    if _NEW_KEYS & data.keys():
        return _judgment(data, gold_hypothesis, findings)
    return _legacy_judgment(data, gold_hypothesis, findings)


# -- the judge -----------------------------------------------------------------------------------

async def judge_hypothesis(findings: str, instance: Any, lm: LM) -> HypothesisGrade:
    """Grade ``findings`` against ``instance.gold_hypothesis`` (see the module docstring).

    Raises ValueError when ``lm`` is not at temperature 0, :class:`JudgeParseError` after two
    unusable replies, and :class:`cogym_lab.lm.LMError` when the LM itself fails.
    """
    check_judge_temperature(lm)
    if not (findings or "").strip():
        return not_graded()
    gold_hypothesis = str(instance.gold_hypothesis).strip()
    messages = judge_messages(findings, instance)
    replies: list[str] = []
    problem = ""
    for _attempt in range(2):
        completion = await lm.complete(messages, purpose=PURPOSE)
        replies.append(completion.text)
        try:
            judgment = parse_judgment(completion.text, gold_hypothesis, findings.strip())
        except ValueError as exc:
            problem = str(exc)
            messages = [*messages, {"role": "assistant", "content": completion.text},
                        {"role": "user", "content": render(PACKAGE, "judge_retry",
                                                           problem=problem)}]
            continue
        return grade_of(judgment, completion.text, attempts=len(replies))
    raise JudgeParseError(
        f"The Tabular Analysis judge gave no usable grade for instance "
        f"{getattr(instance, 'key', '?')} in two attempts (last problem: {problem}). "
        f"Last reply: {replies[-1][:300]!r}", replies)


# -- the grade in plain words --------------------------------------------------------------------

#: Each relation answer's meaning, said of the finding.
_RELATIONS = {1.0: "very similar to the expected answer's",
              0.5: "similar to the expected answer's, but more general",
              0.0: "different from the expected answer's"}
#: Characters of a judge's explanation a report quotes.
_EXPLANATION_LIMIT = 400


def _plural(count: float, noun: str) -> str:
    return f"{count:g} {noun}{'' if count == 1 else 's'}"


def _explained(judgment: HypothesisJudgment, key: str) -> list[str]:
    text = " ".join(judgment.explanations.get(key, "").split())
    if not text:
        return []
    if len(text) > _EXPLANATION_LIMIT:
        text = text[:_EXPLANATION_LIMIT].rstrip() + "…"
    return [f"The judge's reason: {text}"]


def explain_grade(grade: HypothesisGrade | None, scores: dict[str, float],
                  protocol: str) -> list[ScoreReport]:
    """The finding's scores (those of them in ``scores``) in plain words: what the judge matched
    between the finding and the expected answer (contexts, variables, relation) and, for
    ``performance``, which of the scores ``protocol`` takes. ``grade`` is ``None`` when no judge
    graded the finding. The expected answer itself is not quoted: it is the task's hidden
    gold."""
    if grade is None:
        return []
    cogym = get_protocol(protocol).name == "cogym"
    judgment = grade.judgment
    if judgment is None:  # empty findings: graded 0 without the judge
        nothing = ["The findings were empty, so the judge was not asked and every score is 0."]
        contexts, variables, relation = nothing, nothing, nothing
    else:
        found = sum(1 for partner in grade.discoverybench.pairs if partner is not None)
        contexts = [f"The judge split the expected answer into "
                    f"{_plural(len(judgment.gold), 'part')} and the finding into "
                    f"{_plural(len(judgment.generated), 'part')}; {found} of the expected "
                    f"parts found a part of the finding about the same context."]
        counts = judgment.variables
        variables = [f"Variables: the expected answer uses {counts.size_gold:g}, the finding "
                     f"{counts.size_generated:g}, and they share {counts.intersection:g}."]
        variables += _explained(judgment, "variables")
        meaning = _RELATIONS.get(relation_score(judgment.relation),
                                 "unclear: the judge gave no usable answer, so it counts 0")
        relation = [f"Relation: the finding's relation between them is {meaning}."]
        relation += _explained(judgment, "relation")
    product = grade.product
    explained = {
        "performance": ("Task performance: " + (
            "the share of the expected answer's contexts the finding covers" if cogym else
            "every context found times variable F1 times relation"),
            [f"This session is scored as {'Co-Gym' if cogym else 'cogym_lab'} scores this task: "
             f"performance is {'recall_context' if cogym else 'context_f1_relation'}, "
             f"explained below."]),
        "recall_context": ("Share of the expected answer's contexts the finding covers",
                           contexts),
        "hms": ("DiscoveryBench's match score: contexts covered times how well the variables and "
                "the relation match", [*contexts[:1], *variables, *relation]
                if judgment is not None else contexts),
        "context_f1_relation": (
            "Every context found times variable F1 times relation",
            [f"Every context found: {'yes' if product.context == 1.0 else 'no'}; variable F1 "
             f"{product.variables:.2f}; relation {product.relation:g}."]
            if judgment is not None else contexts),
    }
    return [ScoreReport(name=name, value=float(scores[name]), label=label, reasons=reasons)
            for name, (label, reasons) in explained.items() if name in scores]
