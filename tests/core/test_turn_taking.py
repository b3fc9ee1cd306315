"""Strict turn-taking (``interaction = "turns"``): the coordinator's rule on hand-picked cases,
the settings that choose it (team file, spec, run, command line), the refusal of a clocked env,
the log's record of the turn, and member nodes that act only on their turn in a real session.
The stateful property test is tests/core/test_turn_taking_properties.py; a whole session with LMs on
a real task is tests/eval/test_turn_taking_session.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core import Notification, SessionContext
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import Event, EventType, TeamMember
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import Session, SessionConfig, replay
from cogym_lab.nodes.replay import ReplayMismatch
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.records.trajectory import load_session
from cogym_lab.sessions import SessionBuildError, SessionSpec, build_session
from cogym_lab.teams.config import TeamConfig
from tests.support.clocked_env import Track
from tests.support.notes_env import NotesEnv

AGENT = TeamMember(role="agent", kind="agent")
USER = TeamMember(role="user", kind="user")
HELPER = TeamMember(role="helper", kind="agent")
TRIO = [AGENT, USER, HELPER]


class Turns:
    """A coordinator in turns mode with a fake clock, and the events it made."""

    def __init__(self, team: list[TeamMember] = TRIO, env: Any = None, **kwargs: Any) -> None:
        self.env = env or TodoEnv()
        self.coord = Coordinator(self.env, team, session_id="t-1", interaction="turns",
                                 **kwargs)
        self.clock = 1000.0
        self.events: list[Event] = []
        self.start = self.record(self.coord.start(self.clock, seed=5))

    def record(self, transition: Transition) -> Transition:
        self.events += transition.events
        return transition

    def do(self, role: str, raw: Any) -> Transition:
        self.clock += 1
        return self.record(self.coord.handle(role, raw, self.clock))

    def tick(self) -> Transition:
        self.clock += 1
        return self.record(self.coord.tick(self.clock))

    @property
    def turn(self) -> tuple[str, int]:
        assert self.coord.turns is not None
        return self.coord.turns.role, self.coord.turns.number


def woken(transition: Transition) -> list[str]:
    return [update.recipient for update in transition.updates]


# -- the coordinator's rule -----------------------------------------------------------------------

def test_members_act_in_the_team_order_and_only_the_member_in_turn_is_woken() -> None:
    session = Turns()
    assert woken(session.start) == ["agent"] and session.turn == ("agent", 1)
    assert session.start.updates[0].context is not None  # the first one starts with its context
    steps = [("agent", 'ADD_ITEM(text="tent")', "user"),
             ("user", 'SEND_TEAMMATE_MESSAGE(message="and a stove")', "helper"),
             ("helper", "WAIT_TEAMMATE_CONTINUE()", "agent"),  # a wait passes the turn too
             ("agent", 'ADD_ITEM(text="stove")', "user")]
    for number, (role, act, after) in enumerate(steps, start=2):
        transition = session.do(role, act)
        assert woken(transition) == [after]  # the actor is not told: its turn is over
        assert session.turn == (after, number)
        update = transition.updates[0]
        assert update.turn is not None and (update.turn.role, update.turn.number) == (after,
                                                                                     number)
        assert transition.events[0].info["turn"] == {"role": after, "number": number}
    items = [item["text"] for item in session.env.view("user")["checklist"].content]
    assert items == ["tent", "stove"]


def test_the_first_update_of_a_member_is_whole_on_its_first_turn() -> None:
    session = Turns()
    transition = session.do("agent", 'ADD_ITEM(text="tent")')
    update = transition.updates[0]
    assert update.recipient == "user" and update.whole and update.context is not None
    assert [c.name for c in update.components] == [c.name for c in session.env.view(
        "user").components]


def test_an_act_out_of_turn_is_refused_says_whose_turn_it_is_and_changes_nothing() -> None:
    # every_act_is_a_step: under the paper's protocol an act counts before it is applied;
    # an act out of turn must not count.
    session = Turns(every_act_is_a_step=True, step_limits={"agent": 5, "user": 5, "helper": 5})
    session.do("agent", 'ADD_ITEM(text="tent")')  # user's turn now
    before = session.coord.snapshot()
    transition = session.do("helper", 'ADD_ITEM(text="stove")')
    [event] = transition.events
    assert event.type is EventType.ERROR and event.actor == "helper"
    assert event.error == ("It is not your turn: user acts now (turn 2). Strict turn-taking is "
                           "on: you will be notified when your turn comes.")
    assert event.info == {"out_of_turn": True, "turn": {"role": "user", "number": 2}}
    assert transition.updates == [] and event.recipients == []
    after = session.coord.snapshot()
    assert after["seq"] == before["seq"] + 1  # logged, so that replay refuses it again
    assert {k: v for k, v in after.items() if k != "seq"} == {
        k: v for k, v in before.items() if k != "seq"}
    assert session.coord.step_counts == {"agent": 1, "user": 0, "helper": 0}


def test_a_refused_act_in_turn_keeps_the_turn_and_only_that_member_is_told() -> None:
    session = Turns()
    transition = session.do("agent", "ADD_ITEM(")
    assert transition.events[0].type is EventType.ERROR
    assert woken(transition) == ["agent"] and session.turn == ("agent", 1)
    assert session.coord.step_counts["agent"] == 1  # refused attempts count (the limit holds)
    assert woken(session.do("agent", 'ADD_ITEM(text="tent")')) == ["user"]


def test_a_paused_agent_is_skipped_and_its_acts_are_refused_without_counting() -> None:
    session = Turns(every_act_is_a_step=True, step_limits={"agent": 9, "user": 9, "helper": 9})
    session.do("agent", 'ADD_ITEM(text="tent")')
    transition = session.do("user", 'PAUSE_AGENT(agent="helper")')
    assert woken(transition) == ["agent"]  # helper, next in order, is paused: skipped
    assert session.turn == ("agent", 3)
    refused = session.do("helper", "WAIT_TEAMMATE_CONTINUE()")
    assert refused.events[0].error == "You are paused and may not act until resumed."
    assert session.coord.step_counts["helper"] == 0
    session.do("agent", "WAIT_TEAMMATE_CONTINUE()")
    assert woken(session.do("user", 'RESUME_AGENT(agent="helper")')) == ["helper"]


def test_slow_work_holds_the_turn_until_its_result_is_in() -> None:
    env = NotesEnv()
    session = Turns(team=[AGENT, USER], env=env)
    transition = session.do("agent", 'DRAFT(prompt="a summary")')
    assert woken(transition) == [] and session.turn == ("agent", 1)
    assert transition.events[0].info["turn"] == {"role": "agent", "number": 1, "busy": True}
    [(role, deferred)] = transition.deferred
    # Nobody may act meanwhile, the agent itself included; an idle tick does not pass it.
    assert "still running" in (session.do("user", 'POST(note="x")').events[0].error or "")
    assert "still running" in (session.do("agent", 'POST(note="x")').events[0].error or "")
    assert woken(session.tick()) == [] and session.turn == ("agent", 1)
    result = asyncio.run(deferred.work())
    session.clock += 1
    follow_up = session.record(session.coord.apply_follow_up(role, result, session.clock,
                                                             seen_seq=transition.events[0].seq))
    assert follow_up.events[0].info["follow_up"] is True
    assert woken(follow_up) == ["user"] and session.turn == ("user", 2)
    assert env.text == "\na summary"


def test_failed_slow_work_passes_the_turn_and_a_spurious_failure_changes_nothing() -> None:
    session = Turns(team=[AGENT, USER], env=NotesEnv())
    session.do("agent", 'DRAFT(prompt="fail now")')
    session.clock += 1
    spurious = session.coord.deferred_failed("user", "DRAFT(...)", "no work of mine", 1.0)
    assert woken(spurious) == [] and session.turn == ("agent", 1)
    failed = session.coord.deferred_failed("agent", "DRAFT(...)", "the assistant failed", 2.0)
    assert woken(failed) == ["user"] and session.turn == ("user", 2)


def test_an_idle_tick_passes_the_turn_and_whole_idle_rounds_end_the_session() -> None:
    session = Turns(team=[AGENT, USER], max_idle_ticks=2)
    assert woken(session.tick()) == ["user"]  # the agent let its turn go by
    session.do("user", "WAIT_TEAMMATE_CONTINUE()")  # 2 passes in a row: one idle round
    assert not session.coord.done
    session.do("agent", "WAIT_TEAMMATE_CONTINUE()")
    transition = session.do("user", "WAIT_TEAMMATE_CONTINUE()")  # 4 passes: two rounds
    assert session.coord.done and session.coord.end_reason == "idle"
    assert transition.events[-1].info["idle_rounds"] == 2
    assert sorted(u.recipient for u in transition.updates
                  if u.event.type is EventType.END) == ["agent", "user"]  # to everyone


def test_an_act_resets_the_idle_rounds() -> None:
    session = Turns(team=[AGENT, USER], max_idle_ticks=1)
    session.do("agent", "WAIT_TEAMMATE_CONTINUE()")
    session.do("user", 'ADD_ITEM(text="tent")')
    session.do("agent", "WAIT_TEAMMATE_CONTINUE()")
    assert not session.coord.done  # the user's item broke the round
    session.do("user", "WAIT_TEAMMATE_CONTINUE()")
    assert session.coord.end_reason == "idle"


def test_acts_out_of_turn_still_meet_the_event_limit() -> None:
    session = Turns(team=[AGENT, USER], max_events=4)
    session.do("user", "WAIT_TEAMMATE_CONTINUE()")
    session.do("user", "WAIT_TEAMMATE_CONTINUE()")
    transition = session.do("user", "WAIT_TEAMMATE_CONTINUE()")
    assert session.coord.end_reason == "event_limit"  # a flood of refusals cannot grow forever
    assert [e.type for e in transition.events] == [EventType.ERROR, EventType.END]


def test_a_sync_and_a_watch_say_whose_turn_it_is() -> None:
    session = Turns()
    update = session.coord.sync("helper", 1001.0)
    assert update is not None and update.turn is not None and update.turn.role == "agent"
    watched = session.coord.watch("user", 1001.0)
    assert watched is not None and watched.turn is not None and watched.turn.number == 1


def test_the_default_interaction_logs_no_turn() -> None:
    coord = Coordinator(TodoEnv(), TRIO, session_id="n-1")
    start = coord.start(1.0)
    assert sorted(woken(start)) == ["agent", "helper", "user"]
    assert "turn" not in start.events[0].info and start.updates[0].turn is None
    assert "turn" not in coord.snapshot() and coord.turns is None


# -- refusals and settings ------------------------------------------------------------------------

def test_a_clocked_env_cannot_take_turns() -> None:
    with pytest.raises(ValueError, match=r'runs in real time .* cannot run with interaction = '
                                         r'"turns"'):
        Coordinator(Track(), [AGENT, USER], session_id="c", interaction="turns")
    with pytest.raises(SessionBuildError) as raised:
        build_session(SessionSpec(task="kitchen", team="kitchen-act", interaction="turns",
                                  lm={"*": {"model": "m", "base_url": "http://127.0.0.1:9"}}))
    assert raised.value.field == "limits" and "cannot run with interaction" in str(raised.value)


def test_an_unknown_interaction_is_refused_wherever_it_is_given() -> None:
    with pytest.raises(ValueError, match="interaction must be one of 'notifications', 'turns'"):
        Coordinator(TodoEnv(), TRIO, session_id="x", interaction="turn")
    with pytest.raises(ValueError, match="'turn'"):
        SessionConfig(interaction="turn")
    team = TeamConfig(name="typo", session={"interaction": "turn"},
                      members={"agent": {"type": "example-agent"}})
    with pytest.raises(SessionBuildError) as raised:
        build_session(SessionSpec(task="todo", team=team))
    assert raised.value.field == "team" and "interaction must be one of" in str(raised.value)
    result = CliRunner().invoke(main, ["eval", "run", "--task", "todo", "--out", "x",
                                       "--interaction", "turn"])
    assert result.exit_code == 2 and "'turn' is not one of 'notifications', 'turns'" \
        in result.output


def test_the_team_file_chooses_turns_and_the_spec_overrides_it(tmp_path: Path) -> None:
    team = TeamConfig(name="turn-takers", session={"interaction": "turns"},
                      members={"agent": {"type": "example-agent"},
                               "user": {"type": "example-user"}})
    built = build_session(SessionSpec(task="todo", team=team), results_dir=tmp_path)
    assert built.config.interaction == "turns" and built.coordinator.turns is not None
    again = build_session(SessionSpec(task="todo", team=team, interaction="notifications"))
    assert again.config.interaction == "notifications" and again.coordinator.turns is None


# -- whole sessions: nodes that follow the rule, the log and replay -------------------------------

class Scripted:
    """A member that plays its script one act per notification (``None``: do nothing) and
    records what it was woken with."""

    def __init__(self, kind: str, script: list[str | None]) -> None:
        self.kind = kind
        self.script = list(script)
        self.seen: list[Notification] = []

    def start(self, context: SessionContext) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        self.seen.append(notification)
        await asyncio.sleep(0.01)  # a member that thinks: others may not slip in meanwhile
        return self.script.pop(0) if self.script else None

    def end(self, final: Notification) -> None:
        pass


def test_a_session_in_turns_mode_alternates_logs_the_turn_and_replays(tmp_path: Path) -> None:
    agent = Scripted("agent", ['ADD_ITEM(text="tent")', None, 'ADD_ITEM(text="rain jacket")',
                               'ADD_ITEM(text="headlamp")', "FINISH()"])
    user = Scripted("user", [None, 'SEND_TEAMMATE_MESSAGE(message="a rain jacket, please")',
                             'SEND_TEAMMATE_MESSAGE(message="and a headlamp")', None])
    session = Session(TodoEnv(min_items=3), {"agent": agent, "user": user},
                      results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=30, interaction="turns"))
    result = session.run_sync()
    assert result.end_reason == "finished" and result.delivered

    events = read_events(tmp_path)
    acts = [(e.actor, e.type.value) for e in events if e.actor is not None]
    # Strict alternation, and doing nothing (None) is logged as a wait that passes the turn.
    assert acts == [("agent", "action"), ("user", "wait"), ("agent", "wait"),
                    ("user", "message"), ("agent", "action"), ("user", "message"),
                    ("agent", "action"), ("user", "wait"), ("agent", "finish")]
    assert [e.info["turn"]["number"] for e in events if e.actor is not None] == [
        2, 3, 4, 5, 6, 7, 8, 9, 9]
    # Each member was woken on its own turns only, once each, and saw the state then.
    assert [n.turn.role for n in agent.seen if n.turn] == ["agent"] * 5
    assert [n.turn.role for n in user.seen if n.turn] == ["user"] * 4
    assert [n.event.actor for n in user.seen] == ["agent"] * 4  # woken by the act before it
    assert user.seen[1].chat == [] and agent.seen[2].chat[-1].text == "a rain jacket, please"

    meta = read_session(tmp_path)
    assert meta["interaction"] == "turns" and meta["config"]["interaction"] == "turns"
    assert meta["final_state"]["turn"] == {"role": "agent", "number": 9, "work": {},
                                           "passes": 1}
    assert load_session(tmp_path).interaction == "turns"
    replayed = replay(tmp_path)
    assert replayed.final_state_checked and replayed.final_state["turn"]["number"] == 9


def test_a_member_that_fails_to_act_passes_its_turn(tmp_path: Path) -> None:
    class Broken(Scripted):
        async def act(self, notification: Notification) -> str | None:
            self.seen.append(notification)
            raise RuntimeError("the member broke")

    broken = Broken("agent", [])
    user = Scripted("user", ['ADD_ITEM(text="tent")', "FINISH()"])
    session = Session(TodoEnv(), {"agent": broken, "user": user}, results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=30, interaction="turns"))
    assert session.run_sync().end_reason == "finished"
    acts = [(e.actor, e.type.value) for e in read_events(tmp_path) if e.actor is not None]
    assert acts == [("agent", "wait"), ("user", "action"), ("agent", "wait"),
                    ("user", "finish")]


def test_replay_refuses_a_log_whose_turn_was_edited(tmp_path: Path) -> None:
    agent = Scripted("agent", ['ADD_ITEM(text="tent")', "FINISH()"])
    user = Scripted("user", [None])
    Session(TodoEnv(), {"agent": agent, "user": user}, results_dir=tmp_path,
            config=SessionConfig(idle_seconds=30, interaction="turns")).run_sync()
    log = tmp_path / "events.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines[1]["info"]["turn"] = {"role": "agent", "number": 2}  # the action passed to the user
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(ReplayMismatch, match=r"left the turn at .*'agent'.* but replays to "
                                             r".*'user'"):
        replay(tmp_path)
