"""Several plans in one session (Cocoa's document holds several, each run on its own): each plan
is a component of its own, every plan act names its plan, and plans run side by side."""

from __future__ import annotations

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.plan_env import MAX_PLANS, PLAN_COMPONENT, is_plan_component, plan_component
from cogym_lab.envs import make_env
from cogym_lab.nodes.restore import replay_events
from tests.core.test_plans import TEAM, THREE_STEPS, Team

SECOND = plan_component(2)


def test_a_second_plan_is_a_component_of_its_own_with_its_own_request() -> None:
    team = Team().planned()
    team.ok("user", "NEW_PLAN", request="Plan the food for the trip")
    view = team.env.view("agent")
    names = [c.name for c in view.components if is_plan_component(c.name)]
    assert names == [PLAN_COMPONENT, SECOND]
    assert view[SECOND].render_type == "plan" and view[SECOND].title == "Interactive plan 2"
    assert view[SECOND].content["request"] == "Plan the food for the trip"
    assert view[SECOND].content["plan"] is None  # the first plan is untouched
    assert view[PLAN_COMPONENT].content["plan"]["title"] == "Gear first"
    team.ok("user", "NEW_PLAN")  # no request: the task's own
    assert team.env.view("agent")[plan_component(3)].content["request"] == \
        team.env.task_description


def test_each_act_goes_to_the_plan_it_names_and_plans_run_side_by_side() -> None:
    team = Team().planned()
    team.ok("user", "NEW_PLAN", request="Plan the food")
    team.ok("agent", "PROPOSE_PLANS", plans=THREE_STEPS, plan=SECOND)
    team.ok("user", "SELECT_PLAN", index=1, plan="2")  # its number works as well as its name
    team.ok("user", "RUN_ALL")  # the first plan
    team.ok("user", "RUN_ALL", plan=SECOND)  # the second runs at the same time
    first, second = team.env.plan_boards[PLAN_COMPONENT], team.env.plan_boards[SECOND]
    assert first.steps[0].status == "running" and second.steps[0].status == "running"
    team.ok("agent", "COMPLETE_STEP", step="s1", text="food: rice", plan=SECOND)
    assert second.state.awaiting_output and first.steps[0].status == "running"
    team.ok("agent", "COMPLETE_STEP", step="s1", text="gear: tent")
    assert first.steps[1].status == "needs_input"  # continuous: on to the person's step
    team.ok("agent", "WRITE_PLAN_OUTPUT", text="Rice for three days", plan=SECOND)
    assert second.state.output == "Rice for three days" and first.state.output is None


def test_unknown_plans_and_a_plan_too_many_are_refused_and_change_nothing() -> None:
    team = Team().planned()
    team.refused("user", "RUN_ALL", "No plan 'interactive_plan_2'", plan=SECOND)
    team.refused("user", "RUN_ALL", "No plan '7'", plan="7")
    for _ in range(MAX_PLANS - 1):
        team.ok("agent", "NEW_PLAN")
    team.refused("user", "NEW_PLAN", f"at most {MAX_PLANS} plans")


def test_several_plans_replay_to_the_same_state() -> None:
    team = Team().planned()
    team.ok("user", "NEW_PLAN", request="Plan the food")
    team.ok("user", "ADD_STEP", description="Buy rice", assignee="person", plan=SECOND)
    team.ok("user", "RUN_STEP", step="s1", plan=SECOND)
    team.ok("user", "RUN_ALL")
    fresh = Coordinator(make_env("todo", plans=True), TEAM, session_id="plans")
    for _ in replay_events(fresh, team.events):
        pass
    assert fresh.snapshot() == team.coordinator.snapshot()
    assert list(fresh.env.plan_boards) == [PLAN_COMPONENT, SECOND]  # type: ignore[attr-defined]
