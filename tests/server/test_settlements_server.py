"""No accepted action is dropped, through a real Jupyter server (pytest-jupyter, in-process).

``POST .../actions`` answers with what became of the action: ``200`` applied (with the ``seq``
of its event in ``events.jsonl``) or ``409`` refused with the reason, never a ``202`` that could
come to nothing. On a seat's WebSocket, an action the env did not apply (the session ended
first) is answered by a ``refused`` error frame naming the client's action id. Both are tested
while the session ends among a burst of actions, the REST one on both buses.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.nodes.results import read_events
from cogym_lab.server.handlers import ActionsHandler
from tests.support.jupyter_api import API, receive_until, wait_until

FINISHED = "The session ended before this action was applied (it ended: finished by agent)."


@pytest.fixture(params=["memory", "redis"])
def bus(request: pytest.FixtureRequest) -> str | None:
    """The server's bus: in-process, or a real Redis server (its URL)."""
    return None if request.param == "memory" else request.getfixturevalue("redis_server").url


@pytest.fixture
def jp_server_config(tmp_path, request):
    redis = request.getfixturevalue("bus") if "bus" in request.fixturenames else None
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True}},
            "CogymLab": {"results_dir": str(tmp_path / "results"), "redis_url": redis,
                         "ws_actions_per_second": 1000.0, "ws_action_burst": 1000}}


def results(jp_serverapp) -> Path:
    return Path(jp_serverapp.web_app.settings["cogym_lab_host"].results_dir)


async def two_seats(api) -> str:
    """A todo session whose two members are both person seats: nothing acts but the test."""
    status, created = await api("POST", body={"task": "todo", "people": ["user", "agent"],
                                              "idle_seconds": 600})
    assert status == 201, created
    return created["session_id"]


def item(index: int) -> dict[str, Any]:
    return {"name": "ADD_ITEM", "args": {"text": f"item {index}"}}


def test_rest_actions_racing_a_finish_are_answered_applied_or_refused(run, api, jp_serverapp,
                                                                      bus):
    async def body():
        session_id = await two_seats(api)
        status, applied = await api("POST", session_id, "actions",
                                    body={"role": "user", "action": item(0)})
        assert status == 200, applied
        assert applied["status"] == "applied" and applied["role"] == "user"
        status, invalid = await api("POST", session_id, "actions",
                                    body={"role": "user", "action": "NO_SUCH_ACTION()"})
        assert status == 200 and invalid["status"] == "applied"  # taken, logged, refused
        assert "NO_SUCH_ACTION" in invalid["error"]

        async def post(role: str, action: Any) -> tuple[int, Any]:
            return await api("POST", session_id, "actions", body={"role": role, "action": action})

        calls = [post("user", item(index)) for index in range(1, 31)]
        calls.insert(12, post("agent", "FINISH()"))
        answers = await asyncio.gather(*calls)
        await wait_until(api, session_id, lambda s: s["status"] != "running")
        events = read_events(results(jp_serverapp) / session_id)
        logged = {event.request_id: event for event in events if event.request_id}
        assert logged[applied["request_id"]].seq == applied["seq"]
        assert logged[invalid["request_id"]].seq == invalid["seq"]
        codes = [status for status, _ in answers]
        assert set(codes) <= {200, 409}, answers  # an answer every time, never "on its way"
        told_applied = {applied["request_id"], invalid["request_id"]}
        for status, answer in answers:
            if status == 200:
                assert answer["status"] == "applied"
                assert logged[answer["request_id"]].seq == answer["seq"]
                told_applied.add(answer["request_id"])
            else:
                assert answer["message"] == FINISHED, answer
                assert answer.get("request_id") not in logged
        assert codes[12] == 200 and 409 in codes
        # Nothing the seats did is in the log without its sender having been told so.
        assert {e.request_id for e in events if e.actor in ("user", "agent")} == told_applied
        status, late = await post("user", item(99))
        assert (status, late["message"]) == (409, FINISHED)

    run(body())


def test_a_rest_action_not_settled_in_time_is_on_its_way(run, api, jp_serverapp, monkeypatch):
    async def body():
        session_id = await two_seats(api)
        monkeypatch.setattr(ActionsHandler, "answer_wait", 0.0)
        status, accepted = await api("POST", session_id, "actions",
                                     body={"role": "user", "action": item(1)})
        assert status == 202 and accepted["status"] == "pending", accepted
        snapshot = await wait_until(api, session_id,
                                    lambda s: "item 1" in json.dumps(s["state"]["views"]))
        assert snapshot["status"] == "running"

    run(body())


def test_websocket_actions_the_env_did_not_apply_get_refused_frames(run, api, jp_serverapp,
                                                                    jp_ws_fetch):
    async def body():
        session_id = await two_seats(api)
        user = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        agent = await jp_ws_fetch(*API, session_id, "ws", params={"role": "agent"})
        await receive_until(user, lambda n: n.get("context") is not None)
        await receive_until(agent, lambda n: n.get("context") is not None)
        ids = [f"a{index}" for index in range(30)]
        for index, frame_id in enumerate(ids):
            user.write_message(json.dumps({"action": item(index), "id": frame_id}))
            if index == 10:
                agent.write_message(json.dumps({"action": "FINISH()", "id": "finish"}))
        await wait_until(api, session_id, lambda s: s["status"] != "running")
        events = read_events(results(jp_serverapp) / session_id)
        applied = {f"a{index}" for index in range(30) if any(
            e.actor == "user" and e.action and f'"item {index}"' in e.action for e in events)}
        assert any(e.type == "finish" and e.actor == "agent" for e in events)
        refused: dict[Any, str] = {}
        async with asyncio.timeout(30):  # until every action is accounted for
            while applied | set(refused) != set(ids):
                text = await user.read_message()
                assert text is not None, "the socket closed"
                frame = json.loads(text)
                if frame.get("type") == "error":
                    refused[frame.get("id")] = f"{frame['code']}: {frame['error']}"
        assert not applied & set(refused), "an action was both applied and refused"
        assert refused and set(refused.values()) <= {f"refused: {FINISHED}"}, refused
        user.close()
        agent.close()

    run(body())
