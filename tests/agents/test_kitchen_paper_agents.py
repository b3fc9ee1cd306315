"""The kitchen's LM agents as the DPT-Agent paper describes them, through our real LM client (over
aiohttp) against the loopback OpenAI-compatible server: a ReAct baseline blocks for every reply (its
chef stands idle for the LM's whole latency) unless a wait cap is set, and DPT-Agent's belief about
its partner feeds its reflection (the paper's Fig. 3)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from cogym_lab.envs.kitchen.agents import DPTAgent, ReActAgent, ReflexionAgent
from cogym_lab.testing import ScriptedOpenAIServer
from tests.agents.test_kitchen_agents import Game, asked, lm_for, policy_reply, until

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

BREAD_FIRST = '[("lambda s: True", ("prepare", {"food": "Bread", "plate": False}))]'


def world_tick_without_the_agent(game: Game) -> None:
    """The world moves on (the partner plays, the clock ticks) while the agent has not
    answered: it sends nothing this tick."""
    partner_action = game.partner.decide(game.content)
    if partner_action is not None:
        game.env.step("user", partner_action)
    result = game.env.advance()
    game.infos = [{"tick": game.content["tick"], **result.info}]
    game.partner.note_tick(game.infos[-1])


def agent_chef(game: Game) -> dict[str, Any]:
    return next(chef for chef in game.content["chefs"] if chef["role"] == "agent")


@pytest.mark.parametrize("agent_class", [ReActAgent, ReflexionAgent])
async def test_a_blocking_baselines_chef_is_idle_for_the_lms_whole_latency(
        tmp_path, agent_class: type[ReActAgent]) -> None:
    released = threading.Event()  # the LM's latency ends when the test says so

    def respond(body: dict[str, Any]) -> str:
        released.wait(60)
        return policy_reply(BREAD_FIRST, "Bread first.")

    with ScriptedOpenAIServer(responder=respond) as server:
        game = Game(seed=0)
        agent = agent_class(lm_for(server, timeout=120))
        assert agent.max_wait_seconds is None  # blocking is the default
        agent.start(game.context(tmp_path))
        start = agent_chef(game)["pos"]
        pending = asyncio.create_task(agent.act(game.notification()))
        await until(lambda: bool(server.chat_requests), "the LM call")
        for _ in range(25):  # the LM thinks for 25 ticks of game time
            world_tick_without_the_agent(game)
            await asyncio.sleep(0.01)
            chef = agent_chef(game)
            assert not pending.done(), "the agent acted before its LM answered"
            assert chef["pos"] == start and chef["macro"] is None and chef["queued"] == 0
        released.set()
        action = await asyncio.wait_for(pending, 60)
        await agent.end(game.notification())
    assert action == 'PREPARE(food="Bread")'  # what the reply asked for, once it came
    assert game.content["tick"] == 25


async def test_with_a_wait_cap_the_fsm_acts_while_the_lm_thinks(tmp_path) -> None:
    released = threading.Event()

    def respond(body: dict[str, Any]) -> str:
        released.wait(60)
        return policy_reply(BREAD_FIRST)

    with ScriptedOpenAIServer(responder=respond) as server:
        game = Game(seed=0)
        agent = ReActAgent(lm_for(server, timeout=120), max_wait_seconds=0.05)
        agent.start(game.context(tmp_path))
        action = await asyncio.wait_for(agent.act(game.notification()), 30)
        released.set()
        await agent.end(game.notification())
    assert action is not None and action.startswith("PREPARE(")  # the FSM's own choice


@pytest.mark.parametrize("cap", [0, -1, "5", True])
def test_the_wait_cap_is_a_positive_number(cap: Any) -> None:
    with pytest.raises(ValueError, match="max_wait_seconds"):
        ReActAgent(None, max_wait_seconds=cap)


async def test_the_belief_text_reaches_the_reflection_prompt(tmp_path) -> None:
    belief = "BELIEF-7: the teammate only assembles and serves, so I should cook every beef."

    def respond(body: dict[str, Any]) -> str:
        if asked(body, "# Your teammate"):
            return f"```text\n{belief}\n```"
        if asked(body, "rewrite the behaviour guideline"):
            return "```text\nCook beef for every order.\n```"
        return policy_reply("[]")

    with ScriptedOpenAIServer(responder=respond) as server:
        game = Game(seed=2)
        agent = DPTAgent(lm_for(server), policy_every=10, belief_every=10, guideline_every=10)
        agent.start(game.context(tmp_path))
        for _ in range(30):
            await game.tick(agent)
        await until(lambda: bool(agent.guideline), "a guideline")
        await agent.end(game.notification())
        bodies = list(server.bodies)
    kinds = ["belief" if asked(body, "# Your teammate") else "guideline"
             if asked(body, "rewrite the behaviour guideline") else "policy" for body in bodies]
    reflections = [body for body, kind in zip(bodies, kinds, strict=True)
                   if kind == "guideline"]
    assert reflections, "the agent reflected"
    # every reflection reads the belief just inferred, so it comes after a belief call
    assert kinds.index("belief") < kinds.index("guideline")
    for body in reflections:
        assert belief in body["messages"][-1]["content"]
