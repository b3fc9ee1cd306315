"""Outcome metrics: delivery, task performance, Collab Score, pairwise win rate with a bootstrap
confidence interval, and significance tests against the autonomous baseline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cogym_lab.records.trajectory import SessionRecord


def collab_score(delivered: bool, performance: float) -> float:
    """1[delivered] x performance: 0 for an undelivered session, NaN for a delivered one that
    was never graded."""
    return performance if delivered else 0.0


def delivered_performance(records: Sequence[SessionRecord]) -> list[float]:
    """Task performance of the delivered, graded sessions (the mean of these is Task Perf.)."""
    return [r.performance for r in records if r.delivered and not math.isnan(r.performance)]


def mean_and_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the non-NaN ``values`` (NaN, NaN when there are none; SE is
    NaN for a single value)."""
    clean = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if clean.size == 0:
        return math.nan, math.nan
    se = float(clean.std(ddof=1) / math.sqrt(clean.size)) if clean.size > 1 else math.nan
    return float(clean.mean()), se


# -- pairwise comparisons -----------------------------------------------------------------------

#: A pairwise outcome as a score for the first system: win 1, tie 0.5, loss 0.
WIN, TIE, LOSS = 1.0, 0.5, 0.0


def win_score(delivered: bool, baseline_delivered: bool, verdict: str | None) -> float | None:
    """Score one instance for the collaborative side against the baseline.

    Only one side delivered: it wins. Neither did: no comparison (``None``). Both did: the
    judge's ``verdict`` (``"A"`` = collaborative, ``"B"`` = baseline, ``"tie"``), or ``None``
    when there is none.
    """
    if delivered != baseline_delivered:
        return WIN if delivered else LOSS
    if not delivered or verdict is None:
        return None
    return {"A": WIN, "B": LOSS, "tie": TIE}.get(verdict)


@dataclass(frozen=True)
class WinRate:
    n: int
    win_rate: float
    ci_low: float
    ci_high: float


def bootstrap_win_rate(scores: Sequence[float], *, resamples: int = 2000, level: float = 0.95,
                       seed: int = 0) -> WinRate:
    """Mean of per-instance win ``scores`` with a percentile bootstrap confidence interval
    (instances resampled with replacement; a fixed ``seed`` makes reports reproducible)."""
    values = np.asarray(scores, dtype=float)
    if values.size == 0:
        return WinRate(0, math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = (1 - level) / 2
    return WinRate(int(values.size), float(values.mean()), float(np.quantile(means, tail)),
                   float(np.quantile(means, 1 - tail)))


@dataclass(frozen=True)
class Significance:
    test: str  # "paired t-test", "McNemar (exact)" or "-" when there is nothing to test
    n: int
    statistic: float
    p_value: float
    mean_difference: float


def is_binary(values: Sequence[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def paired_test(system: Sequence[float], baseline: Sequence[float]) -> Significance:
    """Compare paired scores on the same instances: McNemar's exact test when every score is
    0 or 1 (a pass/fail grader), else a paired t-test."""
    from scipy import stats

    a, b = np.asarray(system, dtype=float), np.asarray(baseline, dtype=float)
    if a.size != b.size:
        raise ValueError("paired scores need the same number of instances on both sides")
    difference = float((a - b).mean()) if a.size else math.nan
    if a.size < 2:
        return Significance("-", int(a.size), math.nan, math.nan, difference)
    if is_binary(list(a)) and is_binary(list(b)):
        only_system = int(((a == 1) & (b == 0)).sum())
        only_baseline = int(((a == 0) & (b == 1)).sum())
        discordant = only_system + only_baseline
        if discordant == 0:
            return Significance("McNemar (exact)", int(a.size), 0.0, 1.0, difference)
        result = stats.binomtest(only_system, discordant, 0.5)
        return Significance("McNemar (exact)", int(a.size), float(only_system),
                            float(result.pvalue), difference)
    if np.allclose(a - b, (a - b)[0]):  # constant differences: the t statistic is undefined
        p = 1.0 if np.isclose((a - b)[0], 0) else 0.0
        return Significance("paired t-test", int(a.size), math.nan, p, difference)
    t_test = stats.ttest_rel(a, b)
    return Significance("paired t-test", int(a.size), float(t_test.statistic),
                        float(t_test.pvalue), difference)
