"""A client that gives up mid-wait leaves the session healthy: a wait the client abandons does
not stop the server or the session, which then ends by its own limits with its results written;
and a client that goes away altogether (its stdio closed mid-wait) gets its session ended, in
its log, graded and written, so the results folder is whole and replays."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from cogym_lab.mcp_seat.local import LEFT_REASON
from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_session
from tests.support.mcp_client import seat_client, text_of


@pytest.mark.timeout(120)
async def test_an_abandoned_wait_leaves_the_session_to_end_by_its_limits(tmp_path) -> None:
    async with seat_client(tmp_path, "--task", "todo", "--role", "agent",
                           "--idle-seconds", "1.5") as client:
        await client.act("ADD_ITEM", text="tent")
        await client.call("observe")  # the news so far: the wait below has none to return
        with pytest.raises(Exception, match=r"[Tt]imed out|[Tt]imeout"):  # the client gives up
            await client.call("wait_for_news", {"timeout_seconds": 30}, read_timeout_seconds=0.3)
        looked = await client.call("observe")  # the server is still there
        assert not looked.is_error and "tent" in text_of(looked)
        content = await client.wait_until(lambda c: c.get("done"))
        assert content["end_reason"] == "idle"
    record = read_session(client.session_folder())
    assert record["status"] == "finished" and record["end_reason"] == "idle"
    assert replay(client.session_folder()).final_state["outcome"] == ["tent"]


@pytest.mark.timeout(120)
async def test_a_client_that_leaves_mid_wait_gets_its_session_ended_and_written(tmp_path) -> None:
    async with seat_client(tmp_path, "--task", "todo", "--role", "agent") as client:
        await client.act("ADD_ITEM", text="headlamp")
        await client.call("observe")
        waiting = asyncio.create_task(client.call("wait_for_news", {"timeout_seconds": 60}))
        await asyncio.sleep(0.5)
        assert not waiting.done()
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await waiting
    # Leaving the block closed the server's stdin (and waited for it to exit).
    folder = client.session_folder()
    record = read_session(folder)
    assert record["status"] == "finished" and record["end_reason"] == LEFT_REASON
    assert record["outcome"] == ["headlamp"]
    assert replay(folder).final_state["outcome"] == ["headlamp"]
    log = (tmp_path / "server.log").read_text()
    assert f"ended: {LEFT_REASON}" in log and "Traceback" not in log
