"""The clock of a clocked env: the world moves on every tick whether or not anyone acts, actions
take effect at the next tick, simultaneous wishes resolve in team order, only the members whose
view changed are told, and the log replays to the same state after every step.

The env is ``tests.support.clocked_env.Track``: tokens that move only on the clock.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cogym_lab.core import Notification, SessionContext
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.core.plan_env import with_plans
from cogym_lab.nodes import Session, SessionConfig, replay
from cogym_lab.nodes.restore import replay_events
from cogym_lab.nodes.results import ResultsWriter, read_events, read_session
from tests.support.clocked_env import Track
from tests.support.hostile import hostile_text

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]
WITH_A_PERSON = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="person")]


def coordinator(**env_args: Any) -> Coordinator:
    return Coordinator(Track(**env_args), TEAM, session_id="clock", step_limits={})


def test_an_action_waits_for_the_next_tick_and_only_its_actor_hears_of_it() -> None:
    c = coordinator()
    c.start(0.0)
    acted = c.handle("agent", "PUSH(step=1)", 0.1)
    [event] = acted.events
    assert event.type is EventType.ACTION and event.recipients == ["agent"]
    assert c.env.position == {"agent": 0, "user": 1}  # queued, not applied
    ticked = c.clock(0.2)
    [tick] = ticked.events
    assert tick.type is EventType.CLOCK and tick.info["tick"] == 1
    assert tick.info["positions"] == {"agent": 0, "user": 1}  # the user's token is in the way
    c.handle("user", "PUSH(step=1)", 0.25)
    c.handle("agent", "PUSH(step=1)", 0.26)
    c.clock(0.3)
    # The wishes of one tick resolve in team order, not arrival order: the agent's comes
    # first and finds the cell still taken; the user moves.
    assert c.env.position == {"agent": 0, "user": 2}


def test_each_tick_tells_only_the_members_whose_view_changed() -> None:
    c = coordinator()
    c.start(0.0)
    told = [c.clock(0.1).events[0].recipients]  # tick 1: the beat is unchanged
    c.handle("user", "PUSH(step=1)", 0.15)
    told.append(c.clock(0.2).events[0].recipients)  # tick 2: the user's own token moved
    told.append(c.clock(0.3).events[0].recipients)  # tick 3: the beat changes for everyone
    assert told == [[], ["user"], ["agent", "user"]]


def test_the_game_ends_on_its_clock_and_its_ticks_do_not_count_as_events() -> None:
    c = Coordinator(Track(ticks=5), TEAM, session_id="clock", step_limits={}, max_events=4)
    c.start(0.0)
    for tick in range(5):
        transition = c.clock(float(tick))
    assert c.done and c.end_reason == "time_up"
    assert [e.type for e in transition.events] == [EventType.CLOCK, EventType.END]
    assert c.clock(9.0).events == []  # over is over


def test_a_task_that_cannot_advance_ends_the_session_cleanly() -> None:
    class Broken(Track):
        def advance(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("the oven exploded")

    c = Coordinator(Broken(), TEAM, session_id="clock", step_limits={})
    c.start(0.0)
    [end] = c.clock(0.1).events
    assert end.type is EventType.END and end.info["reason"] == "task_failed"
    assert "the oven exploded" in end.info["error"]


@pytest.mark.parametrize("period", [0.001, 0.0, -1.0, float("nan")])
def test_a_clock_too_fast_for_the_event_loop_is_refused(period: float) -> None:
    with pytest.raises(ValueError, match="may not tick faster"):
        coordinator(tick_seconds=period)


def test_bad_input_on_a_clocked_env_changes_nothing() -> None:
    c = coordinator()
    c.start(0.0)
    before = c.snapshot()
    for role, raw in [("agent", "PUSH(step=5)"), ("ghost", "PUSH(step=1)"),
                      ("agent", "FLY()"), ("agent", "PUSH(step=\ud800)")]:
        [event] = c.handle(role, raw, 0.1).events
        assert event.type is EventType.ERROR and event.error
    c.clock(0.2)
    assert c.env.position == {"agent": 0, "user": 1}
    assert c.snapshot()["views"] == before["views"] | {}  # the beat has not moved yet


class ClockedCoordinator(RuleBasedStateMachine):
    """Random pushes (some refused), messages, pauses and ticks; after every step the log, read
    back from ``events.jsonl``, replays to the same state."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="clock-"))
        self.writer = ResultsWriter(self.folder)
        self.time = 0.0
        self.replayed_up_to = 0

    @initialize(ticks=st.integers(1, 30))
    def start(self, ticks: int) -> None:
        self.c = Coordinator(Track(ticks=ticks), TEAM, session_id="p", step_limits={})
        self.replica = Coordinator(Track(ticks=ticks), TEAM, session_id="p", step_limits={})
        self.apply(self.c.start(self.now()))

    def now(self) -> float:
        self.time += 0.01
        return self.time

    def apply(self, transition: Transition) -> None:
        for event in transition.events:
            self.writer.append_event(event)
        for update in transition.updates:  # only members who were told, each of its event
            assert update.recipient in update.event.recipients

    @rule(role=st.sampled_from(["agent", "user", "ghost"]), step=st.sampled_from([-1, 1, 2]))
    def push(self, role: str, step: int) -> None:
        self.apply(self.c.handle(role, f"PUSH(step={step})", self.now()))

    @rule(role=st.sampled_from(["agent", "user"]), text=hostile_text)
    def say(self, role: str, text: str) -> None:
        self.apply(self.c.handle(role, {"name": "SEND_TEAMMATE_MESSAGE",
                                        "args": {"message": text}}, self.now()))

    @rule()
    def tick(self) -> None:
        before = dict(self.c.env.position)
        self.apply(self.c.clock(self.now()))
        assert sum(a != b for a, b in zip(before.values(), self.c.env.position.values(),
                                          strict=True)) <= 2
        assert len(set(self.c.env.position.values())) == len(self.c.env.position)

    @rule()
    def pause_or_resume(self) -> None:
        act = "RESUME_AGENT()" if "agent" in self.c.paused else "PAUSE_AGENT()"
        self.apply(self.c.handle("user", act, self.now()))

    @invariant()
    def the_log_replays_to_the_same_state(self) -> None:
        if not hasattr(self, "c"):
            return
        read_back = read_events(self.folder)
        assert [e.seq for e in read_back] == list(range(1, self.c.seq + 1))
        for _ in replay_events(self.replica, read_back[self.replayed_up_to:]):
            pass
        self.replayed_up_to = len(read_back)
        assert self.replica.snapshot() == self.c.snapshot()
        assert self.replica.clock_ticks == self.c.clock_ticks == self.c.env.tick

    def teardown(self) -> None:
        self.writer.close()
        shutil.rmtree(self.folder, ignore_errors=True)


TestClockedCoordinator = ClockedCoordinator.TestCase
TestClockedCoordinator.settings = settings(max_examples=150, stateful_step_count=40,
                                           deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])


class Pusher:
    """Pushes its token forward on every tick it is told of (not on the acknowledgement of its
    own push, which would make it push as fast as the bus carries); counts what it was told."""

    def __init__(self, think: float = 0.0) -> None:
        self.think, self.told, self.final = think, 0, None

    def start(self, context: SessionContext) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        self.told += 1
        if self.think:
            await asyncio.sleep(self.think)
        return "PUSH(step=1)" if notification.event.type is EventType.CLOCK else None

    def end(self, final: Notification) -> None:
        self.final = final


@pytest.mark.timeout(120)
async def test_a_clocked_session_plays_on_both_buses_and_replays(bus_factory, tmp_path) -> None:
    agent, user = Pusher(), Pusher(think=0.01)
    result = await Session(Track(ticks=25, tick_seconds=0.02), {"agent": agent, "user": user},
                           kinds={"agent": "agent", "user": "user"}, bus=await bus_factory(),
                           results_dir=tmp_path, session_id="clock-" + uuid.uuid4().hex[:6],
                           config=SessionConfig(idle_seconds=0.05)).run()
    assert result.end_reason == "time_up"
    events = read_events(tmp_path)
    ticks = [e for e in events if e.type is EventType.CLOCK]
    assert [e.info["tick"] for e in ticks] == list(range(1, 26))
    assert not any(e.type is EventType.TICK for e in events)  # the clock replaces idle ticks
    assert result.outcome["user"] > 1  # both moved, on the clock, as far as the track let them
    assert agent.final is not None and agent.final.done and user.final is not None
    assert read_session(tmp_path)["config"]["step_limits"] == {}  # no default limits
    assert replay(tmp_path).final_state_checked


class Stuck(Pusher):
    """An agent whose every decision takes far longer than the game: a hung LM."""

    async def act(self, notification: Notification) -> str | None:
        self.told += 1
        await asyncio.sleep(3600)
        return None


@pytest.mark.timeout(60)
async def test_the_clock_keeps_ticking_while_a_member_hangs(bus_factory, tmp_path) -> None:
    result = await Session(Track(ticks=30, tick_seconds=0.02), {"agent": Stuck(), "user": Pusher()},
                           kinds={"agent": "agent", "user": "user"}, bus=await bus_factory(),
                           results_dir=tmp_path, session_id="stuck-" + uuid.uuid4().hex[:6]).run()
    assert result.end_reason == "time_up"
    assert sum(e.type is EventType.CLOCK for e in read_events(tmp_path)) == 30


class Starter(Pusher):
    """A person who takes a while to find the game, then presses Start (a wait, as the panel's
    Start button sends) and plays on the clock as the others do."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def act(self, notification: Notification) -> str | None:
        if notification.event.type is EventType.START:
            await asyncio.sleep(self.delay)
            self.told += 1
            return "WAIT_TEAMMATE_CONTINUE()"
        return await super().act(notification)


@pytest.mark.timeout(60)
async def test_a_game_with_a_person_starts_its_clock_when_the_person_first_acts(
        bus_factory, tmp_path) -> None:
    delay = 0.3
    result = await Session(Track(ticks=10, tick_seconds=0.02),
                           {"agent": Pusher(), "user": Starter(delay)},
                           kinds={"agent": "agent", "user": "person"}, bus=await bus_factory(),
                           results_dir=tmp_path, session_id="start-" + uuid.uuid4().hex[:6]).run()
    assert result.end_reason == "time_up"
    events = read_events(tmp_path)
    start = next(e for e in events if e.type is EventType.START)
    pressed = next(e for e in events if e.type is EventType.WAIT and e.actor == "user")
    ticks = [e for e in events if e.type is EventType.CLOCK]
    assert [e.info["tick"] for e in ticks] == list(range(1, 11))  # the whole game, none lost
    assert ticks[0].seq > pressed.seq  # no tick before the person pressed Start
    assert pressed.time - start.time >= delay * 0.9
    assert replay(tmp_path).final_state_checked


class WritesInTheBackground(Pusher):
    """An agent whose note is written in the background (as an LM would) while the clock waits
    for a person: it wakes itself through its node's waker to send it, as no tick would."""

    NOTE = "Ready when you are \u202e<b>PUSH(step=1)</b>"

    def __init__(self) -> None:
        super().__init__()
        self.wake: Any = None
        self.note: str | None = None
        self.woken_by: list[EventType] = []
        self._writing: asyncio.Task[None] | None = None

    def set_waker(self, wake: Any) -> None:
        self.wake = wake

    async def _write(self) -> None:
        await asyncio.sleep(0.2)
        self.note = self.NOTE
        self.wake()

    async def act(self, notification: Notification) -> Any:
        if self._writing is None:
            self._writing = asyncio.create_task(self._write())
            return None  # never waits for the note
        if self.note is not None:
            note, self.note = self.note, None
            self.woken_by.append(notification.event.type)
            return {"name": "SEND_TEAMMATE_MESSAGE", "args": {"message": note}}
        return await super().act(notification)


@pytest.mark.timeout(60)
async def test_a_member_wakes_itself_for_its_background_work_while_the_clock_waits(
        bus_factory, tmp_path) -> None:
    agent = WritesInTheBackground()
    session = Session(Track(ticks=10, tick_seconds=0.02),
                      {"agent": agent, "user": Starter(delay=1.0)},
                      kinds={"agent": "agent", "user": "person"}, bus=await bus_factory(),
                      results_dir=tmp_path, session_id="wake-" + uuid.uuid4().hex[:6])
    assert (await session.run()).end_reason == "time_up"
    assert agent.woken_by == [EventType.SYNC]  # the current state, no event of its own
    events = read_events(tmp_path)
    [note] = [e for e in events if e.type is EventType.MESSAGE]
    pressed = next(e for e in events if e.type is EventType.WAIT and e.actor == "user")
    ticks = [e for e in events if e.type is EventType.CLOCK]
    # the note came while the clock waited (without the wake: at the first tick, after Start)
    assert note.seq < pressed.seq < ticks[0].seq
    assert [e.info["tick"] for e in ticks] == list(range(1, 11))
    assert replay(tmp_path).final_state_checked


@given(text=hostile_text)
@settings(max_examples=60, deadline=None)
def test_only_playing_starts_a_clock_that_waits_for_a_person(text: str) -> None:
    """The task's own actions (refused or not) and the explicit start play; chat, plan actions
    and what does not parse do not, whatever the text says."""
    def played_after(raw: Any, role: str = "user") -> bool:
        c = Coordinator(with_plans(Track)(), WITH_A_PERSON, session_id="clock", step_limits={})
        c.start(0.0)
        c.handle(role, raw, 1.0)
        return c.person_played

    for raw in ("PUSH(step=1)", "PUSH(step=7)", {"name": "PUSH", "args": {"step": -1}},
                "WAIT_TEAMMATE_CONTINUE()"):
        assert played_after(raw), raw
        assert not played_after(raw, role="agent"), raw  # an agent's play is not a person's
    for raw in ({"name": "SEND_TEAMMATE_MESSAGE", "args": {"message": text}},
                {"name": "ADD_STEP", "args": {"description": text}}, "SELECT_PLAN(index=0)",
                "RUN_ALL()", 'ASSIGN_STEP(step="s1", assignee="person")', "FINISH()", text,
                None, {"name": text}, 'SEND_TEAMMATE_MESSAGE(message="PUSH(step=1)")'):
        assert not played_after(raw), raw


@pytest.mark.timeout(60)
async def test_a_game_without_a_person_starts_its_clock_at_once(bus_factory, tmp_path) -> None:
    """Simulated users and agents only (an evaluation run): nobody is waited for."""
    result = await Session(Track(ticks=10, tick_seconds=0.02),
                           {"agent": Pusher(), "user": Starter(delay=5.0)},
                           kinds={"agent": "agent", "user": "user"}, bus=await bus_factory(),
                           results_dir=tmp_path, session_id="nobody-" + uuid.uuid4().hex[:6]).run()
    assert result.end_reason == "time_up"
    events = read_events(tmp_path)
    assert sum(e.type is EventType.CLOCK for e in events) == 10
    assert not any(e.type is EventType.WAIT for e in events)  # over before the user "pressed"
