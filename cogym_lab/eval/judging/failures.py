"""Failure analysis: the five failure categories of Co-Gym's error analysis per trajectory (an
LM annotator, :meth:`cogym_lab.eval.judging.judges.Judge.annotate_failures`), and their
prevalence."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cogym_lab.eval.judging.judges import session_log
from cogym_lab.eval.judging.labels import FAILURE_CATEGORIES, FailureAnnotation
from cogym_lab.records.trajectory import SessionRecord


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def verified_evidence(record: SessionRecord, annotation: FailureAnnotation
                      ) -> dict[str, list[str]]:
    """Per category, the evidence quotes that really occur in the trajectory (whitespace and
    case aside): a quote the annotator made up is dropped."""
    log = _normalise(session_log(record, action_chars=100_000)) + " " + _normalise(
        str(record.outcome or ""))
    return {name: [quote for quote in getattr(annotation, name).evidence
                   if _normalise(quote) and _normalise(quote) in log]
            for name in FAILURE_CATEGORIES}


def prevalence(annotations: Sequence[FailureAnnotation]) -> dict[str, float]:
    """The share of annotated trajectories in which each category occurs."""
    if not annotations:
        return {name: float("nan") for name in FAILURE_CATEGORIES}
    return {name: sum(getattr(a, name).present for a in annotations) / len(annotations)
            for name in FAILURE_CATEGORIES}
