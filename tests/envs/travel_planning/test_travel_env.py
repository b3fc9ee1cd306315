"""The Travel Planning env: hidden preferences, private search tools, the shared plan editor,
grading by protocol, and a whole scripted session through `cogym-lab run`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.travel_planning import TravelPlanningEnv
from cogym_lab.testing import ScriptedOpenAIServer
from tests.envs.travel_planning.test_travel_grader import BURBANK, variant
from tests.support.notified import notified
from tests.support.travel_scripts import TravelRolePlay, simple_plan

pytestmark = pytest.mark.usefixtures("use_shared_data", "no_ambient_lm")
TEAM = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]


def test_every_instance_is_reachable_by_number():
    assert len(TravelPlanningEnv.instances()) == 102
    assert make_env("travel_planning", instance=101).task.index == 101
    with pytest.raises(IndexError, match="0 to 101"):
        make_env("travel_planning", instance=102)


def test_the_agent_gets_the_request_and_only_the_user_the_preferences():
    env = make_env("travel_planning", instance=0)
    coordinator = Coordinator(env, TEAM, session_id="t")
    start = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    description = start["agent"].context.task_description
    assert "Salt Lake City" in description and "Burbank" in description
    assert "2022-03-12" in description and "Day 1:" in description  # the plan form is shown
    for hidden in env.task.preferences:
        assert hidden not in json.dumps(start["agent"].model_dump(mode="json"))
    assert "Budget of $7,600" in env.hidden_information()
    assert "7,600" not in description and "7600" not in description


def test_searches_are_private_and_the_plan_is_shared():
    env = make_env("travel_planning", instance=0)
    coordinator = Coordinator(env, TEAM, session_id="t")
    coordinator.start(0.0)
    searched = coordinator.handle(
        "agent", 'FLIGHT_SEARCH(origin="Salt Lake City", destination="Burbank", '
                 'date="2022-03-12")', 1.0)
    assert [n.recipient for n in notified(coordinator, searched)] == ["agent"]
    table = notified(coordinator, searched)[0].view["search"].content
    assert any(row["Flight Number"] == "F3846241" for row in table["rows"])
    user_view = coordinator.env.view("user")["search"].content
    assert user_view == {}  # the user's own search window is untouched

    wrote = coordinator.handle("user", 'EDITOR_UPDATE(text="Day 1:\\nCurrent City: Burbank")', 3.0)
    assert sorted(n.recipient for n in notified(coordinator, wrote)) == ["agent", "user"]
    assert notified(coordinator, wrote)[0].view["plan"].content.startswith("Day 1:")

    bad = coordinator.handle("agent", 'DISTANCE_MATRIX(origin="A", destination="B", mode="boat")',
                             4.0)
    assert bad.events[0].type is EventType.ERROR and "self-driving" in bad.events[0].error


def test_the_outcome_is_graded_with_every_check():
    env = make_env("travel_planning", instance=0)
    env.reset()
    assert env.outcome() is None and env.evaluate()["performance"] == 0
    assert not env.delivered()
    env.step("agent", {"name": "EDITOR_UPDATE", "args": {"text": simple_plan(env.task, env.db)}})
    assert env.delivered()
    grade = env.grade()
    assert grade.mode == "release" and env.protocol == "cogym"
    assert list(grade.commonsense) == [
        "is_reasonable_visiting_city", "is_valid_restaurants", "is_valid_attractions",
        "is_valid_accommodation", "is_valid_transportation",
        "is_valid_information_in_current_city", "is_valid_information_in_sandbox",
        "is_not_absent"]
    assert list(grade.hard) == ["valid_cuisine", "valid_room_rule", "valid_transportation",
                                "valid_room_type", "valid_cost"]
    # the release looks the accommodation up among the attractions: Within Sandbox fails
    sandbox = grade.commonsense.pop("is_valid_information_in_sandbox")
    assert sandbox.passed is False and "attraction" in sandbox.reason
    assert all(v.passed for v in grade.commonsense.values())
    assert grade.hard["valid_cost"].passed is False
    assert "$7,600" in grade.hard["valid_cost"].reason
    scores = env.evaluate()
    assert scores["performance"] == pytest.approx((7 / 8 + grade.hard_pass_rate) / 2)
    assert scores["valid_cost"] == 0.0 and scores["is_not_absent"] == 1.0
    assert "valid_cuisine" not in scores  # instance 0 asks for no cuisine
    assert (scores["commonsense_pass"], scores["hard_evaluated"], scores["hard_pass"],
            scores["final_pass"]) == (0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize(("protocol", "mode", "performance"),
                         [("cogym", "release", 15 / 16), ("cogym_lab", "corrected", 15 / 16)])
def test_the_protocol_chooses_the_grading_mode(protocol, mode, performance):
    # on day 2, spent in Burbank, lunch in Binghamton: the official check (which the release
    # keeps) compares the letters of "Burbank" one by one and passes it; the corrected one does
    # not. Under cogym the release's evaluator fails Within Sandbox instead, because it looks
    # the plan's accommodation up among the attractions: worked through its
    # ``evaluate_task_performance`` by hand, 7 of 8 commonsense checks and every applicable
    # hard one pass, (7/8 + 1) / 2 = 15/16.
    env = make_env("travel_planning", instance=0, protocol=protocol)
    env.reset()
    assert env.grading_mode == mode and env.env_args()["protocol"] == protocol
    plan = variant(BURBANK, ("Lunch: Tpot, Burbank", "Lunch: Le Petit Souffle, Binghamton"))
    env.step("agent", {"name": "EDITOR_UPDATE", "args": {"text": plan}})
    scores = env.evaluate()
    assert scores["performance"] == performance
    assert scores["is_valid_information_in_current_city"] == float(mode == "release")
    assert scores["is_valid_information_in_sandbox"] == float(mode == "corrected")
    assert scores["final_pass"] == 0.0


def test_hidden_strings_are_the_distinctive_preferences():
    env = make_env("travel_planning", instance=0)
    assert env.task.preferences == ("Travel with a group of 7 people",
                                    "Visit only one city during the trip",
                                    "Budget of $7,600 for the entire trip",
                                    "Prefer accommodations with entire rooms")
    assert env.hidden_strings() == ["Budget of $7,600 for the entire trip"]
    for index in range(0, 102, 17):
        task_env = make_env("travel_planning", instance=index)
        hidden = task_env.hidden_strings()
        assert hidden and set(hidden) <= set(task_env.task.preferences)
        assert all("$" in h or len(h.split()) >= 8 for h in hidden)
        assert not any(h.casefold() in task_env.task_description.casefold() for h in hidden)


def test_a_whole_scripted_session_runs_through_the_command_line(tmp_path):
    env = make_env("travel_planning", instance=0)
    with ScriptedOpenAIServer(responder=TravelRolePlay(env.task, env.db)) as server:
        result = CliRunner().invoke(main, [
            "run", "--task", "travel_planning", "--instance", "0", "--team", "collaborative",
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--base-url", server.base_url, "--out", str(tmp_path), "--idle-seconds", "2"])
        agent_prompts = [json.dumps(b) for b in server.bodies if b["model"] == "agent-lm"]
        user_prompts = [json.dumps(b) for b in server.bodies if b["model"] == "user-lm"]
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    (session,) = tmp_path.iterdir()
    meta = json.loads((session / "session.json").read_text())
    assert meta["task"] == "travel_planning"
    assert meta["env_args"] == {"instance": 0, "protocol": "cogym"}
    # graded as the Co-Gym release does: its look-up of the stay among the attractions fails
    assert meta["scores"]["commonsense_pass_rate"] == 7 / 8
    assert meta["scores"]["is_valid_information_in_sandbox"] == 0.0
    assert 0 < meta["scores"]["performance"] < 1
    events = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    searches = [e for e in events if e.get("action", "").startswith("FLIGHT_SEARCH")]
    assert searches and searches[0]["recipients"] == ["agent"]
    assert any(e.get("action", "").startswith("EDITOR_UPDATE") for e in events)
    for preference in env.task.preferences:
        assert not any(preference in p for p in agent_prompts)
    assert any(env.task.preferences[0] in p for p in user_prompts)


async def test_a_free_text_plan_is_read_by_an_lm_when_grading():
    from cogym_lab.lm import LMConfig, make_lm

    env = make_env("travel_planning", instance=0)
    env.reset()
    structured = simple_plan(env.task, env.db)
    with ScriptedOpenAIServer() as server:
        server.add(structured)  # the parser LM rewrites the prose into the day-by-day form
        env.parser_lm = make_lm(LMConfig(model="parser-lm", base_url=server.base_url))
        env.step("agent", {"name": "EDITOR_UPDATE", "args": {
            "text": "We fly out on the 12th, stay three days in Burbank, and fly home."}})
        scores = await env.aevaluate()
        assert "fly home" in server.bodies[0]["messages"][-1]["content"]
    # every check passes but the release's Within Sandbox (it seeks the stay among attractions)
    assert scores["parsed_by_lm"] == 1.0 and scores["commonsense_pass_rate"] == 7 / 8
    env.step("agent", {"name": "EDITOR_UPDATE", "args": {"text": structured}})
    assert (await env.aevaluate())["parsed_by_lm"] == 0.0  # readable: no LM needed


def test_every_search_says_it_fills_the_search_window():
    """The panel puts a search box over the ``search`` component for each of these."""
    env = make_env("travel_planning", instance=0)
    env.reset(seed=0)
    specs = env.action_specs()
    searching = sorted(spec.name for spec in specs if spec.searches == "search")
    assert searching == ["ACCOMMODATION_SEARCH", "ATTRACTION_SEARCH", "CITY_SEARCH",
                         "DISTANCE_MATRIX", "FLIGHT_SEARCH", "RESTAURANT_SEARCH"]
    names = {component.name for component in env.private_components("user")}
    assert names == {"search"}
