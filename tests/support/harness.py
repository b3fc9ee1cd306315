"""Play team members by hand on a real bus, to watch exactly what the EnvNode sends whom."""

from __future__ import annotations

import asyncio
from typing import Any

from cogym_lab.bus import Bus, Subscription
from cogym_lab.core import Notification
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.member_copy import MemberCopies
from cogym_lab.core.messages import (
    Event,
    StepRequest,
    TeamMember,
    Update,
    obs_channel,
    step_channel,
)
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import EnvNode

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]


class Harness:
    """An EnvNode on one bus and a hand-driven subscription per member on others."""

    def __init__(self, team: list[TeamMember] = TEAM, **coordinator_args: Any) -> None:
        self.team = team
        self.coordinator_args = coordinator_args
        self.events: list[Event] = []
        self.subscriptions: dict[str, Subscription] = {}
        self.session_id = "s-test"
        self.copies = MemberCopies()  # each member's view and chat, as its updates built them
        self.updates: list[Update] = []  # every update received, as it came

    async def start(self, make_bus: Any, *, idle_seconds: float = 30.0) -> dict[str, Notification]:
        self.env_bus: Bus = await make_bus()
        self.member_bus: Bus = await make_bus()
        coordinator = Coordinator(TodoEnv(), self.team, session_id=self.session_id,
                                  **self.coordinator_args)
        self.node = EnvNode(self.env_bus, coordinator, idle_seconds=idle_seconds,
                            observers=[self.events.append])
        self.task = asyncio.create_task(self.node.run())
        for member in self.team:
            self.subscriptions[member.role] = await self.member_bus.subscribe(
                obs_channel(self.session_id, member.role))
            await self.send(member.role, kind="join")
        return {m.role: await self.expect(m.role) for m in self.team}

    async def send(self, role: str, action: Any = None, kind: str = "action") -> StepRequest:
        request = StepRequest(role=role, action=action, kind=kind)  # type: ignore[arg-type]
        await self.member_bus.publish(step_channel(self.session_id), request.model_dump())
        return request

    async def expect(self, role: str, timeout: float = 5.0) -> Notification:
        """``role``'s next notification, as its member would act on it."""
        message = await self.subscriptions[role].get(timeout)
        assert message is not None, f"{role} got no notification within {timeout}s"
        update = Update.model_validate(message)
        self.updates.append(update)
        (notification,) = self.copies.apply([update])
        return notification

    async def nothing_for(self, role: str, within: float = 0.3) -> None:
        message = await self.subscriptions[role].get(within)
        assert message is None, f"{role} was notified unexpectedly: {message['event']}"

    async def settle(self, seq: int, timeout: float = 5.0) -> None:
        """Wait until the env has logged event ``seq``."""
        async with asyncio.timeout(timeout):
            while not self.events or self.events[-1].seq < seq:
                await asyncio.sleep(0.005)

    async def close(self) -> None:
        if not self.task.done():
            await self.node.stop("test over")
        await asyncio.wait_for(self.task, 5)
        for subscription in self.subscriptions.values():
            await subscription.close()
