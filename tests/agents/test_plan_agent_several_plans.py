"""The plan-aware agent with several plans in one session (Cocoa's document holds several, run in
parallel): our real LM client (over aiohttp) against the loopback OpenAI-compatible server, on
the todo task made with plans.

A whole session (the agent proposes for both plans, carries out both, writes both outputs, and
names the plan in every plan act), and two sessions driven by hand through a coordinator, so the
order of the agent's moves is exact: running agent steps of two plans advance in turns, and a
teammate's edit in plan 2 is judged, and offered a replan, in plan 2 only (the plans' step ids
are the same, so what the agent remembers must be kept per plan).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cogym_lab.agents import PlanAwareAgent
from cogym_lab.agents.base import WAIT
from cogym_lab.core import Notification
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.core.plan_env import PLAN_COMPONENT, Planning, plan_component
from cogym_lab.envs import make_env
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.notified import notified

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

SECOND = plan_component(2)
FOOD = "Plan the food for the trip"
#: Each plan's steps and output, by the request the plan answers.
GEAR_PLAN = {"title": "Gear", "steps": [
    {"description": "Add the tent and the stove", "assignee": "agent"},
    {"description": "Add the rain gear", "assignee": "agent"}]}
FOOD_PLAN = {"title": "Food", "steps": [
    {"description": "Add the staples", "assignee": "agent"},
    {"description": "Add the snacks", "assignee": "agent"}]}
OUTPUTS = {"gear": "Pack: tent, stove, rain jacket.", "food": "Food: rice, lentils, nuts."}
NEW_S1 = "Ask the hikers' forum which dishes keep for a week"
CHOICES = [[{"description": "Add the dishes the forum names", "assignee": "agent"}]]


def which_plan(asked: str) -> str:
    """The plan a prompt is about: by the request (proposal, output) or the step's plan line."""
    if "The step is in plan 2" in asked or FOOD in asked:
        return "food"
    return "gear"


class TwoPlansPlay:
    """The agent's LM for two plans: a proposal each, two actions per step (an item, then the
    step's completion, which names no plan: the agent adds it), an output each; replanning
    choices when asked; every other prompt (the situational planning step) waits."""

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], int] = {}
        self.steps: list[tuple[str, str]] = []  # (plan, step) of each step prompt, in order

    def __call__(self, body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        plan = which_plan(asked)
        if "propose how the team could go about the task" in asked:
            chosen = FOOD_PLAN if plan == "food" else GEAR_PLAN
            return f"Thought: one plan.\nPlans: {json.dumps([chosen])}"
        if "Every step of the plan is done" in asked:
            return f"Thought: sum up.\nOutput: {OUTPUTS[plan]}"
        if "Decide whether the edit changes the plan's course" in asked:
            return f"Thought: no forum in the plan.\nReplan: {json.dumps(CHOICES)}"
        if "You are carrying out step" in asked:
            step = asked.split("You are carrying out step ", 1)[1].split(" ", 1)[0]
            self.steps.append((plan, step))
            calls = self.calls[plan, step] = self.calls.get((plan, step), 0) + 1
            if calls == 1:
                return f'Thought: one item.\nAction: ADD_ITEM(text="{plan} {step}")'
            return f'Thought: done.\nAction: COMPLETE_STEP(step="{step}", text="{plan} {step}")'
        return "Thought: nothing to add.\nDecision: 3\nAction: WAIT_TEAMMATE_CONTINUE()"


def plan_view(notification: Any, name: str) -> dict[str, Any]:
    return notification.view[name].content


class TwoPlansPerson:
    """Starts a second plan, picks the proposal of each plan, runs each once, and finishes when
    both outputs are written."""

    kind = "user"

    def __init__(self) -> None:
        self.ran: set[str] = set()

    def start(self, context: Any) -> None: ...

    def end(self, final: Any) -> None: ...

    async def act(self, notification: Any) -> str | None:
        if SECOND not in notification.view:
            return f'NEW_PLAN(request="{FOOD}")'
        plans = {name: plan_view(notification, name) for name in (PLAN_COMPONENT, SECOND)}
        for name, plan in plans.items():
            if plan["proposals"]:
                return f'SELECT_PLAN(index=0, plan="{name}")'
        for name, plan in plans.items():
            if plan["plan"] is not None and name not in self.ran:
                self.ran.add(name)
                return f'RUN_ALL(plan="{name}")'
        if all(plan["output"] for plan in plans.values()):
            return "FINISH()"
        return None


def test_the_agent_carries_out_two_plans_and_writes_both_outputs(tmp_path) -> None:
    play = TwoPlansPlay()
    with ScriptedOpenAIServer(responder=play) as server:
        lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, api_key="sk-test",
                              backoff=0.01))
        session = Session(make_env("todo", plans=True),
                          {"agent": PlanAwareAgent(lm, use_scratchpad=False),
                           "user": TwoPlansPerson()},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                          config=SessionConfig(idle_seconds=2, timeout=60))
        result = session.run_sync()
    assert result.end_reason == "finished"
    final = read_session(tmp_path)["final_state"]
    shown = {c["name"]: c["content"] for c in final["views"]["user"]["components"]}
    for name, key in ((PLAN_COMPONENT, "gear"), (SECOND, "food")):
        steps = shown[name]["plan"]["steps"]
        assert [(s["status"], s["completed_by"]) for s in steps] == [("done", "agent")] * 2
        assert shown[name]["output"] == OUTPUTS[key]
        assert [c["text"] for c in shown[name]["context"]] == [f"{key} s1", f"{key} s2"]
    assert sorted(set(play.steps)) == [("food", "s1"), ("food", "s2"), ("gear", "s1"),
                                       ("gear", "s2")]
    # Every plan act the agent sent named its plan, and the plan it was about.
    plan_acts = [e for e in read_events(tmp_path) if e.actor == "agent" and e.action
                 and e.type is EventType.ACTION and e.action.split("(", 1)[0] in Planning._specs]
    named = [(e.action.split("(", 1)[0], re.search(r'plan="([^"]+)"', e.action))
             for e in plan_acts]
    assert all(found is not None for _, found in named), [e.action for e in plan_acts]
    by_plan = {(act, found.group(1)) for act, found in named if found}
    for name in (PLAN_COMPONENT, SECOND):
        assert {("PROPOSE_PLANS", name), ("COMPLETE_STEP", name),
                ("WRITE_PLAN_OUTPUT", name)} <= by_plan


class Driven:
    """A planned todo session driven by hand: the person's acts are sent as given, and the agent
    acts on its latest notification when asked, its action applied as a session applies it."""

    def __init__(self, server: ScriptedOpenAIServer) -> None:
        self.env = make_env("todo", plans=True)
        self.coordinator = Coordinator(self.env, [TeamMember(role="agent", kind="agent"),
                                                  TeamMember(role="user", kind="user")],
                                       session_id="two-plans")
        self.clock = 0.0
        lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, api_key="sk-test",
                              backoff=0.01))
        self.agent = PlanAwareAgent(lm, use_scratchpad=False)
        self.latest: Notification | None = None
        self.agent.start(self._see(self.coordinator.start(self.clock)).context)

    def _see(self, transition: Transition) -> Notification:
        for notification in notified(self.coordinator, transition):
            if notification.recipient == "agent":
                self.latest = notification
        assert self.latest is not None
        return self.latest

    def person(self, name: str, **args: Any) -> None:
        self.clock += 1.0
        transition = self.coordinator.handle("user", {"name": name, "args": args}, self.clock)
        assert transition.events[0].status == "ok", transition.events[0].error
        self._see(transition)

    async def agent_moves(self) -> str | None:
        assert self.latest is not None
        action = await self.agent.act(self.latest)
        if action is None or action == WAIT:
            return action
        self.clock += 1.0
        transition = self.coordinator.handle("agent", action, self.clock)
        assert transition.events[0].status == "ok", (action, transition.events[0].error)
        self._see(transition)
        return action

    async def close(self) -> None:
        await self.agent.lm.aclose()


async def picked(driven: Driven) -> None:
    """The person starts plan 2; the agent proposes for each plan; the person picks both."""
    driven.person("NEW_PLAN", request=FOOD)
    proposed = [await driven.agent_moves(), await driven.agent_moves()]
    assert [a.split("(", 1)[0] for a in proposed if a] == ["PROPOSE_PLANS"] * 2
    assert f'plan="{PLAN_COMPONENT}"' in proposed[0] and f'plan="{SECOND}"' in proposed[1]
    driven.person("SELECT_PLAN", index=0)
    driven.person("SELECT_PLAN", index=0, plan=SECOND)


async def test_running_steps_of_two_plans_advance_in_turns() -> None:
    play = TwoPlansPlay()
    with ScriptedOpenAIServer(responder=play) as server:
        driven = Driven(server)
        await picked(driven)
        driven.person("RUN_ALL")
        driven.person("RUN_ALL", plan=SECOND)
        moves = [await driven.agent_moves() for _ in range(10)]
        await driven.close()
    # One action each in turn: neither plan's steps wait for the other plan to finish.
    assert play.steps == [("gear", "s1"), ("food", "s1")] * 2 + [("gear", "s2"),
                                                                 ("food", "s2")] * 2
    names = [m.split("(", 1)[0] for m in moves if m]
    assert names.count("WRITE_PLAN_OUTPUT") == 2 and names[-1] == "WRITE_PLAN_OUTPUT"
    boards = driven.env.plan_boards  # type: ignore[attr-defined]
    assert boards[PLAN_COMPONENT].state.output == OUTPUTS["gear"]
    assert boards[SECOND].state.output == OUTPUTS["food"]
    assert all(step.completed_by == "agent" for board in boards.values()
               for step in board.steps)


async def test_an_edit_in_plan_2_is_offered_a_replan_on_plan_2_only() -> None:
    play = TwoPlansPlay()
    with ScriptedOpenAIServer(responder=play) as server:
        driven = Driven(server)
        await picked(driven)
        announced = [await driven.agent_moves(), await driven.agent_moves()]
        assert all(a and a.startswith("SEND_TEAMMATE_MESSAGE") for a in announced)
        assert "Plan 1 is ready" in announced[0] and "Plan 2 is ready" in announced[1]
        # Step s1 of plan 2 is rewritten; plan 1 has a step s1 too, with its old text.
        driven.person("EDIT_STEP", step="s1", description=NEW_S1, plan=SECOND)
        offer = await driven.agent_moves()
        after = await driven.agent_moves()  # nothing more to offer: it waits for the person
        asked = [b["messages"][-1]["content"] for b in server.bodies]
        await driven.close()
    assert offer is not None and offer.startswith("OFFER_REPLAN(")
    assert f'plan="{SECOND}"' in offer and 'step="s1"' in offer
    assert after == WAIT
    judged = [a for a in asked if "changes the plan's course" in a]
    assert len(judged) == 1 and NEW_S1 in judged[0] and "Add the snacks" in judged[0]
    boards = driven.env.plan_boards  # type: ignore[attr-defined]
    assert boards[SECOND].state.replan is not None
    assert boards[SECOND].state.replan.after == "s1"
    assert boards[PLAN_COMPONENT].state.replan is None
    assert boards[PLAN_COMPONENT].steps[0].description == GEAR_PLAN["steps"][0]["description"]


async def test_an_edit_made_while_an_offer_is_open_is_judged_once_the_offer_is_answered() -> None:
    play = TwoPlansPlay()
    with ScriptedOpenAIServer(responder=play) as server:
        driven = Driven(server)
        await picked(driven)
        for _ in range(2):
            await driven.agent_moves()  # each plan announced
        driven.person("EDIT_STEP", step="s1", description=NEW_S1, plan=SECOND)
        assert (await driven.agent_moves() or "").startswith("OFFER_REPLAN(")
        driven.person("EDIT_STEP", step="s1", description="Buy dried meals at the outfitter",
                      plan=SECOND)
        waited = await driven.agent_moves()  # a question is open: nothing judged over it
        judged_while_open = sum("changes the plan's course" in b["messages"][-1]["content"]
                                for b in server.bodies)
        driven.person("DISMISS_REPLAN", plan=SECOND)
        again = await driven.agent_moves()
        asked = [b["messages"][-1]["content"] for b in server.bodies]
        await driven.close()
    assert waited == WAIT and judged_while_open == 1
    assert again is not None and again.startswith("OFFER_REPLAN(") and f'plan="{SECOND}"' in again
    assert "Buy dried meals at the outfitter" in [a for a in asked
                                                  if "changes the plan's course" in a][-1]
