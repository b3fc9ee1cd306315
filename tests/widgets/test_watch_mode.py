"""Watch mode: the session panel follows a member of a session with no person seat (an agent and a
simulated user), live and read-only.

Server tests run a real Jupyter server in-process (pytest-jupyter, as in
test_unattended_sessions.py) with
two identities told apart by their tokens (see tests/support/jupyter_api.py) and follow members
over real WebSockets. Kernel-mode tests run a real ``SessionHost`` and real session panels, whose
comms are the ``comm`` package's own (recorded, as in test_widgets.py). The members are the todo
task's rule-based pair, slowed down by a team file so that a session runs for a while.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from cogym_lab.core.messages import EventType, obs_channel
from cogym_lab.nodes.results import read_events
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.runtime.panels import unattended_reason
from cogym_lab.widgets import SessionPanel
from tests.support.frames import last_seen, seen
from tests.support.jupyter_api import API, as_user, server_config, wait_until

UNATTENDED = 1.5  # the server's unattended limit in these tests

#: The todo task's rule-based agent and user, each taking a moment over every step: a watched
#: session that runs long enough to be seen changing.
WATCHED_TEAM = """
name = "watched-example"
tasks = ["todo"]

[members.agent]
type = "example-agent"

[members.agent.options]
think_seconds = {think}

[members.user]
type = "example-user"
"""


def watched_team(folder: Path, think: float = 0.3) -> Path:
    path = folder / f"watched-example-{think:g}.toml"
    path.write_text(WATCHED_TEAM.format(think=think), encoding="utf-8")
    return path


def checklist(notification: dict[str, Any]) -> list[str]:
    component = next(c for c in notification["view"]["components"] if c["name"] == "checklist")
    return [item["text"] for item in component["content"]]


# -- the panel's traits --------------------------------------------------------------------------

def test_a_read_only_server_panel_opens_the_watch_socket() -> None:
    panel = SessionPanel.for_server("/base/", "", "s1", "user", readonly=True)
    assert panel.readonly is True
    assert panel.ws_url == "/base/cogym/api/sessions/s1/ws?role=user&watch=1"
    assert panel.get_state()["readonly"] is True
    seat = SessionPanel.for_server("/base/", "", "s1", "user")
    assert seat.readonly is False and seat.ws_url.endswith("/ws?role=user")


# -- server mode -------------------------------------------------------------------------------

@pytest.fixture
def jp_server_config(tmp_path):
    teams = {"watched-example": str(watched_team(tmp_path)),
             "slow-example": str(watched_team(tmp_path, think=60))}  # runs past any test
    return server_config(tmp_path / "results", "alice", "bob", unattended_seconds=UNATTENDED,
                         teams=teams)


async def watch_socket(jp_ws_fetch, user: str, session_id: str, role: str = "user") -> Any:
    return await jp_ws_fetch(*API, session_id, "ws", params={"role": role, "watch": "1"},
                             headers=as_user(user))


async def refused_with(jp_ws_fetch, user: str, session_id: str, role: str = "user") -> int:
    """The status a watch socket of ``user`` is refused with (101: it opened)."""
    try:
        ws = await watch_socket(jp_ws_fetch, user, session_id, role)
    except HTTPClientError as refused:
        return refused.code
    ws.close()
    return 101


async def read_json(ws: Any, timeout: float = 60.0) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        text = await ws.read_message()
    assert text is not None, "the watch socket closed"
    return json.loads(text)


def test_the_owner_watches_a_member_live_and_nothing_it_sends_reaches_the_session(
        run, alice, host, jp_ws_fetch, tmp_path) -> None:
    async def body():
        status, created = await alice("POST", body={"task": "todo", "team": "watched-example",
                                                    "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        assert created["people"] == []
        ws = await watch_socket(jp_ws_fetch, "alice", session_id)
        assert host.panels(session_id) == 0  # a watcher is no person's panel

        # Notifications of the simulated user's channel, and the agents' statuses, as they come.
        notifications: list[dict[str, Any]] = []
        statuses: list[dict[str, Any]] = []
        refusals: list[dict[str, Any]] = []
        sent = False
        while not (notifications and notifications[-1]["done"]):
            message = await read_json(ws)
            if message.get("type") == "status":
                statuses.append(message)
            elif message.get("type") == "error":
                refusals.append(message)
            else:
                notifications.append(message)
                assert message["recipient"] == "user"
            if notifications and not sent:  # the session runs: act on the watch socket
                sent = True
                await ws.write_message(json.dumps({"action": 'ADD_ITEM(text="kazoo")',
                                                   "id": "w1"}))
                await ws.write_message("not even JSON")
        ws.close()

        assert notifications[0]["context"]["role"] == "user"  # it knows the task and the team
        notifications = seen(notifications)  # the whole views the panel's copy builds
        lengths = [len(checklist(n)) for n in notifications]
        assert lengths == sorted(lengths) and lengths[-1] > lengths[0], lengths  # live, growing
        assert len({n["seq"] for n in notifications}) >= 5
        assert any(m["sender"] == "agent" for n in notifications for m in n["chat"])
        assert {s.get("role") for s in statuses} >= {"agent"}
        # Both frames are answered, the action by its id, whatever they held.
        assert [r["code"] for r in refusals] == ["read_only", "read_only"], refusals
        assert refusals[0]["id"] == "w1" and "only watches user" in refusals[0]["error"]

        final = await wait_until(alice, session_id, lambda s: s["status"] != "running")
        assert final["end_reason"] == "finished"  # the user finished it, not the limit
        # (The REST snapshot shows the caller's seats' views only: none here. The host has all.)
        assert "kazoo" not in checklist({"view": host.snapshot(session_id)["state"]["views"][
            "user"]})
        events = list(read_events(tmp_path / "results" / session_id))
        assert not any("kazoo" in (event.action or "") for event in events)
        # The watcher's catch-up is built, not asked of the env: the member got no extra sync.
        assert not any(event.type == EventType.SYNC for event in events)

    run(body())


def test_a_watcher_that_arrives_late_gets_the_current_state_first(run, alice, host,
                                                                   jp_ws_fetch) -> None:
    async def body():
        status, created = await alice("POST", body={"task": "todo", "team": "watched-example",
                                                    "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        deadline = time.monotonic() + 60
        while True:  # the host's own snapshot: the REST one shows no views to a seatless owner
            state = host.snapshot(session_id)["state"]
            if state is not None and len(checklist({"view": state["views"]["user"]})) >= 2:
                break
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        ws = await watch_socket(jp_ws_fetch, "alice", session_id)
        first = await read_json(ws)
        while first.get("type") == "status":
            first = await read_json(ws)
        assert first["event"]["type"] == "sync" and first["context"]["kind"] == "user"
        assert first["whole"] and len(checklist(last_seen([first]))) >= 2
        ws.close()
        agent = await watch_socket(jp_ws_fetch, "alice", session_id, "agent")  # any member
        seen = await read_json(agent)
        while seen.get("type") == "status":
            seen = await read_json(agent)
        assert seen["recipient"] == "agent"
        agent.close()
        await alice("DELETE", session_id)

    run(body())


def test_only_the_creator_may_watch(run, alice, bob, jp_ws_fetch) -> None:
    async def body():
        status, created = await alice("POST", body={"task": "todo", "team": "watched-example",
                                                    "idle_seconds": 60})
        session_id = created["session_id"]
        assert await refused_with(jp_ws_fetch, "alice", session_id) == 101
        # Bob cannot see Alice's session at all: as everywhere else, its id is not confirmed.
        assert await refused_with(jp_ws_fetch, "bob", session_id) == 404
        assert await refused_with(jp_ws_fetch, "alice", session_id, "nobody") == 400
        await alice("DELETE", session_id)

        # Bob holds a seat of this one: he sees it, and may follow his seat, but not watch.
        status, shared = await alice("POST", body={
            "task": "todo", "team": "watched-example", "people": ["guest"],
            "seat_users": {"guest": "bob"}, "idle_seconds": 60})
        assert status == 201, shared
        shared_id = shared["session_id"]
        assert await refused_with(jp_ws_fetch, "bob", shared_id, "user") == 403
        assert await refused_with(jp_ws_fetch, "bob", shared_id, "guest") == 403
        seat = await jp_ws_fetch(*API, shared_id, "ws", params={"role": "guest"},
                                 headers=as_user("bob"))
        seat.close()
        await alice("DELETE", shared_id)

    run(body())


def test_a_watch_socket_keeps_no_session_going(run, alice, host, jp_ws_fetch) -> None:
    async def body():
        # A person seat nobody opens: it ends after the unattended limit, watch socket
        # open or not.
        status, created = await alice("POST", body={
            "task": "todo", "team": "watched-example", "people": ["guest"],
            "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        ws = await watch_socket(jp_ws_fetch, "alice", session_id)
        assert host.panels(session_id) == 0
        final = await wait_until(alice, session_id, lambda s: s["status"] != "running")
        assert final["end_reason"] == unattended_reason(UNATTENDED)
        ws.close()

        # No person seat: the limit never applies, and opening and closing watchers (a
        # reload) does not start it either.
        status, watched = await alice("POST", body={"task": "todo", "team": "slow-example",
                                                    "idle_seconds": 60})
        assert status == 201, watched
        watched_id = watched["session_id"]
        for _ in range(2):
            ws = await watch_socket(jp_ws_fetch, "alice", watched_id)
            await read_json(ws)
            ws.close()
        await asyncio.sleep(3 * UNATTENDED)
        status, snapshot = await alice("GET", watched_id)
        assert snapshot["status"] == "running" and snapshot["end_reason"] is None
        assert host.panels(watched_id) == 0
        status, ended = await alice("DELETE", watched_id)
        assert ended["end_reason"] == "ended by the user"

    run(body())


# -- kernel mode -------------------------------------------------------------------------------

@pytest.fixture
async def local_host(tmp_path: Path):
    host = SessionHost(tmp_path / "results", unattended_seconds=UNATTENDED)
    yield host
    await host.close()


async def test_a_local_read_only_panel_relays_the_member_and_refuses_acting(
        local_host, comms, tmp_path) -> None:
    team = str(watched_team(tmp_path, think=0.3))
    hosted = await local_host.create("todo", team=team, idle_seconds=60)
    session_id = hosted.session_id
    spy = await hosted.bus.subscribe(obs_channel(session_id, "user"))  # what the member gets
    panel = SessionPanel.for_local(local_host, session_id, "user", readonly=True)
    channel = next(c for c in comms if c.comm_id == panel.comm.comm_id)
    assert panel.readonly is True
    await asyncio.sleep(0.1)
    assert local_host.panels(session_id) == 0  # not a person's panel

    channel.from_browser({"type": "hello"})
    first = await channel.until(lambda m: m.get("type") == "notification"
                                and m["data"].get("context") is not None)
    assert first["data"]["recipient"] == "user"
    channel.from_browser({"type": "action", "action": 'ADD_ITEM(text="kazoo")', "id": "a1"})
    refused = await channel.until(lambda m: m.get("type") == "error")
    assert refused["id"] == "a1" and "only watches user" in refused["error"]
    channel.from_browser({"type": "rating", "id": 2, "outcome_rating": 5, "satisfaction": 5})
    rating = await channel.until(lambda m: m.get("type") == "rating_error")
    assert rating["id"] == 2

    final = await channel.until(lambda m: m.get("type") == "notification" and m["data"]["done"])
    shown = [m["data"] for m in channel.custom() if m.get("type") == "notification"]
    assert len({n["seq"] for n in shown}) >= 5  # relayed as it happened, not only the end
    assert "kazoo" not in checklist(last_seen(shown))
    assert final["data"]["end_reason"] == "finished"
    assert local_host.ratings(session_id) == {}
    # The member's own channel carried no sync for the watcher.
    received = []
    while (message := await spy.get(timeout=0.05)) is not None:
        received.append(message)
    assert received and not any(m["event"]["type"] == "sync" for m in received)
    await spy.close()
    panel.close()


async def test_a_local_read_only_panel_needs_a_member_and_counts_for_nothing(
        local_host, comms, tmp_path) -> None:
    hosted = await local_host.create("todo", team=str(watched_team(tmp_path, think=30)),
                                     people=["guest"], idle_seconds=60)
    with pytest.raises(HostingError, match="not a member"):
        SessionPanel.for_local(local_host, hosted.session_id, "nobody", readonly=True)
    with pytest.raises(HostingError, match="not a person seat"):
        SessionPanel.for_local(local_host, hosted.session_id, "agent")  # a seat panel: no
    watcher = SessionPanel.for_local(local_host, hosted.session_id, "agent", readonly=True)
    await asyncio.sleep(0.1)
    assert local_host.panels(hosted.session_id) == 0
    # The guest's seat has no panel: the session ends after the unattended limit,
    # watcher or not.
    deadline = time.monotonic() + 30
    while hosted.status == "running":
        assert time.monotonic() < deadline, "the unattended limit did not end the session"
        await asyncio.sleep(0.05)
    assert hosted.end_reason == unattended_reason(UNATTENDED)
    watcher.close()


# -- the notebook handle -----------------------------------------------------------------------

def test_a_seatless_handle_shows_a_read_only_panel_of_the_simulated_user(comms,
                                                                          tmp_path) -> None:
    import cogym_lab
    from cogym_lab.notebook.backends import SessionError

    run = cogym_lab.new_session("todo", team=str(watched_team(tmp_path, think=30)), role=None,
                                mode="local", results_dir=tmp_path / "results",
                                idle_seconds=60)
    try:
        assert run.role is None and run.members == {"agent": "agent", "user": "user"}
        panel = run.panel
        assert (panel.readonly, panel.role, panel.mode) == (True, "user", "local")
        agent = run.watch("agent")
        assert (agent.readonly, agent.role) == (True, "agent") and run.panel is agent
        with pytest.raises(SessionError, match="not a member"):
            run.watch("nobody")
    finally:
        run.end()
        for shown in (panel, agent):
            shown.close()
