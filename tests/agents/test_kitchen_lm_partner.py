"""The LM simulated person in the kitchen (``kitchen-lm-partner``): hidden preferences that only
its own prompts hold, a person's keys in paper mode (its jobs pressed one key a tick), macros
when people may use them, and a line in the chat about what it wants, which DPT-Agent's belief
reads beside what the partner did. Whole sessions of the real env, both LMs through the real
client against the loopback server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import SecretStr

from cogym_lab.core.member import MemberSetup, TaskDescription
from cogym_lab.core.messages import EventType
from cogym_lab.envs import make_env
from cogym_lab.envs.kitchen.agents import DPTAgent
from cogym_lab.envs.kitchen.agents.lm_partner import (
    LM_PARTNER,
    PREFERENCES,
    LMPartner,
    read_preferences,
)
from cogym_lab.envs.kitchen.keys import game_from_content
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.members import member_type_names, register_member, unregister_member
from cogym_lab.nodes import Session, replay
from cogym_lab.nodes.results import read_events
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

HIDDEN = PREFERENCES["beef-only"]
WANT = "Leave the beef to me, I like cooking it."


def answer(body: dict[str, Any]) -> Reply:
    """The partner's LM cooks beef (what its hidden preference says) and says so once; DPT's
    LM keeps the FSM as it is and writes a belief."""
    prompt = body["messages"][-1]["content"]
    if "# Your next job" in prompt:
        say = f"\n\n```say\n{WANT}\n```" if "`say` code block" in prompt else ""
        return Reply('```json\n{"action": "prepare", "args": {"food": "Beef"}}\n```' + say)
    if "# Code-as-policy" in prompt:
        return Reply("```text\nThings are going well\n```\n\n```json\n[]\n```")
    return Reply("```text\nThey cook the beef and said they like to.\n```")


def lm_for(server: ScriptedOpenAIServer) -> Any:
    return make_lm(LMConfig(model="kitchen-lm", base_url=server.base_url,
                            api_key=SecretStr("sk-test"), backoff=0.01))


async def play(tmp_path, **env_args: Any) -> ScriptedOpenAIServer:
    with ScriptedOpenAIServer(responder=answer) as server:
        env = make_env("kitchen", ticks=140, tick_seconds=0.02, **env_args)
        session = Session(env, {"agent": DPTAgent(lm_for(server), policy_every=10,
                                                  belief_every=60),
                                "user": LMPartner(lm_for(server), preferences=["beef-only"],
                                                  chat_every=1000)},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                          session_id="partner-" + uuid.uuid4().hex[:6])
        result = await session.run()
    assert result.end_reason == "time_up"
    return server


def partner_actions(tmp_path) -> list[tuple[str, str | None]]:
    return [(str(e.action), e.error) for e in read_events(tmp_path)
            if e.type in (EventType.ACTION, EventType.MESSAGE) and e.actor == "user"]


@pytest.mark.timeout(120)
async def test_in_paper_mode_it_presses_keys_for_its_jobs_and_talks(tmp_path) -> None:
    server = await play(tmp_path)
    sent = partner_actions(tmp_path)
    assert sent and all(error is None for _, error in sent), sent
    keys = [action for action, _ in sent if not action.startswith("SEND_TEAMMATE_MESSAGE(")]
    assert keys and all(a.startswith(("MOVE(", "INTERACT(")) for a in keys)  # a person's keys
    assert "INTERACT()" in keys
    # it did what its hidden preference says: beef went into a pan, by its hand
    clocks = [e for e in read_events(tmp_path) if e.type is EventType.CLOCK]
    assert any(e.info.get("atomic", {}).get("user") == "interact" for e in clocks)
    said = [e for e in read_events(tmp_path) if e.type is EventType.MESSAGE and e.actor == "user"]
    assert len(said) == 1 and WANT in str(said[0].model_dump())  # once: chat_every is long
    # the preference is in its own prompts only; DPT's belief reads what it did and said
    mine = [b["messages"] for b in server.chat_requests
            if "# Your next job" in b["messages"][-1]["content"]]
    assert mine and all(HIDDEN in m[0]["content"] for m in mine)
    agents = [b["messages"] for b in server.chat_requests
              if "# Your next job" not in b["messages"][-1]["content"]]
    assert agents and not any(HIDDEN in str(m) for m in agents)
    beliefs = [m[-1]["content"] for m in agents if "# Your teammate" in m[-1]["content"]]
    assert beliefs and WANT in beliefs[-1] and "holding Beef (Fresh)" in beliefs[-1]
    assert replay(tmp_path).final_state_checked


@pytest.mark.timeout(120)
async def test_with_person_macros_it_sends_its_jobs_as_macros(tmp_path) -> None:
    await play(tmp_path, person_macros=True)
    sent = [action for action, error in partner_actions(tmp_path) if error is None]
    assert 'PREPARE(food="Beef")' in sent
    assert not [a for a in sent if a.startswith(("MOVE(", "INTERACT("))]


def test_the_view_rebuilt_is_the_game_it_shows() -> None:
    env = make_env("kitchen", 1)
    env.bind_team([])
    env.reset(seed=3)
    for _ in range(5):
        env.step("agent", 'PREPARE(food="Beef")')
        env.advance()
    content = env.view("agent")["kitchen"].content
    rebuilt = game_from_content(content)
    assert rebuilt.content(0.25)["items"] == content["items"]
    assert rebuilt.content(0.25)["chefs"] == [
        {**chef, "macro": None, "queued": 0} for chef in content["chefs"]]


def test_preferences_are_ready_names_or_sentences() -> None:
    assert read_preferences("beef-only") == (PREFERENCES["beef-only"],)
    assert read_preferences(["wants to  serve\nall day"]) == ("wants to serve all day",)
    for bad in ([], [""], [3], "  "):
        with pytest.raises(ValueError, match="preferences"):
            read_preferences(bad)  # type: ignore[arg-type]


def test_it_is_a_simulated_person_member_type_and_a_ready_team() -> None:
    assert LM_PARTNER.kind == "user" and LM_PARTNER.uses_lm
    env = make_env("kitchen")
    with ScriptedOpenAIServer(responder=answer) as server:
        member = LM_PARTNER.build(MemberSetup(role="user", task=TaskDescription.of(env),
                                              lm=lm_for(server),
                                              options={"preferences": ["dislikes-chopping"]}))
    assert isinstance(member, LMPartner)
    assert member.preferences == (PREFERENCES["dislikes-chopping"],)
    from cogym_lab.envs.kitchen.teams import DPT_LM_PARTNER

    fresh = "kitchen-lm-partner" not in member_type_names()  # an install older than the type
    if fresh:
        register_member(LM_PARTNER)
    try:
        team = load_team(str(DPT_LM_PARTNER))
        assert team.members["user"].options["preferences"] == ["beef-only", "wants-to-serve"]
        with ScriptedOpenAIServer(responder=answer) as server:
            lm = {"model": "kitchen-lm", "base_url": server.base_url, "api_key": "sk-test"}
            members, kinds = build_team(team, env, {"agent": lm, "user": lm})
    finally:
        if fresh:
            unregister_member("kitchen-lm-partner")
    assert kinds == {"agent": "agent", "user": "user"}
    assert isinstance(members["user"], LMPartner)
