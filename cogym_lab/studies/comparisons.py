"""Conditions compared, measure by measure, with the test the design calls for.

* **within subjects** (every participant met the conditions compared): each participant's
  mean per condition, paired by participant, by the **Wilcoxon signed-rank** test (Cocoa's:
  ratings on a 1-5 scale are ordinal, so no mean difference is assumed), or by a **paired t**
  test when the design names ``paired_t`` (Co-Gym's satisfaction comparison);
* **between subjects** (each participant met one condition): the two groups' values by the
  **Mann-Whitney U** test (U of the first condition; two-sided; exact for small samples
  without ties, as scipy decides).

Cocoa's plans-vs-chat measures are tested as the paper does: the **time shares** (planning,
executing, inspecting) by the **paired t** test within subjects when the design names
``paired_t`` (else Wilcoxon), by Mann-Whitney between subjects; the **output-to-input item
ratio** by the **Mann-Whitney U** test over every round of each condition pooled, within or
between subjects alike (rounds are its unit).

p-values are two-sided. The **Bonferroni** correction multiplies each p by the number of
measures tested in its family (one pair of conditions, one test, one group: ratings or session
outcomes), capped at 1, as Cocoa corrects over the ratings it compares.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import combinations
from statistics import median
from typing import Any, Literal

from scipy import stats

from cogym_lab.eval.stats.rating_tests import FEW_PAIRS, paired_t, signed_rank
from cogym_lab.studies.measures import Values, row

Subjects = Literal["within", "between"]
WILCOXON, PAIRED_T, MANN_WHITNEY = "wilcoxon", "paired_t", "mann_whitney"
TEST_NAMES = {WILCOXON: "Wilcoxon signed-rank", PAIRED_T: "paired t-test",
              MANN_WHITNEY: "Mann-Whitney U"}


def tests_for(subjects: Subjects, named: Iterable[str]) -> list[str]:
    """The tests to run: those the design names that fit its subjects, else the default
    (Wilcoxon within subjects, Mann-Whitney between)."""
    fitting = {"within": (WILCOXON, PAIRED_T), "between": (MANN_WHITNEY,)}[subjects]
    chosen = [test for test in fitting if test in set(named)]
    return chosen or [fitting[0]]


def share_tests(subjects: Subjects, named: Iterable[str]) -> list[str]:
    """The test of Cocoa's time shares: paired t within subjects when named (as Cocoa), else
    Wilcoxon; Mann-Whitney between subjects."""
    if subjects == "between":
        return [MANN_WHITNEY]
    return [PAIRED_T] if PAIRED_T in set(named) else [WILCOXON]


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> tuple[float, float] | None:
    """U (of ``a``) and the two-sided p; ``None`` when a group is empty or all values equal."""
    if not a or not b or len(set(a) | set(b)) < 2:
        return None
    result = stats.mannwhitneyu(a, b, alternative="two-sided")
    return float(result.statistic), float(result.pvalue)


def _one_test(test: str, a: list[float], b: list[float]) -> tuple[float, float, str]:
    """Statistic, p and a plain note for one measure."""
    if test == MANN_WHITNEY:
        result = mann_whitney(a, b)
        if result is None:
            return math.nan, math.nan, f"no test: groups of {len(a)} and {len(b)} without spread"
        return result[0], result[1], ""
    differing = sum(1 for x, y in zip(a, b, strict=True) if x != y)
    if test == PAIRED_T:
        t = paired_t(a, b)
        if t is None:
            return math.nan, math.nan, f"no test: {len(a)} pairs, too few or no spread"
        return t.statistic, t.p_value, ""
    ranked = signed_rank(a, b)
    if ranked is None:
        return math.nan, math.nan, f"no test: {len(a)} pairs, {differing} differing"
    note = (f"only {differing} pairs differ: p cannot fall below 0.05"
            if differing < FEW_PAIRS else "")
    return ranked.statistic, ranked.p_value, note


def compare(values: Values, conditions: Sequence[str], labels: dict[str, str],
            subjects: Subjects, tests: Sequence[str], family: str) -> list[dict[str, Any]]:
    """Every pair of ``conditions`` on every measure of ``values`` by each of ``tests``, with
    the Bonferroni-corrected p over the measures tested for that pair and test."""
    rows: list[dict[str, Any]] = []
    for a_name, b_name in combinations(conditions, 2):
        for test in tests:
            family_rows = []
            for measure in sorted(values):
                group_a = values[measure].get(a_name, {})
                group_b = values[measure].get(b_name, {})
                if not group_a and not group_b:
                    continue
                if test == MANN_WHITNEY:
                    a, b = list(group_a.values()), list(group_b.values())
                    n = len(a) + len(b)
                else:
                    shared = sorted(set(group_a) & set(group_b))
                    a, b = [group_a[p] for p in shared], [group_b[p] for p in shared]
                    n = len(shared)
                statistic, p_value, note = _one_test(test, a, b)
                family_rows.append(row(
                    "tests", measure, item=measure, condition=a_name,
                    label=labels.get(a_name, a_name), condition_b=b_name,
                    label_b=labels.get(b_name, b_name), n=n,
                    value=median(a) if a else math.nan, value_b=median(b) if b else math.nan,
                    statistic=statistic, p_value=p_value, test=TEST_NAMES[test],
                    family=family, note=note))
            tested = sum(1 for r in family_rows if not math.isnan(r["p_value"]))
            for r in family_rows:
                r["p_bonferroni"] = (math.nan if math.isnan(r["p_value"])
                                     else min(1.0, r["p_value"] * tested))
            rows += family_rows
    return rows


__all__ = ["MANN_WHITNEY", "PAIRED_T", "TEST_NAMES", "WILCOXON", "Subjects", "compare",
           "mann_whitney", "share_tests", "tests_for"]
