"""The MCP seat under hostile use, through the real client SDK over stdio: hostile text through
the message and action tools is answered and the server stays up; no tool acts for another
role; nothing the client can read holds a secret of the server's environment; errors are tool
errors with the action's expected form."""

from __future__ import annotations

import json

import pytest

from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_events, read_session
from tests.support.mcp_client import seat_client, text_of

SECRET_KEY = "sk-test-0123456789abcdef-never-shown"
SECRET_TOKEN = "jupyter-token-never-shown-4242"
HOSTILE = [
    "line\u2028separator\u2029paragraph",
    "nul\x00inside",
    "<script>alert(1)</script><img src=x onerror=alert(2)>",
    '"); FINISH(',
    "\x1b[31mred\x1b[0m \u202eevil",
    "x" * 1_000_000,
]


@pytest.mark.timeout(180)
async def test_hostile_text_is_answered_and_the_server_stays_up(tmp_path) -> None:
    env = {"OPENAI_API_KEY": SECRET_KEY, "JUPYTER_TOKEN": SECRET_TOKEN}
    async with seat_client(tmp_path, "--task", "todo", "--role", "agent", "--idle-seconds", "30",
                           env=env) as client:
        readable: list[str] = []
        tools = (await client.session.list_tools()).tools
        readable += [json.dumps(tool.model_dump(mode="json")) for tool in tools]
        for text in HOSTILE:
            sent = await client.call("send_message", {"message": text})
            assert not sent.is_error, text_of(sent)[:300]
            added = await client.call("ADD_ITEM", {"text": text})
            readable.append(text_of(added))
            assert not added.is_error or text_of(added), "an error must say why"
            looked = await client.call("observe")  # still up, and still answering
            assert not looked.is_error
            readable.append(text_of(looked))
        # A megabyte-long message is cut in the text, whole in the structured content.
        first = await client.call("observe")
        assert len(text_of(first)) < 100_000

        # Wrong types and shapes: tool errors with the expected form.
        for name, arguments in [("CHECK_ITEM", {"item_id": "abc"}),
                                ("CHECK_ITEM", {"item_id": 999}),
                                ("ADD_ITEM", {}),
                                ("ADD_ITEM", {"text": ["a", "list"], "extra": 1}),
                                ("SEARCH_IDEAS", {"trip": "moon"})]:
            refused = await client.call(name, arguments)
            assert refused.is_error, (name, arguments)
            said = text_of(refused)
            readable.append(said)
            assert "Expected form: " in said, said
        missing = await client.call("NO_SUCH_TOOL", {"x": 1})
        assert missing.is_error and "There is no tool 'NO_SUCH_TOOL'" in text_of(missing)
        bad_wait = await client.call("wait_for_news", {"timeout_seconds": "forever"})
        assert bad_wait.is_error and "timeout_seconds" in text_of(bad_wait)
        bad_observe = await client.call("observe", {"role": "user"})
        assert bad_observe.is_error

        # No tool acts for another role: a role argument is refused, and nothing ran as "user".
        for name, arguments in [("ADD_ITEM", {"text": "as the user", "role": "user"}),
                                ("send_message", {"message": "hi", "role": "user"}),
                                ("finish", {"role": "user"}),
                                ("accept_confirmation", {"request_id": "c1", "actor": "user"})]:
            refused = await client.call(name, arguments)
            assert refused.is_error, (name, arguments)
            readable.append(text_of(refused))

        resources = (await client.session.list_resources()).resources
        for resource in resources:
            read = await client.session.read_resource(resource.uri)
            readable += [getattr(block, "text", "") for block in read.contents]
        with pytest.raises(Exception, match="No resource"):
            await client.session.read_resource("cogym://session/another-session/view")
        readable.append(json.dumps(client.initialized.model_dump(mode="json")))

        everything = "\n".join(readable)
        assert SECRET_KEY not in everything and SECRET_TOKEN not in everything
        finished = await client.call("finish")
        assert not finished.is_error, text_of(finished)

    folder = client.session_folder()
    record = read_session(folder)
    assert record["end_reason"] == "finished"
    events = read_events(folder)
    # The only act of the user's seat is the rule-based user's own first message.
    assert [e.action for e in events if e.actor == "user"] == [
        'SEND_TEAMMATE_MESSAGE(message="Please bring a rain jacket and a headlamp")']
    texts = replay(folder).final_state["outcome"]
    assert "line\u2028separator\u2029paragraph" in texts
    assert SECRET_KEY not in (folder / "session.json").read_text()


@pytest.mark.timeout(120)
async def test_the_instructions_and_tools_name_only_this_seat(tmp_path) -> None:
    """What the server says of itself (instructions, tools) offers no way to act as another
    role: the person seat's controls (pausing agents) are not an agent's tools."""
    async with seat_client(tmp_path, "--task", "todo", "--role", "agent") as client:
        names = {tool.name for tool in (await client.session.list_tools()).tools}
        assert not names & {"pause_agent", "resume_agent"}
        assert "finish" in (client.initialized.instructions or "")
        await client.act("finish")
