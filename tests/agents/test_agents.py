"""The three Co-Gym agents, through our real LM client (over aiohttp) against a loopback
OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json

import pytest

from cogym_lab.agents import AutonomousAgent, CollaborativeAgent, PlanningAgent
from cogym_lab.agents.render import render_chat, render_component
from cogym_lab.core import ActionError, CoEnv, Component, RenderType, action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import ChatMessage, EventType, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.lm import LMConfig, make_lm, shared_clients
from cogym_lab.lm.calllog import log_files, read_calls
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.records.trajectory import load_session
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay, classify
from tests.support.notified import notified

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]


pytestmark = pytest.mark.usefixtures("no_ambient_lm")


def lm(server, model="agent-lm", **config):
    return make_lm(LMConfig(model=model, base_url=server.base_url, api_key="sk-test",
                            backoff=0.01, **config))


def started(agent, env: CoEnv | None = None):
    """A coordinator with the agent started on its first notification."""
    coordinator = Coordinator(env or TodoEnv(), TEAM, session_id="unit")
    first = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}["agent"]
    agent.start(first.context)
    return coordinator, first


def kinds(server):
    return [classify(body) for body in server.bodies]


# -- whole sessions -------------------------------------------------------------------------


def test_a_scripts_session_closes_the_lm_clients_of_its_loop_before_the_loop_ends(tmp_path):
    """``run_sync`` owns its event loop: the clients of the LMs a script made (with
    ``build_team`` here, so no ``build_session`` closes them) are closed before that loop ends,
    when the script could no longer close them; the LMs still answer on a loop of their own."""
    play = TodoRolePlay()

    def responder(body: dict) -> str:
        return "still here" if body["messages"][-1]["content"] == "again" else play(body)

    with ScriptedOpenAIServer(responder=responder) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "api_key": "sk-test-KEY0123456789abcdefXYZ"}
        members, kinds_ = build_team(load_team("collaborative"), env,
                                     {"agent": {"model": "agent-lm", **settings},
                                      "user": {"model": "user-lm", **settings}})
        before = shared_clients.clients_open()
        result = Session(env, members, kinds=kinds_, results_dir=tmp_path,
                         config=SessionConfig(idle_seconds=2, timeout=60)).run_sync()
        lms = [members[role].lm for role in ("agent", "user")]
        assert result.end_reason == "finished" and all(lm.meter.calls for lm in lms)
        assert all(lm._client is not None and lm._client.session.closed for lm in lms)
        assert shared_clients.clients_open() == before

        async def again(lm) -> str:
            try:
                return (await lm.complete([{"role": "user", "content": "again"}])).text
            finally:
                await lm.aclose()

        assert [asyncio.run(again(lm)) for lm in lms] == ["still here", "still here"]


@pytest.mark.parametrize("team_name", ["autonomous", "collaborative", "collaborative-planning"])
def test_each_ready_team_completes_a_session(team_name, tmp_path):
    play = TodoRolePlay()
    with ScriptedOpenAIServer(responder=play) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "api_key": "sk-test-KEY0123456789abcdefXYZ"}
        members, kinds_ = build_team(load_team(team_name), env,
                                     {"agent": {"model": "agent-lm", **settings},
                                      "user": {"model": "user-lm", **settings}})
        result = Session(env, members, kinds=kinds_, results_dir=tmp_path,
                         config=SessionConfig(idle_seconds=2, timeout=60)).run_sync()
        bodies = server.bodies

    assert result.end_reason == "finished" and result.delivered
    events = read_events(tmp_path)
    added = [e.action for e in events if e.actor == "agent" and e.type is EventType.ACTION]
    assert added and all(a.startswith("ADD_ITEM(") for a in added)  # actions reached the env
    assert {e.status for e in events if e.actor == "agent"} == {"ok"}

    agent_bodies = [b for b in bodies if b["model"] == "agent-lm"]
    user_bodies = [b for b in bodies if b["model"] == "user-lm"]
    assert all(b["temperature"] == 0 for b in bodies)
    roles = ["agent"] if team_name == "autonomous" else ["agent", "user"]
    for role, sent in (("agent", agent_bodies), ("user", user_bodies))[:len(roles)]:
        calls = [json.loads(x) for x in (tmp_path / role / "lm_calls.jsonl").read_text().splitlines()]
        assert len(calls) == len(sent) > 0  # each member's LM log, one line per call
        usage = json.loads((tmp_path / role / "usage.json").read_text())
        assert usage["calls"] == len(sent)
        assert usage["total_tokens"] == sum(c["usage"]["prompt_tokens"] +
                                            c["usage"]["completion_tokens"] for c in calls) > 0
        assert "KEY0123456789abcdef" not in (tmp_path / role / "lm_calls.jsonl").read_text()

    hidden = env.hidden_information()
    assert not any(hidden in json.dumps(b) for b in agent_bodies)  # the agent is never told
    assert "must_have" not in json.dumps(agent_bodies)

    scratchpad = json.loads((tmp_path / "agent" / "scratchpad.json").read_text())
    if team_name == "autonomous":
        # The Fully Autonomous Agent works alone: no simulated user, no user LM call, and only
        # the agent acts and ends the session.
        assert user_bodies == [] and not (tmp_path / "user").exists()
        assert {e.actor for e in events} <= {None, "agent"}
        assert events[-2].type is EventType.FINISH and events[-2].actor == "agent"
        assert all("(you work alone)" in b["messages"][0]["content"] for b in agent_bodies)
        assert not any(classify(b) in ("plan", "message") for b in agent_bodies)
    else:
        assert any(hidden in json.dumps(b) for b in user_bodies)  # the user is told
        messages = [(e.actor, e.action) for e in events if e.type is EventType.MESSAGE]
        assert messages and len(messages) == len(set(messages))  # nobody repeats itself
        assert "rain jacket" in result.outcome  # it read the chat and acted on it
        assert "user needs a rain jacket" in scratchpad.values()
    if team_name == "collaborative-planning":
        agent_kinds = {classify(b) for b in agent_bodies}
        assert {"plan", "act", "message"} <= agent_kinds


def test_a_long_sessions_call_logs_stay_under_their_cap_and_usage_stays_exact(tmp_path):
    """Each member's ``lm_calls.jsonl`` rotates at ``log_max_bytes``, keeping ``log_backups``
    older files; ``usage.json`` counts every call all the same, and the trajectory reader finds
    the tokens there."""
    cap, backups = 8192, 2
    play = TodoRolePlay(min_items=7)
    replies: list[tuple[str, str]] = []

    def responder(body):
        reply = play(body)
        replies.append((body["model"], reply))
        return reply

    with ScriptedOpenAIServer(responder=responder) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "log_max_bytes": cap, "log_backups": backups}
        members, kinds_ = build_team(load_team("collaborative-planning"), env,
                                     {"agent": {"model": "agent-lm", **settings},
                                      "user": {"model": "user-lm", **settings}})
        result = Session(env, members, kinds=kinds_, results_dir=tmp_path,
                         config=SessionConfig(idle_seconds=2, timeout=60)).run_sync()
        bodies = server.bodies
    assert result.end_reason == "finished"
    record = load_session(tmp_path)
    for role in ("agent", "user"):
        sent = [b for b in bodies if b["model"] == f"{role}-lm"]
        answers = [text for model, text in replies if model == f"{role}-lm"]
        files = log_files(tmp_path / role / "lm_calls.jsonl")
        assert all(file.stat().st_size <= cap for file in files)
        assert len(files) <= backups + 1
        kept = read_calls(tmp_path / role / "lm_calls.jsonl")
        if role == "agent":  # about 60 calls of a few kB each: it must have rotated
            assert (tmp_path / role / "lm_calls.1.jsonl").is_file() and len(kept) < len(sent)
        assert [c["completion"] for c in kept] == answers[-len(kept):]  # the newest, in order
        usage = json.loads((tmp_path / role / "usage.json").read_text())
        prompt_words = sum(len(m["content"].split()) for b in sent for m in b["messages"])
        completion_words = sum(len(text.split()) for text in answers)
        assert usage["calls"] == len(sent)
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (prompt_words,
                                                                        completion_words)
        tokens = record.tokens[role]
        assert (tokens.prompt, tokens.completion) == (prompt_words, completion_words)


def test_an_autonomous_session_ends_only_by_its_agent_even_when_a_user_lm_is_reachable(tmp_path):
    """The autonomous baseline spends no user tokens and cannot be ended at event 2 by a
    simulated user: the user's endpoint answers FINISH to anything, and is never asked."""
    play = TodoRolePlay()

    def responder(body):
        if body["model"] == "user-lm":
            return "Thought: done.\nChoice: 5"  # would be FINISH for a user with task actions
        return play(body)

    with ScriptedOpenAIServer(responder=responder) as server:
        env = make_env("todo", instance=0)
        members, kinds_ = build_team(load_team("autonomous"), env, {
            "*": {"model": "user-lm", "base_url": server.base_url},
            "agent": {"model": "agent-lm"}})
        result = Session(env, members, kinds=kinds_, results_dir=tmp_path,
                         config=SessionConfig(idle_seconds=2, timeout=60)).run_sync()
        models = [b["model"] for b in server.bodies]
    assert set(models) == {"agent-lm"}
    assert result.end_reason == "finished" and result.delivered and result.events > 3
    finish = next(e for e in read_events(tmp_path) if e.type is EventType.FINISH)
    assert finish.actor == "agent" and finish.seq == result.events - 1


# -- one decision at a time ------------------------------------------------------------------


async def test_the_three_way_plan_is_honoured(server):
    agent = PlanningAgent(lm(server), use_scratchpad=False)
    _, first = started(agent)
    server.extend(["Thought: tell them.\nDecision: 2", "Thought: hi.\nMessage: Hello there!",
                   "Thought: wait.\nDecision: 3",
                   "Thought: work.\nDecision: 1", 'Thought: go.\nAction: ADD_ITEM(text="tent")'])
    assert await agent.act(first) == 'SEND_TEAMMATE_MESSAGE(message="Hello there!")'
    assert await agent.act(first) == "WAIT_TEAMMATE_CONTINUE()"
    assert await agent.act(first) == 'ADD_ITEM(text="tent")'
    assert kinds(server) == ["plan", "message", "plan", "plan", "act"]
    assert [p.name for p in agent.plans] == ["MESSAGE", "WAIT", "TASK_ACTION"]
    # the task-action step offers task actions, not messages
    act_prompt = server.bodies[-1]["messages"][-1]["content"]
    assert "ADD_ITEM(" in act_prompt and "SEND_TEAMMATE_MESSAGE" not in act_prompt


async def test_the_scratchpad_is_kept_by_the_same_lm_before_each_decision(server):
    agent = CollaborativeAgent(lm(server))
    _, first = started(agent)
    server.extend(['Action: ADD_NOTE(note="likes hiking")', 'Action: ADD_ITEM(text="boots")',
                   'Action: EDIT_NOTE(note_id=1, note="loves hiking")', "Action: WAIT_TEAMMATE_CONTINUE()",
                   "Action: DELETE_NOTE(note_id=1)", "Action: FINISH()"])
    assert await agent.act(first) == 'ADD_ITEM(text="boots")'
    assert agent.scratchpad.notes == {1: "likes hiking"}
    await agent.act(first)
    assert agent.scratchpad.notes == {1: "loves hiking"}
    assert "1. loves hiking" in server.bodies[-1]["messages"][0]["content"]
    await agent.act(first)
    assert agent.scratchpad.notes == {}
    assert kinds(server) == ["scratchpad", "act"] * 3


async def test_unusable_output_gets_one_repair_attempt(server):
    agent = CollaborativeAgent(lm(server), use_scratchpad=False)
    _, first = started(agent)
    server.extend(["I think we should pack a tent.", 'Thought: ok.\nAction: ADD_ITEM(text="tent")'])
    assert await agent.act(first) == 'ADD_ITEM(text="tent")'
    repair = server.bodies[-1]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert "could not be used" in repair[-1]["content"] and "ADD_ITEM(text=" in repair[-1]["content"]


async def test_output_unusable_twice_becomes_a_clear_message_or_a_wait(server):
    collaborative = CollaborativeAgent(lm(server), use_scratchpad=False)
    _, first = started(collaborative)
    server.extend(["no idea", "still no idea"])
    reply = await collaborative.act(first)
    assert reply.startswith("SEND_TEAMMATE_MESSAGE(") and "could not work out" in reply
    autonomous = AutonomousAgent(lm(server), use_scratchpad=False)
    started(autonomous)
    server.extend(["no idea", "still no idea"])
    assert await autonomous.act(first) is None


async def test_a_failing_lm_is_reported_once_and_never_crashes(server):
    server.add(Reply(status=500), repeat=True)
    collaborative = CollaborativeAgent(lm(server, max_retries=1), use_scratchpad=False)
    _, first = started(collaborative)
    first_reply = await collaborative.act(first)
    assert first_reply.startswith('SEND_TEAMMATE_MESSAGE(message="My language model is not '
                                  'working right now (its server kept reporting errors), so I '
                                  'can\'t do my part of the task for the moment.')
    assert "check the model name and the server address" in first_reply  # what the person can do
    assert collaborative.lm_failing
    # said once, then quietly waits: waiting on a failing LM is not going round in circles
    assert [await collaborative.act(first) for _ in range(5)] == [None] * 5
    assert collaborative.lm.meter.failures == 6
    autonomous = AutonomousAgent(lm(server, max_retries=0), use_scratchpad=False)
    started(autonomous)
    assert [await autonomous.act(first) for _ in range(3)] == [None, None, "FINISH()"]


@pytest.mark.parametrize(("first", "plan"), [
    ("Decision: 12", "WAIT"),  # was read as 1: a task action
    ("Decision: 2 or 3", "WAIT"),
    ("Decision: three", "WAIT"),
    ("Decision: 4", "WAIT"),
    ("Thought: hmm.", "WAIT"),  # no Decision line
    ("Decision: 3.", None),  # usable as it is: no repair
    ("Decision: 3 (wait)", None),
])
async def test_the_decision_is_read_whole_with_one_repair(server, first, plan):
    agent = PlanningAgent(lm(server), use_scratchpad=False)
    _, notification = started(agent)
    server.extend([first, "Thought: sorry.\nDecision: 3"])
    assert await agent.act(notification) == "WAIT_TEAMMATE_CONTINUE()"
    assert [p.name for p in agent.plans] == ["WAIT"]
    if plan is None:
        assert kinds(server) == ["plan"]
        return
    assert kinds(server) == ["plan", "repair"]
    repair = server.bodies[-1]["messages"]
    assert repair[-2]["content"] == first and "1, 2 or 3" in repair[-1]["content"]
    assert "Decision:" in repair[-1]["content"]


async def test_a_decision_unusable_twice_is_unusable_output(server):
    agent = PlanningAgent(lm(server), use_scratchpad=False)
    _, notification = started(agent)
    server.extend(["Decision: 12", "Decision: 12"])
    reply = await agent.act(notification)
    assert reply.startswith("SEND_TEAMMATE_MESSAGE(") and "could not work out" in reply
    assert kinds(server) == ["plan", "repair"] and agent.plans == []


async def test_an_agent_that_keeps_waiting_asks_its_teammate(server):
    agent = PlanningAgent(lm(server), use_scratchpad=False, stuck_after=3)
    coordinator, first = started(agent)
    server.add("Thought: wait.\nDecision: 3", repeat=True)
    replies = [await agent.act(first) for _ in range(4)]
    assert replies[:2] == ["WAIT_TEAMMATE_CONTINUE()"] * 2
    assert replies[2].startswith("SEND_TEAMMATE_MESSAGE(") and "going round in circles" in replies[2]
    later = [replies[3], *[await agent.act(first) for _ in range(6)]]
    assert later == ["WAIT_TEAMMATE_CONTINUE()"] * 7  # asked once; now it waits for the answer
    said = coordinator.handle("user", 'SEND_TEAMMATE_MESSAGE(message="keep going")', 1.0)
    to_agent = next(n for n in notified(coordinator, said) if n.recipient == "agent")
    after = [await agent.act(to_agent), await agent.act(first), await agent.act(first)]
    assert after[:2] == ["WAIT_TEAMMATE_CONTINUE()"] * 2
    assert after[2].startswith("SEND_TEAMMATE_MESSAGE(")  # stuck again: it may ask again


async def test_an_agent_repeating_one_action_is_stopped(server):
    collaborative = CollaborativeAgent(lm(server), use_scratchpad=False, stuck_after=3)
    _, first = started(collaborative)
    server.add('Action: CHECK_ITEM(item_id=1)', repeat=True)
    replies = [await collaborative.act(first) for _ in range(3)]
    assert replies[:2] == ["CHECK_ITEM(item_id=1)"] * 2
    assert "repeated the same step (check item) 3 times" in replies[2]
    autonomous = AutonomousAgent(lm(server), use_scratchpad=False, stuck_after=3)
    started(autonomous)
    assert [await autonomous.act(first) for _ in range(3)][-1] == "FINISH()"


async def test_history_is_bounded_and_steps_are_counted(server):
    agent = CollaborativeAgent(lm(server), use_scratchpad=False, history_window=3,
                               chat_window=2, stuck_after=100)
    coordinator, notification = started(agent)
    for n in range(5):
        notification = next(x for x in notified(coordinator, coordinator.handle(
            "user", f'SEND_TEAMMATE_MESSAGE(message="note {n}")', float(n))))
        server.add(f'Action: ADD_ITEM(text="item {n}")')
        action_text = await agent.act(notification)
        coordinator.handle("agent", action_text, float(n))
    assert agent.steps == 5 and len(agent.history) == 3
    system = server.bodies[-1]["messages"][0]["content"]
    assert "(3 earlier messages not shown)" in system and "[user] note 4" in system
    assert 'ADD_ITEM(text="item 0")' not in system and 'ADD_ITEM(text="item 3")' in system


class Board(CoEnv):
    """Another task altogether, to show the agents need nothing but its action specs."""

    name = "board"
    task_description = "Write a haiku on the board."

    def _reset(self, seed):
        self.lines: list[str] = []

    def public_components(self):
        return [Component(name="board", render_type=RenderType.EDITOR, content="\n".join(self.lines))]

    @action("Write one line on the board.", line="The line")
    def write_line(self, role: str, line: str) -> None:
        if not line:
            raise ActionError("empty line")
        self.lines.append(line)


async def test_agents_work_on_any_env_through_its_action_specs(server):
    agent = CollaborativeAgent(lm(server), use_scratchpad=False)
    coordinator, first = started(agent, Board())
    server.add("Thought: start.\nAction: WRITE_LINE(line='An old silent pond')")
    act = await agent.act(first)
    assert act == 'WRITE_LINE(line="An old silent pond")'
    assert "WRITE_LINE(line=" in server.bodies[0]["messages"][-1]["content"]
    result = coordinator.handle("agent", act, 1.0)
    assert result.events[0].status == "ok" and coordinator.env.lines == ["An old silent pond"]


def test_observations_render_by_component_type():
    checklist = Component(name="c", render_type=RenderType.CHECKLIST, content=[
        {"id": 1, "text": "tent", "done": True, "added_by": "agent"}])
    assert "- [x] #1 tent (added by agent)" in render_component(checklist)
    table = Component(name="t", render_type=RenderType.TABLE, private=True,
                      content=[{"city": "Oslo", "price": 3}])
    text = render_component(table)
    assert "| city | price |" in text and "| Oslo | 3 |" in text and "only you see this" in text
    results = Component(name="r", render_type=RenderType.SEARCH_RESULTS, content=["a", "b"])
    assert "1. a\n2. b" in render_component(results)
    long = Component(name="e", render_type=RenderType.EDITOR, content="x" * 10_000)
    assert "more characters" in render_component(long, max_chars=100)
    chat = [ChatMessage(seq=1, time=0, sender="user", text="hi", to="agent")]
    assert render_chat(chat, "agent", 5) == "[user to you] hi"


def test_search_results_render_as_tables_with_their_note():
    result = Component(name="search", render_type=RenderType.TABLE, content={
        "title": "Flights", "columns": ["Flight Number", "Price"],
        "rows": [{"Flight Number": "F1", "Price": 120}], "note": "1 flight on 2022-03-12"})
    text = render_component(result)
    assert "1 flight on 2022-03-12" in text and "| F1 | 120 |" in text
    empty = Component(name="search", render_type=RenderType.TABLE,
                      content={"title": "Flights", "columns": [], "rows": [],
                               "note": "No flight from A to B on that day."})
    assert "No flight from A to B on that day." in render_component(empty)


def test_the_notebook_view_shows_recent_cells_whole_and_older_ones_in_a_line():
    cells = [{"index": i, "ran_by": "agent" if i % 2 else "user", "source": f"x{i} = {i}\nx{i}",
              "execution_count": i, "status": "ok",
              "outputs": [{"kind": "result", "text": str(i)}]} for i in range(1, 7)]
    notebook = Component(name="notebook", render_type=RenderType.NOTEBOOK,
                         content={"cells": cells, "running": {"user": "slow()"}})
    text = render_component(notebook)
    assert "(cell 1, agent: x1 = 1 -> ok)" in text and "(cell 2, user: x2 = 2 -> ok)" in text
    assert "In [3] (agent):\nx3 = 3\nx3\nOut:\n3" in text and "In [6] (user):" in text
    assert "In [2]" not in text and "(user is running: slow())" in text
