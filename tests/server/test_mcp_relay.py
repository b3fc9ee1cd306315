"""``cogym-lab mcp --session ID --url URL`` over stdio, launched by the official ``mcp`` client
SDK, relaying to alice's outside seat of a session a real in-process Jupyter server hosts; and
its errors in plain words (a refused token, a session not the caller's, no outside seat, an
ended session, a URL with the token in it), none of which holds the token."""

from __future__ import annotations

import asyncio
import sys

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from tests.support.jupyter_api import server_config, wait_until
from tests.support.mcp_client import seat_client, text_of
from tests.support.paths import REPO_ROOT


@pytest.fixture
def jp_server_config(tmp_path):
    return server_config(tmp_path / "results", "alice", "bob")


async def outside_session(alice) -> str:
    status, created = await alice("POST", body={"task": "todo", "team": "example",
                                                "outside": ["agent"], "idle_seconds": 600})
    assert status == 201, created
    return created["session_id"]


async def relay_error(*args: str, token: str | None) -> str:
    """What ``cogym-lab mcp`` says on stderr when it cannot relay (it exits 1)."""
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    if token is not None:
        env["JUPYTER_TOKEN"] = token
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cogym_lab", "mcp", *args, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate(b"")
    assert process.returncode == 1, err.decode()
    return err.decode()


def test_the_relay_plays_a_hosted_seat(run, alice, jp_http_port, jp_base_url, tmp_path):
    async def body():
        session_id = await outside_session(alice)
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
        async with seat_client(tmp_path, "--session", session_id, "--url", url,
                               env={"JUPYTER_TOKEN": "alice-token"}) as client:
            assert "Co-Gym session" in (client.initialized.instructions or "")
            tools = {tool.name for tool in (await client.session.list_tools()).tools}
            assert {"ADD_ITEM", "observe", "wait_for_news", "finish"} <= tools
            content = await client.wait_until(lambda c: any(
                m["sender"] == "user" for m in c.get("new_messages", [])))
            assert content["new_messages"][0]["text"].startswith("Please bring")
            done = await client.act("ADD_ITEM", text="relayed tent")
            assert done["status"] == "applied"
            resources = (await client.session.list_resources()).resources
            assert any(str(r.uri).endswith("/view") for r in resources)
            refused = await client.call("ADD_ITEM", {"text": "x", "role": "user"})
            assert refused.is_error and "alice-token" not in text_of(refused)
            finished = await client.call("finish")
            assert not finished.is_error, text_of(finished)
        ended = await wait_until(alice, session_id, lambda s: s["status"] == "finished")
        assert ended["outside_status"]["agent"]["last_act_seq"] is not None

        url_args = ("--url", url)
        said = await relay_error("--session", session_id, *url_args, token="wrong-token")
        assert "refused" in said and "wrong-token" not in said
        other = await outside_session(alice)
        said = await relay_error("--session", other, *url_args, token="bob-token")
        assert f"no session {other!r} of yours" in said
        said = await relay_error("--session", other, "--role", "user", *url_args,
                                 token="alice-token")
        assert "'user' is not an outside seat" in said
        said = await relay_error("--session", session_id, *url_args, token="alice-token")
        assert "has ended" in said
        said = await relay_error("--session", other, "--url", url + "?token=alice-token",
                                 token=None)
        assert "never in the URL" in said
        said = await relay_error("--session", other, "--url", "http://127.0.0.1:9/",
                                 token="alice-token")
        assert "Cannot reach" in said
        assert (await alice("DELETE", other))[0] == 200

    run(body())
