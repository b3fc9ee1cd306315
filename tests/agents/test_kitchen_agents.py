"""The kitchen's LM agents through our real LM client (over aiohttp) against a scripted loopback
OpenAI-compatible server.

A small driver plays the game tick by tick on a KitchenEnv and hands each agent the
notifications a session would (the newest view and the tick's ``clock`` event), with the
rule-based assembler as the partner. Checked: DPT's ``act`` answers while every LM call hangs,
a bad policy is refused and the last good one stays, the ToM-less DPT never asks for a belief,
``latency.jsonl`` is written, the act agent sends the macro its LM chose, ReAct's tasks steer
the FSM, and Reflexion reflects after a failure.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from cogym_lab.core import Notification
from cogym_lab.core.messages import Event, EventType, SessionContext, TeamMember
from cogym_lab.envs.kitchen import KitchenEnv
from cogym_lab.envs.kitchen.agents import (
    ActAgent,
    DPTAgent,
    DPTNoToMAgent,
    ReActAgent,
    ReflexionAgent,
)
from cogym_lab.envs.kitchen.policies.fsm import OrderTask
from cogym_lab.envs.kitchen.policies.partners import Assembler
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.members import member_type
from cogym_lab.testing import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

ROLES = ("agent", "user")


class Game:
    """A kitchen game driven tick by tick, handing notifications to one LM agent."""

    def __init__(self, seed: int = 0, layout: str = "counter_circuit") -> None:
        self.env = KitchenEnv(layout=layout)
        self.env.bind_team([TeamMember(role=role, kind="agent") for role in ROLES])
        self.env.reset(seed=seed)
        self.partner = Assembler("user")
        self.seq = 0
        self.infos: list[dict[str, Any]] = []
        self.sent: list[str] = []

    def context(self, results_dir: Path | None = None) -> SessionContext:
        return SessionContext(session_id="s", task="kitchen",
                              task_description=self.env.task_description, role="agent",
                              kind="agent", team=[TeamMember(role=r) for r in ROLES],
                              action_specs=self.env.action_specs(), collaboration_specs=[],
                              results_dir=str(results_dir) if results_dir else None)

    def notification(self) -> Notification:
        self.seq += 1
        events = [Event(seq=self.seq, time=0.0, type=EventType.CLOCK, info=info)
                  for info in self.infos] or [Event(seq=self.seq, time=0.0,
                                                    type=EventType.START)]
        return Notification(session_id="s", seq=self.seq, prev_seq=None, recipient="agent",
                            event=events[-1], pending_confirmations=[], step_counts={},
                            step_limits={}, paused=[], started_at=0.0, time=0.0,
                            view=self.env.view("agent"), chat=[], new_messages=[],
                            merged_events=events)

    @property
    def content(self) -> dict[str, Any]:
        return self.env.view("agent")["kitchen"].content

    async def tick(self, agent: Any) -> str | None:
        """One tick: the agent acts on its notification, the partner on the view, the world
        moves on; a pause lets the agent's background tasks run."""
        action = await agent.act(self.notification())
        if action is not None:
            self.sent.append(action)
            assert self.env.step("agent", action).error is None
        partner_action = self.partner.decide(self.content)
        if partner_action is not None:
            self.env.step("user", partner_action)
        result = self.env.advance()
        self.infos = [{"tick": self.content["tick"], **result.info}]
        self.partner.note_tick(self.infos[-1])
        await asyncio.sleep(0.01)
        return action


def lm_for(server: ScriptedOpenAIServer, **config: Any) -> Any:
    return make_lm(LMConfig(model="kitchen-lm", base_url=server.base_url,
                            api_key=SecretStr("sk-test"), backoff=0.01, **config))


def asked(body: dict[str, Any], heading: str) -> bool:
    return heading in body["messages"][-1]["content"]


def policy_reply(tasks: str, thought: str = "Cook for the first order.") -> str:
    return f"```text\n{thought}\n```\n\n```json\n{tasks}\n```"


async def until(condition: Any, what: str, limit: float = 20.0) -> None:
    """Wait for background work to reach a state (a bound, not a measured time)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not condition():
        assert loop.time() < deadline, f"gave up waiting for {what}"
        await asyncio.sleep(0.02)


def latency_lines(folder: Path) -> list[dict[str, Any]]:
    path = folder / "latency.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# -- DPT ----------------------------------------------------------------------------------------

async def test_dpt_acts_on_every_notification_while_its_lm_hangs(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=lambda body: Reply("never", delay=3600)) as server:
        game = Game(seed=1)
        agent = DPTAgent(lm_for(server, timeout=3600), policy_every=5, belief_every=5,
                         guideline_every=5)
        agent.start(game.context(tmp_path))
        for _ in range(40):
            await game.tick(agent)
        # two background calls: the policy, and the belief (reflection waits to read it)
        await until(lambda: len(server.chat_requests) >= 2, "the two background calls")
        hanging = len(server.chat_requests)
        await agent.end(game.notification())
    assert game.sent, "the FSM played while every LM call hung"
    assert any(action.startswith("PREPARE(") for action in game.sent)
    assert hanging == 2  # one call per background task, each still waiting for its answer
    assert latency_lines(tmp_path) == []  # no decision of the LM was ever finished


async def test_a_bad_policy_is_refused_and_the_last_good_one_stays(tmp_path) -> None:
    game = Game(seed=3)
    dish = game.content["orders"][0]["dish"]
    good = policy_reply(f'["{dish}"]')
    bad = policy_reply("[(lambda json_state: __import__('os').system('echo hi'), "
                       "('prepare', {'food': 'Beef'}))]")
    policies = [good, bad]

    def respond(body: dict[str, Any]) -> str | Reply:
        if asked(body, "# Code-as-policy"):
            return policies.pop(0) if policies else Reply("later", delay=3600)
        return Reply("later", delay=3600)

    with ScriptedOpenAIServer(responder=respond) as server:
        agent = DPTAgent(lm_for(server, timeout=3600), policy_every=4, belief_every=500,
                         guideline_every=500)
        agent.start(game.context(tmp_path))
        await game.tick(agent)
        await until(lambda: agent.policies == 1, "the first policy")
        assert list(agent.fsm.assigned) == [OrderTask(dish)]
        while not agent.records.rejections:
            await game.tick(agent)
            await asyncio.sleep(0.02)
            assert game.content["tick"] < 200, "the second policy never came"
        await agent.end(game.notification())
    assert agent.policies == 1
    assert list(agent.fsm.assigned) == [OrderTask(dish)]  # the good policy is still in force
    rejection = json.loads((tmp_path / "policy_rejections.jsonl").read_text().splitlines()[0])
    assert "(.system)" in rejection["reason"]
    kinds = [(line["kind"], line.get("accepted", True)) for line in latency_lines(tmp_path)]
    assert kinds == [("policy", True), ("policy", False)]


async def test_dpt_with_theory_of_mind_infers_a_belief_and_without_it_never_asks(
        tmp_path) -> None:
    def respond(body: dict[str, Any]) -> str:
        if asked(body, "# Your teammate"):
            return "```text\nThe teammate assembles and serves; I should cook.\n```"
        if asked(body, "# Behaviour guideline"):
            return "```text\nKeep beef cooking for every beef order.\n```"
        return policy_reply("[]", "Things are going well")

    results = {}
    for name, agent_class in (("tom", DPTAgent), ("no-tom", DPTNoToMAgent)):
        with ScriptedOpenAIServer(responder=respond) as server:
            game = Game(seed=2)
            agent = agent_class(lm_for(server), policy_every=10, belief_every=10,
                                guideline_every=10)
            agent.start(game.context(tmp_path / name))
            for _ in range(30):
                await game.tick(agent)
            await until(lambda a=agent: bool(a.guideline), "a guideline")
            await agent.end(game.notification())
            results[name] = (agent, server.bodies)
    tom, tom_bodies = results["tom"]
    no_tom, no_tom_bodies = results["no-tom"]
    assert "cook" in tom.belief
    assert any(asked(body, "# Your teammate") for body in tom_bodies)
    assert no_tom.belief == ""
    assert not any(asked(body, "# Your teammate") for body in no_tom_bodies)
    assert not any("What you believe about your teammate" in body["messages"][-1]["content"]
                   for body in no_tom_bodies)
    no_tom_kinds = {line["kind"] for line in latency_lines(tmp_path / "no-tom")}
    assert "belief" not in no_tom_kinds and {"policy", "guideline"} <= no_tom_kinds
    assert "belief" in {line["kind"] for line in latency_lines(tmp_path / "tom")}
    mind = json.loads((tmp_path / "no-tom" / "mind.json").read_text())
    assert mind["theory_of_mind"] is False and mind["guideline"].startswith("Keep beef")


async def test_a_failing_lm_is_retried_later_and_the_fsm_keeps_playing(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=lambda body: Reply(status=500)) as server:
        game = Game(seed=4)
        agent = DPTAgent(lm_for(server, max_retries=0), policy_every=5, retry_ticks=5,
                         belief_every=500, guideline_every=500)
        agent.start(game.context(tmp_path))
        for _ in range(60):
            await game.tick(agent)
        await agent.end(game.notification())
    failures = [json.loads(line) for line in
                (tmp_path / "lm_failures.jsonl").read_text().splitlines()]
    assert len(failures) >= 2 and {f["kind"] for f in failures} == {"policy"}
    assert failures[1]["tick"] >= failures[0]["tick"] + 5  # retried later, not at once
    assert game.sent


# -- Act -------------------------------------------------------------------------------------

async def test_the_act_agent_sends_the_macro_its_lm_chose(tmp_path) -> None:
    reply = 'Lettuce first.\n```json\n{"action": "prepare", "args": {"food": "Lettuce", ' \
            '"plate": false}}\n```'
    with ScriptedOpenAIServer([reply]) as server:
        game = Game(seed=0)
        agent = ActAgent(lm_for(server))
        agent.start(game.context(tmp_path))
        action = await game.tick(agent)
        body = server.bodies[0]
    assert action == 'PREPARE(food="Lettuce")'
    assert game.content["chefs"][0]["macro"] == 'PREPARE(food="Lettuce")'
    assert "# Your move" in body["messages"][-1]["content"]
    (line,) = latency_lines(tmp_path)
    assert line["kind"] == "macro" and line["tick"] == 0 and line["seconds"] >= 0
    assert len(line["calls"]) == 1


async def test_the_act_agent_refuses_an_action_that_is_not_a_macro(tmp_path) -> None:
    replies = ['```json\n{"action": "__import__", "args": {}}\n```',
               '```json\n{"action": "serve", "args": {"food": "Pizza"}}\n```']
    with ScriptedOpenAIServer(replies) as server:
        game = Game(seed=0)
        agent = ActAgent(lm_for(server))
        agent.start(game.context(tmp_path))
        assert await game.tick(agent) is None
        assert await game.tick(agent) is None
        assert len(server.chat_requests) == 2
    assert len(agent.records.rejections) == 2
    assert [line["accepted"] for line in latency_lines(tmp_path)] == [False, False]


# -- ReAct and Reflexion ------------------------------------------------------------------------

async def test_react_tasks_steer_the_fsm(tmp_path) -> None:
    tasks = '[("lambda json_state: json_state[\'counters\'][\'Empty\'] > 0", ' \
            '("prepare", {"food": "Bread", "plate": False}))]'
    with ScriptedOpenAIServer(responder=lambda body: policy_reply(tasks, "Bread first.")) \
            as server:
        game = Game(seed=0)
        agent = ReActAgent(lm_for(server))
        agent.start(game.context(tmp_path))
        first = await game.tick(agent)
        await agent.end(game.notification())
    assert first == 'PREPARE(food="Bread")'  # not the beef the FSM would cook on its own
    assert agent.thought == "Bread first."
    assert [line["kind"] for line in latency_lines(tmp_path)] == ["policy"]


async def test_react_plays_on_when_its_lm_is_slower_than_its_patience(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=lambda body: Reply("late", delay=3600)) as server:
        game = Game(seed=0)
        agent = ReActAgent(lm_for(server, timeout=3600), max_wait_seconds=0.05)
        agent.start(game.context(tmp_path))
        actions = [await game.tick(agent) for _ in range(5)]
        await agent.end(game.notification())
    assert actions[0] is not None and actions[0].startswith("PREPARE(")
    assert len(server.chat_requests) == 1  # one call, still running: not asked again


async def test_reflexion_reflects_after_a_missed_order(tmp_path) -> None:
    def respond(body: dict[str, Any]) -> str:
        if asked(body, "# Look back"):
            return "```text\nI started the burger too late; start the oldest order first.\n```"
        return policy_reply("[]", "Things are going well")

    with ScriptedOpenAIServer(responder=respond) as server:
        game = Game(seed=0)
        agent = ReflexionAgent(lm_for(server))
        agent.start(game.context(tmp_path))
        await game.tick(agent)
        assert agent.reflections == []
        game.infos = [{**game.infos[-1], "happened": [
            {"kind": "missed", "id": 1, "dish": "BeefBurger", "reward": -10}]}]
        while not agent.reflections:
            await game.tick(agent)
            assert game.content["tick"] < 100, "no reflection came"
        await agent.end(game.notification())
        bodies = server.bodies
    assert "oldest order first" in agent.reflections[0]
    reflect = next(body for body in bodies if asked(body, "# Look back"))
    assert "an order ran out of time" in reflect["messages"][-1]["content"]
    later = [body for body in bodies if asked(body, "# Your turn")][-1]
    assert "oldest order first" in later["messages"][-1]["content"]
    assert {"policy", "guideline"} <= {line["kind"] for line in latency_lines(tmp_path)}


# -- member types ------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "agent_class"), [
    ("kitchen-act", ActAgent), ("kitchen-react", ReActAgent),
    ("kitchen-reflexion", ReflexionAgent), ("kitchen-dpt", DPTAgent),
    ("kitchen-dpt-no-tom", DPTNoToMAgent)])
def test_the_lm_agents_are_registered_member_types(name: str, agent_class: type) -> None:
    registered = member_type(name)
    assert registered.kind == "agent" and registered.uses_lm
    from cogym_lab.core.member import MemberSetup, TaskDescription

    lm = make_lm(LMConfig(model="m", base_url="http://127.0.0.1:9/v1",
                          api_key=SecretStr("sk-test")))
    env = KitchenEnv()
    built = registered.build(MemberSetup(role="agent", task=TaskDescription.of(env), lm=lm,
                                         options={"retry_ticks": 7}))
    assert type(built) is agent_class and vars(built)["retry_ticks"] == 7


def test_the_dpt_team_plays_a_whole_session(tmp_path) -> None:
    from cogym_lab.envs import make_env
    from cogym_lab.nodes import Session, SessionConfig
    from cogym_lab.nodes.results import read_events
    from cogym_lab.teams import load_team
    from cogym_lab.teams.build import build_team

    def respond(body: dict[str, Any]) -> str:
        if asked(body, "# Your teammate"):
            return "```text\nThey assemble and serve.\n```"
        if asked(body, "# Behaviour guideline"):
            return "```text\nCook ahead for beef orders.\n```"
        return policy_reply('[("lambda json_state: json_state[\'time_left\'] > 0", '
                            '("prepare", {"food": "Lettuce", "plate": False}))]')

    with ScriptedOpenAIServer(responder=respond) as server:
        env = make_env("kitchen", ticks=80, tick_seconds=0.02)
        team = load_team("kitchen-dpt")
        members, kinds = build_team(team, env, {"agent": {
            "model": "kitchen-lm", "base_url": server.base_url, "api_key": "sk-test"}})
        result = Session(env, members, kinds=kinds, results_dir=tmp_path,
                         config=SessionConfig(**team.session)).run_sync()
    assert result.end_reason == "time_up"
    events = read_events(tmp_path)
    agent_actions = [e.action for e in events
                     if e.type is EventType.ACTION and e.actor == "agent"]
    assert agent_actions
    lines = latency_lines(tmp_path / "agent")
    assert any(line["kind"] == "policy" for line in lines)
    assert (tmp_path / "agent" / "lm_calls.jsonl").is_file()
    assert (tmp_path / "agent" / "mind.json").is_file()


def test_the_state_in_prompts_is_the_literal_preconditions_read() -> None:
    import ast

    from cogym_lab.envs.kitchen.agents.policy_code import compile_precondition
    from cogym_lab.envs.kitchen.agents.prompting import literal
    from cogym_lab.envs.kitchen.policies.headless import play
    from cogym_lab.envs.kitchen.policies.situation import game_state

    class Keep:
        def __init__(self) -> None:
            self.states: list[dict[str, Any]] = []

        def decide(self, content: Any) -> None:
            self.states.append(game_state(content, "agent"))

        def note_tick(self, info: Any) -> None: ...

    keep = Keep()
    play(KitchenEnv(ticks=120), {"agent": keep, "user": Assembler("user")}, seed=5)
    beef = compile_precondition(
        "lambda json_state: json_state['objects'][('Beef', 'Well-cooked')] >= 0")
    for state in keep.states[::10]:
        shown = literal(state)
        assert ast.literal_eval(shown) == state
        assert beef(ast.literal_eval(shown)) is True
