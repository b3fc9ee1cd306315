"""Following a session's channels on its bus, for a panel: a seat's (or a watched member's)
updates and the agents' statuses. The host opens a :class:`SeatFeed`
(:meth:`SessionHost.follow`); a WebSocket or a local widget pumps it to the browser."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from cogym_lab.bus import Bus, Subscription
from cogym_lab.core.messages import obs_channel, status_channel


@dataclass
class SeatFeed:
    """What a panel follows: ``updates`` (the member's notifications), ``statuses`` (every
    agent's status, the latest first for a panel that (re)connects), and, for a watcher, the
    member's ``current`` state taken right after subscribing to its updates."""

    updates: Subscription
    statuses: Subscription
    current: dict[str, Any] | None = None

    async def close(self) -> None:
        await asyncio.gather(self.updates.close(), self.statuses.close())


async def subscribe_updates(bus: Bus, session_id: str, role: str) -> Subscription:
    return await bus.subscribe(obs_channel(session_id, role))


async def subscribe_statuses(bus: Bus, session_id: str) -> Subscription:
    # From the beginning: a panel that (re)connects learns each agent's latest status.
    return await bus.subscribe(status_channel(session_id), from_beginning=True)


__all__ = ["SeatFeed", "subscribe_statuses", "subscribe_updates"]
