"""Cocoa's plans-vs-chat measures (activity codes and time shares, the output-to-input item
ratio) for both conditions: hand-timed logs worked out by hand, real tiny sessions (a planned
todo session with the plan-aware agent and a scripted LM, a chat todo session with the rule-based
agent), their sessions.csv rows, and the analysis's rows and tests on a hand-written export."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from cogym_lab.core import Notification, SessionContext
from cogym_lab.core.actions import Action
from cogym_lab.core.grammar import format_action
from cogym_lab.envs import make_env
from cogym_lab.envs.todo.example_team import ExampleAgent
from cogym_lab.eval.metrics.activity_codes import ACT_SPAN_CAP, activity_codes, split_ratios
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.records.trajectory import SessionRecord, load_session
from cogym_lab.studies.analysis import AnalysisOptions, analyse, write_analysis
from cogym_lab.studies.export_reader import ExportError, read_export
from cogym_lab.studies.session_rows import session_row
from cogym_lab.testing import ScriptedOpenAIServer
from tests.agents.test_plan_aware_agent import PlanRolePlay
from tests.agents.test_plan_aware_agent import run_session as run_planned_session
from tests.studies import export_fixture as fx
from tests.support.trajectories import TODO_ARGS, add, say, write_session

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

CODES = ("planning", "executing", "inspecting", "waiting", "other")
PLAN = {"title": "Pack", "steps": [{"description": "Find gear", "assignee": "agent"},
                                   {"description": "Pick", "assignee": "person"},
                                   {"description": "Write it up", "assignee": "agent"}]}


def _items(*names: str) -> str:
    return json.dumps([{"id": name} for name in names])


def timed(directory: Path, steps: list[tuple[float, str, str]], **kwargs: Any) -> SessionRecord:
    """A real results folder of ``steps`` (time after the start, role, action), then the log's
    times set to the ones given (the session starts at 1000; the end is the last step's)."""
    write_session(directory, [(role, action) for _, role, action in steps], **kwargs)
    record = load_session(directory)
    times = [0.0, *(t for t, _, _ in steps)]
    times += [times[-1]] * (len(record.events) - len(times))  # the end
    assert all(e.status == "ok" for e in record.events), [e.error for e in record.events]
    return replace(record, events=[e.model_copy(update={"time": 1000.0 + t})
                                   for e, t in zip(record.events, times, strict=True)])


# -- hand-timed logs ---------------------------------------------------------------------------

CHAT = [(0, "agent", 'SEARCH_IDEAS(trip="camping")'),
        (10, "user", say("Please bring a tent and a stove")),
        (12, "agent", add("tent")), (13, "agent", add("stove")),
        (14, "agent", say("More ideas:\n- map\n- headlamp")),
        (100, "user", say("Drop the map, keep the headlamp")),
        (101, "agent", add("headlamp")),
        (130, "user", "FINISH()")]


def test_a_chat_log_coded_by_hand(tmp_path: Path) -> None:
    codes = activity_codes(timed(tmp_path / "chat", CHAT))
    assert not codes.planned
    # 0-10 the first message is composed: planning (a new request: no edit word, names nothing
    # the agent produced). 10-12 nothing back yet: waiting; 12-14 the agent's output: inspecting.
    # 14-100: the second message (it names the map the agent listed): executing for the cap
    # (60 s), inspecting the 26 s before. 100-101 waiting; 101-130 finishing: other; the end
    # comes at 130 (nothing left).
    assert codes.seconds == {"planning": 10.0, "executing": 60.0, "inspecting": 28.0,
                             "waiting": 3.0, "other": 29.0}
    assert codes.acts == {"planning": 1, "executing": 1, "inspecting": 0, "waiting": 0,
                          "other": 1}
    assert codes.share("executing") == pytest.approx(60 / 130)
    assert sum(codes.share(c) for c in CODES) == pytest.approx(1.0)
    # Turns: the start (camping), the first message's (tent, stove, map, headlamp), the
    # second's (headlamp, no turn after it). The first message names no 'camping': 0 of 1; the
    # second names map and headlamp, and its turn adds the headlamp: 2 of 4.
    assert (codes.rounds, codes.ratios, codes.item_ratio) == (3, [0.0, 0.5], 0.25)


PLANNED = [(1, "agent", f"PROPOSE_PLANS(plans={json.dumps([PLAN])})"),
           (21, "user", "SELECT_PLAN(index=0)"),
           (31, "user", 'EDIT_STEP(step="s1", description="Find camping gear")'),
           (32, "user", 'RUN_STEP(step="s1")'),
           (40, "agent", f'COMPLETE_STEP(step="s1", items={_items("a", "b", "c", "d")})'),
           (140, "user", f'EDIT_STEP_OUTPUT(step="s1", items={_items("a", "b")})'),
           (150, "user", 'RUN_STEP(step="s2")'),
           (170, "user", f'COMPLETE_STEP(step="s2", items={_items("a")})'),
           (171, "user", 'RUN_STEP(step="s3")'),
           (180, "agent", f'COMPLETE_STEP(step="s3", items={_items("x")})'),
           (200, "user", "FINISH()")]


def test_a_planned_log_coded_by_hand(tmp_path: Path) -> None:
    codes = activity_codes(timed(tmp_path / "plan", PLANNED,
                                 env_args={**TODO_ARGS, "plans": True}))
    assert codes.planned
    # 0-1 waiting for the proposal; 1-21 picking it and 21-31 editing a step: planning 30.
    # 31-32 running s1, then 32-40 waiting for it; 40-140 the output: inspecting 40, then
    # curating it for the cap, 60; 140-150 running s2, 150-170 doing it, 170-171 running s3:
    # executing 92 in all. 171-180 waiting; 180-200 finishing: other 20.
    assert codes.seconds == {"planning": 30.0, "executing": 92.0, "inspecting": 40.0,
                             "waiting": 18.0, "other": 20.0}
    assert ACT_SPAN_CAP == 60.0
    # s1 produced four items, two were left when s2 started: 0.5; s2's one went on to s3: 1.
    assert (codes.rounds, codes.ratios) == (3, [0.5, 1.0])
    assert codes.item_ratio == 0.75


# -- real tiny sessions ------------------------------------------------------------------------

def _act(name: str, **args: Any) -> str:
    return format_action(Action(name=name, args=args))


class ChattingPerson:
    """Asks for a rain jacket, approves the agent's request, then asks for a map and to keep
    the tent, and finishes once the map is listed."""

    kind = "user"

    def start(self, context: SessionContext) -> None:
        self.said = 0

    async def act(self, notification: Notification) -> str | None:
        listed = {item["text"] for item in notification.view["checklist"].content}
        if self.said == 0:
            self.said = 1
            return _act("SEND_TEAMMATE_MESSAGE", message="Please bring a rain jacket")
        if notification.pending_confirmations:
            return _act("ACCEPT_CONFIRMATION",
                        request_id=notification.pending_confirmations[0].request_id)
        reported = any(m.sender == "agent" for m in notification.chat)
        if self.said == 1 and reported:
            self.said = 2
            return _act("SEND_TEAMMATE_MESSAGE", message="Keep the tent, and bring a map")
        if self.said == 2 and "map" in listed:
            return _act("FINISH")
        return None

    def end(self, final: Notification) -> None:
        pass


@pytest.fixture(scope="module")
def chat_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("chat")
    result = Session(make_env("todo"), {"agent": ExampleAgent(), "user": ChattingPerson()},
                     kinds={"agent": "agent", "user": "user"}, results_dir=folder,
                     config=SessionConfig(idle_seconds=2, timeout=60)).run_sync()
    assert result.end_reason == "finished"
    return folder


@pytest.fixture(scope="module")
def plan_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plans")
    with ScriptedOpenAIServer(responder=PlanRolePlay()) as server:
        assert run_planned_session(server, folder).end_reason == "finished"
    return folder


def test_a_real_chat_session_is_coded_from_its_log(chat_session: Path) -> None:
    record = load_session(chat_session)
    codes = activity_codes(record)
    # The person: a request (planning); the approval and the second message (it names the
    # tent the agent added, and says keep): executing; finishing: other.
    assert codes.acts == {"planning": 1, "executing": 2, "inspecting": 0, "waiting": 0,
                          "other": 1}
    # Turns: before the first message the agent searched (camping); the first message's turn
    # added the rain jacket and five of the ideas, asked to add a sixth, and reported; the
    # second's added the map. The second message names the tent of the seven, and the agent's
    # turn names none of the others: 1 of 7. 'camping' is named by nothing after it: 0.
    first = [e for e in record.events if e.actor == "agent" and e.type.value == "action"]
    assert first[0].action == 'SEARCH_IDEAS(trip="camping")'
    assert (codes.rounds, codes.ratios) == (3, [0.0, pytest.approx(1 / 7)])
    assert sum(codes.share(c) for c in CODES) == pytest.approx(1.0)


def test_a_real_planned_session_is_coded_from_its_log(plan_session: Path) -> None:
    codes = activity_codes(load_session(plan_session))
    assert codes.planned
    # The person picked the plan and took s2 (planning), completed s2 (executing), finished.
    assert codes.acts == {"planning": 2, "executing": 1, "inspecting": 0, "waiting": 0,
                          "other": 1}
    # s1 produced the tent and the next step started from it; s2 (the person's rain jacket)
    # went on to s3 under continuous running; s3 was followed by nothing.
    assert (codes.rounds, codes.ratios, codes.item_ratio) == (3, [1.0, 1.0], 1.0)


def test_the_session_rows_carry_the_codes(chat_session: Path, plan_session: Path) -> None:
    for folder, condition in ((chat_session, "chat"), (plan_session, "plans")):
        record = load_session(folder)
        codes = activity_codes(record)
        row = session_row(record, participant="p1", position=0, condition=condition,
                          label="A", practice=False, instance=0)
        assert row.share_planning == codes.share("planning")
        assert row.share_inspecting == codes.share("inspecting")
        shares = [getattr(row, f"share_{c}") for c in CODES]
        assert sum(shares) == pytest.approx(1.0)
        assert split_ratios(row.item_ratios) == pytest.approx(codes.ratios, abs=1e-6)
        assert row.item_ratio == codes.item_ratio and row.item_rounds == 3


# -- the analysis -------------------------------------------------------------------------------

def _one(rows: list[dict], **match: object) -> dict:
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_the_analysis_reports_and_tests_the_shares_and_ratios(tmp_path: Path) -> None:
    export = fx.write(tmp_path / "human", plans_vs_chat=True)
    analysis = analyse(export, AnalysisOptions(measures=("paired_t", "time_shares",
                                                         "item_ratio")))
    shares = analysis.section("time_shares")
    inspect_c1 = _one(shares, measure="share_inspecting", condition="c1")
    assert inspect_c1["mean"] == pytest.approx(sum(fx.INSPECTING["c1"]) / 6)
    assert inspect_c1["n"] == 6 and inspect_c1["note"] == "6 participants"
    ratios = analysis.section("item_ratio")
    c1 = _one(ratios, condition="c1")
    pooled = [r for p in fx.PEOPLE for r in fx.RATIOS["c1"][p]]
    assert (c1["n"], c1["mean"]) == (len(pooled), pytest.approx(sum(pooled) / len(pooled)))
    assert c1["note"] == f"{len(pooled)} rounds of 6 sessions, 6 participants"

    tests = analysis.section("tests")
    paired = _one(tests, family="time_shares", item="share_inspecting", condition="c1",
                  condition_b="c2")
    expected = stats.ttest_rel(fx.INSPECTING["c1"], fx.INSPECTING["c2"])
    assert paired["test"] == "paired t-test" and paired["n"] == 6
    assert paired["statistic"] == pytest.approx(expected.statistic)
    assert paired["p_value"] == pytest.approx(expected.pvalue)
    family = [r for r in tests if r["family"] == "time_shares" and r["condition"] == "c1"
              and r["condition_b"] == "c2"]
    assert {r["item"] for r in family} == {"share_planning", "share_executing",
                                           "share_inspecting"}  # waiting, other: not tested
    assert paired["p_bonferroni"] == pytest.approx(min(1.0, 3 * expected.pvalue))

    ratio_test = _one(tests, family="item_ratio", condition="c1", condition_b="c2")
    other = [r for p in fx.PEOPLE for r in fx.RATIOS["c2"][p]]
    mw = stats.mannwhitneyu(pooled, other, alternative="two-sided")
    assert ratio_test["test"] == "Mann-Whitney U" and ratio_test["n"] == len(pooled) + len(other)
    assert (ratio_test["statistic"], ratio_test["p_value"]) == pytest.approx(
        (mw.statistic, mw.pvalue))
    assert "rounds pooled" in ratio_test["note"]

    written = write_analysis(analysis, tmp_path / "out")
    assert {"time_shares.png", "item_ratio.png"} <= {p.name for p in written}
    text = (tmp_path / "out" / "analysis.md").read_text()
    assert "Plans vs chat: time shares" in text and "output-to-input item ratio" in text


def test_wilcoxon_without_paired_t_and_the_design_decides_what_is_reported(
        tmp_path: Path) -> None:
    export = fx.write(tmp_path / "human", plans_vs_chat=True)
    tests = analyse(export, AnalysisOptions(measures=("time_shares",))).section("tests")
    inspect = _one(tests, family="time_shares", item="share_inspecting", condition="c1",
                   condition_b="c2")
    expected = stats.wilcoxon(fx.INSPECTING["c1"], fx.INSPECTING["c2"])
    assert inspect["test"] == "Wilcoxon signed-rank"
    assert inspect["p_value"] == pytest.approx(expected.pvalue)
    assert not [r for r in tests if r["family"] == "item_ratio"]  # the design did not name it
    unnamed = analyse(export, AnalysisOptions(measures=("wilcoxon",)))
    assert not unnamed.section("time_shares") and not unnamed.section("item_ratio")
    everything = analyse(export)  # no design: whatever the export has
    assert everything.section("time_shares") and everything.section("item_ratio")


def test_a_malformed_ratio_cell_is_named(tmp_path: Path) -> None:
    export = fx.write(tmp_path / "human", plans_vs_chat=True)
    sessions = (export / "sessions.csv").read_text().replace("0.5|", "half|", 1)
    (export / "sessions.csv").write_text(sessions)
    with pytest.raises(ExportError, match=r"sessions.csv, line \d+: item_ratios.*'half'"):
        read_export(export)
