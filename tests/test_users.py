"""The LM user simulator, through the real openai client against a loopback server."""

from __future__ import annotations

import pytest

from cogym_lab.core import Coordinator, Member
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import Reply
from cogym_lab.users import Move, Persona, SimulatedUser
from tests.support.lm_scripts import classify

HIDDEN = "You will not go without: rain jacket, headlamp."


pytestmark = pytest.mark.usefixtures("no_ambient_lm")


def user_for(server, persona: Persona | None = None, **options):
    lm = make_lm(LMConfig(model="user-lm", base_url=server.base_url, backoff=0.01,
                          max_retries=0))
    user = SimulatedUser(lm, HIDDEN, persona=persona or Persona(), **options)
    coordinator = Coordinator(TodoEnv(), [Member(role="agent"), Member(role="user", kind="user")],
                              session_id="u")
    first = {n.recipient: n for n in coordinator.start(0.0).notifications}
    user.start(first["user"].context)
    asked = coordinator.handle("agent", 'SEND_TEAMMATE_MESSAGE(message="Is it cold there?")', 1.0)
    return user, next(n for n in asked.notifications if n.recipient == "user")


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
                   "Choice: 4", "Choice: 5", "Choice: 3", "Action: DANCE()", "Choice: 9"])
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
