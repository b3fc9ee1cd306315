"""``cogym-lab study simulate``: whole designs walked by simulated participants, end to end,
through the real sessions, the export's tables and the loopback LM server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.records.trajectory import load_session
from cogym_lab.studies import plan_steps, sequence_for
from cogym_lab.studies.simulate import load_study_design
from cogym_lab.studies.tables import AnswerRow, EventRow, ParticipantRow, SessionRow, read_table
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.lm_scripts import user_choice

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

TODO_DESIGN = """
name = "todo-mini"
title = "Two agents on a packing list"
consent = "You agree to take part."
instructions = "Write a packing list with the agent."

[assignment]
subjects = "within"
order = "latin"

[[conditions]]
name = "plain"
label = "Agent A"
session = { task = "todo", team = "example", instances = [0] }

[[conditions]]
name = "hurried"
label = "Agent B"
simulated_traits = ["impatient", "sceptical"]
session = { task = "todo", team = "example", instances = [1] }

[[practice]]
title = "Practice"
session = { task = "todo", team = "example", instances = [2] }

[[questionnaires]]
name = "after"
after = "session"
items = [
  { kind = "likert", name = "satisfied", text = "I was satisfied with the result." },
  { kind = "text", name = "comment", text = "Anything else?" },
  { kind = "task_load", name = "task_load" },
]

[[questionnaires]]
name = "final"
after = "end"
items = [
  { kind = "ranking", name = "rank", text = "Rank the agents, best first." },
  { kind = "choice", name = "prefer", text = "Which result?", options = ["own", "autonomous", "tie"] },
]
"""

KITCHEN_TEAM = """
name = "kitchen-fsm-lettuce"
tasks = ["kitchen"]
[session]
max_events = 5000
[members.agent]
type = "kitchen-fsm"
[members.user]
type = "kitchen-lettuce"
"""


def kitchen_design(team_file: Path) -> str:
    return f"""
name = "kitchen-mini"
title = "Two kitchen partners"
consent = "You agree to take part."

[assignment]
subjects = "within"
order = "latin"

[[conditions]]
name = "assembler"
label = "Partner A"
session = {{ task = "kitchen", team = "kitchen-fsm", instances = [0], env_args = {{ ticks = 40 }} }}

[[conditions]]
name = "lettuce"
label = "Partner B"
session = {{ task = "kitchen", team = "{team_file.as_posix()}", instances = [1], env_args = {{ ticks = 40 }} }}

[[questionnaires]]
name = "block"
after = "block"
items = [{{ kind = "likert", name = "fluent", text = "We worked fluently together." }}]
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _simulate(*args: str) -> None:
    result = CliRunner().invoke(main, ["study", "simulate", *args, "--no-progress"])
    assert result.exit_code == 0, result.output


def test_a_scripted_within_subjects_todo_study_end_to_end(tmp_path):
    design_file = _write(tmp_path, "todo.toml", TODO_DESIGN)
    out = tmp_path / "out"
    _simulate(str(design_file), "--participants", "2", "--out", str(out), "--scripted")
    design = load_study_design(design_file)

    participants = read_table(out / "participants.csv", ParticipantRow)
    assert [p.participant for p in participants] == ["sim-0001", "sim-0002"]
    assert all(p.arm == "simulated" and p.status == "finished" for p in participants)
    orders = [p.sequence.split("|") for p in participants]
    assert orders == [sequence_for(design, 0), sequence_for(design, 1)]
    assert orders[0] != orders[1]  # the Latin square's two rows
    assert participants[0].traits == "impatient|sceptical"

    sessions = read_table(out / "sessions.csv", SessionRow)
    assert len(sessions) == 6  # a practice round and two sessions each
    for row in sessions:
        folder = out / "sessions" / row.participant / (
            "practice-0" if row.practice else f"session-{row.position}")
        record = load_session(folder)
        assert record.session_id == row.session_id
        assert row.end_reason == record.end_reason == "finished"
        assert row.performance == record.performance
        assert row.person_messages == len([m for m in record.messages if m.sender == "user"])
        assert (row.traits == "impatient|sceptical") == (row.condition == "hurried")
    hurried = [r for r in sessions if r.condition == "hurried"]
    plain = [r for r in sessions if r.condition == "plain"]
    assert all(r.confirmations_given == 0 for r in hurried)  # the sceptical user refused
    assert all(r.confirmations_given == 1 for r in plain)
    assert max(r.performance for r in hurried) < min(r.performance for r in plain)

    answers = read_table(out / "answers.csv", AnswerRow)
    for participant, order in zip(["sim-0001", "sim-0002"], orders, strict=True):
        due = [s for s in plan_steps(design, order) if s.kind == "questionnaire"]
        mine = [a for a in answers if a.participant == participant]
        for step in due:
            got = {(a.item, a.part) for a in mine
                   if a.questionnaire == step.questionnaire and a.position == step.position}
            questionnaire = next(q for q in design.questionnaires if q.name == step.questionnaire)
            assert {item for item, _ in got} == {i.name for i in questionnaire.items}
        ranks = {a.part: a.value for a in mine if a.item == "rank"}
        assert ranks == {"Agent A": "1", "Agent B": "2"}  # the better session ranked first
        loads = [a for a in mine if a.kind == "task_load"]
        assert len(loads) == 12 and all(int(a.value) % 5 == 0 for a in loads)

    events = read_table(out / "events.csv", EventRow)
    assert {(e.participant, e.event) for e in events if e.event == "consented"} == {
        ("sim-0001", "consented"), ("sim-0002", "consented")}
    study = json.loads((out / "study.json").read_text())
    assert study["design"] == "todo-mini" and study["arm"] == "simulated"


def test_a_rerun_resumes_and_a_participant_cut_short_starts_again(tmp_path):
    design_file = _write(tmp_path, "todo.toml", TODO_DESIGN)
    out = tmp_path / "out"
    _simulate(str(design_file), "--participants", "1", "--out", str(out), "--scripted")
    first = read_table(out / "sessions.csv", SessionRow)
    _simulate(str(design_file), "--participants", "2", "--out", str(out), "--scripted")
    sessions = read_table(out / "sessions.csv", SessionRow)
    assert [r.session_id for r in sessions[:3]] == [r.session_id for r in first]  # kept
    assert {r.participant for r in sessions} == {"sim-0001", "sim-0002"}

    (out / "participants" / "sim-0002.json").unlink()  # as if it was cut short
    _simulate(str(design_file), "--participants", "2", "--out", str(out), "--scripted")
    again = read_table(out / "sessions.csv", SessionRow)
    assert [r.session_id for r in again[:3]] == [r.session_id for r in first]
    assert {r.session_id for r in again[3:]}.isdisjoint(r.session_id for r in sessions[3:])
    assert len(list((out / "sessions" / "sim-0002").iterdir())) == 3

    other = CliRunner().invoke(main, ["study", "simulate", str(design_file), "--participants",
                                      "2", "--out", str(out), "--no-progress"])  # not scripted
    assert other.exit_code != 0 and "another" in other.output


def test_a_scripted_kitchen_study_with_two_rule_based_partners(tmp_path):
    team_file = _write(tmp_path, "kitchen-fsm-lettuce.toml", KITCHEN_TEAM)
    design_file = _write(tmp_path, "kitchen.toml", kitchen_design(team_file))
    out = tmp_path / "out"
    _simulate(str(design_file), "--participants", "2", "--out", str(out), "--scripted")
    sessions = read_table(out / "sessions.csv", SessionRow)
    assert len(sessions) == 4
    assert all(r.task == "kitchen" and r.end_reason == "time_up" for r in sessions)
    for row in sessions:
        record = load_session(out / "sessions" / row.participant / f"session-{row.position}")
        assert record.env_args["ticks"] == 40
        assert record.env_args["tick_seconds"] == 0.01  # the fastest clock, no person to wait for
    answers = read_table(out / "answers.csv", AnswerRow)
    assert len(answers) == 4 and all(1 <= int(a.value) <= 5 for a in answers)


def test_an_lm_simulated_participant_answers_a_likert_item(tmp_path):
    design_file = _write(tmp_path, "one.toml", """
name = "lm-one"
title = "One condition"
consent = "You agree."
[assignment]
subjects = "between"
[[conditions]]
name = "plain"
label = "Agent A"
simulated_traits = ["terse"]
session = { task = "todo", team = "example", instances = [0], time_limit_seconds = 60 }
[[questionnaires]]
name = "after"
after = "session"
items = [{ kind = "likert", name = "satisfied", text = "I was satisfied with the list.", points = 7 }]
""")

    def reply(body):
        last = body["messages"][-1]["content"]
        if "Choice" in last:
            return "Thought: good enough.\n" + user_choice(body, "finish")
        if "I was satisfied with the list." in last:
            return 'Thought: fine.\n{"answer": 6}'
        raise AssertionError(f"unexpected prompt: {last[:200]}")

    out = tmp_path / "out"
    with ScriptedOpenAIServer(responder=reply) as server:
        _simulate(str(design_file), "--participants", "1", "--out", str(out),
                  "--model", "user-lm", "--base-url", server.base_url)
        bodies = server.bodies
    decide = next(b for b in bodies if "Choice" in b["messages"][-1]["content"])
    assert "You are terse" in decide["messages"][0]["content"]  # the condition's trait
    question = next(b for b in bodies if "satisfied" in b["messages"][-1]["content"])
    assert "from 1" in question["messages"][-1]["content"] and "to 7" in \
        question["messages"][-1]["content"]
    answers = read_table(out / "answers.csv", AnswerRow)
    assert [(a.item, a.kind, a.value) for a in answers] == [("satisfied", "likert", "6")]
    record = load_session(out / "sessions" / "sim-0001" / "session-0")
    assert record.kinds["user"] == "user" and record.end_reason == "finished"
    assert re.search(r"sim-0001", (out / "participants.csv").read_text())


def test_an_unusable_lm_answer_gets_one_repair_then_is_left_out(tmp_path):
    design_file = _write(tmp_path, "one.toml", """
name = "lm-two"
title = "One condition"
consent = "You agree."
[assignment]
subjects = "between"
[[conditions]]
name = "plain"
label = "Agent A"
session = { task = "todo", team = "example", instances = [0] }
[[questionnaires]]
name = "after"
after = "session"
items = [{ kind = "choice", name = "prefer", text = "Which?", options = ["own", "tie"] }]
""")
    replies = iter(['{"answer": "neither"}', "no idea"])

    def reply(body):
        if "Choice" in body["messages"][-1]["content"]:
            return user_choice(body, "finish")
        return next(replies)

    out = tmp_path / "out"
    with ScriptedOpenAIServer(responder=reply) as server:
        _simulate(str(design_file), "--participants", "1", "--out", str(out),
                  "--model", "user-lm", "--base-url", server.base_url)
        repair = server.bodies[-1]["messages"][-1]["content"]
    assert "could not be used" in repair and "own" in repair
    assert read_table(out / "answers.csv", AnswerRow) == []
    unusable = [e for e in read_table(out / "events.csv", EventRow)
                if e.event == "answer_unusable"]
    assert len(unusable) == 1 and json.loads(unusable[0].detail)["item"] == "prefer"
