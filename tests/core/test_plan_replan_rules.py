"""The plan's replanning offers and step completions (Cocoa §4.1.4) through a real coordinator
on the todo task: what an offer changes only once accepted, what stays whole, who may answer,
refusals that change nothing, and a log that replays to the same state."""

from __future__ import annotations

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.envs import make_env
from cogym_lab.nodes.restore import replay_events
from tests.core.test_plans import TEAM, Team

REST = [[{"description": "Ask which expert to trust", "assignee": "person"},
         {"description": "Add that expert's items", "assignee": "agent"}],
        ["Add everything the experts name"]]


def _texts(team: Team) -> list[str]:
    return [s.description for s in team.env.plan_board.steps]


def test_an_accepted_replan_replaces_only_the_steps_after_the_edited_one() -> None:
    team = Team().planned()
    team.ok("user", "EDIT_STEP", step="s1", description="Find experts on ultralight gear")
    before = _texts(team)
    team.ok("agent", "OFFER_REPLAN", step="s1", reason="No gear list comes now.", choices=REST)
    assert _texts(team) == before  # an offer changes nothing by itself
    offer = team.env.view("user")[PLAN_COMPONENT].content["replan"]
    assert offer["after"] == "s1" and len(offer["choices"]) == 2
    team.refused("agent", "ACCEPT_REPLAN", "Only the person side", choice=0)
    team.refused("user", "ACCEPT_REPLAN", "from 0 to 1", choice=2)
    team.ok("user", "ACCEPT_REPLAN", choice=0)
    steps = team.env.plan_board.steps
    assert [(s.id, s.description) for s in steps][0] == ("s1", "Find experts on ultralight gear")
    assert [(s.description, s.assignee) for s in steps[1:]] == [
        ("Ask which expert to trust", "person"), ("Add that expert's items", "agent")]
    assert len({s.id for s in steps}) == 3  # fresh ids, none reused
    assert team.env.plan_board.state.replan is None
    team.refused("user", "ACCEPT_REPLAN", "no replanning offer", choice=0)


def test_a_dismissed_replan_leaves_the_plan_and_a_running_later_step_refuses_an_offer() -> None:
    team = Team().planned()
    team.ok("agent", "OFFER_REPLAN", step="s1", choices=REST)
    before = _texts(team)
    team.ok("user", "DISMISS_REPLAN")
    assert _texts(team) == before and team.env.plan_board.state.replan is None
    team.refused("agent", "OFFER_REPLAN", "1 to 3 choices", step="s1", choices=[])
    team.ok("user", "RUN_ALL")
    team.ok("agent", "COMPLETE_STEP", step="s1", text="tent")  # s2, a person step, needs input
    team.refused("agent", "OFFER_REPLAN", "in progress", step="s1", choices=REST)


def test_completions_are_offered_and_picking_one_sets_the_text_with_undo() -> None:
    team = Team().planned()
    team.ok("user", "ADD_STEP", description="Check the weather", assignee="person", after="s3")
    team.refused("agent", "OFFER_COMPLETIONS", "2 to 3", step="s4", choices=["only one"])
    team.ok("agent", "OFFER_COMPLETIONS", step="s4",
            choices=["Check the weather for rain", "Check the weather for frost"])
    team.refused("user", "PICK_COMPLETION", "No completions are offered for step s1",
                 step="s1", choice=0)
    team.ok("user", "PICK_COMPLETION", step="s4", choice=1)
    assert _texts(team)[3] == "Check the weather for frost"
    assert team.env.plan_board.state.completions is None
    team.ok("user", "UNDO_SUGGESTION", step="s4")
    assert _texts(team)[3] == "Check the weather"


def test_deleting_the_step_an_offer_names_drops_the_offer_and_the_log_replays() -> None:
    team = Team().planned()
    team.ok("agent", "OFFER_REPLAN", step="s2", choices=REST)
    team.ok("agent", "OFFER_COMPLETIONS", step="s2", choices=["a b", "c d"])
    team.ok("user", "DELETE_STEP", step="s2")
    state = team.env.plan_board.state
    assert state.replan is None and state.completions is None
    team.ok("agent", "OFFER_REPLAN", step="s1", choices=REST)
    team.ok("user", "ACCEPT_REPLAN", choice=1)
    fresh = Coordinator(make_env("todo", **team.env.env_args()), TEAM, session_id="plans")
    for _ in replay_events(fresh, team.events):
        pass
    assert fresh.snapshot() == team.coordinator.snapshot()
