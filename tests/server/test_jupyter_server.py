"""The cogym_lab Jupyter server extension, in a real Jupyter server run in-process.

pytest-jupyter's fixtures are imported here rather than registered as a plugin: its plugin
hooks would take over every coroutine test of the suite from pytest-asyncio. The tests are
plain functions that drive the server's own event loop (``jp_asyncio_loop``).
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from tests.support.jupyter_api import API, receive_until, wait_until


@pytest.fixture
def jp_server_config(tmp_path):
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True}},
            "CogymLabApp": {"results_dir": str(tmp_path / "results")}}


def test_unauthenticated_requests_are_refused(run, api, jp_fetch):
    async def body():
        for method, path in [("GET", ()), ("POST", ()), ("GET", ("nope",)),
                             ("DELETE", ("nope",)), ("POST", ("nope", "actions"))]:
            status, _ = await api(method, *path, headers={"Authorization": ""})
            assert status == 403, (method, path, status)
        status, listing = await api("GET")
        assert (status, listing) == (200, {"sessions": []})

    run(body())


def test_the_status_reports_the_sessions_and_the_loops_lag(run, api, jp_fetch):
    async def status() -> dict:
        return json.loads((await jp_fetch("cogym", "api", "status")).body)

    async def body():
        with pytest.raises(HTTPClientError) as refused:
            await jp_fetch("cogym", "api", "status", headers={"Authorization": ""})
        assert refused.value.code == 403
        code, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                "idle_seconds": 30})
        assert code == 201, created
        await asyncio.sleep(0.5)  # a few of the monitor's wake-ups, every 100 ms
        answer = await status()
        lag = answer["loop_lag"]
        assert answer["sessions_running"] == 1
        assert lag["samples"] >= 2 and lag["interval_ms"] == 100.0
        assert 0 <= lag["p50_ms"] <= lag["p99_ms"] <= lag["max_ms"]
        time.sleep(0.4)  # the server's loop (this one) blocked: the next wake-up is late
        await asyncio.sleep(0.15)
        assert (await status())["loop_lag"]["max_ms"] >= 300
        code, _ = await api("DELETE", created["session_id"])
        assert code == 200
        assert (await status())["sessions_running"] == 0

    run(body())


def test_unauthenticated_websocket_is_refused(run, api, jp_ws_fetch):
    async def body():
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 30})
        assert status == 201, created
        session_id = created["session_id"]
        with pytest.raises(HTTPClientError) as refused:
            await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"},
                              headers={"Authorization": ""})
        assert refused.value.code == 403
        with pytest.raises(HTTPClientError) as not_a_seat:  # authenticated, but not a person
            await jp_ws_fetch(*API, session_id, "ws", params={"role": "agent"})
        assert not_a_seat.value.code == 400
        status, _ = await api("DELETE", session_id)
        assert status == 200

    run(body())


def test_example_session_runs_to_its_end(run, api, tmp_path):
    async def body():
        status, created = await api("POST", body={"task": "todo", "idle_seconds": 2})
        assert status == 201, created
        assert created["status"] == "running"
        assert {m["role"]: m["kind"] for m in created["members"]} == {"agent": "agent",
                                                                    "user": "user"}
        session_id = created["session_id"]
        status, listing = await api("GET")
        assert [s["session_id"] for s in listing["sessions"]] == [session_id]
        final = await wait_until(api, session_id, lambda s: s["status"] == "finished")
        assert final["end_reason"] == "finished"
        assert final["state"]["done"] and len(final["state"]["outcome"]) >= 6
        assert final["result"]["delivered"]
        session_json = tmp_path / "results" / session_id / "session.json"
        assert json.loads(session_json.read_text())["status"] == "finished"

    run(body())


def test_a_person_works_with_an_agent(run, api, jp_ws_fetch):
    async def body():
        status, created = await api("POST", body={"task": "todo", "team": "example",
                                                  "people": ["user"], "idle_seconds": 30})
        assert status == 201, created
        assert created["people"] == ["user"]
        session_id = created["session_id"]
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        first = await receive_until(ws, lambda n: n.get("context") is not None)
        assert first[-1]["recipient"] == "user"
        assert first[-1]["event"]["type"] in ("start", "sync")

        ws.write_message("not json")
        ws.write_message(json.dumps({"no": "action"}))
        errors = await receive_until(ws, lambda n: "error" in n and "event" not in n)
        assert "JSON" in errors[-1]["error"]

        ws.write_message(json.dumps({"action": {"name": "SEND_TEAMMATE_MESSAGE",
                                                "args": {"message": "Please bring a kazoo"}}}))
        await receive_until(ws, lambda n: n.get("event", {}).get("actor") == "agent"
                            and "kazoo" in (n["event"].get("action") or ""))

        status, accepted = await api("POST", session_id, "actions", body={
            "role": "user", "action": {"name": "ADD_ITEM", "args": {"text": "tent"}}})
        assert status == 200 and accepted["status"] == "applied", accepted
        await wait_until(api, session_id, lambda s: "tent" in s["state"]["outcome"])
        status, refused = await api("POST", session_id, "actions",
                                    body={"role": "agent", "action": "WAIT()"})
        assert status == 400 and "not a person seat" in refused["message"]

        ws.close()  # a reconnecting person catches up through a sync
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        again = await receive_until(ws, lambda n: n.get("context") is not None)
        checklist = next(c for c in again[-1]["components"] if c["name"] == "checklist")
        items = [item["text"] for item in checklist["content"]]
        assert "tent" in items and "kazoo" in items

        status, ended = await api("DELETE", session_id)
        assert status == 200, ended
        assert (ended["status"], ended["end_reason"]) == ("finished", "ended by the user")
        end = await receive_until(ws, lambda n: n.get("done"))
        assert end[-1]["end_reason"] == "ended by the user"
        ws.close()
        status, snapshot = await api("GET", session_id)
        assert (snapshot["status"], snapshot["end_reason"]) == ("finished", "ended by the user")

    run(body())


def test_unknown_sessions_and_bad_requests(run, api):
    async def body():
        assert (await api("GET", "missing"))[0] == 404
        assert (await api("DELETE", "missing"))[0] == 404
        status, error = await api("POST", "missing", "actions",
                                  body={"role": "user", "action": "WAIT()"})
        assert status == 404 and "missing" in error["message"]
        status, error = await api("POST", body={"task": "no-such-task"})
        assert status == 400 and "Unknown task 'no-such-task'" in error["message"]
        status, error = await api("POST", body={"task": "todo", "team": "no-such-team"})
        assert status == 400 and "'no-such-team' is not a registered team" in error["message"]
        status, error = await api("POST", body={"task": "todo", "instance": 999})
        assert status == 400 and "no instance 999" in error["message"]
        status, error = await api("POST", body={"task": "todo", "colour": "blue"})
        assert status == 400 and "colour" in error["message"]
        status, error = await api("POST", body={"task": "todo", "protocol": "house-rules"})
        assert status == 400 and "Unknown scoring protocol 'house-rules'" in error["message"]
        assert (await api("GET"))[1] == {"sessions": []}
        status, created = await api("POST", body={"task": "todo", "protocol": "cogym_lab",
                                                  "people": ["user"], "idle_seconds": 30})
        assert status == 201 and created["protocol"] == "cogym_lab"
        assert (await api("DELETE", created["session_id"]))[0] == 200

    run(body())


def test_the_adversarial_create_requests_are_refused_with_the_field_named(run, api):
    """The requests that once took the server to 23 GB and started a session bound to fail."""
    async def body():
        status, error = await api("POST", body={"task": "todo", "idle_seconds": "abc"})
        assert status == 400 and error["message"].startswith("limits.idle_seconds:")
        status, error = await api("POST", raw="[" * 100_000 + "]" * 100_000)
        assert status == 400 and "c.CogymLab.max_json_depth" in error["message"]
        status, error = await api("POST", body={"task": "todo", "people": [
            f"person{i}" for i in range(10_000)]})
        assert status == 400 and "c.CogymLab.max_seats_per_session" in error["message"]
        assert (await api("GET"))[1] == {"sessions": []}

    run(body())
