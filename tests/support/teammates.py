"""Small rule-based teammates for session tests."""

from __future__ import annotations

import asyncio

from cogym_lab.core import Notification, SessionContext


class Quiet:
    """A base for scripted teammates with nothing to do when the session starts or ends."""

    def start(self, context: SessionContext) -> None:
        pass

    def end(self, final: Notification) -> None:
        pass


class Recorder:
    """Records every notification it acts on; sleeps on its first act; then follows a script."""

    def __init__(self, script: list[str | None], first_think: float = 0.0) -> None:
        self.script = list(script)
        self.first_think = first_think
        self.seen: list[Notification] = []
        self.context: SessionContext | None = None
        self.final: Notification | None = None

    def start(self, context: SessionContext) -> None:
        self.context = context

    async def act(self, notification: Notification) -> str | None:
        self.seen.append(notification)
        if len(self.seen) == 1 and self.first_think:
            await asyncio.sleep(self.first_think)
        return self.script.pop(0) if self.script else None

    def end(self, final: Notification) -> None:
        self.final = final


class Counter:
    """Adds ``item-1`` … ``item-N`` to the checklist, one per notification, thinking a little."""

    def __init__(self, n: int, think: float = 0.02) -> None:
        self.n, self.think = n, think

    def start(self, context: SessionContext) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        await asyncio.sleep(self.think)
        count = len(notification.view["checklist"].content)
        return f'ADD_ITEM(text="item-{count + 1}")' if count < self.n else None

    def end(self, final: Notification) -> None:
        pass


class Finisher:
    """Waits until the checklist has ``n`` items, then finishes."""

    kind = "user"

    def __init__(self, n: int) -> None:
        self.n = n

    def start(self, context: SessionContext) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        return "FINISH()" if len(notification.view["checklist"].content) >= self.n else None

    def end(self, final: Notification) -> None:
        pass


#: Kinds for ``Session(..., kinds=...)``: a session built by hand says what each member is.
AGENT = {"agent": "agent"}
AGENT_AND_USER = {"agent": "agent", "user": "user"}
