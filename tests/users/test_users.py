"""The LM user simulator, through our real LM client (over aiohttp) against a loopback
OpenAI-compatible server."""

from __future__ import annotations

import pytest

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from cogym_lab.users import Move, Persona, SimulatedUser
from tests.support.lm_scripts import TodoRolePlay, classify
from tests.support.notified import notified

HIDDEN = "You will not go without: rain jacket, headlamp."


pytestmark = pytest.mark.usefixtures("no_ambient_lm")


def user_for(server, persona: Persona | None = None, **options):
    lm = make_lm(LMConfig(model="user-lm", base_url=server.base_url, backoff=0.01,
                          max_retries=0))
    user = SimulatedUser(lm, HIDDEN, persona=persona or Persona(), **options)
    coordinator = Coordinator(TodoEnv(), [TeamMember(role="agent"), TeamMember(role="user", kind="user")],
                              session_id="u")
    first = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    user.start(first["user"].context)
    asked = coordinator.handle("agent", 'SEND_TEAMMATE_MESSAGE(message="Is it cold there?")', 1.0)
    return user, next(n for n in notified(coordinator, asked) if n.recipient == "user")


def test_persona_switches_decide_which_moves_exist(server):
    assert user_for(server)[0].options() == [Move.ANSWER, Move.FEEDBACK, Move.NOTHING, Move.FINISH]
    assert user_for(server, Persona(proactive_feedback=False, proactive_action=True))[0].options() \
        == [Move.ANSWER, Move.TASK_ACTION, Move.NOTHING, Move.FINISH]


async def test_answering_a_question_uses_hidden_information_and_its_own_words(server):
    user, notification = user_for(server)
    server.extend(["Thought: a question is waiting.\nChoice: 1",
                   "Thought: rain.\nMessage: Bring something for the rain, it's wet there."])
    action = await user.act(notification)
    assert action == ('SEND_TEAMMATE_MESSAGE(message="Bring something for the rain, '
                      'it\'s wet there.")')
    decide, answer = server.bodies
    assert classify(decide) == "user-decide" and classify(answer) == "user-answer"
    for body in (decide, answer):
        assert HIDDEN in body["messages"][0]["content"]
        assert "[agent] Is it cold there?" in body["messages"][0]["content"]
    assert "one piece" in answer["messages"][-1]["content"]  # lazy: one piece at a time
    assert "never make up" in answer["messages"][-1]["content"]
    assert user.moves == [Move.ANSWER]


async def test_a_user_who_is_not_lazy_gets_no_one_piece_rule(server):
    user, notification = user_for(server, Persona(lazy=False))
    server.extend(["Choice: 2", "Message: The list lacks rain gear and a light."])
    assert (await user.act(notification)).startswith("SEND_TEAMMATE_MESSAGE(")
    assert classify(server.bodies[1]) == "user-feedback"
    assert "one piece" not in server.bodies[1]["messages"][-1]["content"]


async def test_task_actions_finish_and_doing_nothing(server):
    user, notification = user_for(server, Persona(proactive_action=True))
    # options: 1 answer, 2 feedback, 3 task action, 4 nothing, 5 finish
    server.extend(["Choice: 3", 'Thought: quicker myself.\nAction: ADD_ITEM(text="rain jacket")',
                   "Choice: 4", "Choice: 5", "Choice: 3", "Action: DANCE()", "Choice: 9",
                   "Choice: 9"])  # asked once more (a repair), still impossible
    assert await user.act(notification) == 'ADD_ITEM(text="rain jacket")'
    assert await user.act(notification) is None
    assert await user.act(notification) == "FINISH()"
    assert await user.act(notification) is None  # an invalid task action is dropped
    assert await user.act(notification) is None  # an impossible choice is a pause
    assert user.moves == [Move.TASK_ACTION, Move.NOTHING, Move.FINISH, Move.TASK_ACTION,
                          Move.NOTHING]
    assert "ADD_ITEM(text=" in server.bodies[1]["messages"][-1]["content"]


async def test_it_stops_at_its_limit_and_survives_a_failing_lm(server):
    user, notification = user_for(server, max_turns=2)
    server.add(Reply(status=500), repeat=True)
    assert await user.act(notification) is None  # LM down: do nothing, no crash
    assert await user.act(notification) is None
    requests = len(server.bodies)
    assert await user.act(notification) == "FINISH()"  # its patience is spent
    assert len(server.bodies) == requests  # without asking the LM
    assert user.lm.meter.failures == 2


# -- reading the choice strictly ----------------------------------------------------------------
# Default persona: 1 answer, 2 feedback, 3 nothing, 4 finish.


@pytest.mark.parametrize(("reply", "move"), [
    ("Choice: 3.", Move.NOTHING),
    ("Thought: they asked.\nChoice: **1**", Move.ANSWER),
    ("Choice: 3 (do nothing, option 3)", Move.NOTHING),  # one number, said twice
    ("Choice: 1\nOption 4 would be too early.", Move.ANSWER),  # only the Choice line counts
])
async def test_a_usable_choice_is_taken_at_once(server, reply, move):
    user, notification = user_for(server)
    server.extend([reply, "Message: Yes."])
    await user.act(notification)
    assert user.moves == [move]
    assert not any(classify(body) == "repair" for body in server.bodies)


@pytest.mark.parametrize("reply", [
    "Choice: 42",  # was read as 4: FINISH, ending the session at its second event
    "Choice: 4 or 5",
    "Choice: 2 or 4",  # several options, each on the menu
    "Choice: five",
    "Choice: 1.5",
    "Choice: -4",
    "Thought: I am done.",  # no Choice line at all
])
async def test_an_unusable_choice_gets_one_repair_then_counts_as_nothing(server, reply):
    user, notification = user_for(server)
    server.extend([reply, reply])
    assert await user.act(notification) is None
    assert user.moves == [Move.NOTHING]
    decide, repair = server.bodies
    assert classify(decide) == "user-decide" and classify(repair) == "repair"
    assert [m["role"] for m in repair["messages"]] == ["system", "user", "assistant", "user"]
    assert repair["messages"][2]["content"] == reply
    assert "1, 2, 3 or 4" in repair["messages"][-1]["content"]  # it is told what is on the menu


async def test_a_repaired_choice_is_used(server):
    user, notification = user_for(server)
    server.extend(["Choice: 42", "Thought: sorry.\nChoice: 1", "Message: It is cold, yes."])
    assert await user.act(notification) == 'SEND_TEAMMATE_MESSAGE(message="It is cold, yes.")'
    assert user.moves == [Move.ANSWER]
    assert "42 is not an option" in server.bodies[1]["messages"][-1]["content"]
    assert [classify(b) for b in server.bodies] == ["user-decide", "repair", "user-answer"]


@pytest.mark.parametrize(("persona", "reply"), [
    (Persona(), "Choice: 42"),  # 4 options: 42 was read as 4, FINISH
    (Persona(proactive_action=True), "Choice: 53"),  # 5 options: 53 was read as 5, FINISH
])
def test_a_user_lm_naming_an_option_off_the_menu_does_not_end_the_session(tmp_path, persona,
                                                                            reply):
    """The adversarial run: a user LM that always answered ``Choice: 42`` ended every session at
    its second event. Now it does nothing (after one repair each turn), and the agent finishes
    the work."""
    play = TodoRolePlay()

    def responder(body):
        return f"Thought: sure.\n{reply}" if body["model"] == "user-lm" else play(body)

    with ScriptedOpenAIServer(responder=responder) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "backoff": 0.01}
        members, kinds = build_team(load_team("collaborative"), env, {
            "agent": {"model": "agent-lm", **settings}, "user": {"model": "user-lm", **settings}})
        members["user"] = SimulatedUser(members["user"].lm, env.hidden_information(),
                                        persona=persona)
        result = Session(env, members, kinds=kinds, results_dir=tmp_path,
                         config=SessionConfig(idle_seconds=2, timeout=60)).run_sync()
        user_prompts = [classify(b) for b in server.bodies if b["model"] == "user-lm"]
    events = read_events(tmp_path)
    finish = next(e for e in events if e.type is EventType.FINISH)
    assert finish.actor == "agent" and result.events > 5
    assert not any(e.actor == "user" for e in events)
    assert set(user_prompts) == {"user-decide", "repair"}


async def test_a_failing_user_lm_shows_in_lm_failing_and_not_in_the_chat(server):
    user, notification = user_for(server)
    server.extend([Reply(status=500), "Choice: 3"])
    assert await user.act(notification) is None  # a simulated person never speaks of its LM
    assert user.lm_failing
    assert await user.act(notification) is None
    assert not user.lm_failing and user.moves == [Move.NOTHING]
