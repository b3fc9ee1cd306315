"""The MCP seat end to end: the official ``mcp`` client SDK launches ``cogym-lab mcp`` over
stdio, takes the todo task's agent seat beside the rule-based user, and plays a whole session:
it lists the tools, observes, acts, asks for a confirmation, waits for news while the user acts,
and sees the session finish. The results folder holds the log, and it replays. On both buses."""

from __future__ import annotations

import json

import pytest

from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_events, read_session
from tests.support.mcp_client import news_events, seat_client, text_of

TASK_TOOLS = {"ADD_ITEM", "CHECK_ITEM", "REMOVE_ITEM", "SEARCH_IDEAS"}
ACT_TOOLS = {"send_message", "wait", "finish", "request_confirmation", "accept_confirmation",
             "reject_confirmation"}
ITEMS = ["rain jacket", "headlamp", "tent", "sleeping bag", "stove", "water filter"]


@pytest.fixture(params=["memory", "redis"])
def bus_args(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "memory":
        return []
    return ["--bus", request.getfixturevalue("redis_server").url]


@pytest.mark.timeout(120)
async def test_a_whole_session_through_the_mcp_seat(tmp_path, bus_args) -> None:
    async with seat_client(tmp_path, "--task", "todo", "--team", "example", "--role", "agent",
                           "--progress-seconds", "0.2", *bus_args) as client:
        listed = {tool.name: tool for tool in (await client.session.list_tools()).tools}
        assert set(listed) == TASK_TOOLS | ACT_TOOLS | {"observe", "wait_for_news"}
        # typed params from the specs, and nothing else (no role, ever)
        add = listed["ADD_ITEM"]
        assert add.input_schema["properties"] == {
            "text": {"type": "string", "description": 'The item, e.g. "tent"'}}
        assert add.input_schema["required"] == ["text"]
        assert add.input_schema["additionalProperties"] is False
        assert listed["CHECK_ITEM"].input_schema["properties"]["item_id"]["type"] == "integer"
        assert all("role" not in tool.input_schema.get("properties", {})
                   for tool in listed.values())
        assert "Private" in (listed["SEARCH_IDEAS"].description or "")
        assert "Expected form: ADD_ITEM(text=\"...\")" in (add.description or "")
        # annotations: the looks are read-only; removing and finishing are destructive
        hints = {name: tool.annotations for name, tool in listed.items()}
        assert hints["observe"].read_only_hint and hints["wait_for_news"].read_only_hint
        assert hints["REMOVE_ITEM"].destructive_hint is True
        assert hints["finish"].destructive_hint is True
        assert hints["ADD_ITEM"].destructive_hint is False
        assert hints["ADD_ITEM"].read_only_hint is False
        assert hints["SEARCH_IDEAS"].destructive_hint is False

        # The user speaks first: wait for it, with progress while waiting.
        content = await client.wait_until(lambda c: any(
            m["sender"] == "user" for m in c.get("new_messages", [])))
        said = [m["text"] for m in content["new_messages"] if m["sender"] == "user"]
        assert said == ["Please bring a rain jacket and a headlamp"]
        observed = await client.call("observe")
        assert "Nothing new since you last looked." in text_of(observed)
        assert observed.structured_content["view"]["checklist"]["content"] == []
        # Nobody acts until the agent does: the wait times out, reporting progress meanwhile.
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        quiet = await client.call("wait_for_news", {"timeout_seconds": 1},
                                  progress_callback=on_progress)
        assert not quiet.is_error and text_of(quiet).startswith("No news in 1 s.")
        assert len(progress) >= 3 and all(total == 1.0 for _, total, _ in progress)
        assert [value for value, _, _ in progress] == sorted(value for value, _, _ in progress)

        searched = await client.call("SEARCH_IDEAS", {"trip": "camping"})
        assert not searched.is_error, text_of(searched)
        for item in ITEMS:
            done = await client.act("ADD_ITEM", text=item)
            assert done["status"] == "applied" and done["event"] == "action"
        view = (await client.call("observe")).structured_content["view"]
        assert [i["text"] for i in view["checklist"]["content"]] == ITEMS
        assert "first aid kit" in view["ideas"]["content"] and view["ideas"]["private"]

        asked = await client.act("request_confirmation",
                                 pending_action='ADD_ITEM(text="first aid kit")')
        assert asked["event"] == "confirm_request"
        content = await client.wait_until(lambda c: any(
            e["type"] == "confirm_accept" for e in news_events(c)))
        assert "first aid kit" in [i["text"] for i in content["view"]["checklist"]["content"]]

        await client.act("send_message", message="The list has 7 items. Anything else?")
        content = await client.wait_until(lambda c: c.get("done"))
        assert content["end_reason"] == "finished"
        assert [(e["type"], e["info"]) for e in news_events(content)][-1] == (
            "end", {"reason": "finished", "by": "user"})
        late = await client.call("finish")
        assert late.is_error and "The session has ended" in text_of(late)

    folder = client.session_folder()
    record = read_session(folder)
    assert record["status"] == "finished" and record["end_reason"] == "finished"
    assert record["delivered"] is True and record["scores"]["must_have_coverage"] == 1.0
    assert {m["role"]: m["kind"] for m in record["team"]} == {"agent": "agent", "user": "user"}
    events = read_events(folder)
    assert [e.action for e in events if e.actor == "agent" and e.type == "action"][:7] == [
        'SEARCH_IDEAS(trip="camping")', *(f'ADD_ITEM(text="{item}")' for item in ITEMS)]
    seat = json.loads((folder / "agent" / "member.json").read_text())
    assert seat["kind"] == "agent" and seat["end_reason"] == "finished"
    replayed = replay(folder)
    assert replayed.final_state["outcome"] == [*ITEMS, "first aid kit"]
