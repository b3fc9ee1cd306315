"""Each ready design simulated end to end with scripted participants, then analysed.

``cogym-lab study simulate DESIGN --participants 2 --scripted`` runs the shipped design file
through real sessions: the agents' LMs (and, where a task has no rule-based user, the simulated
user's) are the loopback scripted server (:mod:`tests.support.study_scripts`); the kitchen's
person is the rule-based partner, at the fastest clock, in short games (``--env-arg ticks``).
``cogym-lab study analyse`` then reads the export, and its figures are checked against what
the answers and sessions on disk say.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.eval.metrics.human_wins import SCORES, wilson_interval
from cogym_lab.records.trajectory import load_session
from cogym_lab.studies import plan_steps, sequence_for
from cogym_lab.studies.designs import load_design
from cogym_lab.studies.tables import AnswerRow, EventRow, SessionRow, read_table
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.study_scripts import responder_for

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(180)]

KITCHEN_TICKS = 60


def simulate_and_analyse(design: str, out: Path, *extra: str) -> list[dict[str, str]]:
    with ScriptedOpenAIServer(responder=responder_for(design)) as server:
        ran = CliRunner().invoke(main, [
            "study", "simulate", design, "--participants", "2", "--scripted", "--out", str(out),
            "--model", "agent-lm", "--model", "user=user-lm", "--base-url", server.base_url,
            "--no-progress", *extra])
    assert ran.exit_code == 0, ran.output
    assert "2 participants (2 run now" in " ".join(ran.output.split())
    analysed = CliRunner().invoke(main, ["study", "analyse", str(out)])
    assert analysed.exit_code == 0, analysed.output
    with (out / "analysis.csv").open(newline="", encoding="utf-8") as table:
        return list(csv.DictReader(table))


def rows_of(analysis: list[dict[str, str]], measure: str) -> list[dict[str, str]]:
    return [r for r in analysis if r["measure"] == measure]


def check_steps_walked(design_name: str, out: Path) -> tuple[list[SessionRow], list[AnswerRow]]:
    """Every participant played the sessions and answered the questionnaires their steps ask
    for, each session on the instance its step names, with its results folder on disk."""
    design = load_design(design_name)
    sessions = read_table(out / "sessions.csv", SessionRow)
    answers = read_table(out / "answers.csv", AnswerRow)
    for number, participant in enumerate(["sim-0001", "sim-0002"]):
        steps = plan_steps(design, sequence_for(design, number), number)
        played = [s for s in steps if s.session is not None]
        mine = [r for r in sessions if r.participant == participant]
        assert [(r.condition, r.instance) for r in mine] == [
            (s.condition, s.instance) for s in played]
        for step, row in zip(played, mine, strict=True):
            record = load_session(out / "sessions" / participant / step.id)
            assert record.session_id == row.session_id and record.task == step.session.task
        asked = {(s.questionnaire, s.position) for s in steps if s.kind == "questionnaire"}
        assert {(a.questionnaire, a.position) for a in answers
                if a.participant == participant} == asked
    return sessions, answers


def modes(out: Path) -> dict[tuple[str, str], dict]:
    return {(e.participant, e.step): json.loads(e.detail)
            for e in read_table(out / "events.csv", EventRow) if e.event == "session_mode"}


def test_cogym_real_simulated_with_its_baselines_and_win_rate(tmp_path):
    out = tmp_path / "real"
    analysis = simulate_and_analyse("cogym-real", out)
    sessions, answers = check_steps_walked("cogym-real", out)
    # Between subjects: one task each, then the autonomous agent alone on the same instance.
    assert [(r.condition, r.task) for r in sessions] == [
        ("with-agent-travel", "travel_planning"), ("alone-travel", "travel_planning"),
        ("with-agent-related-work", "related_work"), ("alone-related-work", "related_work")]
    assert all(r.end_reason == "finished" and r.delivered for r in sessions)
    people = [r for r in sessions if r.condition.startswith("with-agent")]
    assert all(r.person_messages >= 1 for r in people)  # the LM user gave its feedback
    assert all(r.person_messages == 0 for r in sessions if r.condition.startswith("alone"))
    assert {m["interaction"] for m in modes(out).values()} == {"notifications"}

    # The scripted preference weighs each outcome against its baseline's.
    by_position = {(r.participant, r.condition): r for r in sessions}
    for person, alone in (("with-agent-travel", "alone-travel"),
                          ("with-agent-related-work", "alone-related-work")):
        own = next(r for (p, c), r in by_position.items() if c == person)
        base = by_position[(own.participant, alone)]
        expected = "tie" if own.performance == base.performance else \
            "own" if own.performance > base.performance else "autonomous"
        chosen = next(a.value for a in answers if a.item == "preference"
                      and a.condition == person)
        assert chosen == expected

    wins = rows_of(analysis, "win_rate")
    assert {r["condition"] for r in wins} == {"with-agent-travel", "with-agent-related-work"}
    for row in wins:
        scores = [SCORES[a.value] for a in answers
                  if a.item == "preference" and a.condition == row["condition"]]
        low, high = wilson_interval(sum(scores), len(scores))
        assert int(row["n"]) == len(scores) == 1
        assert float(row["value"]) == pytest.approx(sum(scores) / len(scores))
        assert float(row["low"]) == pytest.approx(low) and float(row["high"]) == pytest.approx(high)
        assert float(row["low"]) <= float(row["value"]) <= float(row["high"])
    satisfaction = [r for r in rows_of(analysis, "satisfaction") if r["section"] == "likert"]
    assert {r["condition"] for r in satisfaction} >= {"with-agent-travel",
                                                     "with-agent-related-work"}


def test_dpt_agent_simulated_with_rule_based_people_and_borda(tmp_path):
    out = tmp_path / "dpt"
    analysis = simulate_and_analyse("dpt-agent", out, "--env-arg", f"ticks={KITCHEN_TICKS}")
    sessions, answers = check_steps_walked("dpt-agent", out)
    assert len(sessions) == 18  # a trial game and 4 agents x 2 games, each
    for row in sessions:
        assert row.task == "kitchen" and row.end_reason == "time_up"
        step = "practice-0" if row.practice else f"session-{row.position}"
        record = load_session(out / "sessions" / row.participant / step)
        assert record.env_args["ticks"] == KITCHEN_TICKS
        assert record.env_args["tick_seconds"] == 0.01  # no person to wait for
        assert record.env_args["layout"] == "counter_circuit"
    # The people's controls are recorded for each game (moves only, as the paper's people).
    assert {m["person_controls"] for m in modes(out).values()} == {"moves"}
    assert len(modes(out)) == 18
    orders = {p: [s.condition for s in sessions if s.participant == p and not s.practice]
              for p in ("sim-0001", "sim-0002")}
    assert orders["sim-0001"] != orders["sim-0002"]  # random orders
    assert all(order[0::2] == order[1::2] for order in orders.values())  # two games in a row
    first_game = out / "sessions" / "sim-0001" / "session-0" / "agent"
    assert (first_game / "lm_calls.jsonl").is_file()  # the LM agent asked the scripted LM

    # Borda by hand, from each participant's last ranking (first of four gets 4 points).
    for item in ("cooperation", "preference"):
        points: dict[str, int] = defaultdict(int)
        for participant in ("sim-0001", "sim-0002"):
            last = [a for a in answers if a.participant == participant and a.item == item
                    and a.moment == "end"]
            assert sorted(int(a.value) for a in last) == [1, 2, 3, 4]
            for answer in last:
                points[answer.part] += 5 - int(answer.value)
        borda = {r["label"]: int(float(r["value"])) for r in rows_of(analysis, "borda_points")
                 if r["item"] == item}
        assert borda == dict(points)
        assert sum(borda.values()) == 2 * (4 + 3 + 2 + 1)
    loads = rows_of(analysis, "task_load")
    assert len(loads) == 1 and 0 <= float(loads[0]["value"]) <= 100 and loads[0]["n"] == "2"


def test_cocoa_simulated_plans_against_chat_with_likert_and_wilcoxon(tmp_path):
    out = tmp_path / "cocoa"
    analysis = simulate_and_analyse("cocoa", out, "--time-limit", "120")
    sessions, answers = check_steps_walked("cocoa", out)
    assert all(r.end_reason == "finished" for r in sessions)
    for row in sessions:
        step = "practice-0" if row.practice else f"session-{row.position}"
        record = load_session(out / "sessions" / row.participant / step)
        plans = row.practice or row.condition == "plans"
        assert bool(record.env_args.get("plans")) == plans
        assert record.kinds["user"] == "user"  # the LM simulated user, on the scripted LM
        assert (row.agent_actions > 4) == plans  # proposing, steps, output: more moves
    # Latin square: the two participants meet plans and chat in opposite orders.
    firsts = {r.participant: r.condition for r in sessions if r.position == 0}
    assert sorted(firsts.values()) == ["chat", "plans"]
    assert {m.get("plans") for m in modes(out).values()} == {True, False}

    design = load_design("cocoa")
    likert_items = [i.name for q in design.questionnaires for i in q.items if i.kind == "likert"]
    likert = [r for r in analysis if r["section"] == "likert"]
    assert {(r["item"], r["condition"]) for r in likert} == {
        (item, c) for item in likert_items for c in ("plans", "chat")}
    for row in likert:
        values = [int(a.value) for a in answers
                  if a.item == row["item"] and a.condition == row["condition"]]
        assert int(row["n"]) == len(values) == 2
        assert float(row["mean"]) == pytest.approx(sum(values) / 2)
    composite = [r for r in analysis if r["section"] == "composite" and r["item"] == "utility"]
    assert {r["condition"] for r in composite} == {"plans", "chat"}
    for row in composite:
        per_person = [sum(int(a.value) for a in answers if a.participant == p
                          and a.condition == row["condition"]
                          and a.item in ("understanding", "insights", "useful_outputs")) / 3
                      for p in ("sim-0001", "sim-0002")]
        assert float(row["mean"]) == pytest.approx(sum(per_person) / 2)
    wilcoxon = [r for r in analysis if r["section"] == "tests" and r["family"] == "ratings"
                and r["test"] == "Wilcoxon signed-rank"]
    assert {r["item"] for r in wilcoxon} == {"easy_to_use", "steerable", "utility"}
    assert all(r["n"] == "2" for r in wilcoxon)


def test_a_task_argument_no_session_takes_is_refused(tmp_path):
    ran = CliRunner().invoke(main, ["study", "simulate", "dpt-agent", "--participants", "1",
                                    "--scripted", "--out", str(tmp_path / "out"),
                                    "--env-arg", "tick=60", "--no-progress"])
    assert ran.exit_code != 0 and "'tick'" in ran.output and "kitchen" in ran.output
    assert not (tmp_path / "out").exists()
