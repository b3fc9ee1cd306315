"""Collaborative effort scaling (paper 002 §3-4): utility per round, refinement gain, usability
drop, agent and user effort, and the scaling curve.

Per session, with rounds k = 1..K (see :mod:`cogym_lab.eval.metrics.rounds`):

* ``P_k``: the task grader's performance at the end of round k when the outcome changed in that
  round, else ``P_{k-1}``; ``P_0 = 0``.
* utility at the first update ``P_{k'}``, where k' is the first round in which an agent changed
  the outcome; utility at the final step ``P_K``; overall utility ``max_k P_k``.
* refinement gain ``G = max_k P_k - P_{k'}``: overall minus first, in every session. A session in
  which no agent ever changed the outcome has no first update to refine: its ``P_{k'}`` is its
  overall utility and its gain 0, so that it still counts in every mean and, over sessions,
  mean G = mean overall - mean first.
* usability drop ``D@tau = P_{k_tau} - P_K``: a person who stops after ``tau`` rounds in a row
  without satisfactory progress (a progress rating below ``satisfactory``) stops at round
  ``k_tau`` and keeps ``P_{k_tau}``; one who never meets such a streak stays to ``K``.

Across sessions each metric is averaged; the relative gain is ``mean G / mean P_{k'}`` and the
relative drop ``mean D@tau / mean P_K``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cogym_lab.records.trajectory import SessionRecord
from cogym_lab.users.progress import PURPOSE as RATING_PURPOSE

TAUS = (1, 2, 3)
SATISFACTORY = 3  # a progress rating of 3 ("some progress") or more is satisfactory


def carry_forward(round_scores: Sequence[float | None]) -> list[float]:
    """``P_1..P_K`` from each round's grade, ``None`` for a round whose outcome did not change
    (it keeps the previous round's utility; before the first round it is 0)."""
    utilities, previous = [], 0.0
    for score in round_scores:
        previous = previous if score is None else float(score)
        utilities.append(previous)
    return utilities


def stop_round(progress: Sequence[int], tau: int, satisfactory: int = SATISFACTORY) -> int:
    """The round (from 1) after which a person with no-progress tolerance ``tau`` stops: the end
    of the first run of ``tau`` unsatisfactory rounds, else the last round."""
    streak = 0
    for index, rating in enumerate(progress, start=1):
        streak = streak + 1 if rating < satisfactory else 0
        if streak >= tau:
            return index
    return len(progress)


@dataclass
class EffortTrace:
    """One session's utilities per round, its first update, and per-round progress ratings."""

    utilities: list[float]  # P_1..P_K
    first_update: int | None = None  # k', from 1; None when no agent changed the outcome
    progress: list[int] | None = None  # the 1-5 progress rating of each round
    progress_source: str | None = None  # who rated it: "user" (the simulated user) or "judge"

    @property
    def rounds(self) -> int:
        return len(self.utilities)

    @property
    def utility_first_update(self) -> float:
        """``P_{k'}``; the overall utility when no agent changed the outcome (no gain)."""
        if not self.utilities:
            return math.nan
        return self.utilities[self.first_update - 1] if self.first_update else self.utility_max

    @property
    def utility_final(self) -> float:
        return self.utilities[-1] if self.utilities else math.nan

    @property
    def utility_max(self) -> float:
        return max(self.utilities) if self.utilities else math.nan

    @property
    def refinement_gain(self) -> float:
        return self.utility_max - self.utility_first_update

    def usability_drop(self, tau: int, satisfactory: int = SATISFACTORY) -> float:
        """``D@tau`` for this session; NaN without progress ratings for every round."""
        if not self.progress or len(self.progress) != len(self.utilities):
            return math.nan
        return self.utilities[stop_round(self.progress, tau, satisfactory) - 1] - \
            self.utility_final


def effort_tokens(record: SessionRecord) -> tuple[int, int]:
    """Tokens written by the agents and by the human side. A simulated user's are its LM's
    completion tokens, less those of its progress ratings (a person spends no effort on the
    collaboration by rating it); a person, who has no LM, counts the words of their acts."""
    agent = sum(record.tokens[role].completion for role in record.agent_roles)
    user = 0
    for role in record.human_roles:
        tokens = record.tokens[role].completion - _rating_tokens(record, role)
        user += tokens if tokens or record.kinds[role] != "person" else \
            record.words_written(role)
    return agent, user


def _rating_tokens(record: SessionRecord, role: str) -> int:
    """Completion tokens ``role`` spent on progress ratings (their calls' purposes start with
    ``progress_rating``), from its usage file, else its call log."""
    files = record.members.get(role, {})
    purposes = (files.get("usage") or {}).get("by_purpose")
    if isinstance(purposes, dict) and files.get("usage"):
        return sum(int((row or {}).get("completion_tokens") or 0)
                   for purpose, row in purposes.items()
                   if str(purpose).startswith(RATING_PURPOSE) and isinstance(row, dict))
    return sum(int((call.get("usage") or {}).get("completion_tokens") or 0)
               for call in files.get("calls", [])
               if str(call.get("purpose") or "").startswith(RATING_PURPOSE))


def _mean(values: Sequence[float]) -> float:
    clean = [v for v in values if not math.isnan(v)]
    return float(np.mean(clean)) if clean else math.nan


def summarise(traces: Sequence[EffortTrace], satisfactory: int = SATISFACTORY
              ) -> dict[str, float]:
    """The effort-scaling metrics over several sessions of one system on one task."""
    first = _mean([t.utility_first_update for t in traces])
    final = _mean([t.utility_final for t in traces])
    gain = _mean([t.refinement_gain for t in traces])
    summary = {
        "rounds": _mean([float(t.rounds) for t in traces]),
        "utility_first_update": first,
        "utility_final": final,
        "utility_overall": _mean([t.utility_max for t in traces]),
        "refinement_gain": gain,
        "refinement_gain_rel": gain / first if first else math.nan,
    }
    for tau in TAUS:
        drop = _mean([t.usability_drop(tau, satisfactory) for t in traces])
        summary[f"usability_drop@{tau}"] = drop
        summary[f"usability_drop@{tau}_rel"] = drop / final if final else math.nan
    # Whose progress ratings the drops rest on: the simulated user's own, or the judge's.
    summary["progress_by_user"] = float(sum(t.progress_source == "user" for t in traces))
    summary["progress_by_judge"] = float(sum(t.progress_source == "judge" for t in traces))
    return summary


def scaling_curve(traces: Sequence[EffortTrace]) -> list[dict[str, float]]:
    """Mean and standard error of ``P_k`` for k = 0..max K, and how many sessions are still
    running at k. A session that ended keeps its final utility in later rounds."""
    longest = max((t.rounds for t in traces), default=0)
    points = []
    for k in range(longest + 1):
        values = np.asarray([0.0 if k == 0 else t.utilities[min(k, t.rounds) - 1]
                             for t in traces if t.rounds], dtype=float)
        values = values[~np.isnan(values)]
        se = float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else 0.0
        points.append({"round": k, "mean": float(values.mean()) if values.size else math.nan,
                       "se": se, "running": sum(1 for t in traces if t.rounds >= k)})
    return points
