"""The Cocoa plan measures from results directories: a real planned todo session with scripted
members (co-planning, stepwise and continuous running, a person step, an output edit, a rerun),
a hand-timed trajectory for the time shares, the report's plan section, and the Wilcoxon
signed-rank comparison of ratings (against scipy and against the exact distribution by hand)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from cogym_lab.core import Notification, SessionContext
from cogym_lab.envs import make_env
from cogym_lab.eval import report
from cogym_lab.eval.metrics.plan_measures import ACT_SPAN_CAP, plan_measures
from cogym_lab.eval.stats.rating_tests import compare_ratings, signed_rank
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.records.trajectory import load_session
from tests.support.trajectories import TODO_ARGS, say, write_session

A, B, C, D = ({"id": name} for name in "abcd")
PLAN = {"title": "Pack", "steps": [{"description": "List the gear", "assignee": "agent"},
                                   {"description": "Check the must-haves", "assignee": "agent"},
                                   {"description": "Review the list", "assignee": "agent"}]}


def propose() -> str:
    return f"PROPOSE_PLANS(plans={json.dumps([PLAN])})"


def plan_of(notification: Notification) -> dict[str, Any]:
    return next(c.content for c in notification.view.components if c.render_type == "plan")


def steps_of(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in (plan["plan"] or {}).get("steps", [])}


def complete(step: str, items: list[dict[str, Any]]) -> str:
    return f"COMPLETE_STEP(step={json.dumps(step)}, items={json.dumps(items)})"


class PlanningAgent:
    """Proposes the plan, then completes each running agent step: s1 with four items, s3 with
    one item the first time and two the second."""

    kind = "agent"

    def start(self, context: SessionContext) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        plan = plan_of(notification)
        if plan["plan"] is None:
            return None if plan["proposals"] else propose()
        for step in steps_of(plan).values():
            if step["status"] == "running" and step["assignee"] == "agent":
                items = {"s1": [A, B, C, D], "s3": [A] if step["runs"] == 0 else [A, B]}
                return complete(step["id"], items.get(step["id"], []))
        return None

    def end(self, final: Notification) -> None:
        pass


class PlanningUser:
    """Selects the plan, takes s2, runs s1 alone, drops one of its items, runs the rest
    continuously, completes s2, reruns s3 once, then finishes."""

    kind = "user"

    def start(self, context: SessionContext) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        plan = plan_of(notification)
        if plan["proposals"]:
            return "SELECT_PLAN(index=0)"
        steps = steps_of(plan)
        if not steps:
            return None
        s1, s2, s3 = steps["s1"], steps["s2"], steps["s3"]
        if s2["assignee"] == "agent":
            return 'ASSIGN_STEP(step="s2", assignee="person")'
        if s1["status"] == "not_run":
            return 'RUN_STEP(step="s1")'
        if s1["status"] == "done" and not s1["output"]["edited"]:
            return f'EDIT_STEP_OUTPUT(step="s1", items={json.dumps([A, B, C])})'
        # Each act waits for what it follows from: a view may be older than the agent's last
        # act, never than the user's own.
        if s1["status"] == "done" and s2["status"] == "not_run":
            return "RUN_REMAINING()"
        if s2["status"] == "needs_input":
            return complete("s2", [C, D])
        if s3["status"] == "done" and s3["runs"] == 1:
            return 'RUN_STEP(step="s3")'
        if s3["status"] == "done" and s3["runs"] == 2:
            return "FINISH()"
        return None

    def end(self, final: Notification) -> None:
        pass


@pytest.fixture(scope="module")
def planned_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("planned")
    env = make_env("todo", plans=True, **TODO_ARGS)
    result = Session(env, {"agent": PlanningAgent(), "user": PlanningUser()},
                     kinds={"agent": "agent", "user": "user"}, results_dir=directory,
                     task="todo", config=SessionConfig(idle_seconds=5)).run_sync()
    assert result.end_reason == "finished"
    return directory


def test_every_measure_of_a_real_planned_session(planned_session: Path) -> None:
    record = load_session(planned_session)
    measures = plan_measures(record)
    assert measures is not None and not measures.notes
    # s1 produced a, b, c, d; the person dropped d before s2 started from the pool: 3 of 4.
    # s2 produced c, d and continuous running started s3 from it at once: 2 of 2.
    # s3's first run was followed by s3 itself (a rerun) and its second by the end: no ratio.
    assert [(r.step, r.produced, r.carried, r.ratio) for r in measures.rounds] == [
        ("s1", 4, 3, 0.75), ("s2", 2, 2, 1.0), ("s3", 1, None, None), ("s3", 2, None, None)]
    # The user's acts: SELECT_PLAN, ASSIGN_STEP | RUN_STEP, RUN_REMAINING, COMPLETE_STEP,
    # RUN_STEP | EDIT_STEP_OUTPUT | FINISH.
    assert measures.act_counts == {"co_planning": 2, "co_execution": 4, "curation": 1,
                                   "other": 1}
    assert measures.steps_by_assignee == {"agent": 2, "person": 1}
    assert measures.completed_by == {"agent": 2, "person": 1, "not_completed": 0}
    assert (measures.rerun_steps, measures.extra_runs) == (1, 1)
    row = measures.row()
    assert row["item_ratio"] == pytest.approx(0.875) and row["ratio_rounds"] == 2
    assert row["co_planning_share"] == 0.25 and row["co_execution_share"] == 0.5
    assert row["curation_share"] == 0.125
    shares = [row[f"{a}_time_share"] for a in ("co_planning", "co_execution", "curation")]
    assert all(0 <= share <= 1 for share in shares) and sum(shares) <= 1 + 1e-9


def test_a_session_without_plans_has_no_plan_measures(tmp_path: Path) -> None:
    directory = write_session(tmp_path / "plain", [("user", "FINISH()")])
    assert plan_measures(load_session(directory)) is None
    result = report([directory], effort=False, failures=False)
    assert result.tables["plans"].empty
    assert "Interactive plans" not in result.to_text()


#: One second apart from 1001 (tests.support.trajectories): the user's acts at 1002, 1003,
#: 1006 and 1007 (the end).
TIMED = [("agent", propose()), ("user", "SELECT_PLAN(index=0)"), ("user", "RUN_ALL()"),
         ("agent", complete("s1", [A])), ("agent", complete("s2", [])),
         ("user", f'EDIT_STEP_OUTPUT(step="s1", items={json.dumps([A, B])})'),
         ("user", say("Looks good.")), ("agent", complete("s3", [B]))]


def test_time_shares_span_each_act_to_the_next_capped(tmp_path: Path) -> None:
    record = load_session(write_session(tmp_path / "timed", TIMED,
                                        env_args={**TODO_ARGS, "plans": True}))
    measures = plan_measures(record)
    assert measures is not None
    # SELECT 1002 -> RUN_ALL 1003 -> EDIT 1006 -> message 1007 -> the end at 1008.
    assert measures.act_seconds == {"co_planning": 1.0, "co_execution": 3.0, "curation": 1.0,
                                    "other": 1.0}
    assert measures.time_share("co_execution") == 0.5
    # No final state in this file: the steps come from the plan the log rebuilds. The edit of
    # s1 came while s3 ran: s2 (done) became stale, and s3 was then completed by the agent.
    assert measures.steps_by_assignee == {"agent": 3, "person": 0}
    assert measures.completed_by == {"agent": 2, "person": 0, "not_completed": 1}
    # s2 produced no items: no ratio; s1's item a went on to s2 at once: 1 of 1.
    assert [(r.step, r.ratio) for r in measures.rounds] == [("s1", 1.0), ("s2", None),
                                                           ("s3", None)]

    # A person away for a long time: the act before the gap counts for the cap only.
    late = [e if e.seq < 8 else e.model_copy(update={"time": e.time + 500})
            for e in record.events]
    capped = plan_measures(replace(record, events=late))
    assert capped is not None
    assert capped.act_seconds["curation"] == ACT_SPAN_CAP


def test_the_report_shows_the_plan_section(planned_session: Path) -> None:
    result = report([planned_session], effort=False, failures=False)
    plans = result.tables["plans"]
    assert len(plans) == 1
    row = plans.iloc[0]
    assert (row["task"], row["sessions"], row["ratio_rounds"]) == ("todo", 1, 2)
    assert row["item_ratio"] == pytest.approx(0.875)
    assert row["co_execution_share"] == 0.5 and row["steps_person"] == 1.0
    assert row["completed_agent"] == 2.0 and row["rerun_steps"] == 1.0
    assert row["sessions_with_reruns"] == 1
    text = result.to_text()
    assert "Interactive plans" in text and "item_ratio" in text
    html = result._repr_html_()
    assert "Interactive plans" in html and "item ratio" in html


# -- the Wilcoxon signed-rank comparison ------------------------------------------------------


def exact_two_sided_p(differences: list[int]) -> tuple[int, Fraction]:
    """W and its exact two-sided p-value from the definition: rank |d| (no ties here), W is
    the smaller of the positive and negative rank sums, and under the null every sign is
    equally likely, so P(W+ <= w) counts the subsets of ranks whose sum is at most w."""
    ranks = {abs(d): rank for rank, d in enumerate(sorted(differences, key=abs), start=1)}
    plus = sum(ranks[abs(d)] for d in differences if d > 0)
    minus = sum(ranks[abs(d)] for d in differences if d < 0)
    w, n = min(plus, minus), len(differences)
    at_most = sum(1 for k in range(n + 1) for subset in combinations(range(1, n + 1), k)
                  if sum(subset) <= w)
    return w, min(Fraction(1), 2 * Fraction(at_most, 2 ** n))


def test_signed_rank_matches_the_exact_distribution_worked_by_hand() -> None:
    # Differences +1, +2, -3, +4, +5, +6: ranks 1..6, W- = 3, W+ = 18, so W = 3. Subsets of
    # {1..6} summing to at most 3: {}, {1}, {2}, {3}, {1,2}: five of 64, p = 2 * 5/64.
    after = [11, 12, 7, 14, 15, 16]
    before = [10] * 6
    w, p = exact_two_sided_p([a - b for a, b in zip(after, before, strict=True)])
    assert (w, p) == (3, Fraction(10, 64))
    test = signed_rank(after, before)
    assert test is not None
    assert test.statistic == 3 and test.p_value == pytest.approx(float(p), abs=1e-12)


def test_signed_rank_matches_scipy_with_ties_and_zeros() -> None:
    a = [4, 5, 3, 5, 4, 2, 5, 4, 3, 5]
    b = [3, 3, 3, 2, 4, 1, 2, 2, 4, 3]
    test = signed_rank(a, b)
    expected = stats.wilcoxon(a, b, zero_method="wilcox")
    assert test is not None and (test.n, test.differing) == (10, 8)
    assert test.statistic == expected.statistic and test.p_value == expected.pvalue
    assert signed_rank([3, 4], [3, 2]) is None  # one differing pair: no test


def _rated(tmp_path: Path, name: str, agent_type: str, instance: int,
           rating: dict[str, Any]) -> Path:
    """A rated session of ``agent_type`` on a todo instance of its own (its item count)."""
    return write_session(tmp_path / name, [("user", "FINISH()")], agent_type=agent_type,
                         env_args={**TODO_ARGS, "min_items": 3 + instance},
                         ratings={"user": rating})


def test_the_report_compares_two_systems_on_the_same_instances(tmp_path: Path) -> None:
    planned = [5, 4, 5, 4, 5, 3, 4]
    chat = [3, 3, 4, 1, 2, 3, 2]  # differences 2, 1, 1, 3, 3, 0, 2
    ease = ([4, 4, 5, 3, 4, 4, 4], [5, 4, 4, 4, 5, 3, 5])
    for i in range(7):
        common = {"outcome_rating": 3, "satisfaction": 4, "comment": "<b>ok</b>"}
        _rated(tmp_path, f"p{i}", "collaborative-planning", i,
               common | {"steerable": planned[i], "easy_to_use": ease[0][i]}
               | ({"insights": 4} if i == 0 else {}))
        _rated(tmp_path, f"c{i}", "collaborative", i,
               common | {"steerable": chat[i], "easy_to_use": ease[1][i]}
               | ({"insights": 2} if i == 0 else {}))
    result = report([tmp_path], effort=False, failures=False)
    rows = {row["item"]: row for row in result.tables["rating_tests"].to_dict("records")}
    assert list(rows) == ["steerable", "easy_to_use", "utility", "insights", "outcome_rating",
                          "satisfaction"]
    steer = rows["steerable"]
    # collaborative sorts before collaborative-planning: it is system a.
    expected = stats.wilcoxon(chat, planned, zero_method="wilcox")
    assert steer["system_a"] == "collaborative / scripted" and steer["pairs"] == 7
    assert (steer["median_a"], steer["median_b"]) == (3, 4)
    assert steer["W"] == expected.statistic == 0 and steer["p_value"] == expected.pvalue
    ease_p = stats.wilcoxon(ease[1], ease[0], zero_method="wilcox").pvalue
    assert rows["easy_to_use"]["p_value"] == ease_p
    # Two items were tested (utility has one pair, the others never differ).
    assert steer["p_bonferroni"] == min(1.0, 2 * expected.pvalue)
    assert "too few pairs" in rows["utility"]["note"] and math.isnan(rows["utility"]["W"])
    assert math.isnan(rows["utility"]["p_bonferroni"])
    assert "too few pairs" in rows["outcome_rating"]["note"]
    assert "Wilcoxon" in result.to_text()


@pytest.mark.parametrize("protocol", ["cogym", "cogym_lab"])
def test_satisfaction_is_compared_as_the_protocol_says(tmp_path: Path, protocol: str) -> None:
    """Under cogym, Co-Gym's satisfaction and outcome rating by a paired t-test (Co-Gym §5.3:
    "p = 0.012 in pairwise t-test"); the Cocoa items, and everything under cogym_lab, by
    Wilcoxon's signed-rank test. Each row names its test."""
    ours, theirs = [5, 4, 5, 4, 4, 5, 3], [3, 4, 3, 3, 2, 4, 3]
    records = {}
    for agent_type, values in (("collaborative", ours), ("collaborative-planning", theirs)):
        records[("todo", agent_type, "scripted")] = [
            load_session(write_session(
                tmp_path / f"{agent_type}{i}", [("user", "FINISH()")], agent_type=agent_type,
                env_args={**TODO_ARGS, "min_items": 3 + i}, protocol=protocol,
                ratings={"user": {"outcome_rating": 3, "satisfaction": value,
                                  "steerable": value}}))
            for i, value in enumerate(values)]
    rows = {row["item"]: row for row in compare_ratings(records)}
    satisfaction, steer = rows["satisfaction"], rows["steerable"]
    assert steer["test"] == "Wilcoxon signed-rank"
    assert steer["W"] == stats.wilcoxon(ours, theirs, zero_method="wilcox").statistic
    if protocol == "cogym":
        expected = stats.ttest_rel(ours, theirs)
        assert satisfaction["test"] == "paired t-test" and math.isnan(satisfaction["W"])
        assert satisfaction["t"] == pytest.approx(expected.statistic)
        assert satisfaction["p_value"] == pytest.approx(expected.pvalue)
        assert rows["outcome_rating"]["test"] == "paired t-test"  # no spread: no test
        assert math.isnan(rows["outcome_rating"]["p_value"])
    else:
        expected_w = stats.wilcoxon(ours, theirs, zero_method="wilcox")
        assert satisfaction["test"] == "Wilcoxon signed-rank" and math.isnan(satisfaction["t"])
        assert satisfaction["W"] == expected_w.statistic
        assert satisfaction["p_value"] == pytest.approx(expected_w.pvalue)


def test_the_utility_composite_is_compared_and_corrected_with_the_hypotheses(
        tmp_path: Path) -> None:
    """The composite (mean of understanding, insights, useful outputs) is compared per instance
    by the signed-rank test and corrected with the study's other hypotheses; the other Likert
    items (here clear_steps) are corrected among themselves."""
    utility_items = ("understanding", "insights", "useful_outputs")
    planned = [(5, 4, 5), (4, 4, 4), (5, 5, 3), (4, 3, 5), (5, 5, 5), (3, 4, 4), (4, 5, 4)]
    chat = [(3, 3, 2), (3, 4, 3), (4, 3, 3), (2, 2, 2), (3, 2, 4), (3, 3, 3), (2, 3, 3)]
    steer = ([5, 4, 5, 4, 5, 3, 4], [3, 3, 4, 1, 2, 3, 2])
    steps = ([4, 5, 3, 4, 5, 4, 5], [2, 3, 3, 3, 4, 2, 3])
    for i in range(7):
        common = {"outcome_rating": 3, "satisfaction": 4}
        _rated(tmp_path, f"p{i}", "collaborative-planning", i, common | dict(
            zip(utility_items, planned[i], strict=True)) | {"steerable": steer[0][i],
                                                             "clear_steps": steps[0][i]})
        _rated(tmp_path, f"c{i}", "collaborative", i, common | dict(
            zip(utility_items, chat[i], strict=True)) | {"steerable": steer[1][i],
                                                          "clear_steps": steps[1][i]})
    result = report([tmp_path], effort=False, failures=False)
    rows = {row["item"]: row for row in result.tables["rating_tests"].to_dict("records")}
    utility = rows["utility"]
    a = [sum(values) / 3 for values in chat]  # collaborative sorts first: system a
    b = [sum(values) / 3 for values in planned]
    expected = stats.wilcoxon(a, b, zero_method="wilcox")
    assert utility["test"] == "Wilcoxon signed-rank" and utility["pairs"] == 7
    assert utility["median_a"] == pytest.approx(sorted(a)[3])
    assert utility["W"] == expected.statistic and utility["p_value"] == pytest.approx(
        expected.pvalue)
    # Tested among the hypotheses: steerable and utility (outcome and satisfaction never
    # differ); the other Likert items (clear_steps and the three utility items) among
    # themselves.
    assert utility["p_bonferroni"] == pytest.approx(min(1.0, 2 * expected.pvalue))
    steps_p = stats.wilcoxon(steps[1], steps[0], zero_method="wilcox").pvalue
    assert rows["clear_steps"]["p_bonferroni"] == pytest.approx(min(1.0, 4 * steps_p))
    for item in utility_items:  # each utility item is described on its own row too
        assert rows[item]["pairs"] == 7


def test_compare_ratings_leaves_systems_of_other_tasks_apart(tmp_path: Path) -> None:
    record = load_session(_rated(tmp_path, "x", "collaborative", 0,
                                 {"outcome_rating": 3, "satisfaction": 3}))
    assert compare_ratings({("todo", "a", "-"): [record], ("travel", "b", "-"): [record]}) == []
