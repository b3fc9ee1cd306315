"""Sessions end to end: merging in member nodes, the results directory, replay, Redis failures,
and nodes in separate processes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid

import pytest

from cogym_lab.bus.redis import RedisBus
from cogym_lab.core import ActionOutcome, Deferred, action
from cogym_lab.core.messages import EventType, StepRequest, obs_channel, step_channel
from cogym_lab.envs.todo import ExampleAgent, ExampleUser, TodoEnv
from cogym_lab.envs.todo.env import Item
from cogym_lab.nodes import Session, SessionConfig, replay, replay_states
from cogym_lab.nodes.results import read_events, read_session
from tests.support.teammates import AGENT, AGENT_AND_USER, Counter, Finisher, Recorder


async def test_agent_node_merges_what_arrives_while_it_thinks(bus_factory):
    agent = Recorder(script=[None, "FINISH()"], first_think=0.5)
    bus = await bus_factory()
    session = Session(TodoEnv(), {"agent": agent, "user": None},
                      kinds={"agent": "agent", "user": "person"},
                      bus=bus, session_id="merge-" + uuid.uuid4().hex[:6])
    running = asyncio.create_task(session.run())
    person_bus = await bus_factory()
    inbox = await person_bus.subscribe(obs_channel(session.session_id, "user"))
    await person_bus.publish(step_channel(session.session_id),
                             StepRequest(role="user", kind="join").model_dump())
    assert (await inbox.get(5))["event"]["type"] == "start"
    for step in ['SEND_TEAMMATE_MESSAGE(message="one")', 'ADD_ITEM(text="tent")',
                 'SEND_TEAMMATE_MESSAGE(message="two")', 'SEND_TEAMMATE_MESSAGE(message="three")']:
        await person_bus.publish(step_channel(session.session_id),
                                 StepRequest(role="user", action=step).model_dump())
    result = await asyncio.wait_for(running, 15)
    await inbox.close()

    assert result.end_reason == "finished"
    first, merged = agent.seen
    assert first.event.type is EventType.START
    assert [m.text for m in merged.new_messages] == ["one", "two", "three"]
    assert [e.seq for e in merged.merged_events] == [2, 3, 4, 5]
    assert merged.view["checklist"].content[0]["text"] == "tent"
    assert agent.final is not None and agent.final.done


def test_results_directory_holds_session_events_and_members(tmp_path):
    session = Session(TodoEnv(), {"agent": ExampleAgent(), "user": ExampleUser()},
                      kinds=AGENT_AND_USER,
                      results_dir=tmp_path, config=SessionConfig(idle_seconds=2))
    result = session.run_sync()
    assert result.delivered and result.end_reason == "finished"
    assert result.scores["performance"] == 1.0

    meta = read_session(tmp_path)
    assert meta["status"] == "finished" and meta["task"] == "todo"
    assert meta["env_args"] == {"trip": "camping", "min_items": 6,
                                "must_have": ["rain jacket", "headlamp"]}
    assert [m["role"] for m in meta["team"]] == ["agent", "user"]
    # the default protocol (the paper's) limits the simulated user too
    assert meta["protocol"] == "cogym"
    assert meta["config"]["step_limits"] == {"agent": 30, "user": 30}
    assert meta["delivered"] is True and meta["outcome"] == result.outcome
    assert meta["leakage"] == {"checked": False, "hidden_strings": 0, "leaks": [], "excused": 0}

    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == result.events
    for line in lines:
        record = json.loads(line)
        assert "chat" not in record and "view" not in record  # one event, not a copy of state
    assert [e.seq for e in read_events(tmp_path)] == list(range(1, result.events + 1))
    for role in ("agent", "user"):
        member = json.loads((tmp_path / role / "member.json").read_text())
        assert member["end_reason"] == "finished" and member["stats"]["notifications"] > 0


def test_session_json_is_written_when_the_session_starts_and_ends_only(tmp_path, monkeypatch):
    """Not per event: a rewrite of the whole record on every event cost the loop (issue 38).
    What a session in progress needs of it is its start (``status: running``, which a later
    server reads as interrupted); everything else waits for the end."""
    from cogym_lab.nodes import results

    written: list[str] = []
    real_write = results._write_json

    def counted(path, data):
        if path.name == results.SESSION_FILE:
            written.append(data.get("status"))
        real_write(path, data)

    monkeypatch.setattr(results, "_write_json", counted)
    session = Session(TodoEnv(), {"agent": ExampleAgent(), "user": ExampleUser()},
                      kinds=AGENT_AND_USER, results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=2))
    result = session.run_sync()
    assert result.events > 10
    assert written == ["running", "finished"]
    meta = read_session(tmp_path)
    assert meta["status"] == "finished" and meta["ended_at"] >= meta["started_at"]
    assert meta["final_state"]


def test_replay_reproduces_every_state_and_the_final_one_exactly(tmp_path):
    session = Session(TodoEnv(trip="beach", min_items=4, must_have=["hat"]),
                      {"agent": ExampleAgent(), "user": ExampleUser(["hat"], min_items=4)},
                      kinds=AGENT_AND_USER,
                      results_dir=tmp_path)
    result = session.run_sync()
    replayed = replay(tmp_path)
    assert len(replayed.events) == result.events
    assert replayed.final_state == read_session(tmp_path)["final_state"]
    states = [(event, coordinator.snapshot()) for event, coordinator in replay_states(tmp_path)]
    sizes = [len(state["views"]["user"]["components"][0]["content"]) for _, state in states]
    assert sizes == sorted(sizes) and sizes[-1] == len(result.outcome)
    # the private search shows only in the agent's replayed view
    seq, search = next((event.seq, state) for event, state in states
                       if event.action and event.action.startswith("SEARCH_IDEAS"))
    assert search["views"]["agent"]["components"][1]["content"]
    assert search["views"]["user"]["components"][1]["content"] == []
    assert replay(tmp_path, keep=[seq]).state_at(seq) == search


async def test_redis_killed_and_restarted_mid_session_loses_no_action(redis_server, tmp_path):
    n = 24
    buses = [RedisBus(redis_server.url, publish_timeout=30) for _ in range(3)]
    env_bus, agent_bus, user_bus = buses
    for bus in buses:
        await bus.connect()
    from cogym_lab.nodes import AgentNode, UserNode

    events = []
    session = Session(TodoEnv(), {"agent": None, "user": None},
                      kinds=AGENT_AND_USER, bus=env_bus,
                      results_dir=tmp_path, observers=[events.append],
                      config=SessionConfig(idle_seconds=20, timeout=60))
    agent = AgentNode(agent_bus, session.session_id, "agent", Counter(n), results_dir=tmp_path)
    user = UserNode(user_bus, session.session_id, "user", Finisher(n), results_dir=tmp_path)
    tasks = [asyncio.create_task(c) for c in (session.run(), agent.run(), user.run())]

    async with asyncio.timeout(20):
        while sum(e.type is EventType.ACTION for e in events) < n // 3:
            await asyncio.sleep(0.01)
    redis_server.kill()
    await asyncio.sleep(0.5)
    redis_server.start()

    result, _, _ = await asyncio.wait_for(asyncio.gather(*tasks), 60)
    for bus in buses:
        await bus.close()
    assert result.end_reason == "finished"
    assert result.outcome == [f"item-{i}" for i in range(1, n + 1)]
    actions = [e.action for e in events if e.type is EventType.ACTION]
    assert actions == [f'ADD_ITEM(text="item-{i}")' for i in range(1, n + 1)]
    assert not [e for e in events if e.type is EventType.ERROR]  # no action applied twice


def test_three_processes_complete_a_session_over_redis(redis_server, tmp_path):
    session_id = "proc-" + uuid.uuid4().hex[:6]
    common = ["--session", session_id, "--redis", redis_server.url, "--out", str(tmp_path)]
    cli = [sys.executable, "-m", "cogym_lab", "node"]
    env = subprocess.Popen([*cli, "env", *common, "--team", "example", "--idle-seconds", "5"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    members = [subprocess.Popen([*cli, kind, *common], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True) for kind in ("agent", "user")]
    outputs = [p.communicate(timeout=60)[0] for p in (env, *members)]
    assert [p.returncode for p in (env, *members)] == [0, 0, 0], outputs
    assert "ended: finished" in outputs[0]
    meta = read_session(tmp_path)
    assert meta["delivered"] and meta["end_reason"] == "finished"
    assert {"rain jacket", "headlamp"} <= set(meta["outcome"])
    assert replay(tmp_path).final_state == meta["final_state"]
    assert (tmp_path / "agent" / "member.json").exists()
    assert (tmp_path / "user" / "member.json").exists()


async def test_a_timeout_ends_the_session_cleanly_even_before_everyone_joined(tmp_path):
    # the person never joins; the session times out and still writes a coherent log
    session = Session(TodoEnv(), {"agent": Recorder(script=[]), "user": None},
                      kinds={"agent": "agent", "user": "person"}, results_dir=tmp_path,
                      config=SessionConfig(timeout=0.3, join_timeout=10))
    result = await session.run()
    assert result.end_reason == "timeout" and not result.delivered
    assert [e.type for e in read_events(tmp_path)] == [EventType.START, EventType.END]
    assert replay(tmp_path).final_state["end_reason"] == "timeout"


async def test_the_log_is_written_before_members_are_notified(bus_factory, tmp_path):
    class LogChecker(Recorder):
        lag: list[tuple[int, int]] = []

        async def act(self, notification):
            logged = read_events(tmp_path)[-1].seq
            self.lag.append((notification.seq, logged))
            return await super().act(notification)

    agent = LogChecker(script=['ADD_ITEM(text="a")', 'SEARCH_IDEAS(trip="city")',
                               'ADD_ITEM(text="b")', "FINISH()"])
    await Session(TodoEnv(), {"agent": agent},
                  kinds=AGENT, bus=await bus_factory(), results_dir=tmp_path,
                  session_id="wal-" + uuid.uuid4().hex[:6]).run()
    assert len(agent.lag) == 4
    assert all(logged >= seq for seq, logged in agent.lag), agent.lag


class Drafting(TodoEnv):
    """The todo task plus a slow tool: DRAFT asks a (stand-in) writer for an item."""

    calls = 0

    @action("Ask the writer for an item; it is added when ready.", idea="What to ask for")
    def draft(self, role: str, idea: str) -> ActionOutcome:
        async def write() -> str:
            Drafting.calls += 1
            await asyncio.sleep(0.05)
            if idea == "fail":
                raise RuntimeError("the writer is down")
            return f'ADD_ITEM(text="{idea} (drafted)")'

        return ActionOutcome(deferred=Deferred(work=write, label="Drafting"))


async def test_slow_work_lands_as_the_actors_next_step_and_replays_without_rerunning(
        bus_factory, tmp_path, monkeypatch):
    from cogym_lab.envs import register_env

    register_env("drafting-test", Drafting)
    agent = Recorder(script=['DRAFT(idea="tent")', None, 'DRAFT(idea="fail")', None, None,
                             "FINISH()"])
    session = Session(Drafting(), {"agent": agent},
                      kinds=AGENT, bus=await bus_factory(), results_dir=tmp_path,
                      task="drafting-test", session_id="draft-" + uuid.uuid4().hex[:6],
                      config=SessionConfig(idle_seconds=0.3, max_idle_ticks=5))
    result = await asyncio.wait_for(session.run(), 20)
    events = read_events(tmp_path)
    kinds = [(e.type, e.actor, e.action, e.status) for e in events]
    assert (EventType.ACTION, "agent", 'DRAFT(idea="tent")', "ok") in kinds
    assert (EventType.ACTION, "agent", 'ADD_ITEM(text="tent (drafted)")', "ok") in kinds
    failed = next(e for e in events if e.type is EventType.ERROR)
    assert failed.recipients == ["agent"] and "the writer is down" in failed.error
    assert result.outcome == ["tent (drafted)"]
    calls = Drafting.calls
    replayed = replay(tmp_path)
    assert Drafting.calls == calls  # replay applies the logged follow-up; it never redrafts
    assert replayed.final_state == read_session(tmp_path)["final_state"]


class Recording(TodoEnv):
    """A slow tool whose result is recorded by an internal action no member may send."""

    @action("Look something up; the answer is recorded when ready.", topic="What")
    def look_up(self, role: str, topic: str) -> ActionOutcome:
        async def work() -> str:
            await asyncio.sleep(0.02)
            return f'RECORD(text="{topic}: found")'

        return ActionOutcome(deferred=Deferred(work=work, label="Looking up"))

    @action("Record a finished look-up.", internal=True, text="The result")
    def record(self, role: str, text: str) -> None:
        self.items.append(Item(id=self.next_id, text=text, added_by=role))
        self.next_id += 1


async def test_internal_actions_come_only_from_deferred_work(tmp_path):
    from cogym_lab.envs import register_env

    register_env("recording-test", Recording)
    env = Recording()
    assert "RECORD" not in {s.name for s in env.action_specs()}  # never offered to members
    agent = Recorder(script=['RECORD(text="forged")', 'LOOK_UP(topic="tent")', None, "FINISH()"])
    result = await Session(env, {"agent": agent},
                           kinds=AGENT, results_dir=tmp_path, task="recording-test",
                           config=SessionConfig(idle_seconds=0.3, max_idle_ticks=5)).run()
    events = read_events(tmp_path)
    forged = events[1]
    assert forged.status == "error" and "applied by the environment" in forged.error
    recorded = next(e for e in events if e.action == 'RECORD(text="tent: found")')
    assert recorded.status == "ok" and recorded.info["follow_up"] is True
    assert result.outcome == ["tent: found"]
    assert replay(tmp_path).final_state == read_session(tmp_path)["final_state"]


async def test_a_sync_asked_before_a_step_does_not_end_the_wait_for_that_step():
    """A reconnect asks for a sync while the agent thinks; the env answers it before applying
    the agent's next step. That answer shows the state before the step, so the agent must keep
    waiting for its step rather than act on the older state (it would repeat the step)."""
    from cogym_lab.bus import MemoryBus
    from cogym_lab.core.coordinator import Coordinator
    from cogym_lab.core.messages import TeamMember
    from cogym_lab.nodes import AgentNode

    bus, session_id = MemoryBus(), "sync-race"
    coordinator = Coordinator(TodoEnv(), [TeamMember(role="agent", kind="agent"),
                                          TeamMember(role="user", kind="person")],
                              session_id=session_id)
    release = asyncio.Event()
    seen: list[int] = []

    class SlowAdder:
        def start(self, context): pass
        def end(self, final): pass

        async def act(self, notification):
            seen.append(len(notification.view["checklist"].content))
            if len(seen) == 1:
                await release.wait()  # thinking, while the bus reconnects
                return 'ADD_ITEM(text="tent")'
            return "FINISH()"

    steps = await bus.subscribe(step_channel(session_id))
    node = AgentNode(bus, session_id, "agent", SlowAdder(), ack_timeout=30)
    running = asyncio.create_task(node.run())

    async def next_step() -> StepRequest:
        return StepRequest.model_validate(await steps.get(10))

    async def deliver(transition) -> None:
        for update in transition.updates:
            await bus.publish(obs_channel(session_id, update.recipient), update)

    assert (await next_step()).kind == "join"
    await deliver(coordinator.start(0.0))
    while not seen:
        await asyncio.sleep(0.01)
    await node.request_sync()  # what a reconnect does mid-thought
    release.set()
    sync, add = await next_step(), await next_step()
    assert (sync.kind, add.action) == ("sync", 'ADD_ITEM(text="tent")')
    await bus.publish(obs_channel(session_id, "agent"), coordinator.sync("agent", 1.0))
    await asyncio.sleep(0.3)  # the agent has the sync now; it must still be waiting
    assert seen == [0]
    await deliver(coordinator.handle("agent", add.action, 2.0, request_id=add.id))
    finish = await next_step()
    assert finish.action == "FINISH()" and seen == [0, 1]  # it acted on the state with the tent
    await deliver(coordinator.handle("agent", finish.action, 3.0, request_id=finish.id))
    await asyncio.wait_for(running, 10)
    await steps.close()


class AddsOneThenWaits:
    """An agent that adds one item, then waits for ever (the session idles out)."""

    kind = "agent"

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        return None if notification.view["checklist"].content else 'ADD_ITEM(text="tent")'


@pytest.mark.parametrize("protocol", ["cogym", "cogym_lab"])
def test_an_idle_ending_with_an_outcome_delivers_under_both_protocols(protocol, tmp_path):
    """The Co-Gym release evaluates a session that idles out: after ``max_tick_cnt`` idle ticks
    its ``TaskEnvNode.event_handler`` calls ``end()``, which runs the task's
    ``evaluate_task_performance``; a non-empty outcome there has ``task_completion`` 1. Worked
    through by hand for this trajectory (one item added, then nothing): evaluated, delivered."""
    env = TodoEnv()
    env.protocol = protocol
    result = Session(env, {"agent": AddsOneThenWaits()}, kinds=AGENT, results_dir=tmp_path,
                     config=SessionConfig(idle_seconds=0.2, max_idle_ticks=1)).run_sync()
    assert result.end_reason == "idle" and result.outcome == ["tent"]
    assert result.delivered is True
    meta = read_session(tmp_path)
    assert meta["protocol"] == protocol and meta["delivered"] is True
    assert "performance" in meta["scores"]


def test_a_step_limit_ending_with_an_outcome_delivers_under_cogym(tmp_path):
    result = Session(TodoEnv(), {"agent": Counter(10)}, kinds=AGENT, results_dir=tmp_path,
                     config=SessionConfig(idle_seconds=5, agent_step_limit=3)).run_sync()
    assert result.end_reason == "step_limit" and result.outcome and result.delivered
