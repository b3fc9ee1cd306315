"""A person's copy of a notebook's live document, synced over the room's websocket the way
JupyterLab syncs it (the Yjs sync protocol), for tests where a person edits at the same time as
the agent.

Unlike a browser, the test decides when this copy hears the room and when the room hears it:
everything the room sends waits in an inbox until :meth:`RoomReplica.pull`, and an edit is made
locally first (:meth:`RoomReplica.edit`) and sent later (:meth:`RoomReplica.send`). An edit made
on a copy that has not pulled the agent's latest write is exactly a person typing into a stale
view while the agent's write is on its way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from jupyter_ydoc import YNotebook
from pycrdt import (
    YMessageType,
    YSyncMessageType,
    create_sync_message,
    create_update_message,
    handle_sync_message,
)


class RoomReplica:
    """A ``YNotebook`` of its own, joined to a room through ``ws`` (a connected websocket
    client: ``write_message``/``read_message`` as tornado's)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.notebook = YNotebook()
        self.doc = self.notebook.ydoc
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.synced = False
        self.closed = False
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            message = await self.ws.read_message()
            await self.inbox.put(message if isinstance(message, bytes) else None)
            if message is None:
                return

    async def join(self, timeout: float = 30.0) -> RoomReplica:
        """Sync with the room: send our state, take the room's, until the room answered."""
        await self.ws.write_message(create_sync_message(self.doc), binary=True)
        await self.until(lambda: self.synced, "the room's sync answer", timeout)
        return self

    async def pull(self) -> int:
        """Apply everything the room sent so far; returns how many messages that was."""
        applied = 0
        while not self.inbox.empty():
            message = self.inbox.get_nowait()
            if message is None:
                self.closed = True
                continue
            applied += 1
            if not message or message[0] != YMessageType.SYNC:
                continue  # awareness and the server's own messages
            if message[1] == YSyncMessageType.SYNC_STEP2:
                self.synced = True
            reply = handle_sync_message(message[1:], self.doc)
            if reply is not None:
                await self.ws.write_message(reply, binary=True)
        return applied

    async def until(self, check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
        """Pull until ``check()`` is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            await self.pull()
            value = check()
            if value:
                return value
            if self.closed or time.monotonic() > deadline:
                raise AssertionError(f"the replica timed out waiting for {what}; it has "
                                     f"{self.cells()}")
            await asyncio.sleep(0.02)

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Pull until the room has been quiet for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() - last < quiet and time.monotonic() < deadline:
            if await self.pull():
                last = time.monotonic()
            await asyncio.sleep(0.02)

    def edit(self, change: Callable[[YNotebook], None]) -> bytes:
        """Make ``change`` on this copy as it is now; returns the update to :meth:`send`."""
        before = self.doc.get_state()
        change(self.notebook)
        return self.doc.get_update(before)

    async def send(self, update: bytes) -> None:
        """Let the room hear an edit made earlier."""
        await self.ws.write_message(create_update_message(update), binary=True)

    def cells(self) -> list[dict[str, Any]]:
        return [self.notebook.get_cell(index) for index in range(self.notebook.cell_number)]

    def index_of(self, cell_id: str) -> int | None:
        return next((index for index, ycell in enumerate(self.notebook.ycells)
                     if ycell.get("id") == cell_id), None)

    def source_of(self, cell_id: str) -> str | None:
        index = self.index_of(cell_id)
        return None if index is None else str(self.notebook.ycells[index]["source"])

    async def close(self) -> None:
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)
        self.ws.close()


def type_into(cell_id: str, text: str, at: int | None = None) -> Callable[[YNotebook], None]:
    """A person typing ``text`` into cell ``cell_id``'s source (at its end by default)."""

    def change(notebook: YNotebook) -> None:
        index = next(i for i, ycell in enumerate(notebook.ycells) if ycell.get("id") == cell_id)
        source = notebook.ycells[index]["source"]
        source.insert(len(source) if at is None else at, text)

    return change
