"""Confirmations stay on the session's side: a task action that the task wants approved first
(``CoEnv.needs_confirmation``) becomes a confirmation request when an outside agent sends it over
MCP, whatever the client decided; it runs only when the teammate accepts, and never when the
teammate rejects. The official SDK client talks to the seat's server in-process (the protocol is
the real one; only the transport is a memory stream)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from cogym_lab.bus import MemoryBus
from cogym_lab.core.messages import Notification, SessionContext
from cogym_lab.mcp_seat.bus_seat import BusSeat
from cogym_lab.mcp_seat.server import SeatServer
from cogym_lab.nodes.session import Session, SessionConfig
from tests.support.mcp_client import text_of
from tests.support.notes_env import NotesEnv


class Approver:
    """The user side: answers each confirmation request addressed to it, as ``verdict`` says,
    and otherwise waits."""

    kind = "user"

    def __init__(self, verdict: str) -> None:
        self.verdict = verdict
        self.answered: list[str] = []

    def start(self, context: SessionContext) -> None:
        return None

    async def act(self, notification: Notification) -> str | None:
        for request in notification.pending_confirmations:
            if request.requester != "user" and request.request_id not in self.answered:
                self.answered.append(request.request_id)
                if self.verdict == "accept":
                    return f'ACCEPT_CONFIRMATION(request_id="{request.request_id}")'
                return (f'REJECT_CONFIRMATION(request_id="{request.request_id}", '
                        'reason="not that one")')
        return None

    def end(self, final: Notification) -> None:
        return None


async def _posted(client: Client, note: str, timeout: float = 20) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            result = await client.call_tool("wait_for_news", {"timeout_seconds": 2})
            content = result.structured_content or {}
            notes = [n.get("note") for n in content["view"]["board"]["content"]]
            if note in notes or content.get("done"):
                return content
            if any(e.get("type") == "confirm_reject" for e in content.get("new_events", [])):
                return content


@pytest.mark.timeout(60)
@pytest.mark.parametrize("verdict", ["accept", "reject"])
async def test_a_risky_task_action_asks_the_teammate_first(verdict: str) -> None:
    bus = MemoryBus()
    user = Approver(verdict)
    session = Session(NotesEnv(), {"agent": None, "user": user}, kinds={"agent": "agent"},
                      bus=bus, config=SessionConfig(idle_seconds=5, timeout=50))
    await bus.connect()
    seat = BusSeat(bus, session.session_id, "agent")
    await seat.start()
    running = asyncio.create_task(session.run())
    try:
        async with Client(SeatServer(seat, progress_seconds=0.2).server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "POST" in tools  # the task's own action, with no say over confirmations
            assert set(tools["POST"].input_schema["properties"]) == {"note"}
            plain = await client.call_tool("POST", {"note": "hello"})
            assert not plain.is_error and text_of(plain).startswith("Done (event")
            risky = await client.call_tool("POST", {"note": "!drop the table"})
            assert not risky.is_error, text_of(risky)
            assert "needs a teammate's approval first" in text_of(risky)
            assert risky.structured_content["event"] == "confirm_request"
            request_id = risky.structured_content["request_id"]
            assert request_id
            content = await _posted(client, "!drop the table")
            notes = [n.get("note") for n in content["view"]["board"]["content"]]
            if verdict == "accept":
                assert notes == ["hello", "!drop the table"]
            else:
                assert notes == ["hello"]
                rejected = [e for e in content["new_events"] if e.get("type") == "confirm_reject"]
                assert rejected and "not that one" in str(rejected[0])
            assert user.answered == [request_id]
            finished = await client.call_tool("finish", {})
            assert not finished.is_error, text_of(finished)
        result = await asyncio.wait_for(running, 20)
        assert result.end_reason == "finished"
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await seat.close()
        await bus.close()
