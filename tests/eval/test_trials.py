"""The statistics of repeated trials (``cogym_lab.eval.stats.trials``) and the trial seeds
(``cogym_lab.eval.batch.seeds``): pass^k against a brute force over every k-subset of trials, and
every measure on hand-built numbers with the arithmetic in comments."""

from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogym_lab.eval.batch.seeds import ENV, SEED_BITS, trial_seed
from cogym_lab.eval.stats.trials import (
    DEFAULT_SUCCESS_THRESHOLD,
    mean_with_ci,
    noise_shares,
    pass_hat_k,
    pass_hat_k_curve,
    sample_variance,
    succeeded,
    trial_score,
    trial_stats,
    variance_split,
)

# -- pass^k ------------------------------------------------------------------------------------


def brute_force_pass_k(successes: list[list[bool]], k: int) -> float:
    """Per instance, the share of all k-subsets of its trials in which every trial succeeded,
    averaged over the instances with k trials or more: the definition, enumerated."""
    shares = []
    for trials in successes:
        if len(trials) < k:
            continue
        subsets = list(itertools.combinations(range(len(trials)), k))
        shares.append(sum(all(trials[i] for i in subset) for subset in subsets) / len(subsets))
    return sum(shares) / len(shares) if shares else math.nan


instances = st.lists(st.lists(st.booleans(), min_size=1, max_size=7), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(instances, st.integers(min_value=1, max_value=7))
def test_pass_k_is_the_share_of_k_subsets_that_all_succeed(successes, k):
    expected = brute_force_pass_k(successes, k)
    got = pass_hat_k(successes, k)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(instances)
def test_the_curve_starts_at_the_success_rate_and_never_rises(successes):
    curve = pass_hat_k_curve(successes)
    assert list(curve) == list(range(1, min(len(t) for t in successes) + 1))
    # pass^1 is the mean over instances of each one's success rate
    assert curve[1] == pytest.approx(sum(sum(t) / len(t) for t in successes) / len(successes))
    values = list(curve.values())
    assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(values))


def test_pass_k_by_hand():
    # instance a: 3 of 4 trials succeed; instance b: 4 of 4.
    successes = [[True, True, False, True], [True] * 4]
    # a: pass^1 = 3/4; pass^2 = C(3,2)/C(4,2) = 3/6; pass^3 = C(3,3)/C(4,3) = 1/4; pass^4 = 0
    # b: 1 for every k. Means: (0.75+1)/2, (0.5+1)/2, (0.25+1)/2, (0+1)/2
    assert pass_hat_k_curve(successes) == {1: 0.875, 2: 0.75, 3: 0.625, 4: 0.5}
    # the same mean success rate (0.5), very different reliability: one instance that always
    # succeeds and one that never does keeps pass^3 at 1/2; two coin-flippers drop it to 0
    steady = [[True, True, True], [False, False, False]]
    flaky = [[True, False, True], [False, True, False]]
    assert pass_hat_k(steady, 1) == pass_hat_k(flaky, 1) == 0.5
    assert pass_hat_k(steady, 3) == 0.5 and pass_hat_k(flaky, 3) == 0.0


def test_pass_k_leaves_out_instances_with_too_few_trials():
    # k = 2: only [True, False] counts (C(1,2)/C(2,2) = 0); the one-trial instance is left out
    assert pass_hat_k([[True, False], [True]], 2) == 0.0
    assert math.isnan(pass_hat_k([[True]], 2))
    assert pass_hat_k_curve([[True, False], [True]]) == {1: 0.75}  # (1/2 + 1) / 2, k up to 1
    assert pass_hat_k_curve([]) == {}
    with pytest.raises(ValueError, match="k is at least 1"):
        pass_hat_k([[True]], 0)


# -- success and score ---------------------------------------------------------------------------

def test_a_trial_succeeds_when_it_delivered_at_the_threshold():
    assert DEFAULT_SUCCESS_THRESHOLD == 0.8
    assert succeeded(True, 0.8) and succeeded(True, 1.0)
    assert not succeeded(True, 0.79)  # a rubric 4 of 5 passes, 3.95 of 5 does not
    assert not succeeded(False, 1.0)  # not delivered: nothing to count
    assert not succeeded(True, math.nan)  # its grader failed: not a success
    assert succeeded(True, 0.5, threshold=0.5) and not succeeded(True, 0.5, threshold=0.6)
    assert trial_score(False, 0.9) == 0.0 and trial_score(True, 0.9) == 0.9
    assert math.isnan(trial_score(True, math.nan))


# -- mean and interval --------------------------------------------------------------------------

def test_mean_with_a_bootstrap_interval():
    # The percentile bootstrap over the values: the 2.5% and 97.5% quantiles of 2000 resample
    # means, computed here the same way, with the same seed.
    values = [0.2, 0.4, 0.6]
    ci = mean_with_ci([0.2, 0.4, math.nan, 0.6])  # NaN left out
    rng = np.random.default_rng(0)
    means = np.asarray(values)[rng.integers(0, 3, size=(2000, 3))].mean(axis=1)
    assert ci.n == 3 and ci.mean == pytest.approx(0.4)
    assert (ci.ci_low, ci.ci_high) == pytest.approx(
        (np.quantile(means, 0.025), np.quantile(means, 0.975)))
    assert 0.2 <= ci.ci_low < 0.4 < ci.ci_high <= 0.6  # within the values' range
    one = mean_with_ci([0.7])
    assert one.mean == 0.7 and math.isnan(one.ci_low) and math.isnan(one.ci_high)
    assert math.isnan(mean_with_ci([]).mean)


def test_an_interval_of_scores_in_0_1_stays_in_0_1():
    # Student's t interval here was 0.1 +- 0.2 (t(0.975, 9) * 0.316 / sqrt(10)): below 0.
    mostly_zero = [0.0] * 9 + [1.0]
    ci = mean_with_ci(mostly_zero)
    assert ci.mean == pytest.approx(0.1)
    assert ci.ci_low == 0.0 and 0.1 < ci.ci_high <= 1.0
    two = mean_with_ci([0.0, 1.0])  # t gave 0.5 +- 6.35
    assert (two.ci_low, two.ci_high) == (0.0, 1.0)


# -- variance ----------------------------------------------------------------------------------

def test_within_and_between_instance_variance_by_hand():
    # a: 1, 0, 1 -> mean 2/3; deviations 1/3, -2/3, 1/3 -> squares 1/9 + 4/9 + 1/9 = 6/9,
    #    over n - 1 = 2 -> 1/3
    # b: 0.5 three times -> mean 0.5, variance 0
    # c: one trial -> no variance (left out of the within mean), mean 0.2
    split = variance_split({"a": [1.0, 0.0, 1.0], "b": [0.5, 0.5, 0.5], "c": [0.2]})
    assert split.per_instance["a"] == pytest.approx(1 / 3)
    assert split.per_instance["b"] == 0.0 and math.isnan(split.per_instance["c"])
    assert split.within == pytest.approx((1 / 3 + 0) / 2)  # 1/6
    # between: the means 2/3, 1/2, 1/5 -> their mean 41/90; variance with n - 1 = 2
    means = [2 / 3, 0.5, 0.2]
    centre = sum(means) / 3
    assert split.between == pytest.approx(sum((m - centre) ** 2 for m in means) / 2)
    assert sample_variance([0.3]) != sample_variance([0.3])  # NaN: one value has none


def test_trial_stats_of_one_system_by_hand():
    # two instances, three trials each, as (delivered, performance):
    trials = {"0": [(True, 1.0), (True, 0.8), (False, 0.9)],   # scores 1, 0.8, 0 (undelivered)
              "1": [(True, 0.6), (True, 0.6), (True, 0.9)]}    # scores 0.6, 0.6, 0.9
    stats = trial_stats(trials)
    assert (stats.sessions, stats.instances, stats.trials) == (6, 2, 3)
    # successes at 0.8: "0" -> T, T, F (2 of 3); "1" -> F, F, T (1 of 3)
    # pass^1 = (2/3 + 1/3) / 2 = 0.5; pass^2 = (C(2,2)/C(3,2) + 0) / 2 = (1/3) / 2 = 1/6;
    # pass^3 = 0
    assert stats.pass_k == pytest.approx({1: 0.5, 2: 1 / 6, 3: 0.0})
    # instance means 0.6 and 0.7 -> mean 0.65
    assert stats.mean.mean == pytest.approx(0.65) and stats.mean.n == 2
    # variances: "0": mean 0.6, squares 0.16 + 0.04 + 0.36 = 0.56, / 2 = 0.28
    #            "1": mean 0.7, squares 0.01 + 0.01 + 0.04 = 0.06, / 2 = 0.03
    assert stats.variance.per_instance == pytest.approx({"0": 0.28, "1": 0.03})
    assert stats.variance.within == pytest.approx(0.155)  # (0.28 + 0.03) / 2
    assert stats.variance.between == pytest.approx(0.005)  # (0.05^2 * 2) / 1
    # a looser threshold: "1" succeeds every time at 0.6 -> pass^3 = (0 + 1) / 2
    assert trial_stats(trials, threshold=0.6).pass_k[3] == pytest.approx(0.5)


# -- noise shares -------------------------------------------------------------------------------

def test_noise_shares_by_hand():
    # within-instance variance 0.04; re-grading one outcome varies by 0.01; rerunning against
    # the same user turns by 0.025, of which 0.01 is the judge's again:
    # judge 0.01 / 0.04 = 0.25; agent (0.025 - 0.01) / 0.04 = 0.375; rest 1 - 0.625 = 0.375
    shares = noise_shares(0.04, 0.01, 0.025)
    assert (shares.judge, shares.agent, shares.rest) == pytest.approx((0.25, 0.375, 0.375))
    # reruns varying less than the judge alone: the agent explains nothing (not a negative)
    assert noise_shares(0.04, 0.01, 0.005).agent == 0.0
    # more noise measured than the trials showed: the rest goes below 0 and says so
    assert noise_shares(0.01, 0.008, 0.02).rest == pytest.approx(1 - 0.8 - 1.2)
    # no judge study: the reruns' whole variance is the agent's
    judge_missing = noise_shares(0.04, math.nan, 0.02)
    assert math.isnan(judge_missing.judge) and judge_missing.agent == pytest.approx(0.5)
    assert judge_missing.rest == pytest.approx(0.5)
    # no variance between trials: nothing to share out
    assert all(math.isnan(v) for v in (noise_shares(0.0, 0.0, 0.0).judge,
                                       noise_shares(math.nan, 0.1, 0.1).rest))


# -- seeds ------------------------------------------------------------------------------------

def test_trial_seeds_are_stable_distinct_and_31_bit():
    # The derivation is part of a run's record: changing it would give old trials new seeds.
    digest = hashlib.sha256(b"0\x1f0\x1fagent").digest()
    assert trial_seed(0, 0, "agent") == int.from_bytes(digest[:8], "big") >> 33 == 283471830
    assert trial_seed(0, 0, ENV) == 1049637451
    grid = {trial_seed(i, t, role) for i in range(20) for t in range(5)
            for role in ("agent", "user", "tools", ENV)}
    assert len(grid) == 20 * 5 * 4  # no two trials, instances or roles share a seed
    assert all(0 <= seed < 2 ** SEED_BITS for seed in grid)
    assert trial_seed(7, 2, "user") == trial_seed(7, 2, "user")
    with pytest.raises(ValueError, match="numbers from 0"):
        trial_seed(-1, 0, "agent")
