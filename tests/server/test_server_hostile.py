"""Hostile requests to every endpoint of a real in-process Jupyter server with the extension.

Each request gets the documented status and a message that says what was wrong (never a 500),
nothing outside the server's own folders is touched, no code a request names is run, and the
server keeps answering afterwards. Limits are set low here so that breaking them stays cheap.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from cogym_lab.nodes.results import read_events
from tests.support.jupyter_api import (
    API,
    as_user,
    receive_until,
    server_config,
    wait_until,
)

LIMITS = {"max_seats_per_session": 4, "max_sessions_per_user": 2, "max_sessions": 3,
          "max_request_bytes": 64 * 1024, "max_action_bytes": 8 * 1024, "max_json_depth": 16,
          "ws_actions_per_second": 1000.0, "ws_action_burst": 1000}
LM_ENDPOINT = "http://lm.example.test/v1"
FRAME_CEILING = 4 * LIMITS["max_action_bytes"]


def evil_team(folder: Path, marker: Path) -> Path:
    """A team file whose member names a function that runs a command (it must never run)."""
    path = folder / "evil.toml"
    path.write_text('name = "evil"\n[members.agent]\nkind = "agent"\ntype = "subprocess:run"\n'
                    f'[members.agent.options]\nargs = ["touch", "{marker}"]\n')
    return path


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "ran-a-command"


@pytest.fixture
def cogym_settings() -> dict[str, Any]:
    """``c.CogymLab`` settings a test adds (it parametrizes this fixture)."""
    return {}


@pytest.fixture
def jp_server_config(tmp_path, marker, cogym_settings):
    """Two users, low limits, an evil team registered by the administrator (by mistake), and
    the test's own settings."""
    teams_dir = tmp_path / "teams"
    teams_dir.mkdir()
    return server_config(tmp_path / "results", "alice", "bob", **LIMITS | {
        "teams": {"evil": str(evil_team(teams_dir, marker))},
        "lm_base_urls": [LM_ENDPOINT]} | cogym_settings)


def results(jp_serverapp) -> Path:
    return Path(jp_serverapp.web_app.settings["cogym_lab_host"].results_dir)


async def still_answers(api) -> None:
    status, listing = await api("GET")
    assert status == 200 and isinstance(listing["sessions"], list)


async def create(api, **body: Any) -> str:
    status, created = await api("POST", body={"task": "todo", "idle_seconds": 60, **body})
    assert status == 201, created
    return created["session_id"]


# -- what a request may make the server run, write and call ---------------------------------------

def test_a_team_is_a_registered_name_and_names_registered_members(run, alice, marker, tmp_path):
    async def body():
        path = evil_team(tmp_path, marker)
        for team in (str(path), "../teams/evil.toml", "example.toml"):
            status, refused = await alice("POST", body={"task": "todo", "team": team})
            assert status == 400 and "is not a registered team" in refused["message"], refused
        status, refused = await alice("POST", body={"task": "todo", "team": "evil"})
        assert status == 400, refused
        assert "'subprocess:run' is not a registered member type" in refused["message"]
        assert "not a registered member type" in refused["message"]
        assert not marker.exists()
        await still_answers(alice)

    run(body())


def test_folders_stay_inside_the_servers_results(run, alice, jp_serverapp, tmp_path,
                                                 use_shared_data):
    async def body():
        root = results(jp_serverapp)
        root.mkdir(parents=True, exist_ok=True)
        outside = tmp_path / "outside"
        (root / "escape").symlink_to(outside, target_is_directory=True)
        base = {"task": "tabular_analysis", "instance": 0, "team": "autonomous", "lm": {
            "model": "none", "base_url": "http://127.0.0.1:9/v1"}}
        for workdir, complaint in [(str(outside), "is outside"), ("../outside", "'..'"),
                                   ("escape/work", "is outside"), (["a"], "folder path"),
                                   ("a\x00b", "not a usable path")]:
            status, refused = await alice("POST", body=base | {"env_args": {"workdir": workdir}})
            assert status == 400, (workdir, refused)
            assert "env_args.workdir" in refused["message"] and complaint in refused["message"]
        for name, value in [("index_cache", "/"), ("data_dir", str(tmp_path)),
                            ("notebook", {}), ("judge_lm", "x")]:
            status, refused = await alice("POST", body=base | {"env_args": {name: value}})
            assert status == 400 and f"env_args.{name}" in refused["message"], refused
        assert not outside.exists()

        status, created = await alice("POST", body=base | {"env_args": {"workdir": "mine"}})
        assert status == 201, created
        # The env makes its workdir when it starts, after the 201: since sessions record their
        # provenance (hashing the data files first, in a thread), that start comes later, so
        # the folder is waited for rather than expected at once.
        for _ in range(300):
            if (root / "mine").is_dir():
                break
            await asyncio.sleep(0.1)
        assert (root / "mine").is_dir()  # inside, taken from the results folder
        assert (await alice("DELETE", created["session_id"]))[0] == 200

    run(body())


def test_lm_endpoints_come_from_the_allow_list(run, alice, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "https://company-llm.test:8443/openai/v1")

    async def body():
        for url in ("http://attacker.test/v1", "http://lm.example.test.evil/v1",
                    "http://127.0.0.1@attacker.test/v1", "https://lm.example.test/v1",
                    "http://lm.example.test/v2", "http://lm.example.test/v1/../../admin",
                    "file:///etc/passwd", "http://[::1", "http://10.0.0.1/v1"):
            status, refused = await alice("POST", body={"task": "todo", "lm": {
                "model": "m", "base_url": url}})
            assert status == 400, (url, refused)
            assert "lm.base_url" in refused["message"], refused
        status, refused = await alice("POST", body={"task": "todo", "lm": {
            "model": "weights.gguf"}})
        assert status == 400 and "lm.model" in refused["message"]
        for url in ("http://127.0.0.1:9/v1", "http://localhost:9/v1", "http://[::1]:9/v1",
                    LM_ENDPOINT + "/", "https://company-llm.test:8443/openai/v1"):
            status, created = await alice("POST", body={
                "task": "todo", "people": ["user"], "lm": {"model": "m", "base_url": url}})
            assert status == 201, (url, created)
            assert (await alice("DELETE", created["session_id"]))[0] == 200

    run(body())


# -- limits and validation -----------------------------------------------------------------------

def test_seats_and_sessions_are_limited(run, alice, bob):
    async def body():
        status, refused = await alice("POST", body={"task": "todo", "people": [
            f"p{i}" for i in range(5)]})
        assert status == 400 and "c.CogymLab.max_seats_per_session" in refused["message"]
        status, refused = await alice("POST", body={"task": "todo", "people": [
            f"p{i}" for i in range(10_000)]})
        assert status == 413, refused  # here the body limit comes first
        first = await create(alice, people=["user"])
        await create(alice, people=["user"])
        status, refused = await alice("POST", body={"task": "todo", "people": ["user"]})
        assert status == 429 and "c.CogymLab.max_sessions_per_user" in refused["message"]
        await create(bob, people=["user"])
        status, refused = await bob("POST", body={"task": "todo", "people": ["user"]})
        assert status == 429 and "c.CogymLab.max_sessions" in refused["message"]
        assert (await alice("DELETE", first))[0] == 200  # an ended session makes room
        await create(bob, people=["user"])

    run(body())


WRONG_TYPES = [
    ("task", 5), ("task", ""), ("instance", "1"), ("instance", True), ("instance", -1),
    ("team", 3), ("people", "user"), ("people", [1]), ("people", ["bad role!"]),
    ("people", ["user", "user"]), ("env_args", []), ("lm", "gpt"), ("lm", {"model": 3}),
    ("lm", {"provider": "local"}), ("lm", {"extra": {}}), ("notebook", "x"),
    ("notebook", {"path": 1}), ("protocol", 1), ("idle_seconds", "abc"), ("idle_seconds", -1),
    ("idle_seconds", True), ("timeout", "x"), ("max_idle_ticks", 1.5), ("max_events", 0),
    ("agent_step_limit", "3"), ("join_timeout", []), ("seed", "s"), ("seat_users", ["bob"]),
    ("seat_tokens", "guest"), ("colour", "blue"),
]


def test_every_create_field_is_validated(run, alice):
    async def body():
        for name, value in WRONG_TYPES:
            status, refused = await alice("POST", body={"task": "todo", name: value}
                                          if name != "task" else {name: value})
            assert status == 400, (name, value, refused)
            assert name in refused["message"], (name, value, refused)
        status, refused = await alice("POST", body={"task": "todo", "idle_seconds": "abc"})
        assert refused["message"].startswith("limits.idle_seconds: Input should be a valid number")
        assert (await alice("GET"))[1] == {"sessions": []}  # nothing was started

    run(body())


def test_malformed_bodies_get_clear_errors_never_500(run, alice, bob):
    async def body():
        deep = "[" * 100_000 + "]" * 100_000
        cases: list[tuple[str | bytes, int, str]] = [
            (deep, 413, "max_request_bytes"),
            ("[" * 5_000 + "]" * 5_000, 400, "max_json_depth"),
            (json.dumps({"task": "todo", "env_args": {"a": _nested(20)}}), 400, "nests"),
            ("x" * (LIMITS["max_request_bytes"] + 1), 413, "max_request_bytes"),
            (b'{"task": "\xff\xfe"}', 400, "not UTF-8"),
            ('{"task": "todo", "seed": NaN}', 400, "NaN"),
            ('{"task": "todo", "seed": 1' + "0" * 5_000 + "}", 400, "not JSON"),
            ("{not json", 400, "not JSON"),
            ("[1, 2]", 400, "JSON object"),
            ("", 400, "task"),
            ('{"task": "\\ud800"}', 400, "Unknown task '\ufffd'"),
        ]
        for raw, code, complaint in cases:
            status, refused = await alice("POST", raw=raw)
            assert status == code, (str(raw)[:60], refused)
            assert complaint in refused["message"], (str(raw)[:60], refused)

        session_id = await create(alice, people=["user"])
        big = {"role": "user", "action": {"name": "ADD_ITEM", "args": {
            "text": "x" * LIMITS["max_action_bytes"]}}}
        status, refused = await alice("POST", session_id, "actions", body=big)
        assert status == 413 and "max_action_bytes" in refused["message"]
        for payload, complaint in [({"role": "user"}, "action"), ({"action": "WAIT()"}, "role"),
                                   ({"role": "user", "action": 5}, "action"),
                                   ({"role": ["user"], "action": "WAIT()"}, "role"),
                                   ({"role": "nobody", "action": "WAIT()"}, "not a person seat")]:
            status, refused = await alice("POST", session_id, "actions", body=payload)
            assert status == 400 and complaint in refused["message"], (payload, refused)
        for raw, complaint in [("[" * 500 + "]" * 500, "max_json_depth"), ("[]", "JSON object"),
                               (b"\xc3\x28", "not UTF-8")]:
            for path in ("actions", "rating", "seats"):
                status, refused = await alice("POST", session_id, path, raw=raw)
                assert status == 400 and complaint in refused["message"], (path, refused)

        # Text that is not valid Unicode is made valid at the door.
        status, _ = await alice("POST", session_id, "actions", raw=json.dumps(
            {"role": "user", "action": {"name": "ADD_ITEM", "args": {"text": "a\ud800b"}}}))
        assert status == 200
        await wait_until(alice, session_id, lambda s: "a\ufffdb" in json.dumps(
            s["state"], ensure_ascii=False))

        # Unknown ids, and another user's ids, on every endpoint.
        for who in (alice, bob):
            for sid in ("no-such-session", session_id if who is bob else "../../etc"):
                for method, path, payload in _EVERY_ENDPOINT:
                    status, refused = await who(method, sid, *path, body=payload)
                    assert status == 404, (method, sid, path, refused)
        await still_answers(alice)
        assert (await alice("DELETE", session_id))[0] == 200

    run(body())


_EVERY_ENDPOINT = [
    ("GET", (), None), ("DELETE", (), None),
    ("POST", ("actions",), {"role": "user", "action": "WAIT()"}),
    ("POST", ("rating",), {"role": "user", "outcome_rating": 3, "satisfaction": 3}),
    ("POST", ("resume",), None), ("POST", ("interrupt",), None),
    ("POST", ("seats",), {"token": "t"}),
]


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"next": value}
    return value


# -- the WebSocket ---------------------------------------------------------------------------------

def flood_action(index: int) -> str:
    return json.dumps({"action": {"name": "ADD_ITEM", "args": {"text": f"flood-{index}"}},
                       "id": f"a{index}"})


@pytest.mark.parametrize("cogym_settings", [{"ws_actions_per_second": 2.0,
                                              "ws_action_burst": 3}], ids=["2-a-second"])
def test_a_websocket_flood_is_answered_never_dropped(run, alice, jp_ws_fetch, jp_serverapp):
    """Every action of a flood is either applied or refused with an error frame naming it; the
    socket stays open and goes on working."""
    sent = 30

    async def body():
        session_id = await create(alice, people=["user", "agent"])  # no agent acts
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"},
                               headers=as_user("alice"))
        await receive_until(ws, lambda n: n.get("context") is not None)
        for index in range(sent):
            ws.write_message(flood_action(index))
        applied: set[str] = set()
        refused: dict[str, dict[str, Any]] = {}

        def accounted(message: dict[str, Any]) -> bool:
            if message.get("type") == "error":
                refused[message["id"]] = message
            action = (message.get("event") or {}).get("action") or ""
            if "flood-" in action:
                applied.add("a" + action.split("flood-")[1].split('"')[0])
            return len(applied) + len(refused) >= sent

        await receive_until(ws, accounted)
        assert refused and applied, (applied, refused)
        assert not applied & set(refused) and applied | set(refused) == {
            f"a{i}" for i in range(sent)}
        assert {frame["code"] for frame in refused.values()} == {"rate_limited"}
        assert "Too many actions" in next(iter(refused.values()))["error"]
        logged = [e.action for e in read_events(results(jp_serverapp) / session_id)
                  if e.actor == "user" and "flood-" in (e.action or "")]
        assert len(logged) == len(applied)  # what was applied is what the log holds

        # The same socket still works once the rate allows another action.
        async def try_again() -> list[Any]:
            while True:
                ws.write_message(json.dumps({"action": {"name": "ADD_ITEM", "args": {
                    "text": "after the flood"}}, "id": "late"}))
                seen = await receive_until(ws, lambda n: n.get("id") == "late" or "after the "
                                           "flood" in ((n.get("event") or {}).get("action")
                                                       or ""))
                if seen[-1].get("type") != "error":
                    return seen
                await asyncio.sleep(0.5)  # the bucket refills; no assertion depends on time

        await try_again()
        ws.close()
        await still_answers(alice)

    run(body())


def test_malformed_websocket_frames_get_error_frames(run, alice, jp_ws_fetch, jp_serverapp):
    async def body():
        session_id = await create(alice, people=["user", "agent"])
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"},
                               headers=as_user("alice"))
        await receive_until(ws, lambda n: n.get("context") is not None)
        frames: list[tuple[str | bytes, str, str]] = [
            ("not json", "bad_message", "not JSON"),
            ("[1, 2]", "bad_message", "action"),
            (json.dumps({"action": 5, "id": "f1"}), "bad_message", "action"),
            (json.dumps({"action": "WAIT()", "colour": "blue"}), "bad_message", "colour"),
            (json.dumps({"action": {"name": "ADD_ITEM", "args": []}, "id": 7}), "refused",
             "args"),
            (b"\xff\xfe", "bad_message", "not UTF-8"),
            ("[" * 50 + "]" * 50, "bad_message", "max_json_depth"),
            ('{"action": "WAIT()", "id": NaN}', "bad_message", "NaN"),
            (json.dumps({"action": "x" * LIMITS["max_action_bytes"]}), "too_large",
             "max_action_bytes"),
        ]
        for frame, code, complaint in frames:
            ws.write_message(frame, binary=isinstance(frame, bytes))
            answers = await receive_until(ws, lambda n: n.get("type") == "error")
            assert (answers[-1]["code"], complaint in answers[-1]["error"]) == (code, True), (
                frame[:60], answers[-1])
        assert answers[-1].get("id") is None
        ws.write_message(json.dumps({"action": 5, "id": "named"}))
        named = await receive_until(ws, lambda n: n.get("type") == "error")
        assert named[-1]["id"] == "named"

        # Binary JSON, and a lone surrogate that becomes U+FFFD, are applied.
        ws.write_message(json.dumps({"action": {"name": "ADD_ITEM", "args": {
            "text": "lone \ud800 half"}}}).encode(), binary=True)
        await receive_until(ws, lambda n: "lone \ufffd half" in json.dumps(
            n.get("event") or {}, ensure_ascii=False))
        log = (results(jp_serverapp) / session_id / "events.jsonl").read_bytes()
        assert "lone \ufffd half" in log.decode("utf-8")  # the log stays valid UTF-8

        ws.write_message(json.dumps({"action": {"name": "ADD_ITEM", "args": {
            "text": "still here"}}}))
        await receive_until(ws, lambda n: "still here" in json.dumps(n.get("event") or {}))

        # A frame above the ceiling closes this socket (RFC 6455 code 1009) before it is read;
        # the server and the seat go on.
        ws.write_message("x" * (FRAME_CEILING + 1))
        assert await ws.read_message() is None
        assert ws.close_code == 1009
        again = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"},
                                  headers=as_user("alice"))
        await receive_until(again, lambda n: n.get("context") is not None)
        again.close()
        await still_answers(alice)

    run(body())


def test_websocket_refusals_are_http_errors_before_the_upgrade(run, alice, bob, jp_ws_fetch):
    async def body():
        session_id = await create(alice, people=["user"])
        for user, sid, role, code in [("bob", session_id, "user", 404),
                                      ("alice", session_id, "agent", 400),
                                      ("alice", session_id, "", 400),
                                      ("alice", "no-such-session", "user", 404)]:
            with pytest.raises(HTTPClientError) as refused:
                await jp_ws_fetch(*API, sid, "ws", params={"role": role},
                                  headers=as_user(user))
            assert refused.value.code == code, (user, sid, role)
        await still_answers(alice)

    run(body())

