"""Per-participant instances and the comparison step (Co-Gym Real) on a real in-process Jupyter
server: after a session, the baseline's team plays the same instance alone as a hosted session,
the participant sees both outcomes as "Outcome 1" and "Outcome 2" and answers which they
prefer, and the export has the baseline's row under its own condition and the choice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.nodes.results import read_session
from cogym_lab.runtime.models import HOSTING_FILE
from cogym_lab.runtime.pairwise import outcome_text
from cogym_lab.studies.hub.export import export_study
from cogym_lab.studies.hub.store import StudyFolder
from cogym_lab.studies.tables import AnswerRow, EventRow, SessionRow, read_table
from tests.studies.hub.test_study_api import events_of, study_api, walk_to_session
from tests.support.hub_study import SECRET_NAMES, small_design
from tests.support.jupyter_api import server_config

#: The example agent alone on the todo task (there is no ready agent-only team for it).
ALONE_TEAM = """
name = "todo-alone"
description = "The todo task's rule-based agent, with no one beside it."
tasks = ["todo"]
[members.agent]
type = "example-agent"
"""

PREFERENCE = {"name": "preference", "after": "comparison", "title": "The two results",
              "items": [{"kind": "choice", "name": "preference", "text": "Which do you prefer?",
                         "options": ["own", "autonomous", "tie"]}]}


def comparison_design():
    return small_design(
        conditions=[
            {"name": "secret-with-agent", "label": "Lists with the assistant",
             "compare_with": "secret-alone",
             "session": {"task": "todo", "team": "example", "instances": [0, 1]}},
            {"name": "secret-alone", "label": "Another list", "baseline": True,
             "session": {"task": "todo", "team": "todo-alone", "instances": [0, 1],
                         "time_limit_seconds": 1}}],
        assignment={"subjects": "between"},
        questionnaires=[
            {"name": "after", "after": "session", "title": "About this session", "items": [
                {"kind": "likert", "name": "satisfied", "text": "I am satisfied with it."}]},
            PREFERENCE])


def instances_design():
    return small_design(conditions=[
        {"name": name, "label": label,
         "session": {"task": "todo", "team": "example", "instances": [0, 1]}}
        for name, label in zip(SECRET_NAMES, ("Assistant A", "Assistant B"), strict=True)])


@pytest.fixture
def study_dir(tmp_path, request):
    folder = tmp_path / "study"
    design = comparison_design() if "comparison" in request.node.name else instances_design()
    StudyFolder.create(folder, design, seed=3)
    return folder


@pytest.fixture
def jp_server_config(tmp_path, study_dir):
    team = tmp_path / "todo-alone.toml"
    team.write_text(ALONE_TEAM)
    config = server_config(tmp_path / "results", "alice", "bob",
                           teams={"todo-alone": str(team)})
    config["ServerApp"]["jpserver_extensions"]["cogym_lab.studies.hub"] = True
    config["ServerApp"]["root_dir"] = str(tmp_path)
    config["CogymStudy"] = {"study_dir": str(study_dir)}
    return config


def instance_of(results_dir: str) -> int:
    """The instance the session was asked for (its hosting record, written as it starts)."""
    return json.loads((Path(results_dir) / HOSTING_FILE).read_text())["spec"]["instance"]


def test_consecutive_participants_play_consecutive_instances(run, jp_fetch, study_dir):
    async def body():
        played = []
        for user in ("alice", "bob"):
            api = study_api(jp_fetch, user)
            state = await walk_to_session(api)
            status, started = await api("POST", f"steps/{state['step']['id']}/start")
            assert status == 200, started
            saved = StudyFolder(study_dir).participant(started["participant"])
            assert saved is not None
            played.append(instance_of(saved.sessions[state["step"]["id"]].results_dir))
        assert played == [0, 1]

    run(body())


async def until_ready(api) -> dict:
    for _ in range(400):  # the baseline plays until its time limit; the page asks again
        status, state = await api("GET", "state")
        assert status == 200, state
        if state["step"].get("ready"):
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"the comparison never became ready: {state}")


def test_the_comparison_step_shows_both_outcomes_and_the_export_has_the_baseline(
        run, jp_fetch, study_dir, tmp_path):
    async def body():
        alice = study_api(jp_fetch, "alice")
        state = await walk_to_session(alice)
        assert state["step"]["id"] == "session-0"
        await alice("POST", "steps/session-0/start")
        status, state = await alice("POST", "steps/session-0/done")
        assert status == 200, state
        participant = state["participant"]
        saved = StudyFolder(study_dir).participant(participant)
        assert "comparison-0" in saved.sessions  # started as the session ended
        status, answer = await alice("POST", "steps/comparison-0/done")
        assert status == 409, answer  # the session questionnaire comes first
        status, state = await alice("POST", "steps/after-0/answers",
                                    {"answers": {"satisfied": 4}})
        assert state["step"]["kind"] == "comparison"
        if not state["step"]["ready"]:  # the outcomes are not shown yet: no moving on
            status, answer = await alice("POST", "steps/comparison-0/done")
            assert status == 409 and "not been shown" in answer["message"]
        state = await until_ready(alice)
        step = state["step"]
        assert [o["label"] for o in step["outcomes"]] == ["Outcome 1", "Outcome 2"]
        assert all(o["text"] for o in step["outcomes"])
        shown = json.dumps(step)
        for hidden in ("secret-with-agent", "secret-alone", "todo-alone", "example",
                       "autonomous", "baseline", "session_id"):
            assert hidden not in shown, (hidden, shown)
        again = await until_ready(alice)
        assert again["step"]["outcomes"] == step["outcomes"]  # the order is kept
        status, state = await alice("POST", "steps/comparison-0/done")
        assert status == 200, state
        assert state["step"]["id"] == "preference-0"
        status, state = await alice("POST", "steps/preference-0/answers",
                                    {"answers": {"preference": "own"}})
        assert status == 200 and state["status"] == "finished", state

        saved = StudyFolder(study_dir).participant(participant)
        order = saved.comparisons["comparison-0"].order
        assert sorted(order) == ["baseline", "own"]
        for side, key in (("own", "session-0"), ("baseline", "comparison-0")):
            outcome = read_session(saved.sessions[key].results_dir).get("outcome")
            assert step["outcomes"][order.index(side)]["text"] == outcome_text(outcome)
        assert instance_of(saved.sessions["comparison-0"].results_dir) == \
            instance_of(saved.sessions["session-0"].results_dir) == 0
        alone = read_session(saved.sessions["comparison-0"].results_dir)
        assert [m["kind"] for m in alone["team"]] == ["agent"]  # no person seat

        events = await events_of(study_dir, participant, 12)
        assert any(e["event"] == "comparison_shown" for e in events)
        out = tmp_path / "export"
        export_study(study_dir, out)
        sessions = read_table(out / "sessions.csv", SessionRow)
        assert [(r.condition, r.practice, r.instance) for r in sessions] == [
            ("secret-with-agent", False, 0), ("secret-alone", False, 0)]
        assert sessions[1].person_messages == 0 and sessions[1].session_id == \
            read_session(saved.sessions["comparison-0"].results_dir)["session_id"]
        answers = read_table(out / "answers.csv", AnswerRow)
        choice = next(a for a in answers if a.item == "preference")
        assert (choice.value, choice.condition, choice.moment) == (
            "own", "secret-with-agent", "comparison")
        shown_events = [e for e in read_table(out / "events.csv", EventRow)
                        if e.event == "comparison_shown"]
        assert json.loads(shown_events[0].detail)["order"] == order

    run(body())
