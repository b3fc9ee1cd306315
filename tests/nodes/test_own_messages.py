"""A member never acts on a view that lacks its own last act, messages included (both buses).

Each test plays a real Session (EnvNode, member nodes, coordinator) with scripted teammates, so
the race is the one a real LM member meets: a notification emitted before its own message was
applied reaches it after it sent that message.
"""

from __future__ import annotations

import asyncio
import time

from cogym_lab.core.messages import EventType
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from tests.support.teammates import AGENT_AND_USER

FEEDBACK = 'SEND_TEAMMATE_MESSAGE(message="Please pack a rain jacket.")'


class EagerAdder:
    """An agent that adds items at once, then finishes when the user spoke twice or enough
    time has passed."""

    kind = "agent"

    def __init__(self) -> None:
        self.added = 0

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        if self.added < 3:
            self.added += 1
            return f'ADD_ITEM(text="item {self.added}")'
        await asyncio.sleep(0.3)
        return "FINISH()"


class FeedbackUser:
    """A user like an LM: it reads the chat it is shown and gives its feedback when the chat does
    not hold it yet. It thinks for a while, so the agent's actions pile up meanwhile."""

    kind = "user"

    def __init__(self) -> None:
        self.chats: list[list[str]] = []

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        said = [m.text for m in notification.chat if m.sender == "user"]
        self.chats.append(said)
        if said:
            return None
        await asyncio.sleep(0.2)  # writing: the agent's adds arrive in the meantime
        return FEEDBACK


async def test_a_user_never_acts_on_a_view_without_its_own_message(bus_factory, tmp_path):
    user = FeedbackUser()
    result = await Session(TodoEnv(), {"agent": EagerAdder(), "user": user}, kinds=AGENT_AND_USER,
                           bus=await bus_factory(), results_dir=tmp_path,
                           config=SessionConfig(idle_seconds=5, timeout=30)).run()
    events = read_events(tmp_path)
    feedback = [e for e in events if e.actor == "user" and e.type is EventType.MESSAGE]
    assert len(feedback) == 1, [e.action for e in feedback]  # said once, never twice
    # every view the user acted on after speaking shows its own message
    first = next(i for i, chat in enumerate(user.chats) if chat)
    assert all(chat for chat in user.chats[first:]) and len(user.chats) > first
    assert result.end_reason == "finished"


class Announcer:
    """An agent that first tells its teammate what it will do, then does it, then finishes."""

    kind = "agent"

    def __init__(self) -> None:
        self.acted_at: list[float] = []  # when it was asked to act

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        self.acted_at.append(time.monotonic())
        await asyncio.sleep(0.05)  # one LM turn
        if not any(m.sender == "agent" for m in notification.chat):
            return 'SEND_TEAMMATE_MESSAGE(message="I will add a tent.")'
        if not notification.view["checklist"].content:
            return 'ADD_ITEM(text="tent")'
        return "FINISH()"


class SilentUser:
    kind = "user"

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        return None


async def test_an_agent_acts_again_right_after_its_own_message(bus_factory, tmp_path):
    """Without the echo, the agent would sit idle for a whole inactivity period (60 s in
    JupyterLab) after its first message, until a tick came."""
    agent = Announcer()
    result = await Session(TodoEnv(), {"agent": agent, "user": SilentUser()}, kinds=AGENT_AND_USER,
                           bus=await bus_factory(), results_dir=tmp_path,
                           config=SessionConfig(idle_seconds=20, timeout=15)).run()
    events = read_events(tmp_path)
    assert [e.type for e in events if e.actor == "agent"] == [
        EventType.MESSAGE, EventType.ACTION, EventType.FINISH]
    assert not any(e.type is EventType.TICK for e in events)
    assert result.end_reason == "finished" and len(agent.acted_at) == 3
