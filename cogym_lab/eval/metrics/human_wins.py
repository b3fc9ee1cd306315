"""The human win rate against the autonomous agent (Co-Gym Table 4, "Win Rate vs. Autonomous
Agent"): the people's own pairwise comparisons, made in the rating form (Appendix C.4), of their
session's outcome with the autonomous agent's on the same instance.

Each session rated with a pairwise answer scores 1 when the person preferred their own outcome,
0 when they preferred the autonomous one, and 1/2 for a tie, as the LM-judged win rate counts a
tie (:data:`cogym_lab.eval.metrics.outcome.TIE`). A session rated from several person seats scores
the mean of their answers, so the unit is the session, as for the LM-judged rate.

The interval is the 95% **Wilson score interval** of that share, with ties counting half a
win. Human samples are small (a handful of people in a notebook study), and Wilson's interval
stays inside [0, 1] and keeps a width when every answer is the same, where the normal (Wald)
interval the paper's Table 4 matches collapses to a point at 0% or 100%, and a percentile
bootstrap of all-equal answers collapses too. A tie is a value of 1/2, whose spread is smaller
than a win's or a loss's, so treating the share as binomial errs on the wide side.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cogym_lab.eval.metrics.outcome import LOSS, TIE, WIN
from cogym_lab.records.trajectory import SessionRecord

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054
SCORES = {"own": WIN, "tie": TIE, "autonomous": LOSS}


def session_score(record: SessionRecord) -> float | None:
    """The session's win score from its ratings' pairwise answers (mean over the seats that
    answered), ``None`` when nobody answered."""
    scores = [SCORES[rating.pairwise] for rating in record.ratings.values()
              if rating.pairwise is not None]
    return sum(scores) / len(scores) if scores else None


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for ``successes`` out of ``n`` (NaN, NaN for n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    share = successes / n
    spread = z * z / n
    centre = (share + spread / 2) / (1 + spread)
    half = z / (1 + spread) * math.sqrt(share * (1 - share) / n + spread / (4 * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class HumanWinRate:
    """Counts of the sessions' answers (a session of several seats that disagreed counts by
    its mean score: ``n`` is the number of sessions), the win rate and its Wilson interval."""

    n: int
    wins: int
    ties: int
    losses: int
    win_rate: float
    ci_low: float
    ci_high: float


def human_win_rate(records: Iterable[SessionRecord]) -> HumanWinRate:
    """The human win rate over the pairwise-rated sessions among ``records``."""
    scores = [score for record in records if (score := session_score(record)) is not None]
    n = len(scores)
    total = sum(scores)
    low, high = wilson_interval(total, n)
    return HumanWinRate(n=n, wins=sum(s == WIN for s in scores),
                        ties=sum(s == TIE for s in scores),
                        losses=sum(s == LOSS for s in scores),
                        win_rate=total / n if n else math.nan, ci_low=low, ci_high=high)


HUMAN_COLUMNS = ("human_rated", "human_win_rate", "human_win_ci_low", "human_win_ci_high")


def add_human_win_rates(rows: list[dict[str, Any]],
                        systems: Mapping[tuple[str, ...], Sequence[SessionRecord]],
                        keys: Sequence[str]) -> list[dict[str, Any]]:
    """The comparison table's rows with each system's human win rate beside the LM-judged one:
    a system's row gains the :data:`HUMAN_COLUMNS`; a system whose sessions people compared but
    which has no row yet (no baseline sessions in the report) gets one of its own."""
    by_system = {tuple(row[key] for key in keys): row for row in rows}
    out = list(rows)
    for system, records in systems.items():
        rate = human_win_rate(records)
        if not rate.n:
            continue
        row = by_system.get(tuple(system))
        if row is None:
            row = dict(zip(keys, system, strict=True)) | {
                "baseline": "autonomous (in the rating form)"}
            out.append(row)
        row |= {"human_rated": rate.n, "human_win_rate": rate.win_rate,
                "human_win_ci_low": rate.ci_low, "human_win_ci_high": rate.ci_high}
    return out
