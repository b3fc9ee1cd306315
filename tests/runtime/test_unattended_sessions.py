"""A session goes on while its panels are closed, and ends only when no one has been at it for
the unattended limit, with that reason in its log.

Server tests run a real Jupyter server in-process (pytest-jupyter, driven from its own loop as in
test_jupyter_server.py) with a short ``c.CogymLab.unattended_seconds`` and the old 120 s panel
grace scaled down to ``OLD_GRACE`` (a setting that no longer ends anything), and follow seats
over real WebSockets. Kernel-mode tests run a real ``SessionHost`` and real session panels
(their comms are the ``comm`` package's own, which need no kernel). The properties checked are
the end reasons and what stays running; where a test must let time pass, it waits for several
times the old grace, or until the session ends, and asserts nothing about how fast anything was.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.core.messages import EventType
from cogym_lab.nodes.results import read_events
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.runtime.panels import UNATTENDED_REASON, plain_duration, unattended_reason
from cogym_lab.widgets import SessionPanel
from tests.support.jupyter_api import API, receive_until, wait_until

#: The old "no panel" grace, scaled down: a session with no panel must outlive it many times.
OLD_GRACE = 1.0
#: The unattended limit in these tests (the server's setting): several old graces.
LIMIT = 6.0
#: The todo task's rule-based pair, with an agent that takes a minute over each step: a session
#: nobody holds a seat in that goes on for a while (the plain example pair finishes at once).
SLOW_TEAM = """
name = "slow-example"
tasks = ["todo"]

[members.agent]
type = "example-agent"

[members.agent.options]
think_seconds = 60

[members.user]
type = "example-user"
"""


def slow_team(folder: Path) -> Path:
    path = folder / "slow-example.toml"
    path.write_text(SLOW_TEAM, encoding="utf-8")
    return path


@pytest.fixture
def jp_server_config(tmp_path):
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True}},
            "CogymLab": {"results_dir": str(tmp_path / "results"),
                         "unattended_seconds": LIMIT,
                         "panel_grace_seconds": OLD_GRACE,  # no longer used: ends nothing
                         "teams": {"slow-example": str(slow_team(tmp_path))}}}


def end_event(directory: Path) -> dict[str, Any]:
    ends = [event for event in read_events(directory) if event.type == EventType.END]
    assert len(ends) == 1, ends
    return ends[0].model_dump(mode="json")


def recorded_end(directory: Path) -> tuple[str, str]:
    """The END event's reason and ``session.json``'s end_reason."""
    session = json.loads((directory / "session.json").read_text(encoding="utf-8"))
    return end_event(directory)["info"]["reason"], session["end_reason"]


async def follow(jp_ws_fetch, session_id: str, role: str = "user") -> Any:
    """A seat's WebSocket, once the env has sent it the current state."""
    ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": role})
    await receive_until(ws, lambda n: n.get("context") is not None)
    return ws


async def start_todo_session(api, people: list[str] | None = None) -> str:
    """Start the example team on the todo task over REST, the person in ``people`` (the
    ``user`` seat by default): the session's id."""
    status, created = await api("POST", body={"task": "todo", "team": "example",
                                              "people": people or ["user"], "idle_seconds": 60})
    assert status == 201, created
    return str(created["session_id"])


async def counted(host: SessionHost, session_id: str, panels: int) -> None:
    """Wait until the host counts ``panels`` open: a closed socket's on_close, and a local
    panel's count, run on a later turn of the host's loop."""
    deadline = time.monotonic() + 30
    while host.panels(session_id) != panels:
        assert time.monotonic() < deadline, f"{host.panels(session_id)} panels counted"
        await asyncio.sleep(0.02)


async def still_running(api, session_id: str, wait: float = 3 * OLD_GRACE) -> dict[str, Any]:
    """The snapshot after ``wait`` seconds (several old graces); the session must be running
    then."""
    await asyncio.sleep(wait)
    status, snapshot = await api("GET", session_id)
    assert status == 200, snapshot
    assert snapshot["status"] == "running", snapshot["end_reason"]
    return snapshot


def test_durations_read_as_people_say_them() -> None:
    assert [plain_duration(s) for s in (4 * 3600, 5400, 120, 90, 6, 1.5)] == [
        "4 h", "1.5 h", "2 min", "1.5 min", "6 s", "1.5 s"]
    assert unattended_reason(4 * 3600) == "no one was at the session for 4 h"


def test_the_setting_reaches_the_host(host) -> None:
    assert host.unattended_seconds == LIMIT


def test_a_session_outlives_its_closed_panel_and_a_new_panel_reattaches(run, api, host,
                                                                        jp_ws_fetch) -> None:
    async def body():
        session_id = await start_todo_session(api)
        ws = await follow(jp_ws_fetch, session_id)
        ws.write_message(json.dumps({"action": {"name": "ADD_ITEM",
                                                "args": {"text": "kazoo"}}}))
        await receive_until(ws, lambda n: "kazoo" in json.dumps(n))
        ws.close()  # the tab is closed: no panel at all, for longer than the old grace
        await counted(host, session_id, 0)
        await still_running(api, session_id)
        ws = await follow(jp_ws_fetch, session_id)  # the notebook reopened
        assert host.panels(session_id, "user") == 1
        status, snapshot = await api("GET", session_id)
        items = json.dumps(snapshot["state"]["views"]["user"])
        assert snapshot["status"] == "running" and "kazoo" in items
        ws.close()
        status, _ = await api("DELETE", session_id)
        assert status == 200

    run(body())


def test_a_session_no_one_is_at_ends_after_the_limit(run, api, host, jp_ws_fetch,
                                                     tmp_path) -> None:
    async def body():
        session_id = await start_todo_session(api)
        ws = await follow(jp_ws_fetch, session_id)
        assert host.panels(session_id) == 1
        ws.close()
        final = await wait_until(api, session_id, lambda s: s["status"] != "running")
        expected = unattended_reason(LIMIT)
        assert expected == "no one was at the session for 6 s"
        assert final["status"] == "finished" and final["end_reason"] == expected
        assert recorded_end(tmp_path / "results" / session_id) == (expected, expected)
        assert host.panels(session_id) == 0

    run(body())


def test_a_session_goes_on_while_any_panel_is_open(run, api, host, jp_ws_fetch,
                                                   tmp_path) -> None:
    async def body():
        session_id = await start_todo_session(api, ["user", "guest"])
        first = await follow(jp_ws_fetch, session_id, "user")
        second = await follow(jp_ws_fetch, session_id, "user")  # the same seat in two tabs
        guest = await follow(jp_ws_fetch, session_id, "guest")
        assert (host.panels(session_id), host.panels(session_id, "user")) == (3, 2)
        first.close()
        second.close()
        await counted(host, session_id, 1)
        await still_running(api, session_id, LIMIT + OLD_GRACE)  # the guest's panel is open
        guest.close()
        final = await wait_until(api, session_id, lambda s: s["status"] != "running")
        assert final["end_reason"] == unattended_reason(LIMIT)
        assert recorded_end(tmp_path / "results" / session_id)[0] == final["end_reason"]

    run(body())


def test_a_session_no_panel_ever_reached_ends_after_the_limit_too(run, api, tmp_path) -> None:
    async def body():
        session_id = await start_todo_session(api)
        await still_running(api, session_id)  # longer than the old grace
        final = await wait_until(api, session_id, lambda s: s["status"] != "running")
        expected = unattended_reason(LIMIT)
        assert final["end_reason"] == expected
        assert recorded_end(tmp_path / "results" / session_id) == (expected, expected)

    run(body())


def test_actions_sent_without_a_panel_keep_the_session(run, api, host) -> None:
    async def body():
        session_id = await start_todo_session(api)
        for number in range(6):  # someone drives the seat over REST, with no panel at all
            status, _ = await api("POST", session_id, "actions", body={
                "role": "user", "action": {"name": "ADD_ITEM", "args": {"text": f"i{number}"}}})
            assert status == 200
            await asyncio.sleep(LIMIT / 4)
        status, snapshot = await api("GET", session_id)
        assert snapshot["status"] == "running", snapshot["end_reason"]
        status, _ = await api("DELETE", session_id)
        assert status == 200

    run(body())


def test_a_watched_session_without_person_seats_is_never_ended_for_it(run, api, host) -> None:
    async def body():
        # An agent and a simulated user that go on for a while: nobody holds a seat.
        status, created = await api("POST", body={"task": "todo", "team": "slow-example",
                                                  "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        assert created["people"] == []
        snapshot = await still_running(api, session_id, LIMIT + OLD_GRACE)
        assert snapshot["end_reason"] is None
        status, ended = await api("DELETE", session_id)
        assert status == 200 and ended["end_reason"] == "ended by the user"

    run(body())


# -- kernel mode ------------------------------------------------------------------------------

@pytest.fixture
async def local_host(tmp_path: Path):
    host = SessionHost(tmp_path / "results", unattended_seconds=LIMIT)
    yield host
    await host.close()


async def ended(host: SessionHost, session_id: str, timeout: float = 60.0) -> str | None:
    """The end reason, once the session has ended."""
    hosted = host.get(session_id)
    deadline = time.monotonic() + timeout
    while hosted.status == "running":
        assert time.monotonic() < deadline, "the session did not end"
        await asyncio.sleep(0.05)
    return hosted.end_reason


async def test_a_local_session_outlives_its_closed_panels_up_to_the_limit(
        local_host, tmp_path) -> None:
    hosted = await local_host.create("todo", team="example", people=["user"], idle_seconds=60)
    panel = SessionPanel.for_local(local_host, hosted.session_id, "user")
    other = SessionPanel.for_local(local_host, hosted.session_id, "user")
    await counted(local_host, hosted.session_id, 2)
    other.close()
    await counted(local_host, hosted.session_id, 1)
    panel.close()
    await asyncio.sleep(3 * OLD_GRACE)  # no panel, longer than the old grace: it goes on
    assert hosted.status == "running"
    reason = await ended(local_host, hosted.session_id)
    assert reason == unattended_reason(LIMIT)
    assert recorded_end(tmp_path / "results" / hosted.session_id) == (reason, reason)


async def test_a_comm_the_frontend_closes_is_a_panel_gone(local_host) -> None:
    hosted = await local_host.create("todo", team="example", people=["user"], idle_seconds=60)
    panel = SessionPanel.for_local(local_host, hosted.session_id, "user")
    await counted(local_host, hosted.session_id, 1)
    assert panel.comm is not None
    panel.comm.handle_close({"content": {"comm_id": panel.comm.comm_id, "data": {}}})
    await counted(local_host, hosted.session_id, 0)
    assert (await ended(local_host, hosted.session_id) or "").startswith(UNATTENDED_REASON)
    panel.close()  # closing it again later changes no count
    await asyncio.sleep(0.05)
    assert local_host.panels(hosted.session_id) == 0


async def test_a_local_session_without_person_seats_or_with_the_limit_off_goes_on(
        tmp_path: Path) -> None:
    host = SessionHost(tmp_path / "results", unattended_seconds=0)
    try:
        team = str(slow_team(tmp_path))
        watched = await host.create("todo", team=team, idle_seconds=60)
        seated = await host.create("todo", team="example", people=["user"], idle_seconds=60)
        host.unattended_seconds = OLD_GRACE  # on now, for sessions timed from here on
        unseated = await host.create("todo", team=team, idle_seconds=60)
        await asyncio.sleep(3 * OLD_GRACE)
        assert [watched.status, seated.status, unseated.status] == ["running"] * 3
    finally:
        await host.close()
