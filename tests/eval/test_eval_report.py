"""The evaluation report over run directories: tables, paper-style text, CSV and PNG files,
inline HTML, a scripted LM judge end to end, and ``show``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from scipy import stats

from cogym_lab.eval import EvalReport, report, show
from cogym_lab.eval.reporting.reports import _paper_table
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.trajectories import (
    AUTONOMOUS_RUN,
    FOUR_ROUNDS,
    TODO_ARGS,
    add,
    say,
    write_session,
)

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

#: A second instance: must-haves rain jacket and headlamp, at least 5 items, so
#: performance = (share of must-haves + min(items, 5) / 5) / 2.
OTHER_ARGS = {**TODO_ARGS, "min_items": 5}
# {tent}: (0 + 1/5)/2 = 0.1; {tent, rain jacket}: (1/2 + 2/5)/2 = 0.45
SHORT_COLLABORATION = [("agent", add("tent")), ("user", say("Please add a rain jacket.")),
                       ("agent", add("rain jacket")), ("user", "FINISH()")]


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    """Two runs on the same two instances: a collaborative team and the autonomous baseline."""
    collab, auto = tmp_path / "collaborative", tmp_path / "autonomous"
    write_session(collab / "0", FOUR_ROUNDS, tokens={"agent": (500, 120), "user": (300, 40)},
                  ratings={"user": {"outcome_rating": 4, "satisfaction": 5}})
    write_session(collab / "1", SHORT_COLLABORATION, env_args=OTHER_ARGS,
                  tokens={"agent": (200, 60), "user": (100, 20)},
                  ratings={"user": {"outcome_rating": 2, "satisfaction": 3}})
    (collab / "run.json").write_text(json.dumps({  # as the batch runner writes it
        "task": "todo", "team": "collaborative", "lms": {"agent": {"model": "scripted"}},
        "team_config": {"members": {"agent": {"kind": "agent", "type": "collaborative"},
                                    "user": {"kind": "user", "type": "simulated"}}}}))
    write_session(auto / "0", AUTONOMOUS_RUN, agent_type="autonomous")  # 0.25
    # {tent, stove}: (0 + 2/5)/2 = 0.2
    write_session(auto / "1", AUTONOMOUS_RUN, env_args=OTHER_ARGS, agent_type="autonomous")
    (auto / "run.json").write_text(json.dumps({"config": {"team": "autonomous"}}))
    return {"collaborative": collab, "autonomous": auto, "root": tmp_path}


def row(table: pd.DataFrame, agent_type: str) -> pd.Series:
    rows = table[table["agent_type"] == agent_type]
    assert len(rows) == 1, table
    return rows.iloc[0]


def test_report_without_a_judge(runs: dict[str, Path], tmp_path: Path) -> None:
    result = report([runs["collaborative"], runs["autonomous"]])
    assert isinstance(result, EvalReport)
    sessions = result.tables["sessions"]
    assert len(sessions) == 4 and set(sessions["run"]) == {"collaborative", "autonomous"}
    summary = result.tables["summary"]
    collab, auto = row(summary, "collaborative"), row(summary, "autonomous")
    assert collab["sessions"] == 2 and collab["delivery_rate"] == 1.0
    assert collab["performance"] == pytest.approx((1.0 + 0.45) / 2)
    assert auto["performance"] == pytest.approx((0.25 + 0.2) / 2)
    assert collab["satisfaction"] == 4.0 and collab["outcome_rating"] == 3.0
    # The user: 3 + 2 collaboration acts... only messages and a finish, no task action -> 0
    assert collab["user_env_act_ratio"] == 0.0
    assert collab["agent_tokens"] == 90.0 and collab["user_tokens"] == 30.0
    assert math.isnan(collab["h_init"])  # needs the judge
    comparison = row(result.tables["comparison"], "collaborative")
    # Paired on both instances: differences 0.75 and 0.25.
    expected = stats.ttest_rel([1.0, 0.45], [0.25, 0.2])
    assert comparison["test"] == "paired t-test" and comparison["graded_pairs"] == 2
    assert comparison["mean_difference"] == pytest.approx(0.5)
    assert comparison["p_value"] == pytest.approx(expected.pvalue)
    assert math.isnan(comparison["win_rate"])
    effort = row(result.tables["effort"], "collaborative")
    # Session 0: P = [0.25, 0.625, 0.625, 1.0]; session 1: P = [0.1, 0.45].
    assert effort["utility_first_update"] == pytest.approx((0.25 + 0.1) / 2)
    assert effort["utility_final"] == pytest.approx((1.0 + 0.45) / 2)
    assert effort["refinement_gain"] == pytest.approx((0.75 + 0.35) / 2)
    assert effort["autonomous_baseline"] == pytest.approx(0.225)
    assert effort["agent_user_token_ratio"] == pytest.approx(180 / 60)
    assert math.isnan(effort["usability_drop@1"])  # needs progress ratings
    scaling = result.tables["scaling"]
    curve = scaling[scaling["agent_type"] == "collaborative"]
    assert list(curve["running"]) == [2, 2, 2, 1, 1]
    assert list(curve["mean"]) == pytest.approx([0.0, 0.175, 0.5375, 0.5375, 0.725])
    actions = result.tables["actions"]
    human = actions[(actions["agent_type"] == "collaborative") & (actions["party"] == "human")]
    assert float(human["collaboration_acts"].iloc[0]) == pytest.approx((4 + 2) / 2)
    assert any("No judge" in note for note in result.notes)

    text = result.to_text()
    assert "Outcome and process (agent type x task)" in text
    assert "collaborative" in text and "autonomous" in text and "Delivery" in text
    assert "0.725" in text  # the mean final utility
    html = result._repr_html_()
    assert "<table" in html and html.count("data:image/png;base64,") == 3

    written = result.save(tmp_path / "out")
    names = {path.name for path in written}
    assert {"summary.csv", "sessions.csv", "comparison.csv", "effort.csv", "scaling.csv",
            "scaling_curves.png", "metric_bars.png", "initiative_shares.png",
            "report.txt"} <= names
    again = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(again["agent_type"]) == {"collaborative", "autonomous"}
    for name in ("scaling_curves.png", "metric_bars.png", "initiative_shares.png"):
        with Image.open(tmp_path / "out" / name) as image:
            image.verify()
        with Image.open(tmp_path / "out" / name) as image:
            pixels = np.asarray(image.convert("RGB"))
        assert image.format == "PNG" and pixels.shape[0] > 100 and pixels.shape[1] > 200
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10  # drawn, not blank


def judge_responder(body: dict[str, Any]) -> str:
    """A judge for the fixture's runs: every message takes initiative; the outcome with a rain
    jacket wins; progress ratings by round 2, 2, 4, 5; every session has a communication
    failure."""
    prompt = body["messages"][-1]["content"]
    if "Label each of the" in prompt:
        numbers = [int(n) for n in re.findall(r"^\[M(\d+)\]", prompt, re.M)]
        return json.dumps({"labels": [{"n": n, "initiative": True, "kind": "dialogue"}
                                      for n in numbers]})
    if "<outcome_A>" in prompt:
        first = prompt.split("<outcome_A>")[1].split("</outcome_A>")[0]
        return json.dumps({"winner": "A" if "rain jacket" in first else "B"})
    if "## Round" in prompt:
        rounds = [int(n) for n in re.findall(r"^## Round (\d+)", prompt, re.M)]
        return json.dumps({"ratings": [{"round": k, "rating": {1: 2, 2: 2, 3: 4}.get(k, 5)}
                                       for k in rounds]})
    if "these failure types" in prompt:  # the taxonomy: C.3 is a communication failure
        return json.dumps({"findings": [{"code": "C.3", "attribution": "lm",
                                         "evidence": ["Please add a rain jacket."]}]})
    return "no idea"


def test_report_with_a_scripted_judge(runs: dict[str, Path], tmp_path: Path) -> None:
    with ScriptedOpenAIServer(responder=judge_responder) as server:
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0))
        result = report([runs["collaborative"]], judge=judge, baseline=runs["autonomous"],
                        out=tmp_path / "out")
        assert server.bodies and all(b["model"] == "judge-lm" for b in server.bodies)
    summary = result.tables["summary"]
    assert list(summary["agent_type"]) == ["collaborative"]
    collab = row(summary, "collaborative")
    # Session 0: 3 agent and 3 user messages, all initiative: H = 1. Session 1: only the
    # user spoke: H = 0. Mean 0.5; the agents' share: 3/6 and 0/1 -> 0.25.
    assert collab["h_init"] == pytest.approx(0.5)
    assert collab["agent_initiative_share"] == pytest.approx(0.25)
    comparison = row(result.tables["comparison"], "collaborative")
    # Both collaborative outcomes list a rain jacket and neither baseline does: 2 wins of 2.
    assert (comparison["compared"], comparison["win_rate"]) == (2, 1.0)
    assert (comparison["win_ci_low"], comparison["win_ci_high"]) == (1.0, 1.0)
    effort = row(result.tables["effort"], "collaborative")
    # Session 0 (ratings 2, 2, 4, 5): D@1 = 0.25 - 1.0, D@2 = 0.625 - 1.0, D@3 = 0.
    # Session 1 (ratings 2, 2; P = 0.1, 0.45): D@1 = 0.1 - 0.45, D@2 = 0.45 - 0.45.
    assert effort["usability_drop@1"] == pytest.approx((-0.75 - 0.35) / 2)
    assert effort["usability_drop@2"] == pytest.approx(-0.375 / 2)
    assert effort["usability_drop@3"] == 0.0
    assert effort["usability_drop@1_rel"] == pytest.approx(-0.55 / 0.725)
    failures = row(result.tables["failures"], "collaborative")
    # Both sessions were annotated with C.3, but its quote is only in session 1's log: a
    # finding without a verified quote is not counted, so communication is 1/2.
    assert failures["annotated"] == 2 and failures["communication"] == 0.5
    assert failures["planning"] == 0.0
    evidence = result.tables["failure_evidence"]
    assert list(evidence["verified_quotes"]) == [0, 1]  # the quote is only in session 1
    assert list(evidence["code"]) == ["C.3", "C.3"]
    assert not any("No judge" in note for note in result.notes)
    assert (tmp_path / "out" / "failures.csv").is_file()
    assert "Failure prevalence" in (tmp_path / "out" / "report.txt").read_text()


def test_h_init_of_a_team_of_one_is_not_applicable(runs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """The Fully Autonomous Agent works alone: H_init is None in the data and "/" in every
    report view, as the Co-Gym paper prints it, whether or not a judge labelled messages."""
    alone = tmp_path / "alone"
    write_session(alone / "0", AUTONOMOUS_RUN, agent_type="autonomous",
                  team=(("agent", "agent"),))
    with ScriptedOpenAIServer(responder=judge_responder) as server:
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0))
        result = report([runs["collaborative"], alone], judge=judge, effort=False,
                        failures=False, audit=False)
    sessions = result.tables["sessions"]
    solo = sessions[sessions["agent_type"] == "autonomous"].iloc[0]
    assert solo["team_size"] == 1 and pd.isna(solo["h_init"])
    summary = result.tables["summary"]
    assert not row(summary, "autonomous")["h_init_applies"]
    assert row(summary, "collaborative")["h_init"] == pytest.approx(0.5)  # judged: applies
    paper = _paper_table(summary)
    assert paper.loc[("autonomous", "scripted"), ("todo", "H_init")] == "/"
    assert paper.loc[("collaborative", "scripted"), ("todo", "H_init")] == pytest.approx(0.5)
    text = result.to_text()
    paper_lines = text.split("Outcome and process")[1].split("\n\n")[0].splitlines()
    assert [line.split()[-1] for line in paper_lines if line.startswith("autonomous")] == ["/"]
    assert "0.500" in text
    html = result._repr_html_()
    assert ">/</td>" in html


async def test_report_runs_from_inside_an_event_loop(runs: dict[str, Path]) -> None:
    # A notebook cell already runs an event loop; report() must still work there.
    result = report(runs["root"], effort=False, failures=False)
    assert set(result.tables["summary"]["agent_type"]) == {"collaborative", "autonomous"}
    assert result.tables["effort"].empty


def test_failed_and_unfinished_sessions_are_counted(runs: dict[str, Path]) -> None:
    broken = write_session(runs["collaborative"] / "2", FOUR_ROUNDS[:2], end=None)
    data = json.loads((broken / "session.json").read_text())
    (broken / "session.json").write_text(json.dumps(data | {"status": "failed",
                                                            "error": "LM unreachable"}))
    # One that failed before writing anything but its error still belongs to its system,
    # known from run.json.
    early = runs["collaborative"] / "3"
    early.mkdir()
    (early / "session.json").write_text(json.dumps({"session_id": "s3", "task": "todo",
                                                    "status": "failed", "error": "no LM"}))
    result = report(runs["collaborative"])
    collab = row(result.tables["summary"], "collaborative")
    assert collab["sessions"] == 4 and collab["failed"] == 2
    # Crashed sessions are infrastructure failures: counted apart, out of the delivery rate
    # unless asked for (then they count as undelivered).
    assert (collab["completed"], collab["infrastructure"], collab["counted"]) == (2, 2, 2)
    assert collab["delivery_rate"] == pytest.approx(2 / 2)
    assert any("s3: no events (no LM)" in note for note in result.notes)
    counted = row(report(runs["collaborative"], include_failures=True).tables["summary"],
                  "collaborative")
    assert counted["delivery_rate"] == pytest.approx(2 / 4)


def test_show_prints_a_readable_trajectory(runs: dict[str, Path]) -> None:
    text = show(runs["collaborative"] / "0")
    assert "task=todo" in text and "agent type=collaborative" in text
    assert "said: “Please add a headlamp.”" in text  # in plain words
    assert "Delivered: True" in text and "rain jacket" in text
    assert "performance=1.000" in text
    assert "Rating by user: outcome 4, satisfaction 5" in text
    assert "Tokens agent: 500 prompt + 120 completion" in text
