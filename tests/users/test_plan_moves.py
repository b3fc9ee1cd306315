"""The LM simulated user's plan moves in a real planned session (Cocoa's interactive plans):
it adds, deletes, reruns and pauses steps and asks for suggestions, each chosen by its LM (the
loopback server), read by the action grammar and applied by the plan's rules."""

from __future__ import annotations

from typing import Any

import pytest

from cogym_lab.core import Notification
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import TeamMember
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.envs import make_env
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer
from cogym_lab.users import Move, Persona, SimulatedUser
from tests.support.notified import notified

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

PLAN = [{"title": "Pack", "steps": [
    {"description": "List the gear for the trip", "assignee": "agent"},
    {"description": "Say what must not be forgotten", "assignee": "person"},
    {"description": "Add the items to the checklist", "assignee": "agent"}]}]
#: The plan-aware persona of the collaborative-plans team: 1 answer, 2 feedback, 3 task
#: action (the plan actions are task actions), 4 nothing, 5 finish.
TASK_ACTION = "Choice: 3"


class PlannedSession:
    """A planned todo session with an agent seat driven by hand and the simulated user."""

    def __init__(self, server: ScriptedOpenAIServer) -> None:
        self.env = make_env("todo", plans=True)
        self.coordinator = Coordinator(self.env, [TeamMember(role="agent"),
                                                  TeamMember(role="user", kind="user")],
                                       session_id="plan-moves")
        self.clock = 0.0
        lm = make_lm(LMConfig(model="user-lm", base_url=server.base_url, backoff=0.01,
                              max_retries=0))
        self.user = SimulatedUser(lm, "Never forget the headlamp.",
                                  persona=Persona(proactive_action=True))
        self.latest: Notification | None = None
        self.user.start(self._see(self.coordinator.start(self.clock)).context)
        self.act("agent", "PROPOSE_PLANS", plans=PLAN)
        self.act("user", "SELECT_PLAN", index=0)

    def _see(self, transition: Transition) -> Notification:
        for notification in notified(self.coordinator, transition):
            if notification.recipient == "user":
                self.latest = notification
        assert self.latest is not None
        return self.latest

    def act(self, role: str, name: str, **args: Any) -> Transition:
        self.clock += 1.0
        transition = self.coordinator.handle(role, {"name": name, "args": args}, self.clock)
        assert transition.events[0].status == "ok", transition.events[0].error
        self._see(transition)
        return transition

    async def user_moves(self) -> Transition:
        """The simulated user's next move, applied as the session applies a member's action."""
        assert self.latest is not None
        action = await self.user.act(self.latest)
        assert action is not None
        self.clock += 1.0
        transition = self.coordinator.handle("user", action, self.clock)
        event = transition.events[0]
        assert event.status == "ok", event.error
        self._see(transition)
        return transition

    async def close(self) -> None:
        await self.user.lm.aclose()
        if self.env.suggestion_lm is not None:
            await self.env.suggestion_lm.aclose()

    def steps(self) -> list[tuple[str, str, str]]:
        return [(s.id, s.description, s.status) for s in self.env.plan_board.steps]


async def test_the_prompt_offers_every_plan_move(server) -> None:
    session = PlannedSession(server)
    server.extend([TASK_ACTION, 'Action: ADD_STEP(description="Check the weather", '
                                'assignee="person", after="s1")'])
    await session.user_moves()
    decide, produce = server.bodies
    context = produce["messages"][0]["content"]
    for move in ("ADD_STEP", "DELETE_STEP", "ASK_SUGGESTION", "PAUSE_AFTER_STEP",
                 "RUN_STEP on a done step"):
        assert move in context, move  # described in plan_moves.md, in the context
    listed = produce["messages"][-1]["content"]
    for name in ("ADD_STEP(", "DELETE_STEP(", "RUN_STEP(", "PAUSE_AFTER_STEP(",
                 "ASK_SUGGESTION("):
        assert name in listed, name  # and offered as actions
    assert "ADD_STEP" in decide["messages"][0]["content"]
    await session.close()


async def test_the_user_adds_and_deletes_steps(server) -> None:
    session = PlannedSession(server)
    server.extend([TASK_ACTION, 'Thought: the weather matters.\nAction: ADD_STEP('
                                'description="Check the weather", assignee="person", '
                                'after="s1")',
                   TASK_ACTION, 'Action: DELETE_STEP(step="s3")'])
    await session.user_moves()
    assert [d for _, d, _ in session.steps()] == [
        "List the gear for the trip", "Check the weather", "Say what must not be forgotten",
        "Add the items to the checklist"]
    added = session.env.plan_board.steps[1]
    assert added.assignee == "person" and added.id == "s4"
    await session.user_moves()
    assert [i for i, _, _ in session.steps()] == ["s1", "s4", "s2"]
    assert session.user.moves == [Move.TASK_ACTION, Move.TASK_ACTION]
    await session.close()


async def test_the_user_reruns_a_finished_step(server) -> None:
    session = PlannedSession(server)
    session.act("user", "RUN_STEP", step="s1")
    session.act("agent", "COMPLETE_STEP", step="s1", text="tent, stove")
    assert session.env.plan_board.steps[0].status == "done"
    server.extend([TASK_ACTION, 'Thought: the list is too short.\nAction: RUN_STEP(step="s1")'])
    await session.user_moves()
    rerun = session.env.plan_board.steps[0]
    assert rerun.status == "running" and rerun.runs == 1  # once done, running again
    session.act("agent", "COMPLETE_STEP", step="s1", text="tent, stove, headlamp")
    assert session.env.plan_board.steps[0].runs == 2
    await session.close()


async def test_the_user_pauses_after_a_step(server) -> None:
    session = PlannedSession(server)
    server.extend([TASK_ACTION, 'Action: PAUSE_AFTER_STEP(step="s1")',
                   TASK_ACTION, "Action: RUN_ALL()"])
    await session.user_moves()
    assert session.env.plan_board.state.pause_after == "s1"
    await session.user_moves()
    session.act("agent", "COMPLETE_STEP", step="s1", text="tent, stove")
    # The plan stopped after s1: s2 waits, not started.
    assert [status for _, _, status in session.steps()] == ["done", "not_run", "not_run"]
    assert not session.env.plan_board.state.continuous
    await session.close()


async def test_the_user_asks_for_a_suggestion(server) -> None:
    session = PlannedSession(server)
    session.env.suggestion_lm = make_lm(LMConfig(model="tools-lm", base_url=server.base_url,
                                                 api_key="sk-test", backoff=0.01))
    server.extend([TASK_ACTION, 'Thought: unsure.\nAction: ASK_SUGGESTION(step="s2")',
                   "Step: Say which light and which warm layers must come"])
    asked = await session.user_moves()
    ((role, deferred),) = asked.deferred  # the suggestion LM works while the team goes on
    assert role == "user"
    landed = session.coordinator.apply_follow_up(role, await deferred.work(), 99.0)
    assert landed.events[0].status == "ok"
    step = session.env.plan_board.steps[1]
    assert step.description == "Say which light and which warm layers must come"
    assert step.undo == "Say what must not be forgotten"
    assert session.env.view("user")[PLAN_COMPONENT].content["plan"]["steps"][1][
        "description"] == step.description  # what the user sees next
    await session.close()


async def test_the_user_answers_a_replanning_offer_and_picks_a_completion(server) -> None:
    session = PlannedSession(server)
    session.act("user", "EDIT_STEP", step="s1", description="Ask a friend who hikes a lot")
    session.act("agent", "OFFER_REPLAN", step="s1", choices=[
        ["Add what the friend names"], [{"description": "Say which tips to keep",
                                         "assignee": "person"}]])
    server.extend([TASK_ACTION, "Thought: my own pick.\nAction: ACCEPT_REPLAN(choice=1)"])
    await session.user_moves()
    context = server.bodies[1]["messages"][0]["content"]
    assert "ACCEPT_REPLAN" in context and "PICK_COMPLETION" in context  # in plan_moves.md
    assert [(d, s) for _, d, s in session.steps()] == [
        ("Ask a friend who hikes a lot", "not_run"), ("Say which tips to keep", "not_run")]
    added = session.env.plan_board.steps[1].id
    session.act("agent", "OFFER_COMPLETIONS", step=added,
                choices=["Say which tips to keep for rain", "Say which tips to keep for cold"])
    server.extend([TASK_ACTION, f'Action: PICK_COMPLETION(step="{added}", choice=0)'])
    await session.user_moves()
    assert session.steps()[1][1] == "Say which tips to keep for rain"
    await session.close()
