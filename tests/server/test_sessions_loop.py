"""Hosted sessions run on a loop of their own, never on the Jupyter server's, and everything a
person does crosses between the two: a REST create and act, a seat's WebSocket (its first
state, an action, its answer, a refusal), the status endpoint's two lags. Through a real
Jupyter server (pytest-jupyter, in-process) on both buses.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from tests.support.jupyter_api import API, receive_until, wait_until

#: A person's text as it may come: quotes, markup, right-to-left, joined emoji, a NUL.
HOSTILE = 'a "tent" </script>\u202eevil\u202c 👩‍👩‍👧 \\ \x00 end'


@pytest.fixture(params=["memory", "redis"])
def bus(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "memory" else request.getfixturevalue("redis_server").url


@pytest.fixture
def jp_server_config(tmp_path, request):
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True}},
            "CogymLab": {"results_dir": str(tmp_path / "results"),
                         "redis_url": request.getfixturevalue("bus")}}


def test_sessions_run_off_the_server_loop_and_panels_cross_back(run, api, jp_serverapp,
                                                                 jp_fetch, jp_ws_fetch,
                                                                 jp_asyncio_loop, host, bus):
    loops = jp_serverapp.web_app.settings["cogym_lab_sessions_loop"]

    async def body():
        status, created = await api("POST", body={"task": "todo", "people": ["user", "agent"],
                                                  "idle_seconds": 600})
        assert status == 201, created
        session_id = created["session_id"]
        hosted = host.get(session_id)
        # The session's run, and its bus's reader, are the sessions' loop's.
        assert hosted.runner.get_loop() is loops.loop is not jp_asyncio_loop
        assert asyncio.get_running_loop() is jp_asyncio_loop

        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        await receive_until(ws, lambda m: m.get("context") is not None)
        ws.write_message(json.dumps({"action": {"name": "ADD_ITEM", "args": {"text": HOSTILE}},
                                     "id": "mine"}))
        [*_, added] = await receive_until(ws, lambda m: m.get("event", {}).get("actor")
                                          == "user")
        assert "evil" in json.dumps(added, ensure_ascii=False) and "error" not in added
        ws.write_message("not json")  # answered on the socket, which stays open
        [*_, refused] = await receive_until(ws, lambda m: m.get("type") == "error")
        assert refused["code"] == "bad_message"
        await wait_until(api, session_id, lambda s: host.panels(session_id, "user") == 1)

        status, answer = await api("POST", session_id, "actions",
                                   body={"role": "user", "action": "NOT_AN_ACTION()"})
        assert status == 200 and answer["status"] == "applied" and answer["error"]

        ws.close()
        await wait_until(api, session_id, lambda s: host.panels(session_id) == 0)
        status, ended = await api("DELETE", session_id)
        assert (status, ended["status"]) == (200, "finished")

        health = json.loads((await jp_fetch("cogym", "api", "status")).body)
        assert set(health) >= {"sessions_running", "loop_lag", "sessions_loop_lag", "collector"}
        assert set(health["collector"]["collections"]) == {"0", "1", "2"}
        assert health["collector"]["busy_share"] >= 0
        for _ in range(100):  # the monitor wakes every 0.1 s; on a loaded machine, later
            if health["sessions_loop_lag"]["samples"] > 0:
                break
            await asyncio.sleep(0.1)
            health = json.loads((await jp_fetch("cogym", "api", "status")).body)
        assert health["sessions_loop_lag"]["samples"] > 0, health

    run(body())
