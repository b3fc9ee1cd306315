"""Interactive plans (Cocoa): the plan's rules through a real coordinator on the todo task.

Co-planning (proposals, selection, edits merged, suggestions undone), co-execution (in order,
continuous runs that stop at a person step or a pause, reruns that make later steps stale and
run them again, a failed agent step the person completes, curated outputs), the plan output,
refusals that change nothing, and a stateful property test whose log replays to the same state
after every step.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import Event, EventType, TeamMember
from cogym_lab.core.plan_env import PLAN_COMPONENT, with_plans
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes.restore import replay_events
from tests.support.hostile import hostile_text

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]
THREE_STEPS = [{"title": "Gear first", "steps": [
    {"description": "List the gear for the trip", "assignee": "agent"},
    {"description": "Say what must not be forgotten", "assignee": "person"},
    {"description": "Add the items to the checklist", "assignee": "agent"}]},
    {"title": "Just ask", "steps": ["Ask the person what to bring"]}]


class Team:
    """A planned todo session driven by hand, with its log."""

    def __init__(self) -> None:
        self.env = make_env("todo", plans=True)
        self.coordinator = Coordinator(self.env, TEAM, session_id="plans")
        self.events: list[Event] = []
        self.clock = 0.0
        self.record(self.coordinator.start(self.clock))

    def record(self, transition: Transition) -> Transition:
        self.events += transition.events
        return transition

    def act(self, role: str, name: str, **args: Any) -> Event:
        self.clock += 1.0
        transition = self.record(self.coordinator.handle(role, {"name": name, "args": args},
                                                         self.clock))
        return transition.events[0]

    def ok(self, role: str, name: str, **args: Any) -> Event:
        event = self.act(role, name, **args)
        assert event.status == "ok", event.error
        return event

    def refused(self, role: str, name: str, match: str, **args: Any) -> None:
        before = self.coordinator.snapshot()["views"]
        event = self.act(role, name, **args)
        assert event.status == "error" and match in (event.error or ""), event.error
        assert self.coordinator.snapshot()["views"] == before  # a refused act changes nothing

    def statuses(self) -> list[str]:
        return [step.status for step in self.env.plan_board.steps]

    def planned(self) -> Team:
        self.ok("agent", "PROPOSE_PLANS", plans=THREE_STEPS)
        self.ok("user", "SELECT_PLAN", index=0)
        return self


def test_the_agent_proposes_and_only_the_person_side_picks() -> None:
    team = Team()
    team.refused("user", "SELECT_PLAN", "No plans were proposed", index=0)
    team.ok("agent", "PROPOSE_PLANS", plans=THREE_STEPS)
    plan = team.env.view("user")[PLAN_COMPONENT].content
    assert [p["title"] for p in plan["proposals"]] == ["Gear first", "Just ask"]
    assert plan["proposals"][1]["steps"][0]["assignee"] == "agent"  # a bare text: an agent step
    team.refused("agent", "SELECT_PLAN", "Only the person side picks the plan", index=0)
    team.refused("user", "SELECT_PLAN", "from 0 to 1", index=2)
    team.ok("user", "SELECT_PLAN", index=0)
    assert [s.description for s in team.env.plan_board.steps][0] == "List the gear for the trip"
    assert team.env.view("agent")[PLAN_COMPONENT].content["proposals"] == []


@pytest.mark.parametrize(("plans", "match"), [
    ([], "Propose 1 to 3 plans"), ([{"steps": []}] * 4, "Propose 1 to 3 plans"),
    ([{"steps": []}], "non-empty list of steps"), (["not a plan"], "Each proposed plan"),
    ([{"steps": [{"description": " ", "assignee": "agent"}]}], "needs a description"),
    ([{"steps": [{"description": "x", "assignee": "robot"}]}], "'agent' or 'person'"),
])
def test_a_malformed_proposal_is_refused_with_the_form_expected(plans: Any, match: str) -> None:
    Team().refused("agent", "PROPOSE_PLANS", match, plans=plans)


def test_continuous_running_stops_at_the_person_step_and_goes_on_after_it() -> None:
    team = Team().planned()
    team.refused("agent", "RUN_STEP", "s1 must be done before s2", step="s2")
    team.ok("user", "RUN_ALL")
    assert team.statuses() == ["running", "not_run", "not_run"]
    team.refused("user", "COMPLETE_STEP", "does not wait for the person", step="s1")
    team.ok("agent", "COMPLETE_STEP", step="s1", text="tent, stove",
            items=[{"id": "tent", "title": "Tent"}])
    assert team.statuses() == ["done", "needs_input", "not_run"]  # stopped at the person step
    team.ok("user", "COMPLETE_STEP", step="s2", text="the rain jacket")
    assert team.statuses() == ["done", "done", "running"]
    context = team.env.plan_board.state.context
    assert [c["step"] for c in context] == ["s1", "s2"] and context[0]["items"][0]["id"] == "tent"
    team.ok("agent", "COMPLETE_STEP", step="s3", text="added")
    assert team.env.plan_board.state.awaiting_output and not team.env.plan_board.state.continuous
    team.ok("agent", "WRITE_PLAN_OUTPUT", text="Bring a tent, a stove and the rain jacket.")
    assert team.env.view("user")[PLAN_COMPONENT].content["output"].startswith("Bring a tent")


def test_stepwise_running_and_pause_after_a_step() -> None:
    team = Team().planned()
    team.ok("user", "ASSIGN_STEP", step="s2", assignee="agent")
    team.ok("user", "RUN_STEP", step="s1")
    team.ok("agent", "COMPLETE_STEP", step="s1", text="gear")
    assert team.statuses() == ["done", "not_run", "not_run"]  # stepwise: nothing more runs
    team.ok("user", "PAUSE_AFTER_STEP", step="s2")
    team.ok("user", "RUN_REMAINING")
    team.ok("agent", "COMPLETE_STEP", step="s2", text="more gear")
    assert team.statuses() == ["done", "done", "not_run"]  # paused after s2


def test_a_rerun_makes_later_steps_stale_and_continuous_mode_runs_them_again() -> None:
    team = Team().planned()
    team.ok("user", "ASSIGN_STEP", step="s2", assignee="agent")
    team.ok("user", "RUN_ALL")
    for step in ("s1", "s2", "s3"):
        team.ok("agent", "COMPLETE_STEP", step=step, text=f"out {step}")
    team.ok("user", "RUN_STEP", step="s2")  # a rerun, stepwise
    assert team.statuses() == ["done", "running", "stale"]
    team.ok("agent", "COMPLETE_STEP", step="s2", text="out s2 again")
    assert team.statuses() == ["done", "done", "stale"]
    team.ok("user", "RUN_REMAINING")  # continuous: the stale step runs again
    assert team.statuses() == ["done", "done", "running"]
    team.ok("agent", "COMPLETE_STEP", step="s3", text="out s3 again")
    assert [s.runs for s in team.env.plan_board.steps] == [1, 2, 2]


def test_a_failed_agent_step_is_the_persons_to_complete() -> None:
    team = Team().planned()
    team.ok("user", "RUN_ALL")
    team.refused("user", "FAIL_STEP", "Only the agent side", step="s1")
    team.ok("agent", "FAIL_STEP", step="s1", reason="the search found nothing")
    assert team.statuses()[0] == "failed" and not team.env.plan_board.state.continuous
    team.ok("user", "COMPLETE_STEP", step="s1", text="a tent")
    step = team.env.plan_board.steps[0]
    assert (step.status, step.completed_by) == ("done", "user")


def test_curating_an_output_marks_the_later_steps_stale() -> None:
    team = Team().planned()
    team.ok("user", "ASSIGN_STEP", step="s2", assignee="agent")
    team.ok("user", "RUN_ALL")
    for step in ("s1", "s2"):
        team.ok("agent", "COMPLETE_STEP", step=step, text=f"out {step}",
                items=[{"id": "a"}, {"id": "b"}])
    team.refused("agent", "EDIT_STEP_OUTPUT", "Only the person side", step="s1", text="x")
    team.refused("user", "EDIT_STEP_OUTPUT", "no output to edit", step="s3", text="x")
    team.ok("user", "EDIT_STEP_OUTPUT", step="s1", items=[{"id": "a"}, {"id": "c"}])
    output = team.env.plan_board.steps[0].output
    assert output is not None and output.edited and output.text == "out s1"
    assert [i["id"] for i in team.env.plan_board.state.context[0]["items"]] == ["a", "c"]
    assert team.statuses() == ["done", "stale", "running"]


def test_two_rewrites_of_one_step_keep_both_and_the_later_editor_is_told() -> None:
    team = Team().planned()
    base = team.env.plan_board.steps[0].description
    team.ok("agent", "EDIT_STEP", step="s1", description="Pack the tent")
    event = team.ok("user", "EDIT_STEP", step="s1", base=base, description="Buy a new stove")
    description = team.env.plan_board.steps[0].description
    assert description.splitlines() == ["Pack the tent", "Buy a new stove"]  # whole, by role
    assert event.info["overlap"] == {"component": "plan", "text": "plan step s1",
                                     "with": ["agent"], "lines": [[1, 2]]}
    replayed = Coordinator(make_env("todo", plans=True), TEAM, session_id="plans")
    for logged in team.events:
        replayed.replay(logged)
    assert replayed.snapshot() == team.coordinator.snapshot()


def test_a_step_output_edited_from_an_older_text_is_merged() -> None:
    team = Team().planned()
    team.ok("user", "RUN_STEP", step="s1")
    team.ok("agent", "COMPLETE_STEP", step="s1", text="tent\nstove\n")
    team.ok("user", "EDIT_STEP_OUTPUT", step="s1", text="tent\nstove\nmatches\n")
    event = team.ok("user", "EDIT_STEP_OUTPUT", step="s1", base="tent\nstove\n",
                    text="tent, two-person\nstove\n")
    output = team.env.plan_board.steps[0].output
    assert output is not None and output.text == "tent, two-person\nstove\nmatches\n"
    assert "overlap" not in event.info  # different lines: merged, nobody to tell


def test_plan_edits_merge_undo_and_keep_running_steps_in_place() -> None:
    team = Team().planned()
    base = team.env.plan_board.steps[0].description
    team.ok("agent", "EDIT_STEP", step="s1", description="List the light gear for the trip")
    team.ok("user", "EDIT_STEP", step="s1", base=base,  # made on the older text: merged
            description="List the gear for the trip to the lake")
    merged = team.env.plan_board.steps[0].description
    assert "light" in merged and "lake" in merged
    team.ok("agent", "SUGGEST_STEP", step="s3", description="Check the list against the weather")
    team.ok("user", "UNDO_SUGGESTION", step="s3")
    assert team.env.plan_board.steps[2].description == "Add the items to the checklist"
    team.refused("user", "UNDO_SUGGESTION", "no suggestion", step="s3")
    team.ok("user", "ADD_STEP", description="Pack the car", assignee="person", after="s1")
    assert [s.id for s in team.env.plan_board.steps] == ["s1", "s4", "s2", "s3"]
    team.ok("user", "MOVE_STEP", step="s4", position=3)
    team.ok("user", "DELETE_STEP", step="s2")
    assert [s.id for s in team.env.plan_board.steps] == ["s1", "s3", "s4"]
    team.ok("user", "RUN_STEP", step="s1")
    team.refused("user", "DELETE_STEP", "running", step="s1")
    team.refused("user", "RUN_STEP", "s1 is in progress", step="s3")


def test_with_plans_keeps_the_tasks_own_actions_and_replays_from_its_env_args() -> None:
    planned = with_plans(TodoEnv)
    assert with_plans(planned) is planned
    assert {"ADD_ITEM", "PROPOSE_PLANS", "COMPLETE_STEP"} <= set(planned._specs)
    assert "PROPOSE_PLANS" not in TodoEnv._specs  # the task itself is untouched
    with pytest.raises(TypeError, match="CoEnv class"):
        with_plans(dict)  # type: ignore[arg-type]
    team = Team().planned()
    team.ok("user", "RUN_ALL")
    team.ok("agent", "ADD_ITEM", text="tent")
    assert team.env.env_args()["plans"] is True
    fresh = Coordinator(make_env("todo", **team.env.env_args()), TEAM, session_id="plans")
    for _ in replay_events(fresh, team.events):
        pass
    assert fresh.snapshot() == team.coordinator.snapshot()


# -- a stateful property test: any plan acts, hostile ones included; the log replays ------------

PLAN_ACTS = ["PROPOSE_PLANS", "SELECT_PLAN", "ADD_STEP", "EDIT_STEP", "SUGGEST_STEP",
             "UNDO_SUGGESTION", "DELETE_STEP", "MOVE_STEP", "ASSIGN_STEP", "RUN_STEP", "RUN_ALL",
             "RUN_REMAINING", "PAUSE_AFTER_STEP", "COMPLETE_STEP", "FAIL_STEP",
             "EDIT_STEP_OUTPUT", "WRITE_PLAN_OUTPUT", "NEW_PLAN"]
step_ids = st.sampled_from(["s1", "s2", "s3", "s4", "s5", "s9", "", "S1"])
plans_arg = st.one_of(st.just(THREE_STEPS), st.lists(st.fixed_dictionaries({
    "title": hostile_text, "steps": st.lists(st.fixed_dictionaries({
        "description": hostile_text, "assignee": st.sampled_from(["agent", "person", "x"])}),
        min_size=1, max_size=4)}), min_size=0, max_size=4), hostile_text)
args = st.fixed_dictionaries({}, optional={
    "step": step_ids, "plans": plans_arg, "index": st.integers(-1, 3), "position": st.integers(-1, 5),
    "description": hostile_text, "assignee": st.sampled_from(["agent", "person", "nobody"]),
    "text": hostile_text, "base": hostile_text, "reason": hostile_text, "after": step_ids,
    "request": hostile_text,
    "plan": st.sampled_from(["", "1", "2", "interactive_plan_2", "interactive_plan_5", "0"]),
    "items": st.one_of(st.none(), st.lists(st.dictionaries(st.sampled_from(["id", "title"]),
                                                           hostile_text, max_size=2),
                                           max_size=3), hostile_text)})


class PlanMachine(RuleBasedStateMachine):
    """Any plan acts; after each, the plan keeps its rules and the log replays to its state.

    The log is replayed into one replica, a transition at a time, as it grows: that applies
    exactly what a replay from scratch applies, but in time linear in the log. Replaying it
    whole after every step took quadratic time, which under load ran past the test timeout;
    pytest-timeout then failed the example mid-run, and Hypothesis, replaying it without the
    timeout, reported FlakyStrategyDefinition ("the second run drew more data").
    """

    @initialize()
    def start(self) -> None:
        self.team = Team()
        self.replica = Coordinator(make_env("todo", plans=True), TEAM, session_id="plans")
        self.replayed = 0  # events of the team's log applied to the replica so far

    @rule(role=st.sampled_from(["agent", "user"]), name=st.sampled_from(PLAN_ACTS), args=args)
    def act(self, role: str, name: str, args: dict[str, Any]) -> None:
        before = self.team.coordinator.snapshot()
        event = self.team.act(role, name, **args)
        if event.status == "error":  # refused: nothing changed but the counters
            after = self.team.coordinator.snapshot()
            assert after["views"] == before["views"] and after["chat"] == before["chat"]

    @invariant()
    def the_plan_keeps_its_rules(self) -> None:
        if not hasattr(self, "team"):
            return
        view = self.team.env.view("agent")
        assert list(self.team.env.plan_boards) == [
            c.name for c in view.components if c.name.startswith(PLAN_COMPONENT)]
        for name, board in self.team.env.plan_boards.items():  # each plan keeps its own rules
            steps = board.steps
            assert len({s.id for s in steps}) == len(steps)
            busy = [i for i, s in enumerate(steps) if s.status in ("running", "needs_input")]
            assert len(busy) <= 1
            for i in busy:  # never out of order
                assert all(s.status == "done" for s in steps[:i])
                assert steps[i].status == ("running" if steps[i].assignee == "agent"
                                           else "needs_input")
            json.dumps(view[name].content)  # plain JSON on the wire

    @invariant()
    def the_log_replays_to_the_same_state(self) -> None:
        if not hasattr(self, "team"):
            return
        # Whole transitions only: each act (and the start) records all its events at once.
        for _ in replay_events(self.replica, self.team.events[self.replayed:]):
            pass
        self.replayed = len(self.team.events)
        assert self.replica.snapshot() == self.team.coordinator.snapshot()


def test_plan_properties() -> None:
    run = PlanMachine.TestCase
    run.settings = settings(max_examples=150, stateful_step_count=30, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow])
    run("runTest").runTest()


def test_every_plan_act_is_logged_as_an_action_everyone_hears_of() -> None:
    team = Team()
    event = team.ok("agent", "PROPOSE_PLANS", plans=THREE_STEPS)
    assert event.type is EventType.ACTION and sorted(event.recipients) == ["agent", "user"]


def test_a_planned_task_passes_check_env_and_keeps_its_constructor(use_shared_data) -> None:
    from cogym_lab.core.check_env import check_env

    assert check_env(with_plans(TodoEnv)) == []  # actions typed, env_args rebuild it, replays
    travel = make_env("travel_planning", instance=0, plans=True, protocol="cogym_lab")
    travel.reset(seed=0)
    assert travel.protocol == "cogym_lab" and PLAN_COMPONENT in travel.view("agent")
    assert "FLIGHT_SEARCH" in travel._specs and "RUN_ALL" in travel._specs


async def test_a_suggested_step_comes_from_the_lm_as_deferred_work_and_can_be_undone(
        server) -> None:
    from cogym_lab.lm import LMConfig, make_lm

    team = Team().planned()
    unset = team.record(team.coordinator.handle(
        "user", {"name": "ASK_SUGGESTION", "args": {"step": "s2"}}, 40.0))
    ((role, deferred),) = unset.deferred
    with pytest.raises(RuntimeError, match="no model is set for suggestions"):
        await deferred.work()  # the env node logs this as the step's failure
    team.record(team.coordinator.deferred_failed(role, "ASK_SUGGESTION", "no model", 41.0))
    team.env.suggestion_lm = make_lm(LMConfig(model="tools-lm", base_url=server.base_url,
                                              api_key="sk-test", backoff=0.01))
    team.refused("user", "ASK_SUGGESTION", "No step 's9'", step="s9")  # before any LM call
    server.add("Step: Ask which nights will be cold, and pack for them")
    asked = team.record(team.coordinator.handle(
        "user", {"name": "ASK_SUGGESTION", "args": {"step": "s2"}}, 50.0))
    ((role, deferred),) = asked.deferred  # the team works on while the LM thinks
    assert team.env.plan_board.steps[1].description == "Say what must not be forgotten"
    landed = team.record(team.coordinator.apply_follow_up(role, await deferred.work(), 51.0))
    assert landed.events[0].action.startswith("SUGGEST_STEP(") and landed.events[0].info[
        "follow_up"]
    step = team.env.plan_board.steps[1]
    assert step.description == "Ask which nights will be cold, and pack for them"
    assert step.undo == "Say what must not be forgotten"
    prompt = server.bodies[-1]["messages"][-1]["content"]
    assert "2. (person) Say what must not be forgotten" in prompt and "camping" in prompt
    team.ok("user", "UNDO_SUGGESTION", step="s2")
    assert team.env.plan_board.steps[1].description == "Say what must not be forgotten"
    fresh = Coordinator(make_env("todo", plans=True), TEAM, session_id="plans")
    for _ in replay_events(fresh, team.events):  # the log holds the suggestion: no LM needed
        pass
    assert fresh.snapshot() == team.coordinator.snapshot()


def test_the_first_step_written_by_hand_starts_a_plan_and_replays() -> None:
    """A person who does not wait for proposals writes the plan's first step themselves."""
    team = Team()
    team.refused("user", "ADD_STEP", "A step needs a description", description="  ")
    assert team.env.plan_board.state.plan is None
    team.ok("agent", "PROPOSE_PLANS", plans=THREE_STEPS)
    team.ok("user", "ADD_STEP", description="Ask what the trip is for", assignee="person")
    state = team.env.plan_board.state
    assert state.proposals == ()  # the plan is the person's own now: nothing left to pick
    assert [(s.id, s.description, s.assignee, s.status) for s in state.plan.steps] == [
        ("s1", "Ask what the trip is for", "person", "not_run")]
    team.ok("user", "ADD_STEP", description="List the gear", after="s1")
    team.ok("user", "MOVE_STEP", step="s2", position=0)
    assert [s.id for s in team.env.plan_board.steps] == ["s2", "s1"]
    team.refused("user", "MOVE_STEP", "position from 0 to 1", step="s2", position=2)
    fresh = Coordinator(make_env("todo", **team.env.env_args()), TEAM, session_id="plans")
    for _ in replay_events(fresh, team.events):
        pass
    assert fresh.env.plan_board.content() == team.env.plan_board.content()
