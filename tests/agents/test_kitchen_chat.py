"""Chat during real-time play: a message the person sends mid-game reaches the kitchen agents'
next prompts (DPT's belief and policy, ReAct's plan, the act agent's move), and what the agent
answers in a ``say`` block reaches the person's chat and the log, in a whole session against
the loopback LM server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import SecretStr

from cogym_lab.core.messages import EventType
from cogym_lab.envs import make_env
from cogym_lab.envs.kitchen.agents import ActAgent, DPTAgent, ReActAgent
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session
from cogym_lab.nodes.results import read_events
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.teammates import Recorder

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

SAID = "I will chop all the lettuce, you cook the beef"
ANSWER = "OK, I cook the beef."
#: The person's moves: a few idle notifications, then the message, then nothing.
PERSON = [None] * 6 + [f'SEND_TEAMMATE_MESSAGE(message="{SAID}")']

HEADINGS = {"belief": "# Your teammate", "policy": "# Code-as-policy", "plan": "# Your turn",
            "move": "# Your move", "guideline": "# Behaviour guideline"}


def answer(body: dict[str, Any]) -> Reply:
    prompt = body["messages"][-1]["content"]
    if HEADINGS["move"] in prompt:
        return Reply('```json\n{"action": "prepare", "args": {"food": "Beef", "plate": false}}'
                     '\n```')
    if HEADINGS["policy"] in prompt or HEADINGS["plan"] in prompt:
        # the agent answers the person once, in the first plan that reads their message
        answered = f"`user`: {SAID}" in prompt and f"you: {ANSWER}" not in prompt
        say = f"\n\n```say\n{ANSWER}\n```" if answered else ""
        return Reply(f"```text\nCook beef as asked.\n```\n\n```json\n[]\n```{say}")
    return Reply("```text\nThey chop lettuce, as they said.\n```")


def prompts(server: ScriptedOpenAIServer, kind: str) -> list[str]:
    return [body["messages"][-1]["content"] for body in server.chat_requests
            if HEADINGS[kind] in body["messages"][-1]["content"]]


async def play(agent_for: Any, tmp_path) -> tuple[ScriptedOpenAIServer, Recorder]:
    with ScriptedOpenAIServer(responder=answer) as server:
        lm = make_lm(LMConfig(model="kitchen-lm", base_url=server.base_url,
                              api_key=SecretStr("sk-test"), backoff=0.01))
        person = Recorder(list(PERSON))
        session = Session(make_env("kitchen", ticks=80, tick_seconds=0.02),
                          {"agent": agent_for(lm), "user": person},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                          session_id="chat-" + uuid.uuid4().hex[:6])
        await session.run()
    return server, person


def sent_at(tmp_path) -> int:
    """The tick the person's message was sent at, from the session log."""
    tick = 0
    for event in read_events(tmp_path):
        if event.type is EventType.CLOCK:
            tick = event.info["tick"]
        elif SAID in str(event.model_dump()):
            return tick
    raise AssertionError("the message is not in the log")


@pytest.mark.timeout(60)
async def test_the_belief_and_the_policy_after_a_message_read_it(tmp_path) -> None:
    server, _ = await play(lambda lm: DPTAgent(lm, policy_every=5, belief_every=20,
                                               guideline_every=20), tmp_path)
    sent_at(tmp_path)
    beliefs, policies = prompts(server, "belief"), prompts(server, "policy")
    assert beliefs and policies
    assert SAID not in policies[0]  # the first policy was written before anyone spoke
    assert SAID in beliefs[-1] and SAID in policies[-1]
    said = next(p for p in beliefs if SAID in p)
    assert "## Chat" in said and f"`user`: {SAID}" in said
    assert "What did they say in the chat" in said  # the belief prompt asks about it


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["plan", "move"])
async def test_react_and_act_read_the_message_in_their_next_call(tmp_path, kind: str) -> None:
    agent_type = ReActAgent if kind == "plan" else ActAgent
    server, _ = await play(agent_type, tmp_path)
    sent_at(tmp_path)
    asked = prompts(server, kind)
    assert SAID not in asked[0]
    assert SAID in asked[-1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("agent_type", [DPTAgent, ReActAgent])
async def test_the_agents_answer_reaches_the_persons_chat_and_the_log(
        tmp_path, agent_type: Any) -> None:
    options = {"policy_every": 5, "belief_every": 20} if agent_type is DPTAgent else {}
    server, person = await play(lambda lm: agent_type(lm, **options), tmp_path)
    assert person.final is not None
    chat = [(m.sender, m.text) for m in person.final.chat]
    assert chat == [("user", SAID), ("agent", ANSWER)]  # once, after the person's message
    logged = [e for e in read_events(tmp_path) if e.type is EventType.MESSAGE]
    assert [e.actor for e in logged] == ["user", "agent"]
    later = prompts(server, "policy" if agent_type is DPTAgent else "plan")[-1]
    assert "- tick" in later and f"you: {ANSWER}" in later  # the agent sees what it said


def answer_moves_with_a_say(body: dict[str, Any]) -> Reply:
    """The act agent's LM: a macro, and once it has read the person's message, an answer."""
    prompt = body["messages"][-1]["content"]
    answered = f"`user`: {SAID}" in prompt and f"you: {ANSWER}" not in prompt
    say = f"\n\n```say\n{ANSWER}\n```" if answered else ""
    return Reply('```json\n{"action": "prepare", "args": {"food": "Beef", "plate": false}}\n```'
                 + say)


@pytest.mark.timeout(60)
async def test_the_act_agent_talks_back_too(tmp_path) -> None:
    with ScriptedOpenAIServer(responder=answer_moves_with_a_say) as server:
        lm = make_lm(LMConfig(model="kitchen-lm", base_url=server.base_url,
                              api_key=SecretStr("sk-test"), backoff=0.01))
        person = Recorder(list(PERSON))
        session = Session(make_env("kitchen", ticks=80, tick_seconds=0.02),
                          {"agent": ActAgent(lm), "user": person},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                          session_id="chat-act-" + uuid.uuid4().hex[:6])
        await session.run()
    assert person.final is not None
    assert [(m.sender, m.text) for m in person.final.chat] == [("user", SAID), ("agent", ANSWER)]
    actions = [str(e.action) for e in read_events(tmp_path)
               if e.type is EventType.ACTION and e.actor == "agent"]
    assert 'PREPARE(food="Beef")' in actions  # the move beside the say block was still taken
    assert f"you: {ANSWER}" in prompts(server, "move")[-1]
