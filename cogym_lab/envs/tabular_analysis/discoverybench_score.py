"""DiscoveryBench's hypothesis-matching score, computed from a judge's answers.

DiscoveryBench (``eval/new_eval.py``) grades a generated hypothesis against the gold one in
three steps, each answered by an LM; this module holds the arithmetic that turns the answers
into numbers, so that it can be checked on its own (``docs/tabular-scoring.md``):

1. **Sub-hypotheses.** Both hypotheses are split into sub-hypotheses, each with a *context*.
   When a hypothesis cannot be split, it counts as one sub-hypothesis whose context is the text
   ``"None"`` (:func:`or_unsegmented`).
2. **Context matching.** Each generated sub-hypothesis, in order, is paired with the first gold
   sub-hypothesis not yet paired whose context matches. Two contexts match when their texts are
   identical; otherwise never when either is ``"None"``; otherwise as the judge says
   (:func:`contexts_match`). ``recall_context`` is the share of gold sub-hypotheses paired.
3. **Variables and relation.** For each pair the judge counts the variables of the gold
   hypothesis (``sizeA``), of the generated one (``sizeB``) and those they share
   (``intersection``), and rates the relation: ``A`` very similar (1.0), ``B`` similar but more
   general (0.5), ``C`` different (0.0), anything else -1.0. The pair's accuracy is variable F1
   times the relation score. The official code asks these two questions about the *whole*
   hypotheses, not the pair's sub-hypotheses, so one answer serves every pair.

``final_score`` (the hypothesis matching score, HMS) is ``recall_context`` times the mean
accuracy over *all generated* sub-hypotheses (unpaired ones add 0).

The official code's edge cases are kept on purpose: both variable counts 0 give F1 0; an
intersection larger than a count gives a precision or recall above 1, so F1 and the HMS can
exceed 1 (up to 2.0 with one extra shared variable); an unusable variable answer gives F1 -1 and
an unusable relation answer -1, so the HMS can be negative. Every operation follows the
official order, so the floats are identical, not just close.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

__all__ = ["RELATION_OPTIONS", "UNSEGMENTED_CONTEXT", "ContextJudge", "DiscoveryBenchScore",
           "SubHypothesis", "VariableCounts", "VariableScore", "contexts_match",
           "match_sub_hypotheses", "or_unsegmented", "relation_score", "score_hypothesis",
           "variable_score"]

#: The context DiscoveryBench gives a hypothesis it could not split into sub-hypotheses.
UNSEGMENTED_CONTEXT = "None"

#: The relation options, as the official question words them.
RELATION_OPTIONS = {"A": "A) very similar", "B": "B) similar but general than HypoA",
                    "C": "C) different"}

#: ``contexts(gold_index, generated_index)``: does the judge find the two contexts the same?
ContextJudge = Callable[[int, int], bool]


@dataclass(frozen=True)
class SubHypothesis:
    """One part of a hypothesis that holds in one context."""

    text: str
    context: str
    variables: tuple[str, ...] = ()
    relations: str = ""


@dataclass(frozen=True)
class VariableCounts:
    """The judge's answer to the variables question, in DiscoveryBench's terms."""

    size_gold: float  # ``sizeA``: variables of the gold hypothesis (HypoA)
    size_generated: float  # ``sizeB``: variables of the generated hypothesis (HypoB)
    intersection: float  # variables the two share (fuzzy matching)


@dataclass(frozen=True)
class VariableScore:
    precision: float
    recall: float
    f1: float


@dataclass(frozen=True)
class DiscoveryBenchScore:
    """The outcome of :func:`score_hypothesis`."""

    recall_context: float  # share of gold sub-hypotheses paired by context
    mean_accuracy_score: float  # mean over generated sub-hypotheses of F1 x relation
    final_score: float  # the HMS: recall_context x mean_accuracy_score
    pairs: tuple[int | None, ...]  # per generated sub-hypothesis, its gold partner (or None)
    variables: VariableScore
    relation: float

    @property
    def hms(self) -> float:
        return self.final_score


def or_unsegmented(hypothesis: str, parts: Sequence[SubHypothesis]) -> list[SubHypothesis]:
    """``parts``, or the whole ``hypothesis`` as one sub-hypothesis of context ``"None"`` when
    it could not be split (no parts)."""
    return list(parts) if parts else [SubHypothesis(hypothesis, UNSEGMENTED_CONTEXT)]


def variable_score(counts: VariableCounts | None) -> VariableScore:
    """Precision, recall and F1 of the variables; ``None`` (an unusable answer) gives -1s."""
    if counts is None:
        return VariableScore(-1.0, -1.0, -1.0)
    precision = recall = 0.0
    # Truthiness, not ``> 0``: a count of 0 leaves the share at 0, as in the official code.
    if counts.size_generated:
        precision = counts.intersection / counts.size_generated
    if counts.size_gold:
        recall = counts.intersection / counts.size_gold
    if not (precision > 0.0 and recall > 0.0):
        return VariableScore(precision, recall, 0.0)
    return VariableScore(precision, recall, (2 * precision * recall) / (precision + recall))


def relation_score(answer: str) -> float:
    """The relation answer's score. The checks run in the official order, so an answer that
    starts with ``B`` but says "very similar" scores 1.0."""
    text = answer.strip()
    if text.startswith("A") or "very similar" in text:
        return 1.0
    if text.startswith("B") or "similar but general than HypoA" in text:
        return 0.5
    if text.startswith("C") or "different" in text:
        return 0.0
    return -1.0


def contexts_match(gold: SubHypothesis, generated: SubHypothesis,
                   judged: Callable[[], bool]) -> bool:
    """Whether two sub-hypotheses share a context; ``judged`` is asked only when the texts
    alone do not decide."""
    if gold.context == generated.context:
        return True
    if UNSEGMENTED_CONTEXT in (gold.context, generated.context):
        return False
    return bool(judged())


def match_sub_hypotheses(gold: Sequence[SubHypothesis], generated: Sequence[SubHypothesis],
                         contexts: ContextJudge) -> list[int | None]:
    """Per generated sub-hypothesis, the gold one it is paired with (greedy, first match)."""
    covered: set[int] = set()
    pairs: list[int | None] = []
    for generated_index, candidate in enumerate(generated):
        partner = None
        for gold_index, reference in enumerate(gold):
            if gold_index in covered:
                continue
            if contexts_match(reference, candidate, partial(contexts, gold_index, generated_index)):
                partner = gold_index
                covered.add(gold_index)
                break
        pairs.append(partner)
    return pairs


def score_hypothesis(gold: Sequence[SubHypothesis], generated: Sequence[SubHypothesis], *,
                     contexts: ContextJudge, variables: VariableCounts | None,
                     relation: str) -> DiscoveryBenchScore:
    """DiscoveryBench's ``recall_context`` and ``final_score`` (see the module docstring).

    ``gold`` and ``generated`` are the sub-hypotheses after :func:`or_unsegmented`;
    ``contexts`` answers the context question for a (gold, generated) pair of indices;
    ``variables`` and ``relation`` are the answers to the variables and relation questions.
    """
    pairs = match_sub_hypotheses(gold, generated, contexts)
    variable = variable_score(variables)
    relation_value = relation_score(relation)
    total = 0.0
    for partner in pairs:
        if partner is not None:
            context_score = 1.0  # a pair exists only when its contexts matched
            total += 1.0 * context_score * variable.f1 * relation_value
    mean_accuracy = total / len(pairs) if pairs else 0.0
    paired = sum(partner is not None for partner in pairs)
    recall_context = paired / len(gold) if gold else 0.0
    return DiscoveryBenchScore(recall_context=recall_context, mean_accuracy_score=mean_accuracy,
                               final_score=recall_context * mean_accuracy, pairs=tuple(pairs),
                               variables=variable, relation=relation_value)
