"""Outcome metrics: delivery, task performance, Collab Score, pairwise win rate with a bootstrap
confidence interval, and significance tests against the autonomous baseline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

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
    #: "McNemar (exact)", "sign test (exact)", "paired t-test", or "-" when there is nothing
    #: to test
    test: str
    n: int
    statistic: float
    p_value: float
    mean_difference: float


#: How a score is compared between two systems, declared by what the score is, never guessed
#: from the values seen: ``dichotomous`` (pass or fail: McNemar's exact test) or ``graded``
#: (a paired t-test).
Scale = Literal["dichotomous", "graded"]


def is_binary(values: Sequence[float]) -> bool:
    return all(v in (0.0, 1.0) for v in values)


def paired_test(system: Sequence[float], baseline: Sequence[float],
                scale: Scale = "graded") -> Significance:
    """Compare paired scores on the same instances by their declared ``scale``.

    ``graded``: a paired t-test, whatever the values (a run whose graded scores all happen to
    be 0 or 1 is still t-tested). ``dichotomous``: McNemar's exact test, the binomial test of
    the discordant pairs (the system passes where the baseline fails, or the other way). A
    dichotomous score may still come out between 0 and 1 (two hypotheses of which one was
    found; an instance's mean over repeated trials): the pairs are then compared by which side
    scored higher, ties left out, which is the exact sign test, and McNemar's test exactly when
    every score is 0 or 1; ``test`` says which of the two was run.
    """
    from scipy import stats

    a, b = np.asarray(system, dtype=float), np.asarray(baseline, dtype=float)
    if a.size != b.size:
        raise ValueError("paired scores need the same number of instances on both sides")
    difference = float((a - b).mean()) if a.size else math.nan
    if a.size < 2:
        return Significance("-", int(a.size), math.nan, math.nan, difference)
    if scale == "dichotomous":
        name = "McNemar (exact)" if is_binary(list(a)) and is_binary(list(b)) else \
            "sign test (exact)"
        only_system = int((a > b).sum())
        only_baseline = int((a < b).sum())
        discordant = only_system + only_baseline
        if discordant == 0:
            return Significance(name, int(a.size), 0.0, 1.0, difference)
        result = stats.binomtest(only_system, discordant, 0.5)
        return Significance(name, int(a.size), float(only_system), float(result.pvalue),
                            difference)
    if scale != "graded":
        raise ValueError(f"unknown scale {scale!r}: dichotomous or graded")
    if np.allclose(a - b, (a - b)[0]):  # constant differences: the t statistic is undefined
        p = 1.0 if np.isclose((a - b)[0], 0) else 0.0
        return Significance("paired t-test", int(a.size), math.nan, p, difference)
    t_test = stats.ttest_rel(a, b)
    return Significance("paired t-test", int(a.size), float(t_test.statistic),
                        float(t_test.pvalue), difference)


def performance_scale(task: str, protocol: str) -> Scale:
    """How ``task``'s performance is compared under ``protocol``, as the task declares it
    (``CoEnv.performance_scale``); ``graded`` for a task this installation does not have."""
    from cogym_lab.envs.registry import task_class

    declare = getattr(task_class(task), "performance_scale", None)
    return declare(protocol) if declare is not None else "graded"
