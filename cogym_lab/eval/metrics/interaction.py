"""The turn-taking ablation (Co-Gym paper §5.3, Table 6): one team and model on the same
instances of a task, run once with Co-Gym's notification protocol and once with strict
turn-taking (``interaction = "turns"``, :mod:`cogym_lab.core.turns`), compared side by side and
by paired tests over the instances run in both.

* :func:`system_agent_type` keeps the two apart in every other table: a session under strict
  turns belongs to the system ``<agent type> [turns]``, so no summary row mixes the modes.
* :func:`mode_rows`: per system and mode, the sessions, delivery rate, task performance (over
  delivered, graded sessions), Collab Score, H_init and satisfaction, as Table 6 prints them.
* :func:`paired_rows`: per system and measure, the instances run in both modes, each side's
  mean over them, the difference (notifications - turns, so a positive one favours Co-Gym's
  protocol, as the paper found) and the paired test
  (:func:`~cogym_lab.eval.metrics.outcome.paired_test` by each measure's declared scale:
  McNemar's exact test for delivery and for a task whose performance is pass or fail, else a
  paired t-test, as Table 6's p-values are). An instance run several times in a mode
  (repeated trials) counts once, with the mean of its sessions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from cogym_lab.core.turns import NOTIFICATIONS, TURNS
from cogym_lab.eval.metrics.outcome import Scale, mean_and_se, paired_test, performance_scale
from cogym_lab.records.trajectory import SessionRecord

#: The columns that name a system in these tables (the agent type as recorded, not labelled).
SYSTEM = ["task", "agent_type", "model"]
#: What each mode is compared on, by the name of the session-table column it comes from.
MEASURES = ("delivered", "performance", "collab_score", "h_init", "satisfaction")
#: The label a system under strict turn-taking gets after its agent type.
TURNS_LABEL = "[turns]"

Row = dict[str, Any]


def system_agent_type(record: SessionRecord) -> str:
    """The agent type a report's systems are named by: as recorded for Co-Gym's protocol,
    with `` [turns]`` after it for strict turn-taking."""
    if record.interaction == TURNS:
        return f"{record.agent_type} {TURNS_LABEL}"
    return record.agent_type


def _value(row: Row, measure: str) -> float:
    """One session's value of ``measure`` (NaN when it has none): task performance counts
    for delivered sessions only, as the paper's Task Perf. does."""
    if measure == "delivered":
        return 1.0 if row["delivered"] else 0.0
    if measure == "performance" and not row["delivered"]:
        return math.nan
    value = row.get(measure)
    return float(value) if isinstance(value, int | float) else math.nan


def _by_system(rows: Iterable[Row]) -> dict[tuple[str, str, str], dict[str, list[Row]]]:
    """System (task, agent type, model) -> mode -> its sessions' rows, for the systems run in
    both modes only."""
    grouped: dict[tuple[str, str, str], dict[str, list[Row]]] = defaultdict(
        lambda: defaultdict(list))
    for row in rows:
        key = (str(row["task"]), str(row["agent_type"]), str(row["model"]))
        grouped[key][str(row.get("interaction") or NOTIFICATIONS)].append(row)
    return {key: dict(modes) for key, modes in sorted(grouped.items())
            if NOTIFICATIONS in modes and TURNS in modes}


def mode_rows(rows: Sequence[Row]) -> list[Row]:
    """One row per system run in both modes and per mode: its sessions and the means of each
    measure (``delivery_rate`` for ``delivered``), as Table 6 has them."""
    table = []
    for key, modes in _by_system(rows).items():
        for mode in (NOTIFICATIONS, TURNS):
            sessions = modes[mode]
            row: Row = dict(zip(SYSTEM, key, strict=True)) | {
                "interaction": mode, "sessions": len(sessions),
                "instances": len({s["instance"] for s in sessions})}
            for measure in MEASURES:
                name = "delivery_rate" if measure == "delivered" else measure
                row[name] = mean_and_se([_value(s, measure) for s in sessions])[0]
            table.append(row)
    return table


def _per_instance(sessions: Sequence[Row], measure: str) -> dict[str, float]:
    """Instance -> the mean of ``measure`` over its sessions that have a value."""
    values: dict[str, list[float]] = defaultdict(list)
    for session in sessions:
        value = _value(session, measure)
        if not math.isnan(value):
            values[str(session["instance"])].append(value)
    return {instance: sum(v) / len(v) for instance, v in values.items()}


def paired_rows(rows: Sequence[Row]) -> list[Row]:
    """One row per system run in both modes and per measure with at least one instance valued
    in both: the paired means, their difference (notifications - turns) and the test."""
    table = []
    for key, modes in _by_system(rows).items():
        for measure in MEASURES:
            ours = _per_instance(modes[NOTIFICATIONS], measure)
            theirs = _per_instance(modes[TURNS], measure)
            shared = sorted(set(ours) & set(theirs), key=_instance_order)
            if not shared:
                continue
            a, b = [ours[i] for i in shared], [theirs[i] for i in shared]
            test = paired_test(a, b, _scale(key[0], measure, [*modes[NOTIFICATIONS],
                                                               *modes[TURNS]]))
            table.append(dict(zip(SYSTEM, key, strict=True)) | {
                "measure": measure, "paired_instances": len(shared),
                NOTIFICATIONS: sum(a) / len(a), TURNS: sum(b) / len(b),
                "difference": test.mean_difference, "test": test.test,
                "statistic": test.statistic, "p_value": test.p_value})
    return table


def _scale(task: str, measure: str, sessions: Sequence[Row]) -> Scale:
    """How ``measure`` is compared: delivery is pass or fail; task performance and the Collab
    Score (performance, or 0) as the task declares its performance under the sessions'
    protocol; H_init and satisfaction are graded (Table 6 compares satisfaction by a paired
    t-test)."""
    if measure == "delivered":
        return "dichotomous"
    if measure not in ("performance", "collab_score"):
        return "graded"
    protocols = {str(s.get("protocol")) for s in sessions}
    return performance_scale(task, protocols.pop()) if len(protocols) == 1 else "graded"


def _instance_order(instance: str) -> tuple[int, int | str]:
    """Instance numbers in numeric order, other ids after them."""
    return (0, int(instance)) if instance.isdigit() else (1, instance)


__all__ = ["MEASURES", "SYSTEM", "TURNS_LABEL", "mode_rows", "paired_rows",
           "system_agent_type"]
