"""Statistics over repeated trials: pass^k, the mean with its confidence interval, how the score
varies within and between instances, and how much of that variance each noise source explains.

Pure functions of numbers (no files, no LMs): the report gathers the numbers
(:mod:`cogym_lab.eval.reporting.reports`), the noise study measures the noise
(:mod:`cogym_lab.eval.batch.noise`).

**Success.** A trial succeeds when its session delivered and its task performance is at least
``threshold`` (:data:`DEFAULT_SUCCESS_THRESHOLD`, 0.8, unless the caller gives another). τ²-bench
counts a trial as a success when its reward is full; Co-Gym's graders give partial credit, so
the threshold asks for nearly full marks: a Related Work rubric score of 4 of 5 (0.8 under the
``cogym`` protocol), a Tabular Analysis hypothesis with its context right (1.0; a half-found
pair of contexts, 0.5, fails), a travel plan passing at least 80% of what its grader weighs. A
delivered session whose grade is missing (its grader failed) does not succeed.

**pass^k** (introduced by τ-bench, Yao et al. 2024, and reported by τ²-bench, Barres et al.
2025, as its headline reliability measure): the chance that *all* of k trials
of an instance, drawn without replacement from its n trials, succeed, averaged over instances.
With c successes of n, that chance is ``C(c, k) / C(n, k)``; pass^1 is the success rate, and
pass^k falls with k as fast as the agent is inconsistent. k runs from 1 to the fewest trials any
instance has, so every instance counts towards every k.

**Mean and confidence interval.** Trials of one instance are not independent, so the mean
score is the mean of the instances' means, and its 95% interval is the percentile bootstrap
over those means (instances resampled with replacement, a fixed seed): a mean of scores in
[0, 1] gets an interval in [0, 1]. (Student's t interval, used before, is symmetric around the
mean and went below 0 for a system that scored 0 on most instances.)

**Variance.** Each instance's variance is the sample variance (``ddof=1``) of its trials'
scores; the *within-instance* variance is their mean (instances with at least two trials);
the *between-instance* variance is the sample variance of the instances' means (which also
holds ``within / n`` of trial noise).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

DEFAULT_SUCCESS_THRESHOLD = 0.8
CONFIDENCE = 0.95


def succeeded(delivered: bool, performance: float,
              threshold: float = DEFAULT_SUCCESS_THRESHOLD) -> bool:
    """Whether one trial succeeded: delivered, graded, and performance at least ``threshold``."""
    return bool(delivered) and not math.isnan(performance) and performance >= threshold


def trial_score(delivered: bool, performance: float) -> float:
    """The score a trial contributes to means and variances: its Collab Score (performance
    when delivered, 0 when not; NaN for a delivered session without a grade)."""
    return performance if delivered else 0.0


def pass_hat_k(successes: Sequence[Sequence[bool]], k: int) -> float:
    """pass^k over instances, each given as its trials' successes: the mean over instances of
    ``C(c, k) / C(n, k)``. Instances with fewer than k trials are left out; NaN when none has
    k trials."""
    if k < 1:
        raise ValueError(f"k is at least 1 (got {k})")
    chances = [math.comb(sum(map(bool, trials)), k) / math.comb(len(trials), k)
               for trials in successes if len(trials) >= k]
    return float(np.mean(chances)) if chances else math.nan


def pass_hat_k_curve(successes: Sequence[Sequence[bool]]) -> dict[int, float]:
    """pass^k for k = 1 .. the fewest trials any instance has (empty without instances)."""
    counts = [len(trials) for trials in successes]
    if not counts or min(counts) == 0:
        return {}
    return {k: pass_hat_k(successes, k) for k in range(1, min(counts) + 1)}


@dataclass(frozen=True)
class MeanCI:
    """A mean over ``n`` values with a percentile bootstrap confidence interval (NaN bounds
    for n < 2)."""

    mean: float
    ci_low: float
    ci_high: float
    n: int


#: Bootstrap resamples of the mean's interval, and the seed that makes reports reproducible.
RESAMPLES, SEED = 2000, 0


def mean_with_ci(values: Sequence[float], confidence: float = CONFIDENCE, *,
                 resamples: int = RESAMPLES, seed: int = SEED) -> MeanCI:
    """The mean of the non-NaN ``values`` and its percentile bootstrap interval: the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the means of
    ``resamples`` resamples with replacement. The interval lies within the values' range, so
    scores bounded to [0, 1] keep it in [0, 1]."""
    clean = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    n = int(clean.size)
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0)
    mean = float(clean.mean())
    if n < 2:
        return MeanCI(mean, math.nan, math.nan, n)
    rng = np.random.default_rng(seed)
    means = clean[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    tail = (1 - confidence) / 2
    return MeanCI(mean, float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)), n)


def sample_variance(values: Sequence[float]) -> float:
    """Sample variance (``ddof=1``) of the non-NaN values; NaN for fewer than two."""
    clean = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    return float(clean.var(ddof=1)) if clean.size >= 2 else math.nan


@dataclass(frozen=True)
class VarianceSplit:
    """How trial scores vary: per instance, within instances on average, and between them."""

    per_instance: dict[str, float]  # instance -> sample variance of its trials' scores
    within: float  # mean of per_instance (instances with two trials or more)
    between: float  # sample variance of the instances' mean scores


def variance_split(scores: Mapping[str, Sequence[float]]) -> VarianceSplit:
    """The within- and between-instance variance of ``scores`` (instance -> its trials')."""
    per_instance = {instance: sample_variance(values) for instance, values in scores.items()}
    within = [v for v in per_instance.values() if not math.isnan(v)]
    means = [float(np.mean(clean)) for values in scores.values()
             if (clean := [v for v in values if not math.isnan(v)])]
    return VarianceSplit(per_instance=per_instance,
                         within=float(np.mean(within)) if within else math.nan,
                         between=sample_variance(means))


@dataclass(frozen=True)
class NoiseShares:
    """Shares of the within-instance variance explained by each noise source.

    ``judge``: re-grading one outcome; ``agent``: the agent re-run against the same user turns,
    less the judge noise its grades carry; ``rest``: what neither explains, attributed to the
    simulated user and to the interplay of user and agent (and to the environment's seed).
    The shares are estimates from few repeats: ``rest`` below 0 means the noise measured
    exceeds the variance the trials showed.
    """

    judge: float
    agent: float
    rest: float


def noise_shares(within: float, judge: float, agent: float) -> NoiseShares:
    """Shares of ``within`` (the trials' mean within-instance variance) explained by ``judge``
    (mean variance of re-grades of one outcome) and ``agent`` (mean variance of reruns with the
    user's turns replayed, judge noise included). NaN shares when ``within`` is 0 or unknown,
    and for a source that was not measured (NaN)."""
    if math.isnan(within) or within <= 0:
        return NoiseShares(math.nan, math.nan, math.nan)
    judge_share = judge / within
    # The reruns were graded too: what they vary by beyond the judge is the agent's.
    agent_share = (max(agent - judge, 0.0) if not math.isnan(judge) else agent) / within
    explained = [s for s in (judge_share, agent_share) if not math.isnan(s)]
    rest = 1.0 - sum(explained) if explained else math.nan
    if abs(rest) < 1e-12:  # rounding, not a finding: "-0.000" would read as one
        rest = 0.0
    return NoiseShares(judge_share, agent_share, rest)


@dataclass
class TrialStats:
    """The trial statistics of one system."""

    sessions: int
    instances: int
    trials: int  # the most trials any instance has
    pass_k: dict[int, float] = field(default_factory=dict)
    mean: MeanCI = field(default_factory=lambda: MeanCI(math.nan, math.nan, math.nan, 0))
    variance: VarianceSplit = field(default_factory=lambda: VarianceSplit({}, math.nan,
                                                                          math.nan))


def trial_stats(trials: Mapping[str, Sequence[tuple[bool, float]]],
                threshold: float = DEFAULT_SUCCESS_THRESHOLD) -> TrialStats:
    """Everything above for one system, from each instance's trials as (delivered,
    performance) pairs."""
    successes = [[succeeded(d, p, threshold) for d, p in runs] for runs in trials.values()]
    scores = {instance: [trial_score(d, p) for d, p in runs] for instance, runs in trials.items()}
    instance_means = [float(np.mean(clean)) for values in scores.values()
                      if (clean := [v for v in values if not math.isnan(v)])]
    return TrialStats(sessions=sum(len(runs) for runs in trials.values()),
                      instances=len(trials),
                      trials=max((len(runs) for runs in trials.values()), default=0),
                      pass_k=pass_hat_k_curve(successes), mean=mean_with_ci(instance_means),
                      variance=variance_split(scores))


__all__ = ["CONFIDENCE", "DEFAULT_SUCCESS_THRESHOLD", "MeanCI", "NoiseShares", "TrialStats",
           "VarianceSplit", "mean_with_ci", "noise_shares", "pass_hat_k", "pass_hat_k_curve",
           "sample_variance", "succeeded", "trial_score", "trial_stats", "variance_split"]
