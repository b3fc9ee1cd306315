"""The HTTP seat's safety, through a real in-process Jupyter server and the official ``mcp``
client SDK: only who holds an outside seat reaches it (another identity gets 404 for a session
it cannot see, 403 for a seat of someone else's, and no person seat is served); the Jupyter
token appears in nothing the client reads; hostile text leaves the session healthy; a client
that goes away in the middle of a wait leaves the session and the server healthy, and the next
client attaches and acts."""

from __future__ import annotations

import asyncio
import contextlib
import json

import httpx2
import pytest
from mcp.shared.exceptions import MCPError
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from tests.support.jupyter_api import as_user, server_config, wait_until
from tests.support.mcp_client import text_of
from tests.support.mcp_http import http_seat, seat_url

#: Lone surrogates: the SDK's HTTP client cannot encode them, so they go by hand (raw_call).
SURROGATES = ["\ud83d", "a\ud800b"]
HOSTILE = ["line\u2028separator\u2029paragraph", "nul\x00byte",
           "<script>alert(1)</script>", "</div><img src=x onerror=alert(1)>", "\x1b[31mred",
           "x" * 200_000]


@pytest.fixture
def jp_server_config(tmp_path):
    return server_config(tmp_path / "results", "alice", "bob")


async def outside_session(alice, **fields) -> str:
    status, created = await alice("POST", body={"task": "todo", "team": "example",
                                                "outside": ["agent"], "idle_seconds": 600,
                                                **fields})
    assert status == 201, created
    return created["session_id"]


def mcp_error(error: BaseException) -> MCPError | None:
    """The MCP error inside what the client raised (the SDK's task groups wrap it)."""
    if isinstance(error, MCPError):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = mcp_error(inner)
        if found is not None:
            return found
    return None


async def refusal(url: str, user: str | None = None, headers: dict[str, str] | None = None
                  ) -> str:
    """The message a client of ``user`` gets when it tries to open the seat."""
    try:
        async with http_seat(url, headers or as_user(str(user))):
            pass
    except BaseException as error:  # noqa: BLE001 - the SDK wraps it in exception groups
        found = mcp_error(error)
        assert found is not None, repr(error)
        return str(found)
    raise AssertionError("the seat was opened")


async def raw_call(url: str, name: str, arguments: dict) -> str:
    """A tool call sent as raw JSON-RPC with ``\\uXXXX`` escapes (as any client may send
    them) on a session of its own; the answer's text (server-sent events)."""
    headers = {**as_user("alice"), "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}

    def body(message: dict) -> bytes:
        return json.dumps({"jsonrpc": "2.0", **message}).encode("ascii")  # escapes

    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        opened = await http.post(url, content=body({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}))
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}
        await http.post(url, headers=session,
                        content=body({"method": "notifications/initialized"}))
        answer = await http.post(url, headers=session, content=body({
            "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}))
        await http.delete(url, headers=session)
        return answer.text


def test_only_the_seats_holder_reaches_it(run, alice, bob, jp_http_port, jp_base_url):
    async def body():
        session_id = await outside_session(alice)
        url = seat_url(jp_http_port, jp_base_url, session_id, "agent")
        assert f"No session {session_id!r}" in await refusal(url, "bob")  # 404: not his
        person = seat_url(jp_http_port, jp_base_url, session_id, "user")
        assert "'user' is not an outside seat" in await refusal(person, "alice")
        wrong = await refusal(url, headers={"Authorization": "token wrong"})
        assert "refused" in wrong and "token" in wrong  # no valid token at all

        shared = await outside_session(alice, seat_users={"agent": "bob"})
        url = seat_url(jp_http_port, jp_base_url, shared, "agent")
        assert "is not yours" in await refusal(url, "alice")  # 403: given to bob
        async with http_seat(url, as_user("bob")) as client:
            done = await client.act("ADD_ITEM", text="bob's tent")
            assert done["status"] == "applied"
        status, listing = await bob("GET", shared)
        assert status == 200 and listing["outside_seats"] == ["agent"]
        assert listing["outside_status"]["agent"]["last_act_seq"] == done["seq"]
        for sid in (session_id, shared):
            assert (await alice("DELETE", sid))[0] == 200

    run(body())


def test_no_token_and_no_hostile_text_hurts(run, alice, jp_http_port, jp_base_url):
    async def body():
        session_id = await outside_session(alice)
        url = seat_url(jp_http_port, jp_base_url, session_id, "agent")
        async with http_seat(url, as_user("alice")) as client:
            readable = [json.dumps(client.initialized.model_dump(mode="json"))]
            tools = (await client.session.list_tools()).tools
            readable += [json.dumps(tool.model_dump(mode="json")) for tool in tools]
            for text in HOSTILE:
                sent = await client.call("send_message", {"message": text})
                assert not sent.is_error, text_of(sent)[:300]
                added = await client.call("ADD_ITEM", {"text": text})
                readable.append(text_of(added))
                looked = await client.call("observe")
                assert not looked.is_error
                readable.append(text_of(looked))
            with pytest.raises(MCPError, match="max_action_bytes") as too_big:
                await client.call("send_message", {"message": "m" * 1_000_000})
            readable.append(str(too_big.value))
            refused = await client.call("ADD_ITEM", {"text": "as the user", "role": "user"})
            assert refused.is_error
            readable.append(text_of(refused))
            for resource in (await client.session.list_resources()).resources:
                read = await client.session.read_resource(resource.uri)
                readable += [getattr(block, "text", "") for block in read.contents]
            for text in SURROGATES:
                for name, arguments in [("send_message", {"message": text}),
                                        ("ADD_ITEM", {"text": text})]:
                    answer = await raw_call(url, name, arguments)
                    # answered: applied, or refused by the SDK's strict JSON parser
                    assert '"result"' in answer or "Parse error" in answer, answer[:300]
                    readable.append(answer)
            everything = "\n".join(readable)
            assert "alice-token" not in everything
            done = await client.act("ADD_ITEM", text="still healthy")
            assert done["status"] == "applied"
        snapshot = await wait_until(alice, session_id, lambda s: "still healthy" in json.dumps(
            s["state"]))
        assert snapshot["status"] == "running"
        assert "alice-token" not in json.dumps(snapshot)
        assert (await alice("DELETE", session_id))[0] == 200

    run(body())


def test_a_client_gone_mid_wait_leaves_all_healthy(run, alice, jp_http_port, jp_base_url):
    async def body():
        session_id = await outside_session(alice)
        url = seat_url(jp_http_port, jp_base_url, session_id, "agent")
        async with http_seat(url, as_user("alice"), terminate_on_close=False) as first:
            await first.act("ADD_ITEM", text="before")
            waiting = asyncio.ensure_future(first.call("wait_for_news", {"timeout_seconds": 60}))
            await wait_until(alice, session_id,
                             lambda s: s["outside_status"]["agent"]["attached"])
            await asyncio.sleep(0.3)  # the wait is under way on the server
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        async with http_seat(url, as_user("alice")) as second:
            done = await second.act("ADD_ITEM", text="after")
            assert done["status"] == "applied"
            view = (await second.call("observe")).structured_content["view"]
            assert [i["text"] for i in view["checklist"]["content"]] == ["before", "after"]
        snapshot = await wait_until(
            alice, session_id, lambda s: not s["outside_status"]["agent"]["attached"])
        assert snapshot["status"] == "running"
        assert snapshot["outside_status"]["agent"]["last_act_seq"] == done["seq"]
        assert (await alice("DELETE", session_id))[0] == 200

    run(body())
