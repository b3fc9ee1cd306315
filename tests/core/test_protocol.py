"""Every notification rule of the protocol, through a real EnvNode, on both buses."""

from __future__ import annotations

import pytest

from cogym_lab.core.messages import EventType, TeamMember, obs_channel, step_channel
from tests.support.harness import Harness

THREE = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user"),
         TeamMember(role="helper", kind="agent")]


@pytest.fixture
async def harness(bus_factory):
    harnesses: list[Harness] = []

    async def start(team=None, idle_seconds: float = 30.0, **args):
        h = Harness(team or Harness().team, **args)
        harnesses.append(h)
        await h.start(bus_factory, idle_seconds=idle_seconds)
        return h

    yield start
    for h in harnesses:
        await h.close()


async def test_start_reaches_everyone_with_context(bus_factory):
    h = Harness()
    first = await h.start(bus_factory)
    try:
        for role, notification in first.items():
            assert notification.event.type is EventType.START
            assert notification.seq == 1 and notification.prev_seq is None
            assert notification.session_id == "s-test"
            assert notification.context is not None and notification.context.role == role
            assert "ADD_ITEM" in {s.name for s in notification.context.action_specs}
    finally:
        await h.close()


async def test_private_change_notifies_only_the_actor(harness):
    h = await harness()
    await h.send("agent", 'SEARCH_IDEAS(trip="beach")')
    got = await h.expect("agent")
    assert got.event.type is EventType.ACTION and got.event.private
    assert got.view["ideas"].content[0] == "sunscreen"
    await h.nothing_for("user")


async def test_shared_change_notifies_every_member(harness):
    h = await harness(team=THREE)
    await h.send("user", 'ADD_ITEM(text="tent")')
    for role in ("agent", "user", "helper"):
        got = await h.expect(role)
        assert got.event.actor == "user" and got.event.action == 'ADD_ITEM(text="tent")'
        assert [i["text"] for i in got.view["checklist"].content] == ["tent"]
        assert got.step_counts["user"] == 1


async def test_message_notifies_its_recipients_and_its_sender(harness):
    h = await harness(team=THREE)
    await h.send("user", 'SEND_TEAMMATE_MESSAGE(message="hi all")')
    for role in ("agent", "helper"):
        got = await h.expect(role)
        assert [m.text for m in got.new_messages] == ["hi all"]
    echo = await h.expect("user")  # the sender's next act must see its own message
    assert [m.text for m in echo.chat] == ["hi all"] and echo.new_messages == []
    await h.send("user", 'SEND_TEAMMATE_MESSAGE(message="just you", to="helper")')
    got = await h.expect("helper")
    assert [m.text for m in got.chat] == ["hi all", "just you"]
    assert [m.text for m in (await h.expect("user")).chat] == ["hi all", "just you"]
    await h.nothing_for("agent")


async def test_wait_is_logged_and_notifies_nobody(harness):
    h = await harness()
    await h.send("agent", "WAIT_TEAMMATE_CONTINUE()")
    await h.settle(2)
    assert h.events[-1].type is EventType.WAIT and h.events[-1].recipients == []
    await h.nothing_for("agent")
    await h.nothing_for("user")


async def test_error_notifies_only_the_actor_and_changes_nothing(harness):
    h = await harness()
    await h.send("agent", "FLY_TO_THE_MOON()")
    got = await h.expect("agent")
    assert got.event.status == "error" and "ADD_ITEM(text=" in got.event.error
    assert got.view["checklist"].content == []
    await h.nothing_for("user")


async def test_inactivity_ticks_everyone_then_ends_the_session(harness):
    h = await harness(idle_seconds=0.2, max_idle_ticks=2)
    for tick in (1, 2):
        for role in ("agent", "user"):
            got = await h.expect(role)
            assert got.event.type is EventType.TICK and got.event.info["idle_ticks"] == tick
    for role in ("agent", "user"):
        got = await h.expect(role)
        assert got.done and got.end_reason == "idle"


async def test_step_limit_ends_the_session(harness):
    h = await harness(step_limits={"agent": 2})
    await h.send("agent", 'ADD_ITEM(text="a")')
    await h.send("agent", 'ADD_ITEM(text="b")')
    seen = [await h.expect("user") for _ in range(3)]
    assert [n.event.type for n in seen] == [EventType.ACTION, EventType.ACTION, EventType.END]
    assert seen[-1].end_reason == "step_limit" and seen[-1].event.info["role"] == "agent"


async def test_finish_ends_the_session_for_everyone(harness):
    h = await harness()
    await h.send("user", "FINISH()")
    for role in ("agent", "user"):
        got = await h.expect(role)
        assert got.done and got.end_reason == "finished" and got.event.type is EventType.END
    assert [e.type for e in h.events[-2:]] == [EventType.FINISH, EventType.END]


async def test_confirmation_accepted_runs_as_requester(harness):
    h = await harness()
    await h.send("agent", 'REQUEST_TEAMMATE_CONFIRM(pending_action="ADD_ITEM(text=\\"map\\")")')
    for role in ("agent", "user"):
        got = await h.expect(role)
        assert got.pending_confirmations[0].pending_action == 'ADD_ITEM(text="map")'
    await h.send("user", 'ACCEPT_CONFIRMATION(request_id="c1")')
    for role in ("agent", "user"):
        got = await h.expect(role)
        assert got.event.type is EventType.CONFIRM_ACCEPT
        assert got.view["checklist"].content[0]["added_by"] == "agent"
        assert got.pending_confirmations == []


async def test_confirmation_rejected_runs_nothing_and_tells_the_requester(harness):
    h = await harness(team=THREE)
    await h.send("agent", 'REQUEST_TEAMMATE_CONFIRM(pending_action="REMOVE_ITEM(item_id=1)")')
    for role in ("agent", "user", "helper"):
        await h.expect(role)
    await h.send("user", 'REJECT_CONFIRMATION(request_id="c1", reason="keep it")')
    got = await h.expect("agent")
    assert got.event.type is EventType.CONFIRM_REJECT and got.event.info["requester"] == "agent"
    assert got.pending_confirmations == []
    await h.expect("user")
    await h.nothing_for("helper")


async def test_paused_agent_receives_nothing_and_may_not_act(harness):
    h = await harness()
    await h.send("user", "PAUSE_AGENT()")
    assert (await h.expect("user")).paused == ["agent"]
    await h.send("user", 'SEND_TEAMMATE_MESSAGE(message="while you slept")')
    await h.send("agent", 'ADD_ITEM(text="sneaky")')
    await h.settle(4)
    await h.nothing_for("agent")
    assert h.events[-1].status == "error" and h.events[-1].recipients == []
    await h.send("user", "RESUME_AGENT()")
    got = await h.expect("agent")
    assert got.event.type is EventType.RESUME and got.paused == []
    assert [m.text for m in got.new_messages] == ["while you slept"]
    assert got.view["checklist"].content == [] and got.context is not None


async def test_reconnecting_member_asks_for_the_current_state(harness):
    h = await harness()
    await h.send("user", 'ADD_ITEM(text="tent")')
    await h.expect("user")
    before = await h.expect("agent")
    await h.subscriptions["agent"].close()  # the agent drops off...
    await h.send("user", 'ADD_ITEM(text="stove")')
    await h.expect("user")
    h.subscriptions["agent"] = await h.member_bus.subscribe(obs_channel(h.session_id, "agent"))
    await h.send("agent", kind="sync")  # ...comes back and is whole again
    got = await h.expect("agent")
    assert got.event.type is EventType.SYNC and got.seq == 3
    # the agent last saw seq 2; prev_seq 3 tells it that it missed an event, and the view has it
    assert before.seq == 2 and got.prev_seq == 3
    assert [i["text"] for i in got.view["checklist"].content] == ["tent", "stove"]


async def test_sequence_numbers_let_a_member_detect_gaps(harness):
    h = await harness()
    for text in "abc":
        await h.send("agent", 'SEARCH_IDEAS(trip="camping")' if text == "b" else
                     f'ADD_ITEM(text="{text}")')
    user = [await h.expect("user") for _ in range(2)]
    agent = [await h.expect("agent") for _ in range(3)]
    assert [n.seq for n in agent] == [2, 3, 4]
    assert [n.prev_seq for n in agent] == [1, 2, 3]
    # the user was not told of the private search: its chain skips seq 3, without a gap
    assert [(n.seq, n.prev_seq) for n in user] == [(2, 1), (4, 2)]


async def test_malformed_bus_messages_are_ignored(harness):
    h = await harness()
    await h.member_bus.publish(step_channel(h.session_id), {"nonsense": True})
    await h.send("user", 'ADD_ITEM(text="still fine")')
    got = await h.expect("agent")
    assert got.view["checklist"].content[0]["text"] == "still fine"


async def test_a_paused_agent_gets_no_sync_until_resumed(harness):
    h = await harness()
    await h.send("user", "PAUSE_AGENT()")
    await h.expect("user")
    await h.send("agent", kind="sync")
    await h.nothing_for("agent")
    await h.send("user", "RESUME_AGENT()")
    got = await h.expect("agent")
    assert got.event.type is EventType.RESUME and got.context is not None
