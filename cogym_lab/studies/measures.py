"""The study designs' measures, computed from one arm's export (:mod:`.export_reader`).

Every function returns rows of one shape (:data:`COLUMNS`), one per measure and condition, so
that ``analysis.csv`` is one table and the two arms can be joined row by row.

* **Borda count** (DPT-Agent, Table 3): each participant's last ranking of an item gives the
  first of *k* ranked labels ``k - 1 + lowest`` points, the next one point fewer, down to
  ``lowest`` for the last. ``lowest=1`` is the paper's count (first of four gets 4), ``0`` the
  textbook one; the order is the same. Equal totals are broken by the mean rank, then by the
  number of first places, and a tie that survives both shares its place; ``note`` says which.
* **Win rate** against the autonomous agent (Co-Gym Real): a choice item answered ``own``,
  ``autonomous`` or ``tie``; a tie counts half a win, as in
  :mod:`cogym_lab.eval.metrics.human_wins`, with its 95% Wilson interval.
* **Likert items**: n, median, mean, standard deviation per condition; **composites** (Cocoa's
  general utility) are the mean of their items in one questionnaire answered whole.
* **Task load** (NASA-TLX raw): the mean of the form's six subscales, 0-100.
* **Sessions**: the share delivered, the mean performance, the mean and median duration.
* **Plans vs chat** (Cocoa, Figures 12-13; :mod:`cogym_lab.eval.metrics.activity_codes`): the
  share of session time per activity code (mean, median, sd over sessions), and the
  output-to-input item ratio over every round of every session, pooled (Cocoa's unit).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import mean, median, stdev
from typing import Any

from cogym_lab.eval.metrics.activity_codes import CODES, split_ratios
from cogym_lab.eval.metrics.human_wins import SCORES, wilson_interval
from cogym_lab.studies.export_reader import ExportError, StudyExport, number
from cogym_lab.studies.tables import AnswerRow

COLUMNS = ("section", "measure", "item", "part", "condition", "label", "condition_b", "label_b",
           "n", "value", "value_b", "low", "high", "median", "mean", "sd", "statistic",
           "p_value", "p_bonferroni", "test", "family", "place", "note")
#: The condition of an answer about every condition at once (an end questionnaire's).
ALL = ""
#: Cocoa's general utility (its Appendix H): the three items about the outputs' usefulness.
UTILITY_ITEMS = ("outputs_useful", "new_insights", "understand_solutions")
DEFAULT_COMPOSITES: dict[str, tuple[str, ...]] = {"utility": UTILITY_ITEMS}
#: The NASA-TLX raw score needs all six subscales.
TLX_SUBSCALES = 6
PAIRWISE_OPTIONS = frozenset(SCORES)  # own, tie, autonomous

#: participant -> value, per condition, per measure.
Values = dict[str, dict[str, dict[str, float]]]


def row(section: str, measure: str, **fields: Any) -> dict[str, Any]:
    """One row of :data:`COLUMNS` (empty where a measure has no such figure)."""
    unknown = set(fields) - set(COLUMNS)
    if unknown:
        raise KeyError(f"not a column: {sorted(unknown)}")
    return {column: fields.get(column, "") for column in COLUMNS} | {
        "section": section, "measure": measure}


def _summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "mean": mean(values) if values else math.nan,
            "median": median(values) if values else math.nan,
            "sd": stdev(values) if len(values) > 1 else math.nan}


def condition_label(export: StudyExport, condition: str) -> str:
    return "all conditions" if condition == ALL else export.label(condition)


# -- sessions -----------------------------------------------------------------------------------

def session_outcomes(export: StudyExport) -> tuple[list[dict[str, Any]], Values]:
    """Rows per condition (sessions, delivered share, performance, duration) and each
    participant's mean performance and duration per condition (for the tests)."""
    rows: list[dict[str, Any]] = []
    per_participant: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    sessions = export.analysed_sessions()
    for condition in export.conditions():
        mine = [s for s in sessions if s.condition == condition]
        if not mine:
            continue
        label = export.label(condition)
        delivered = [1.0 if s.delivered else 0.0 for s in mine if s.delivered is not None]
        performance = [s.performance for s in mine if s.performance is not None]
        duration = [s.duration_seconds for s in mine if s.duration_seconds is not None]
        rows.append(row("sessions", "sessions", condition=condition, label=label, n=len(mine),
                        value=len(mine)))
        rows.append(row("sessions", "delivered_share", condition=condition, label=label,
                        n=len(delivered), value=mean(delivered) if delivered else math.nan))
        rows.append(row("sessions", "performance", condition=condition, label=label,
                        value=_summary(performance)["mean"], **_summary(performance)))
        rows.append(row("sessions", "duration_seconds", condition=condition, label=label,
                        value=_summary(duration)["mean"], **_summary(duration)))
        for s in mine:
            if s.performance is not None:
                per_participant["performance"][condition][s.participant].append(s.performance)
            if s.duration_seconds is not None:
                per_participant["duration_seconds"][condition][s.participant].append(
                    s.duration_seconds)
    return rows, _means(per_participant)


def _means(collected: Mapping[str, Mapping[str, Mapping[str, list[float]]]]) -> Values:
    return {measure: {condition: {p: mean(v) for p, v in people.items() if v}
                      for condition, people in conditions.items()}
            for measure, conditions in collected.items()}


# -- plans vs chat: time shares and the item ratio ---------------------------------------------

#: The time-share columns of ``sessions.csv``, one per activity code.
SHARE_MEASURES = tuple(f"share_{code}" for code in CODES)
#: The coded interactions Cocoa compares between conditions (waiting and finishing are not).
TESTED_SHARES = ("share_planning", "share_executing", "share_inspecting")


def time_shares(export: StudyExport) -> tuple[list[dict[str, Any]], Values]:
    """Rows per condition and activity code (the share of session time: mean, median, sd over
    the sessions that have one), and each participant's mean share per condition."""
    rows: list[dict[str, Any]] = []
    collected: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    sessions = export.analysed_sessions()
    for condition in export.conditions():
        mine = [s for s in sessions if s.condition == condition]
        for measure in SHARE_MEASURES:
            values = [(s.participant, v) for s in mine if (v := getattr(s, measure)) is not None]
            if not values:
                continue
            stats = _summary([v for _, v in values])
            rows.append(row("time_shares", measure, item=measure, condition=condition,
                            label=export.label(condition), value=stats["mean"],
                            note=f"{len({p for p, _ in values})} participants", **stats))
            for participant, value in values:
                collected[measure][condition][participant].append(value)
    return rows, _means(collected)


def item_ratio_rounds(export: StudyExport) -> dict[str, dict[str, float]]:
    """Condition -> round -> its output-to-input ratio, every round of every analysed session
    (a round's key: participant, session and its place in the session)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for session in export.analysed_sessions():
        for k, ratio in enumerate(split_ratios(session.item_ratios)):
            out[session.condition][f"{session.participant}/{session.session_id}/{k}"] = ratio
    return dict(out)


def item_ratios(export: StudyExport) -> tuple[list[dict[str, Any]], Values]:
    """One row per condition: the item ratio over its rounds, pooled (n rounds, mean, median,
    sd); and the rounds as the tests' values (measure ``item_ratio``)."""
    rounds = item_ratio_rounds(export)
    rows: list[dict[str, Any]] = []
    sessions = export.analysed_sessions()
    for condition in export.conditions():
        values = list(rounds.get(condition, {}).values())
        if not values:
            continue
        with_rounds = [s for s in sessions if s.condition == condition and s.item_ratios]
        stats = _summary(values)
        rows.append(row("item_ratio", "item_ratio", item="item_ratio", condition=condition,
                        label=export.label(condition), value=stats["mean"],
                        note=f"{len(values)} rounds of {len(with_rounds)} sessions, "
                             f"{len({s.participant for s in with_rounds})} participants",
                        **stats))
    return rows, ({"item_ratio": rounds} if rounds else {})


# -- rankings: the Borda count ------------------------------------------------------------------

def _order_key(position: int) -> float:
    return math.inf if position < 0 else position  # an end questionnaire comes last


def last_rankings(export: StudyExport) -> dict[str, dict[str, dict[str, int]]]:
    """Ranking item -> participant -> label -> rank (1 best), from each participant's last
    ranking of the item (the one that ranks everything met; earlier ones are partial)."""
    grouped: dict[tuple[str, str, str, int], dict[str, int]] = defaultdict(dict)
    for answer in export.answers:
        if answer.kind != "ranking":
            continue
        if not answer.part:
            raise ExportError(f"answers.csv: participant {answer.participant}, ranking "
                              f"{answer.item!r}: a ranked row needs the label in 'part'")
        rank = number(answer, 0, 1000)
        if rank != int(rank):
            raise ExportError(f"answers.csv: participant {answer.participant}, ranking "
                              f"{answer.item!r}: position {answer.value!r} is not whole")
        key = (answer.item, answer.participant, answer.questionnaire, answer.position)
        grouped[key][answer.part] = int(rank)
    latest: dict[str, dict[str, tuple[float, dict[str, int]]]] = defaultdict(dict)
    for (item, participant, _questionnaire, position), given in grouped.items():
        ranks = _one_based(item, participant, given)
        held = latest[item].get(participant)
        if held is None or _order_key(position) >= held[0]:
            latest[item][participant] = (_order_key(position), ranks)
    return {item: {p: ranks for p, (_, ranks) in people.items()}
            for item, people in latest.items()}


def _one_based(item: str, participant: str, ranks: dict[str, int]) -> dict[str, int]:
    """Positions 1..k (a ranking written from 0 is read the same); anything else an error."""
    given = sorted(ranks.values())
    k = len(given)
    if given == list(range(k)):
        return {label: rank + 1 for label, rank in ranks.items()}
    if given != list(range(1, k + 1)):
        raise ExportError(f"answers.csv: participant {participant}, ranking {item!r}: "
                          f"positions {given} are not 1..{k}, each once")
    return ranks


def borda(export: StudyExport, lowest: int = 1) -> list[dict[str, Any]]:
    """The Borda count of every ranking item, one row per label ranked, best place first."""
    rows: list[dict[str, Any]] = []
    by_label = {label: condition for condition, label in export.labels.items()}
    for item, people in sorted(last_rankings(export).items()):
        points: dict[str, int] = defaultdict(int)
        ranks: dict[str, list[int]] = defaultdict(list)
        for ranking in people.values():
            k = len(ranking)
            for label, rank in ranking.items():
                points[label] += k - rank + lowest
                ranks[label].append(rank)
        standing = sorted(points, key=lambda lb: (-points[lb], mean(ranks[lb]),
                                                  -ranks[lb].count(1), lb))
        keys = {lb: (points[lb], mean(ranks[lb]), ranks[lb].count(1)) for lb in standing}
        for index, label in enumerate(standing):
            place = 1 + next(i for i, other in enumerate(standing) if keys[other] == keys[label])
            rows.append(row("borda", "borda_points", item=item, part=label,
                            condition=by_label.get(label, ""), label=label,
                            n=len(ranks[label]), value=points[label], mean=mean(ranks[label]),
                            place=place,
                            note=_tie_note(label, standing, keys, index)))
    return rows


def _tie_note(label: str, standing: list[str], keys: dict[str, tuple[int, float, int]],
              index: int) -> str:
    """Says how ``label``'s place was settled when its points equal another label's."""
    same_points = [o for o in standing if o != label and keys[o][0] == keys[label][0]]
    if not same_points:
        return ""
    shared = [o for o in same_points if keys[o] == keys[label]]
    if shared:
        return f"tied with {', '.join(shared)} on points, mean rank and first places: place shared"
    by_rank = [o for o in same_points if keys[o][1] != keys[label][1]]
    parts = []
    if by_rank:
        parts.append(f"same points as {', '.join(by_rank)}: ordered by mean rank")
    by_firsts = [o for o in same_points if keys[o][1] == keys[label][1]]
    if by_firsts:
        parts.append(f"same points and mean rank as {', '.join(by_firsts)}: ordered by "
                     "first places")
    return "; ".join(parts)


# -- choices: the win rate and other shares -----------------------------------------------------

def _choices(export: StudyExport) -> dict[str, list[AnswerRow]]:
    grouped: dict[str, list[AnswerRow]] = defaultdict(list)
    for answer in export.answers:
        if answer.kind == "choice":
            grouped[answer.item].append(answer)
    return grouped


def is_pairwise(answers: Iterable[AnswerRow]) -> bool:
    """A choice item is the pairwise preference when every answer is own/autonomous/tie."""
    return all(a.value in PAIRWISE_OPTIONS for a in answers)


def win_scores(export: StudyExport) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """Pairwise item -> condition -> (participant, score) per answer (1, 1/2 or 0)."""
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for item, answers in sorted(_choices(export).items()):
        if is_pairwise(answers):
            per: dict[str, list[tuple[str, float]]] = defaultdict(list)
            for a in answers:
                per[a.condition].append((a.participant, SCORES[a.value]))
            out[item] = dict(per)
    return out


def win_rates(export: StudyExport) -> list[dict[str, Any]]:
    """The win rate per pairwise item and condition, ties counting half, with Wilson's 95%
    interval; and each other choice item's answer shares."""
    rows: list[dict[str, Any]] = []
    for item, per in win_scores(export).items():
        for condition, scored in per.items():
            scores = [s for _, s in scored]
            total, n = sum(scores), len(scores)
            low, high = wilson_interval(total, n)
            wins, ties = scores.count(1.0), scores.count(0.5)
            rows.append(row("win_rate", "win_rate", item=item, condition=condition,
                            label=condition_label(export, condition), n=n,
                            value=total / n if n else math.nan, low=low, high=high,
                            note=f"{wins} own, {ties} tie, {n - wins - ties} autonomous; "
                                 "a tie counts half"))
    for item, answers in sorted(_choices(export).items()):
        if is_pairwise(answers):
            continue
        per_condition: dict[str, list[str]] = defaultdict(list)
        for a in answers:
            per_condition[a.condition].append(a.value)
        for condition, values in per_condition.items():
            for option in sorted(set(values)):
                rows.append(row("choice", "choice_share", item=item, part=option,
                                condition=condition, label=condition_label(export, condition),
                                n=len(values), value=values.count(option) / len(values)))
    return rows


# -- Likert items, composites, task load ---------------------------------------------------------

def likert_answers(export: StudyExport, points: Mapping[str, int] | None = None
                   ) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """Likert item -> condition -> (participant, value) per answer. Values must lie on the
    item's scale (1..points when the design is known, else 0..11)."""
    out: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for answer in export.answers:
        if answer.kind == "likert":
            high = (points or {}).get(answer.item, 11)
            low = 1 if points and answer.item in points else 0
            out[answer.item][answer.condition].append((answer.participant,
                                                       number(answer, low, high)))
    return {item: dict(per) for item, per in out.items()}


def composite_answers(export: StudyExport, composites: Mapping[str, tuple[str, ...]]
                      ) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """Composite -> condition -> (participant, mean of its items) for every questionnaire
    answered with all of the composite's items."""
    forms: dict[tuple[str, str, str, int], dict[str, float]] = defaultdict(dict)
    for answer in export.answers:
        if answer.kind == "likert":
            key = (answer.participant, answer.questionnaire, answer.condition, answer.position)
            forms[key][answer.item] = number(answer)
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for name, items in composites.items():
        per: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for (participant, _q, condition, _position), values in forms.items():
            if all(item in values for item in items):
                per[condition].append((participant, mean(values[item] for item in items)))
        if per:
            out[name] = dict(per)
    return out


def task_load_answers(export: StudyExport) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """``task_load`` (raw TLX) and ``task_load:<subscale>`` -> condition -> (participant,
    value) per form. A form without all six subscales counts for its subscales only."""
    forms: dict[tuple[str, str, str, str, int], dict[str, float]] = defaultdict(dict)
    for answer in export.answers:
        if answer.kind == "task_load":
            key = (answer.participant, answer.questionnaire, answer.item, answer.condition,
                   answer.position)
            forms[key][answer.part or "?"] = number(answer, 0, 100)
    out: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for (participant, _q, _item, condition, _position), scales in forms.items():
        if len(scales) == TLX_SUBSCALES:
            out["task_load"][condition].append((participant, mean(scales.values())))
        for scale, value in scales.items():
            out[f"task_load:{scale}"][condition].append((participant, value))
    return {measure: dict(per) for measure, per in out.items()}


def summary_rows(section: str, answers: Mapping[str, Mapping[str, list[tuple[str, float]]]],
                 export: StudyExport) -> list[dict[str, Any]]:
    """n, median, mean and sd per measure and condition (n counts answers; ``note`` the
    participants who gave them)."""
    rows: list[dict[str, Any]] = []
    order = {c: i for i, c in enumerate(export.conditions())}
    for measure, per in sorted(answers.items()):
        for condition in sorted(per, key=lambda c: order.get(c, len(order))):
            values = [v for _, v in per[condition]]
            people = len({p for p, _ in per[condition]})
            stats = _summary(values)
            rows.append(row(section, measure, item=measure, condition=condition,
                            label=condition_label(export, condition), value=stats["mean"],
                            note=f"{people} participants", **stats))
    return rows


def per_participant(answers: Mapping[str, Mapping[str, list[tuple[str, float]]]]) -> Values:
    """Each participant's mean answer per measure and condition (one value per person, so a
    condition met twice does not count a person twice in a test)."""
    collected: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for measure, per in answers.items():
        for condition, scored in per.items():
            if condition == ALL:
                continue  # about every condition at once: nothing to compare
            for participant, value in scored:
                collected[measure][condition][participant].append(value)
    return _means(collected)


__all__ = ["ALL", "COLUMNS", "DEFAULT_COMPOSITES", "SHARE_MEASURES", "TESTED_SHARES",
           "UTILITY_ITEMS", "Values", "borda", "composite_answers", "item_ratio_rounds",
           "item_ratios", "last_rankings", "likert_answers", "per_participant", "row",
           "session_outcomes", "summary_rows", "task_load_answers", "time_shares", "win_rates",
           "win_scores"]
