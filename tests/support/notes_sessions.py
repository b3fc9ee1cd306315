"""A session of the notes task on a bus, as the bus-level session tests run one: an agent that
never acts beside a person's seat, the session running as a task while a test publishes to it,
and stopped (then its buses closed) however the test ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from cogym_lab.bus import Bus
from cogym_lab.nodes import Session, SessionConfig
from tests.support.notes_env import NotesEnv
from tests.support.teammates import Quiet


class Idle(Quiet):
    """An agent that never acts (its member node reads every update, as a real one would)."""

    async def act(self, notification: Any) -> None:
        return None


def notes_session(bus: Bus, session_id: str, config: SessionConfig, **options: Any) -> Session:
    """The notes task with an idle agent and a person's seat (``user``, played over the bus);
    ``options`` go to :class:`Session` (``results_dir``, ``observers``)."""
    return Session(NotesEnv(), {"agent": Idle(), "user": None},
                   kinds={"agent": "agent", "user": "person"}, bus=bus, session_id=session_id,
                   config=config, **options)


@asynccontextmanager
async def running(session: Session,
                  *closes: Callable[[], Awaitable[object]]) -> AsyncIterator[None]:
    """``session.run()`` as a task while the block runs; on leaving, the env node stops, the
    run is awaited, then each of ``closes`` (a bus's ``close``, a client's ``aclose``) is
    called, in order."""
    run = asyncio.create_task(session.run())
    try:
        yield
    finally:
        try:
            assert session.env_node is not None
            await session.env_node.stop("test over")
            await run
        finally:
            for close in closes:
                await close()


async def started(session: Session) -> None:
    """Wait until the session's clock has started (a person joined)."""
    async with asyncio.timeout(30):
        while not session.coordinator.started_at:  # noqa: ASYNC110 - no event for it
            await asyncio.sleep(0.01)
