"""Updates carry what changed; members keep their own copies and resync when they miss one.

The coordinator's side (what an update holds, and that its size does not grow with the chat),
the copy's rules (a gap or a stale component is found, an old update is ignored, a whole update
repairs), and a real member node on both buses that loses an update on the way, asks for a
sync, and acts on the same view as the env's. The stateful property test of the coordinator
(tests/core/test_properties_coordinator.py) checks after every random step that every member's copy
equals the whole view and chat the coordinator would show it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cogym_lab.bus import Bus, Subscription
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import (
    EventType,
    StepRequest,
    TeamMember,
    Update,
    obs_channel,
    step_channel,
)
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import AgentNode, EnvNode
from tests.support.hostile import NASTY
from tests.support.notes_env import NotesEnv

DUO = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]


def size(update: Update) -> int:
    return len(json.dumps(update.model_dump(mode="json")))


def say(text: str) -> str:
    return f"SEND_TEAMMATE_MESSAGE(message={json.dumps(text)})"


def test_a_message_update_carries_the_message_not_the_chat_nor_the_view() -> None:
    coordinator = Coordinator(TodoEnv(), DUO, session_id="chatty", max_events=5000)
    coordinator.start(0.0)
    sizes = {}
    for n in range(1, 1001):
        transition = coordinator.handle("user" if n % 2 else "agent", say(f"note {n:04d}"),
                                        float(n))
        if n in (10, 1000):
            sizes[n] = [size(update) for update in transition.updates]
            for update in transition.updates:
                assert not update.whole and update.components == []
                assert [m.text for m in update.messages] == [f"note {n:04d}"]
                assert list(update.versions) == ["checklist", "ideas"]
    # The same bytes after 1,000 messages as after 10, but for the digits of counters and times.
    assert all(late - early <= 20 for late, early in zip(sizes[1000], sizes[10], strict=True))
    synced = coordinator.sync("agent", 2000.0)
    assert synced is not None and synced.whole and len(synced.messages) == 1000


def test_an_edit_update_carries_the_text_once_and_only_to_whom_it_changed() -> None:
    coordinator = Coordinator(NotesEnv(), DUO, session_id="edits")
    coordinator.start(0.0)
    text = "x" * 100_000
    wrote = coordinator.handle("user", {"name": "WRITE", "args": {"text": text}}, 1.0)
    for update in wrote.updates:
        assert [c.name for c in update.components] == ["editor"]
        assert update.versions["editor"] == wrote.events[0].seq
        assert len(text) < size(update) < len(text) + 3000  # the text once, not twice
    jotted = coordinator.handle("agent", 'JOT(note="mine")', 2.0)
    (private,) = jotted.updates  # a private change reaches its actor only
    assert [c.name for c in private.components] == ["scratch"]
    assert private.versions["editor"] == wrote.events[0].seq  # unchanged: its old version


def test_a_copy_finds_a_gap_and_a_stale_component_and_a_sync_repairs_it() -> None:
    coordinator = Coordinator(TodoEnv(), DUO, session_id="gaps")
    copy = MemberCopy("agent")
    (start,) = [u for u in coordinator.start(0.0).updates if u.recipient == "agent"]
    assert copy.apply(start) is not None and copy.seq == 1
    lost = coordinator.handle("user", 'ADD_ITEM(text="tent")', 1.0)
    after = coordinator.handle("user", 'ADD_ITEM(text="map")', 2.0)
    agent_after = next(u for u in after.updates if u.recipient == "agent")
    with pytest.raises(OutOfSync, match="missed an update"):
        copy.apply(agent_after)
    assert copy.out_of_sync and copy.seq == 1  # nothing of it was applied
    with pytest.raises(OutOfSync, match="waits for a sync"):
        copy.apply(agent_after)
    synced = coordinator.sync("agent", 3.0)
    assert synced is not None
    notification = copy.apply(synced)
    assert notification is not None and not copy.out_of_sync
    assert notification.view == coordinator.env.view("agent")
    assert copy.apply(next(u for u in lost.updates if u.recipient == "agent")) is None  # old

    # A component whose version is not the one the update expects: found, not taken on trust.
    later = next(u for u in coordinator.handle("user", say("hi"), 4.0).updates
                 if u.recipient == "agent")
    forged = later.model_copy(update={"versions": {**later.versions, "checklist": 1}})
    with pytest.raises(OutOfSync, match="'checklist' at version"):
        MemberCopy("agent").apply(synced) and copy.apply(forged)


def test_a_watchers_snapshot_follows_the_members_next_updates() -> None:
    coordinator = Coordinator(TodoEnv(), DUO, session_id="watch")
    coordinator.start(0.0)
    coordinator.handle("agent", 'SEARCH_IDEAS(trip="beach")', 1.0)  # private to the agent
    snapshot = coordinator.watch("user", 2.0)  # newer than the user's last update (seq 1)
    assert snapshot is not None and snapshot.whole and snapshot.seq == 2
    watcher = MemberCopy("user")
    watcher.apply(snapshot)
    update = next(u for u in coordinator.handle("agent", 'ADD_ITEM(text="sun")', 3.0).updates
                  if u.recipient == "user")
    assert update.prev_seq == 1  # the member's own chain, older than the snapshot
    notification = watcher.apply(update)
    assert notification is not None and notification.view == coordinator.env.view("user")


@pytest.mark.parametrize("text", [*NASTY, "m" * 1_000_000], ids=range(len(NASTY) + 1))
def test_hostile_text_survives_the_wire_and_the_copy(text: str) -> None:
    coordinator = Coordinator(NotesEnv(), DUO, session_id="hostile")
    copies = {role: MemberCopy(role) for role in ("agent", "user")}
    transitions = [coordinator.start(0.0),
                   coordinator.handle("user", {"name": "WRITE", "args": {"text": text}}, 1.0),
                   coordinator.handle("agent", say(text), 2.0)]
    for transition in transitions:
        for update in transition.updates:  # through JSON, as a bus carries it
            wire = json.loads(json.dumps(update.model_dump(mode="json")))
            copies[update.recipient].apply(Update.model_validate(wire))
    for role, copy in copies.items():
        assert copy.view == coordinator.env.view(role)
        assert copy.chat == coordinator.visible_chat(role)


# -- a real member node that loses an update on the way -----------------------------------------


class LosesOne(Subscription):
    """A subscription that loses the ``nth`` message it would deliver."""

    def __init__(self, inner: Subscription, nth: int) -> None:
        self.inner, self.left = inner, nth

    async def get(self, timeout: float | None = None) -> dict[str, Any] | None:
        message = await self.inner.get(timeout)
        self.left -= 1
        if self.left == 0 and message is not None:
            return await self.inner.get(timeout)
        return message

    async def close(self) -> None:
        await self.inner.close()


class LossyBus:
    """The member's side of a bus whose ``lossy`` channel loses its ``nth`` message."""

    def __init__(self, bus: Bus, lossy: str, nth: int) -> None:
        self.bus, self.lossy, self.nth = bus, lossy, nth

    async def subscribe(self, channel: str, **kwargs: Any) -> Subscription:
        subscription = await self.bus.subscribe(channel, **kwargs)
        return LosesOne(subscription, self.nth) if channel == self.lossy else subscription

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bus, name)


class CountsItems:
    """Adds items one by one and remembers how many it saw each time, then finishes."""

    def __init__(self, items: int) -> None:
        self.items, self.seen = items, []

    def start(self, context: Any) -> None: ...

    def end(self, final: Any) -> None: ...

    async def act(self, notification: Any) -> str:
        shown = [item["text"] for item in notification.view["checklist"].content]
        self.seen.append(shown)
        mine = [text for text in shown if text.startswith("a")]
        return "FINISH()" if len(mine) >= self.items else f'ADD_ITEM(text="a{len(mine)}")'


async def test_a_member_that_loses_an_update_asks_for_a_sync_and_acts_on_the_true_view(
        bus_factory) -> None:
    env_bus, member_bus = await bus_factory(), await bus_factory()
    session_id = "lossy"
    coordinator = Coordinator(TodoEnv(), DUO, session_id=session_id)
    events: list[Any] = []
    node = EnvNode(env_bus, coordinator, idle_seconds=30, observers=[events.append])
    agent = CountsItems(items=4)
    lossy = LossyBus(member_bus, obs_channel(session_id, "agent"), nth=3)
    member = AgentNode(lossy, session_id, "agent", agent, ack_timeout=2)  # type: ignore[arg-type]
    user_updates = await member_bus.subscribe(obs_channel(session_id, "user"))
    running = asyncio.create_task(node.run())
    acting = asyncio.create_task(member.run())
    await member_bus.publish(step_channel(session_id),
                             StepRequest(role="user", kind="join").model_dump())
    final = await asyncio.wait_for(acting, 30)
    await asyncio.wait_for(running, 10)
    assert final.done and final.end_reason == "finished"
    # Its step went unanswered (the update was lost on a quiet session): it asked for a sync.
    assert member.stats["syncs_asked"] >= 1
    assert final.view == coordinator.env.view("agent")
    assert final.chat == coordinator.visible_chat("agent")
    items = [item["text"] for item in coordinator.env.view("agent")["checklist"].content]
    assert items == ["a0", "a1", "a2", "a3"]  # no step repeated for want of a view
    assert [event.type for event in events].count(EventType.ACTION) == 4
    await user_updates.close()


async def test_a_member_node_that_sees_a_gap_asks_for_a_sync_once_and_waits_for_it() -> None:
    """Updates delivered by hand: one is skipped; the next shows the gap (its ``prev_seq``), the
    node asks for one sync however many deltas follow, and acts again only on the whole view."""
    from cogym_lab.bus import MemoryBus

    bus, session_id = MemoryBus(), "gap"
    coordinator = Coordinator(TodoEnv(), [TeamMember(role="agent", kind="agent"),
                                          TeamMember(role="user", kind="person")],
                              session_id=session_id)
    shown: list[list[str]] = []

    class Watcher:
        def start(self, context: Any) -> None: ...

        def end(self, final: Any) -> None: ...

        async def act(self, notification: Any) -> None:
            shown.append([item["text"] for item in notification.view["checklist"].content])

    steps = await bus.subscribe(step_channel(session_id))
    node = AgentNode(bus, session_id, "agent", Watcher(), ack_timeout=30)
    running = asyncio.create_task(node.run())

    async def deliver(*updates: Update) -> None:
        for update in updates:
            await bus.publish(obs_channel(session_id, update.recipient), update)

    def to_agent(transition: Any) -> Update:
        return next(u for u in transition.updates if u.recipient == "agent")

    assert StepRequest.model_validate(await steps.get(10)).kind == "join"
    await deliver(to_agent(coordinator.start(0.0)))
    to_agent(coordinator.handle("user", 'ADD_ITEM(text="lost")', 1.0))  # never delivered
    await deliver(*(to_agent(coordinator.handle("user", f'ADD_ITEM(text="u{n}")', 2.0 + n))
                    for n in range(3)))
    asked = StepRequest.model_validate(await steps.get(10))
    assert asked.kind == "sync" and await steps.get(0.3) is None  # once, not per delta
    assert node.stats["gaps"] == 1 and shown == [[]]  # nothing acted on a broken copy
    await deliver(coordinator.sync("agent", 9.0))  # type: ignore[arg-type]
    async with asyncio.timeout(10):
        while len(shown) < 2:
            await asyncio.sleep(0.01)
    assert shown[-1] == ["lost", "u0", "u1", "u2"]
    await deliver(to_agent(coordinator.end(10.0, "over")))
    await asyncio.wait_for(running, 10)
    await steps.close()
