"""Study design files: the three ready designs load, check and lead participants the way their
papers did; broken or hostile files fail with one line that says where; the CLI's ``study
designs`` and ``study check``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.errors import CogymError
from cogym_lab.studies.assignment import sequence_for
from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.designs import (
    MAX_DESIGN_BYTES,
    StudyDesignError,
    check_design,
    design_file,
    load_design,
    parse_design,
    participant_plan,
    ready_designs,
)
from cogym_lab.studies.steps import Step, plan_steps
from cogym_lab.teams import load_team

READY = ["cocoa", "cogym-real", "dpt-agent"]


def _path(design: StudyDesign, participant: int, seed: int = 0) -> list[Step]:
    return plan_steps(design, sequence_for(design, participant, seed), participant)


# ----------------------------------------------------------------------- the ready designs


def test_the_ready_designs_ship_under_their_own_names() -> None:
    assert ready_designs() == READY
    for name in READY:
        assert design_file(name).name == f"{name}.toml"
        assert load_design(name).name == name


@pytest.mark.parametrize("name", READY)
def test_each_ready_design_checks_clean_and_says_what_it_asks(name: str) -> None:
    design = load_design(name)
    assert check_design(design) == []
    assert design.source and design.consent.strip() and design.instructions.strip()
    plan = participant_plan(design)
    assert plan.summary.startswith("Each participant gives consent")
    assert f"{plan.sessions} session" in plan.summary and "minutes" in plan.summary
    assert 20 < plan.minutes < 120


@pytest.mark.parametrize("name", READY)
def test_anonymised_titles_never_name_a_condition_or_a_team(name: str) -> None:
    design = load_design(name)
    assert design.assignment.anonymise
    secret = {c.name for c in design.conditions} | {c.session.team for c in design.conditions}
    for participant in range(6):
        for step in _path(design, participant):
            assert not any(word in step.title.lower() for word in secret), (step.id, step.title)
            if step.kind == "session":
                assert step.title == design.condition(step.condition).label


def test_cogym_real_one_task_each_then_the_autonomous_outcome_then_the_preference() -> None:
    design = load_design("cogym-real")
    kinds = [[(s.kind, s.questionnaire) for s in _path(design, p)] for p in (0, 1)]
    assert kinds[0] == kinds[1] == [
        ("consent", ""), ("instructions", ""), ("session", ""), ("questionnaire", "rating"),
        ("comparison", ""), ("questionnaire", "preference"), ("done", "")]
    tasks = []
    for participant in range(6):
        steps = _path(design, participant)
        session = next(s for s in steps if s.kind == "session")
        comparison = next(s for s in steps if s.kind == "comparison")
        assert session.session is not None and comparison.session is not None
        tasks.append(session.session.task)
        # the autonomous agent on the very instance the person worked on
        assert comparison.instance == session.instance
        assert comparison.session.task == session.session.task
        assert comparison.session.team == "autonomous" and session.session.team != "autonomous"
        assert not design.condition(session.condition).baseline
    assert tasks == ["travel_planning", "related_work", "tabular_analysis"] * 2
    # consecutive participants on one task get the next instance, not all the first
    travel = [next(s.instance for s in _path(design, p) if s.kind == "session") for p in (0, 3)]
    assert travel == [0, 3]
    preference = next(q for q in design.questionnaires if q.name == "preference")
    assert preference.after == "comparison"
    choice = preference.items[0]
    assert choice.kind == "choice" and choice.options == ["own", "autonomous", "tie"]
    rating = {i.name for q in design.questionnaires if q.after == "session" for i in q.items}
    assert rating == {"outcome", "satisfaction"}
    assert {"win_rate", "satisfaction"} <= set(design.measures)


def test_dpt_agent_four_kitchen_agents_two_games_each_ranked_after_each_pair() -> None:
    design = load_design("dpt-agent")
    teams = {c.session.team for c in design.conditions}
    assert teams == {"kitchen-react", "kitchen-reflexion", "kitchen-dpt-no-tom", "kitchen-dpt"}
    for condition in design.conditions:
        assert condition.session.mode == ["moves"]
        assert load_team(condition.session.team).plays("kitchen")
    orders = []
    for participant in (0, 1):
        steps = _path(design, participant)
        assert [s.kind for s in steps[:3]] == ["consent", "instructions", "practice"]
        assert steps[2].title == "Trial game"
        sessions = [s.condition for s in steps if s.kind == "session"]
        assert len(sessions) == 8 and sessions[0::2] == sessions[1::2]  # pairs in a row
        assert sorted(sessions[0::2]) == sorted(c.name for c in design.conditions)
        orders.append(sessions[0::2])
        rankings = [s for s in steps if s.questionnaire == "ranking"]
        assert [s.position for s in rankings] == [1, 3, 5, 7]  # after each pair
        assert [s.condition for s in rankings] == sessions[1::2]
        assert [s.id for s in steps[-2:]] == ["final-end", "done"]
    assert orders[0] != orders[1]  # random order per participant
    final = next(q for q in design.questionnaires if q.name == "final")
    assert {i.kind for i in final.items} >= {"ranking", "task_load"}
    assert design.measures[0] == "borda"


def test_cocoa_plans_and_chat_counterbalanced_with_the_nine_items() -> None:
    design = load_design("cocoa")
    assert {c.name: c.session.mode for c in design.conditions} == {"plans": ["plans"],
                                                                   "chat": ["chat"]}
    assert load_team("collaborative-plans").plans and not load_team("collaborative").plans
    orders = [sequence_for(design, p) for p in range(4)]
    assert orders[0] == list(reversed(orders[1])) and orders[0] == orders[2]
    practice = design.practice[0].session.instances
    for participant in range(8):
        sessions = [s for s in _path(design, participant) if s.kind == "session"]
        topics = [s.instance for s in sessions]
        assert len(set(topics)) == 2 and not set(topics) & set(practice)
    evaluation = design.questionnaires[0]
    likert = [i.name for i in evaluation.items if i.kind == "likert"]
    assert len(likert) == 9 and evaluation.after == "session"
    assert all(i.points == 5 for i in evaluation.items if i.kind == "likert")
    analysis = design.analysis
    assert analysis.correction == "bonferroni" and len(analysis.tested) == 3
    assert len(analysis.composites["utility"]) == 3
    assert set(analysis.composites["utility"]) <= set(likert)
    assert {"wilcoxon", "mann_whitney", "utility_composite", "time_shares",
            "item_ratio"} <= set(design.measures)
    assert all(c.session.time_limit_seconds == 1500 for c in design.conditions)


# ------------------------------------------------------------------- broken and hostile files

GOOD = '''
name = "tiny"
title = "A tiny study"
consent = "I agree to take part."
measures = ["borda"]

[assignment]
subjects = "within"
order = "latin"

[[conditions]]
name = "first"
label = "Agent A"
[conditions.session]
task = "todo"
team = "example"
instances = [0, 1]

[[conditions]]
name = "second"
label = "Agent B"
[conditions.session]
task = "todo"
team = "example"

[[questionnaires]]
name = "end"
after = "end"
[[questionnaires.items]]
kind = "ranking"
name = "best"
text = "Which agent was best?"
'''


def _problems(text: str) -> list[str]:
    with pytest.raises(StudyDesignError) as caught:
        parse_design(text, source="tiny.toml")
    assert isinstance(caught.value, CogymError)
    assert str(caught.value).startswith("Study design tiny.toml has ")
    return caught.value.problems


def test_the_small_example_is_valid() -> None:
    design = parse_design(GOOD)
    assert participant_plan(design).sessions == 2


@pytest.mark.parametrize(("old", "new", "line"), [
    ('team = "example"\ninstances', 'taem = "example"\ninstances',
     "conditions[0].session.taem: unknown field (did you mean 'team'?)"),
    ('team = "example"\ninstances', 'instances',
     "conditions[0].session.team: missing (a required field)"),
    ('order = "latin"', 'order = "latin"\nrepeat = "twice"',
     "assignment.repeat: Input should be a valid integer, unable to parse string as an "
     "integer, got 'twice'"),
    ('name = "second"', 'name = "first"', "design: condition first is named more than once"),
    ('team = "example"\ninstances', 'team = "kitchen-dtp"\ninstances',
     "conditions[0].session.team: unknown team 'kitchen-dtp' (did you mean 'kitchen-dpt'? "
     "known: "),
    ('measures = ["borda"]', 'measures = ["borda", "wilcoxn"]',
     "measures[1]: unknown measure 'wilcoxn' (did you mean 'wilcoxon'? known: "),
    ('instances = [0, 1]', 'instances = [0, 7]',
     "conditions[0].session.instances[1]: task 'todo' has instances 0 to 2 here; there is no "
     "instance 7"),
    ('kind = "ranking"', 'kind = "rank"', "questionnaires[0].items[0].kind: Input tag 'rank'"),
    ('subjects = "within"', 'subjects = "between"',
     "questionnaires[0].items[0]: a ranking needs a within-subjects design"),
    ('measures = ["borda"]', 'measures = ["win_rate"]',
     "measures[0]: 'win_rate' needs a condition that compares with a baseline and a choice "
     "item"),
    ('instances = [0, 1]', 'instances = [0, 1]\nperson = "cook"',
     "conditions[0].session.person: team 'example' has no seat 'cook' (its seats: agent, "
     "user)"),
    ('instances = [0, 1]', 'instances = [0, 1]\nmode = ["plans"]',
     "conditions[0].session.mode: 'plans' needs a team with plans = true"),
    ('instances = [0, 1]', 'instances = [0, 1]\nmode = ["moves"]',
     "conditions[0].session.mode: 'moves' is for real-time tasks; 'todo' has no clock"),
    ('instances = [0, 1]', 'instances = [0, 1]\nenv_args = { trips = 3 }',
     "conditions[0].session.env_args.trips: task 'todo' takes no argument 'trips'"),
    ('[conditions.session]\ntask = "todo"\nteam = "example"\ninstances',
     '[conditions.session]\ntask = "todo"\nteam = "kitchen-dpt"\ninstances',
     "conditions[0].session.team: team 'kitchen-dpt' plays only kitchen, not 'todo'"),
    ('name = "second"', 'name = "Second Agent"',
     "conditions[1].name: String should match pattern"),
])
def test_each_mistake_gives_its_line(old: str, new: str, line: str) -> None:
    assert old in GOOD
    problems = _problems(GOOD.replace(old, new, 1))
    assert any(p.startswith(line) for p in problems), problems


def test_a_file_that_is_not_toml_says_line_and_column() -> None:
    assert _problems(GOOD.replace('title = "A tiny study"', 'title = A tiny study')) == [
        "line 3, column 9: not TOML: Invalid value"]


def test_a_misspelt_top_level_table_is_named() -> None:
    problems = _problems(GOOD.replace("[assignment]", "[assigment]"))
    assert "assigment: unknown field (did you mean 'assignment'?)" in problems
    assert "assignment: missing (a required field)" in problems


def test_all_registry_problems_come_at_once() -> None:
    text = GOOD.replace('measures = ["borda"]', 'measures = ["nope"]').replace(
        'task = "todo"\nteam = "example"\n\n', 'task = "cooking"\nteam = "example"\n\n')
    problems = _problems(text)
    assert [p.split(":")[0] for p in problems] == ["conditions[1].session.task", "measures[0]"]


def test_a_huge_consent_is_refused_clearly(tmp_path: Path) -> None:
    # a megabyte of consent is no consent form: the file is refused before it is parsed
    huge = tmp_path / "huge.toml"
    huge.write_text(GOOD.replace('"I agree to take part."', '"' + "x" * 1_000_000 + '"'))
    with pytest.raises(StudyDesignError) as caught:
        load_design(huge)
    assert caught.value.problems == [
        f"the file is {huge.stat().st_size:,} bytes; a design file may be at most "
        f"{MAX_DESIGN_BYTES:,} (consent and instructions are meant to be read in minutes)"]
    # under the file limit, a text no participant would read is refused by the check
    long = GOOD.replace('"I agree to take part."', '"' + "x" * 30_000 + '"')
    assert _problems(long) == [
        "consent: 30,000 characters; at most 20,000 (participants read it before they start)"]


def test_files_that_are_not_designs(tmp_path: Path) -> None:
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"name = \"x\"\n\xff\xfe\x00")
    with pytest.raises(StudyDesignError) as caught:
        load_design(binary)
    assert caught.value.problems == [
        "not UTF-8 text (byte 11): a design is a TOML text file"]
    with pytest.raises(StudyDesignError) as caught:
        load_design(tmp_path / "absent.toml")
    assert caught.value.problems[0].startswith("no such file, and not a ready design "
                                               "(ready: cocoa, cogym-real, dpt-agent)")
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    with pytest.raises(StudyDesignError) as caught:
        load_design(empty)
    assert "name: missing (a required field)" in caught.value.problems


def test_baselines_are_never_assigned_and_must_be_compared_with() -> None:
    text = GOOD.replace('[[questionnaires]]', '''[[conditions]]
name = "alone"
label = "Agent alone"
baseline = true
[conditions.session]
task = "todo"
team = "example"

[[questionnaires]]''')
    assert _problems(text) == ["design: baseline alone is compared with by no condition, so "
                               "it would never run"]
    compared = text.replace('label = "Agent A"', 'label = "Agent A"\ncompare_with = "alone"')
    design = parse_design(compared)
    assert all("alone" not in sequence_for(design, p) for p in range(4))
    steps = _path(design, 0)
    assert [s.kind for s in steps].count("comparison") == 1
    not_baseline = compared.replace("baseline = true\n", "")
    assert _problems(not_baseline)[0].startswith(
        "design: condition 'first' compares with 'alone', which is not a baseline")


# ------------------------------------------------------------------------------------ the CLI


def test_cli_lists_the_ready_designs() -> None:
    result = CliRunner().invoke(main, ["study", "designs"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["name", "conditions", "sessions", "minutes"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[1:]
            if line and line.split()[0] in READY}
    assert rows == {"cocoa": ["2", "2"], "cogym-real": ["3", "1"], "dpt-agent": ["4", "8"]}
    assert "from: Zhang et al." in result.output


def test_cli_check_a_ready_design_and_a_file(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["study", "check", "cocoa"])
    assert result.exit_code == 0, result.output
    assert "cocoa: Cocoa: interactive plans against chat" in result.output
    assert "condition plans: related_work with team collaborative-plans, mode plans" \
        in result.output
    assert "Each participant gives consent" in result.output
    good = tmp_path / "tiny.toml"
    good.write_text(GOOD)
    result = runner.invoke(main, ["study", "check", str(good)])
    assert result.exit_code == 0, result.output
    assert "works in 2 sessions (2 conditions, counterbalanced by a Latin square" \
        in result.output


def test_cli_check_fails_with_the_error_lines(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace('measures = ["borda"]', 'measures = ["bord"]')
                   .replace('team = "example"\ninstances', 'team = "nobody"\ninstances'))
    result = CliRunner().invoke(main, ["study", "check", str(bad)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"{bad}: 2 problems"
    assert lines[1].startswith("  conditions[0].session.team: unknown team 'nobody'")
    assert lines[2].startswith("  measures[0]: unknown measure 'bord' (did you mean 'borda'?")
    missing = CliRunner().invoke(main, ["study", "check", "no-such-design"])
    assert missing.exit_code == 1 and "not a ready design" in missing.output


def test_the_example_in_the_docs_is_a_valid_design() -> None:
    from tests.support.paths import REPO_ROOT

    text = (REPO_ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
    example = text.split("```toml\n", 1)[1].split("```", 1)[0]
    design = parse_design(example, source="docs/studies.md")
    assert design.name == "todo-pair"
    assert [s.kind for s in _path(design, 1)] == [
        "consent", "instructions", "practice", "session", "questionnaire", "session",
        "questionnaire", "questionnaire", "done"]
