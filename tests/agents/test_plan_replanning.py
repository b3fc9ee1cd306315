"""Automatic replanning and completions (Cocoa §4.1.4) in whole sessions: the plan-aware agent with
our real LM client (over aiohttp) against the loopback OpenAI-compatible server, on the todo task
made with plans, and a scripted person who edits, accepts, dismisses and picks.

Checked from the results folder: the offers the agent made, the plan after the person's
answer, and which prompts reached the LM (a small edit never costs an LM call).
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
from cogym_lab.testing import ScriptedOpenAIServer

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

PLANS = [{"title": "Papers, themes, list", "steps": [
    {"description": "Search papers on camping gear", "assignee": "agent"},
    {"description": "Suggest common themes in the papers", "assignee": "agent"},
    {"description": "Add the items the themes point to", "assignee": "agent"}]}]
CHOICES = [
    [{"description": "List what each expert recommends", "assignee": "agent"},
     {"description": "Add the items most experts name", "assignee": "agent"}],
    [{"description": "Ask the person which expert to trust", "assignee": "person"},
     {"description": "Add that expert's items", "assignee": "agent"}]]
COMPLETIONS = ["Check the weather forecast for rain", "Check the weather forecast for frost"]


class ReplanRolePlay:
    """The agent's LM: one plan; replanning choices unless told the edit keeps the course."""

    def __init__(self, keeps_course: bool = False) -> None:
        self.keeps_course = keeps_course

    def __call__(self, body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        if "propose how the team could go about the task" in asked:
            return f"Thought: one plan.\nPlans: {json.dumps(PLANS)}"
        if "Decide whether the edit changes the plan's course" in asked:
            if self.keeps_course:
                return "Thought: the later steps still follow.\nReplan: none"
            return f"Thought: no papers come any more.\nReplan: {json.dumps(CHOICES)}"
        if "Offer two or three ways to complete" in asked:
            return f"Thought: the weather.\nCompletions: {json.dumps(COMPLETIONS)}"
        # The situational planning step (and any other prompt) hears: wait.
        return "Thought: nothing to add.\nDecision: 3\nAction: WAIT_TEAMMATE_CONTINUE()"


class Person:
    """Picks the plan, makes one move (``move``), answers the offer, and finishes once the
    answer took effect (or, with nothing to answer, when the session falls idle)."""

    kind = "user"

    def __init__(self, move: str, answer: str | None = None) -> None:
        self.move, self.answer = move, answer
        self.moved = self.answered = False

    def start(self, context: Any) -> None: ...

    def end(self, final: Any) -> None: ...

    async def act(self, notification: Any) -> str | None:
        plan = notification.view[PLAN_COMPONENT].content
        if plan["proposals"]:
            return "SELECT_PLAN(index=0)"
        if plan["plan"] is None:
            return None
        if not self.moved:
            self.moved = True
            return self.move
        offered = plan["replan"] or plan["completions"]
        if offered and self.answer and not self.answered:
            self.answered = True
            return self.answer
        if self.answered and not offered:
            return "FINISH()"
        if notification.event.type is EventType.TICK and not self.answer:
            return "FINISH()"  # the agent left the edit as it is
        return None


def run(tmp_path: Any, person: Person, keeps_course: bool = False) -> tuple[dict[str, Any],
                                                                            list[str], list[Any]]:
    with ScriptedOpenAIServer(responder=ReplanRolePlay(keeps_course)) as server:
        lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, api_key="sk-test",
                              backoff=0.01))
        session = Session(make_env("todo", plans=True),
                          {"agent": PlanAwareAgent(lm, use_scratchpad=False), "user": person},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                          config=SessionConfig(idle_seconds=2, timeout=60))
        result = session.run_sync()
        asked = [b["messages"][-1]["content"] for b in server.bodies]
    assert result.end_reason == "finished"
    final = read_session(tmp_path)["final_state"]
    plan = next(c["content"] for c in final["views"]["user"]["components"]
                if c["name"] == PLAN_COMPONENT)
    events = [e for e in read_events(tmp_path) if e.type is EventType.ACTION and e.action]
    return plan, asked, events


def _names(events: list[Any]) -> list[str]:
    return [e.action.split("(", 1)[0] for e in events]


NEW_S1 = "Find experts who write about ultralight hiking"


def test_an_edit_that_changes_the_course_is_offered_a_replan_and_accepting_rewrites_the_rest(
        tmp_path) -> None:
    person = Person(f'EDIT_STEP(step="s1", description="{NEW_S1}")', "ACCEPT_REPLAN(choice=1)")
    plan, asked, events = run(tmp_path, person)
    names = _names(events)
    assert names.index("EDIT_STEP") < names.index("OFFER_REPLAN") < names.index("ACCEPT_REPLAN")
    offer = next(e for e in events if e.action.startswith("OFFER_REPLAN"))
    assert offer.actor == "agent" and 's1' in offer.action
    steps = plan["plan"]["steps"]
    assert steps[0]["description"] == NEW_S1 and steps[0]["id"] == "s1"  # the person's, whole
    assert [(s["description"], s["assignee"]) for s in steps[1:]] == [
        (s["description"], s["assignee"]) for s in CHOICES[1]]
    assert all(s["status"] == "not_run" for s in steps[1:])
    assert plan["replan"] is None
    judged = next(a for a in asked if "changes the plan's course" in a)
    assert "Search papers on camping gear" in judged and NEW_S1 in judged


def test_dismissing_the_offer_leaves_the_plan(tmp_path) -> None:
    person = Person(f'EDIT_STEP(step="s1", description="{NEW_S1}")', "DISMISS_REPLAN()")
    plan, _, events = run(tmp_path, person)
    assert "OFFER_REPLAN" in _names(events) and "DISMISS_REPLAN" in _names(events)
    assert [s["description"] for s in plan["plan"]["steps"]] == [
        NEW_S1, *(s["description"] for s in PLANS[0]["steps"][1:])]
    assert plan["replan"] is None


def test_an_edit_the_lm_judges_on_course_gets_no_offer(tmp_path) -> None:
    person = Person(f'EDIT_STEP(step="s1", description="{NEW_S1}")')
    plan, asked, events = run(tmp_path, person, keeps_course=True)
    assert any("changes the plan's course" in a for a in asked)  # the LM judged it
    assert "OFFER_REPLAN" not in _names(events) and plan["replan"] is None


def test_a_small_edit_costs_no_lm_call_and_gets_no_offer(tmp_path) -> None:
    person = Person('EDIT_STEP(step="s1", description="Search papers on camping gear!")')
    plan, asked, events = run(tmp_path, person)
    assert not any("changes the plan's course" in a for a in asked)
    assert "OFFER_REPLAN" not in _names(events) and plan["replan"] is None


def test_a_new_step_is_offered_completions_and_picking_one_sets_its_text(tmp_path) -> None:
    person = Person('ADD_STEP(description="Check the weather", assignee="person", after="s3")',
                    'PICK_COMPLETION(step="s4", choice=1)')
    plan, asked, events = run(tmp_path, person)
    names = _names(events)
    assert names.index("ADD_STEP") < names.index("OFFER_COMPLETIONS") < names.index(
        "PICK_COMPLETION")
    step = plan["plan"]["steps"][3]
    assert step["id"] == "s4" and step["description"] == COMPLETIONS[1]
    assert step["undo"] == "Check the weather"  # the person's text comes back with undo
    assert plan["completions"] is None
    completing = next(a for a in asked if "Offer two or three ways to complete" in a)
    assert '"Check the weather"' in completing


class SilentPerson(Person):
    """Edits step s1, then leaves the offer unanswered through two idle ticks and finishes."""

    def __init__(self) -> None:
        super().__init__(f'EDIT_STEP(step="s1", description="{NEW_S1}")')
        self.ticks = 0

    async def act(self, notification: Any) -> str | None:
        plan = notification.view[PLAN_COMPONENT].content
        if not self.moved or plan["plan"] is None:
            return await super().act(notification)
        if notification.event.type is EventType.TICK and plan["replan"]:
            self.ticks += 1
            return "FINISH()" if self.ticks == 2 else None
        return None


def test_an_unanswered_offer_keeps_the_agent_from_running_the_plan(tmp_path) -> None:
    plan, _, events = run(tmp_path, SilentPerson())
    assert "OFFER_REPLAN" in _names(events) and "RUN_ALL" not in _names(events)
    assert plan["replan"] is not None
    assert all(s["status"] == "not_run" for s in plan["plan"]["steps"])
