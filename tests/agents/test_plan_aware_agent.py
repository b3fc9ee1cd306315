"""The plan-aware agent in whole sessions: our real LM client (over aiohttp) against a loopback
OpenAI-compatible server, on a task made with plans, with a person side that picks a plan, takes a
step and completes it.

Checked from the results folder: the order of the plan's life (proposal, selection, a continuous
run that stops at the person's step and goes on after it, the plan output in the workspace),
what the agent sent its LM (the step, the plan's context, earlier plans as examples), and a
second session that learns from the first one's plan.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from cogym_lab.agents import PlanAwareAgent
from cogym_lab.core.messages import EventType
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.envs import make_env
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.teams import load_team
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.plan_scripts import StepTwoPerson

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

PLANS = [{"title": "Gear, then the person's must-haves", "steps": [
    {"description": "Add the basic camping gear", "assignee": "agent"},
    {"description": "Name what must not be forgotten", "assignee": "agent"},
    {"description": "Add the must-haves", "assignee": "agent", "output_format": "entity_list"}]}]


class PlanRolePlay:
    """The agent's LM, answering by what each prompt asks."""

    def __init__(self) -> None:
        self.step_calls: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        if "propose how the team could go about the task" in asked:
            return f"Thought: one plan will do.\nPlans: {json.dumps(PLANS)}"
        if "Every step of the plan is done" in asked:
            return "Thought: list it.\nOutput: Pack: tent, stove, rain jacket, headlamp."
        if "You are carrying out step" in asked:
            step = asked.split("You are carrying out step ", 1)[1].split(" ", 1)[0]
            calls = self.step_calls[step] = self.step_calls.get(step, 0) + 1
            if step == "s1" and calls == 1:
                return 'Thought: start with the tent.\nAction: ADD_ITEM(text="tent")'
            items = [{"id": "tent"}] if step == "s1" else [{"id": "rain jacket"}]
            return (f'Thought: done.\nAction: COMPLETE_STEP(step="{step}", text="added", '
                    f"items={json.dumps(items)})")
        # The situational planning step (and any other prompt) hears: wait.
        return "Thought: nothing to add.\nDecision: 3\nAction: WAIT_TEAMMATE_CONTINUE()"


class Person(StepTwoPerson):
    """The person side: picks the plan, takes step s2, completes it, finishes at the end."""

    def work_on(self, step: dict[str, Any]) -> str:
        return 'COMPLETE_STEP(step="s2", text="the rain jacket", items=[{"id": "rain jacket"}])'


def run_session(server: ScriptedOpenAIServer, folder: Any) -> Any:
    lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, api_key="sk-test",
                          backoff=0.01))
    agent = PlanAwareAgent(lm, use_scratchpad=False)
    session = Session(make_env("todo", plans=True), {"agent": agent, "user": Person()},
                      kinds={"agent": "agent", "user": "user"}, results_dir=folder,
                      config=SessionConfig(idle_seconds=2, timeout=60))
    return session.run_sync()


def test_the_plan_aware_agent_plans_runs_asks_and_writes_the_output(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=PlanRolePlay()) as server:
        result = run_session(server, tmp_path / "first")
        bodies = server.bodies
    assert result.end_reason == "finished"
    events = read_events(tmp_path / "first")
    acts = [(e.actor, e.action.split("(", 1)[0]) for e in events
            if e.type in (EventType.ACTION, EventType.MESSAGE) and e.action]
    names = [name for _, name in acts]
    assert names.index("PROPOSE_PLANS") < names.index("SELECT_PLAN") < names.index("RUN_ALL")
    assert ("agent", "ADD_ITEM") in acts and ("user", "COMPLETE_STEP") in acts
    asked = [e for e in events if e.type is EventType.MESSAGE and e.actor == "agent"]
    assert any("Step 2 of the plan is yours" in (e.action or "") for e in asked)  # asked once
    assert len([e for e in asked if "Step 2 of" in (e.action or "")]) == 1
    assert all(e.status == "ok" for e in events if e.actor == "agent")
    final = read_session(tmp_path / "first")["final_state"]
    plan = next(c["content"] for c in final["views"]["agent"]["components"]
                if c["name"] == PLAN_COMPONENT)
    assert [s["status"] for s in plan["plan"]["steps"]] == ["done", "done", "done"]
    assert [s["completed_by"] for s in plan["plan"]["steps"]] == ["agent", "user", "agent"]
    assert plan["output"].startswith("Pack: tent")
    # The step's prompt carries the step, the task's guidance and what earlier steps produced.
    s3 = next(b["messages"][-1]["content"] for b in bodies
              if "You are carrying out step s3" in b["messages"][-1]["content"])
    assert "Add the must-haves" in s3 and "the rain jacket" in s3
    assert "Add, check or remove checklist items" in s3
    # ... and what the step should produce: its output format, in words (Cocoa §4.2.3)
    assert "What this step should produce (its output format): a list of short phrases" in s3
    s1 = next(b["messages"][-1]["content"] for b in bodies
              if "You are carrying out step s1" in b["messages"][-1]["content"])
    assert "(its output format): (no format set" in s1
    assert plan["plan"]["steps"][2]["output_format"] == "entity_list"


def test_a_later_session_proposes_with_the_earlier_plans_as_examples(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=PlanRolePlay()) as server:
        run_session(server, tmp_path / "one")
        first_bodies = len(server.bodies)
        run_session(server, tmp_path / "two")
        proposal = next(b["messages"][-1]["content"] for b in server.bodies[first_bodies:]
                        if "propose how the team" in b["messages"][-1]["content"])
    # The first session's plan as it ended (its s2 given to the person) is an example.
    assert '"Name what must not be forgotten", "assignee": "person"' in proposal


def test_the_collaborative_plans_team_makes_the_task_with_a_plan() -> None:
    team = load_team("collaborative-plans")
    assert team.plans and team.members["agent"].type == "plan-aware"


def test_a_session_of_the_plans_team_is_built_on_the_task_with_a_plan(monkeypatch) -> None:
    from cogym_lab import SessionSpec, build_session

    for name in ("COGYM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    spec = SessionSpec(task="todo", team="collaborative-plans", people=["user"])
    session = build_session(spec, guides=True)  # no model set: a guide, but the env is built
    assert session.env.env_args()["plans"] is True
    assert "RUN_ALL" in {spec.name for spec in session.env.action_specs()}


async def test_the_simulated_user_co_plans_through_its_task_actions(server) -> None:
    """Its prompt says what it may do with a plan, and its task actions include the plan's: it
    picks a proposed plan, then takes a step that needs what only it knows."""
    from cogym_lab.core.coordinator import Coordinator
    from cogym_lab.core.messages import TeamMember
    from cogym_lab.users import Persona, SimulatedUser
    from tests.support.notified import notified

    lm = make_lm(LMConfig(model="user-lm", base_url=server.base_url, backoff=0.01,
                          max_retries=0))
    user = SimulatedUser(lm, "You will not go without: rain jacket, headlamp.",
                         persona=Persona(proactive_action=True))
    coordinator = Coordinator(make_env("todo", plans=True),
                              [TeamMember(role="agent"), TeamMember(role="user", kind="user")],
                              session_id="co-plan")
    first = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    user.start(first["user"].context)
    proposed = coordinator.handle("agent", {"name": "PROPOSE_PLANS", "args": {"plans": PLANS}},
                                  1.0)
    notification = next(n for n in notified(coordinator, proposed) if n.recipient == "user")
    server.extend(["Thought: there is a plan to pick.\nChoice: 3",
                   "Thought: the first plan.\nAction: SELECT_PLAN(index=0)"])
    picked = await user.act(notification)
    assert picked == "SELECT_PLAN(index=0)"
    decide, act = server.bodies
    assert "interactive plan" in decide["messages"][0]["content"]  # its co-planning moves
    assert "ASSIGN_STEP" in act["messages"][-1]["content"]  # among its task actions
    selected = coordinator.handle("user", picked, 2.0)
    notification = next(n for n in notified(coordinator, selected) if n.recipient == "user")
    server.extend(["Choice: 3", 'Action: ASSIGN_STEP(step="s2", assignee="person")'])
    taken = coordinator.handle("user", await user.act(notification), 3.0)
    assert taken.events[0].status == "ok"
    assert coordinator.env.plan_board.steps[1].assignee == "person"  # type: ignore[attr-defined]
