"""An outside seat of a hosted session over MCP's streamable HTTP, through a real in-process
Jupyter server and the official ``mcp`` client SDK: alice creates a todo session whose agent
seat is taken from outside, her MCP client lists the tools, observes, acts, waits for news while
the rule-based user acts, and sees the session finish, on both buses; the session's snapshot
says whether a client is attached."""

from __future__ import annotations

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from tests.support.jupyter_api import as_user, server_config, wait_until
from tests.support.mcp_client import news_events, text_of
from tests.support.mcp_http import http_seat, seat_url

ITEMS = ["rain jacket", "headlamp", "tent", "sleeping bag", "stove", "water filter"]


@pytest.fixture(params=["memory", "redis"])
def bus(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "memory" else request.getfixturevalue("redis_server").url


@pytest.fixture
def jp_server_config(tmp_path, request):
    redis = request.getfixturevalue("bus") if "bus" in request.fixturenames else None
    return server_config(tmp_path / "results", "alice", "bob", redis_url=redis)


async def outside_session(alice, **fields) -> str:
    status, created = await alice("POST", body={"task": "todo", "team": "example",
                                                "outside": ["agent"], "idle_seconds": 600,
                                                **fields})
    assert status == 201, created
    assert created["outside"] == ["agent"] and created["outside_seats"] == ["agent"]
    assert {m["role"]: m["kind"] for m in created["members"]} == {"agent": "agent",
                                                                 "user": "user"}
    return created["session_id"]


def test_an_outside_agent_plays_a_hosted_session_over_http(run, alice, jp_http_port,
                                                           jp_base_url, bus):
    async def body():
        session_id = await outside_session(alice)
        snapshot = (await alice("GET", session_id))[1]
        assert snapshot["outside_status"] == {"agent": {"attached": False, "last_act_seq": None,
                                                 "last_seen": None}}
        url = seat_url(jp_http_port, jp_base_url, session_id, "agent")
        async with http_seat(url, as_user("alice")) as client:
            tools = {tool.name for tool in (await client.session.list_tools()).tools}
            assert {"ADD_ITEM", "observe", "wait_for_news", "finish"} <= tools
            content = await client.wait_until(lambda c: any(
                m["sender"] == "user" for m in c.get("new_messages", [])))
            assert [m["text"] for m in content["new_messages"]] == [
                "Please bring a rain jacket and a headlamp"]
            for item in ITEMS:
                done = await client.act("ADD_ITEM", text=item)
                assert done["status"] == "applied"
            seen = await wait_until(alice, session_id, lambda s: s["outside_status"]["agent"][
                "last_act_seq"] == done["seq"])
            assert seen["outside_status"]["agent"]["attached"] is True
            refused = await client.call("ADD_ITEM", {"text": "x", "role": "user"})
            assert refused.is_error and "has no param 'role'" in text_of(refused)

            asked = await client.act("request_confirmation",
                                     pending_action='ADD_ITEM(text="first aid kit")')
            assert asked["event"] == "confirm_request"
            content = await client.wait_until(lambda c: any(
                e["type"] == "confirm_accept" for e in news_events(c)))
            await client.act("send_message", message="The list is done. Anything else?")
            content = await client.wait_until(lambda c: c.get("done"))
            assert content["end_reason"] == "finished"
        ended = await wait_until(alice, session_id, lambda s: s["status"] == "finished")
        assert ended["result"]["delivered"] is True
        assert ended["outside_status"]["agent"]["attached"] is False

    run(body())
