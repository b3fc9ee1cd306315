"""Ratings compared between two systems, as the Cocoa study does (Feng et al., "Cocoa:
Co-Planning and Co-Execution with AI Agents", §5.4 and §6.1): two systems run on the same
instances, each rated item (the study's nine Likert items and its general-utility composite,
then Co-Gym's outcome rating and satisfaction) paired by instance and compared by the Wilcoxon
signed-rank test, with a Bonferroni correction for that pair of systems (:func:`compare_ratings`)
within each of two families: the study's hypotheses (steerable, easy to use, the utility
composite) with Co-Gym's two ratings, and the other Likert items, described as the study
reports them but corrected among themselves so they do not weaken the hypotheses' tests.

Co-Gym's own two ratings follow the Co-Gym paper under its ``cogym`` protocol: it compares Overall
Satisfaction by a paired t-test (§5.3: "3.95 vs 3.55, p = 0.012 in pairwise t-test"), and so
``outcome_rating`` and ``satisfaction`` get :func:`paired_t` there; under ``cogym_lab``, and for
the Cocoa items always, the signed-rank test, which does not take a 1-5 rating for an interval
scale. Each row's ``test`` says which ran.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import median
from typing import Any

from scipy import stats

from cogym_lab.records import likert
from cogym_lab.records.trajectory import SessionRecord

#: The rated items compared: the Cocoa study's tested items (the utility composite among them),
#: its other Likert items, then Co-Gym's two ratings.
TESTED_LIKERT = ("steerable", "easy_to_use", likert.UTILITY)
OTHER_LIKERT = tuple(item for item in likert.COCOA_ITEMS if item not in TESTED_LIKERT)
RATED_ITEMS = (*TESTED_LIKERT, *OTHER_LIKERT, "outcome_rating", "satisfaction")
#: Below this many pairs that differ, no two-sided signed-rank test reaches p < 0.05.
FEW_PAIRS = 6


def rating_items(record: SessionRecord) -> dict[str, float]:
    """Each rated item's mean over the session's raters (items nobody answered left out)."""
    values = {item: record.rating_values(item) for item in RATED_ITEMS}
    return {item: sum(v) / len(v) for item, v in values.items() if v}


#: Co-Gym's own rated items: compared as the Co-Gym paper does under its protocol.
COGYM_ITEMS = ("outcome_rating", "satisfaction")
WILCOXON, PAIRED_T = "Wilcoxon signed-rank", "paired t-test"


def rating_test(item: str, protocol: str | None) -> str:
    """The test ``item`` is compared by for sessions of ``protocol``."""
    return PAIRED_T if protocol == "cogym" and item in COGYM_ITEMS else WILCOXON


@dataclass(frozen=True)
class PairedT:
    """A paired t-test of one item between two systems, paired by instance."""

    statistic: float  # t
    p_value: float  # two-sided


def paired_t(a: Sequence[float], b: Sequence[float]) -> PairedT | None:
    """The paired t-test of ``a`` against ``b``; ``None`` with fewer than two pairs or when
    every pair differs by the same amount (t is undefined)."""
    if len(a) < 2 or len({x - y for x, y in zip(a, b, strict=True)}) < 2:
        return None
    result = stats.ttest_rel(a, b)
    return PairedT(float(result.statistic), float(result.pvalue))


@dataclass(frozen=True)
class SignedRank:
    """One item's Wilcoxon signed-rank test between two systems, paired by instance."""

    statistic: float  # W: the smaller of the positive and negative rank sums
    p_value: float  # two-sided
    n: int  # pairs (those with no difference included)
    differing: int  # pairs whose ratings differ: the ones the test ranks


def signed_rank(a: Sequence[float], b: Sequence[float]) -> SignedRank | None:
    """Wilcoxon's signed-rank test of ``a`` against ``b`` (pairs in order): scipy's, with
    pairs that do not differ dropped (Wilcoxon's own treatment), two-sided, exact for small
    samples without tied ranks. ``None`` with fewer than two differing pairs."""
    differing = sum(1 for x, y in zip(a, b, strict=True) if x != y)
    if differing < 2:
        return None
    result = stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    return SignedRank(float(result.statistic), float(result.pvalue), len(a), differing)


def _by_instance(records: Sequence[SessionRecord]) -> dict[str, dict[str, float]]:
    """Instance -> item -> the mean rating over the system's sessions of that instance."""
    collected: dict[str, dict[str, list[float]]] = {}
    for record in records:
        for item, value in rating_items(record).items():
            collected.setdefault(record.instance, {}).setdefault(item, []).append(value)
    return {instance: {item: sum(v) / len(v) for item, v in items.items()}
            for instance, items in collected.items()}


FAMILIES = ("hypotheses", "other_likert")


def family(item: str) -> str:
    """The Bonferroni family of ``item``: the Cocoa study's other Likert items are corrected
    among themselves, everything else together."""
    return "other_likert" if item in OTHER_LIKERT else "hypotheses"


def compare_ratings(systems: dict[tuple[str, ...], Sequence[SessionRecord]]
                    ) -> list[dict[str, Any]]:
    """For every two systems of one task (``systems``: system key, its task first -> its
    sessions), each rated item paired by instance and tested (:func:`signed_rank`), with the
    Bonferroni-corrected p-value over the items tested for that pair of systems in the item's
    family (:func:`family`). One row per item either system has ratings for."""
    rows: list[dict[str, Any]] = []
    for (key_a, records_a), (key_b, records_b) in combinations(sorted(systems.items()), 2):
        if key_a[0] != key_b[0]:
            continue
        ratings_a, ratings_b = _by_instance(records_a), _by_instance(records_b)
        protocols = {r.protocol.name for r in [*records_a, *records_b]}
        protocol = protocols.pop() if len(protocols) == 1 else None
        pair_rows = []
        for item in RATED_ITEMS:
            if not any(item in r for r in [*ratings_a.values(), *ratings_b.values()]):
                continue
            shared = sorted(i for i in set(ratings_a) & set(ratings_b)
                            if item in ratings_a[i] and item in ratings_b[i])
            a = [ratings_a[i][item] for i in shared]
            b = [ratings_b[i][item] for i in shared]
            pair_rows.append(_test_row(key_a, key_b, item, a, b,
                                       rating_test(item, protocol)))
        tested = {name: sum(1 for row in pair_rows if family(row["item"]) == name
                            and not math.isnan(row["p_value"])) for name in FAMILIES}
        for row in pair_rows:
            p_value = row.pop("p_value")  # moved, to keep the columns in reading order
            row |= {"p_value": p_value, "p_bonferroni": math.nan if math.isnan(p_value)
                    else min(1.0, p_value * tested[family(row["item"])]),
                    "note": row.pop("note")}
        rows += pair_rows
    return rows


def _test_row(key_a: tuple[str, ...], key_b: tuple[str, ...], item: str, a: list[float],
              b: list[float], test: str = WILCOXON) -> dict[str, Any]:
    """One item's row: medians, the test's statistic (``W`` or ``t``) and p, and a plain note
    when there are too few pairs."""
    differing = sum(1 for x, y in zip(a, b, strict=True) if x != y)
    w = t = p_value = math.nan
    if test == PAIRED_T:
        t_test = paired_t(a, b)
        if t_test is not None:
            t, p_value = t_test.statistic, t_test.p_value
        note = "" if t_test is not None else \
            f"too few pairs or no spread: {len(a)} paired, {differing} differing; no test"
    else:
        ranked = signed_rank(a, b)
        if ranked is not None:
            w, p_value = ranked.statistic, ranked.p_value
        if ranked is None:
            note = f"too few pairs: {len(a)} paired, {differing} differing; no test"
        elif differing < FEW_PAIRS:
            note = f"too few pairs: {differing} differing, p cannot fall below 0.05"
        else:
            note = ""
    return {"task": key_a[0], "system_a": " / ".join(key_a[1:]),
            "system_b": " / ".join(key_b[1:]), "item": item, "pairs": len(a),
            "median_a": median(a) if a else math.nan, "median_b": median(b) if b else math.nan,
            "test": test, "W": w, "t": t, "p_value": p_value, "note": note}
