"""Hosted sessions across their whole life: a server killed or shut down and a new one resuming
its sessions from their logs, a reconnecting browser, a restarted kernel, Redis hosting, ratings.

Servers are real: pytest-jupyter's in-process server (driven from its own loop, as in
test_jupyter_server.py) and ``jupyter server`` subprocesses that the tests kill.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from cogym_lab.core import (
    ActionError,
    ActionOutcome,
    CoEnv,
    Component,
    Deferred,
    RenderType,
    action,
)
from cogym_lab.core.messages import EventType, Notification
from cogym_lab.envs.registry import register_env
from cogym_lab.members import MemberType, register_member, unregister_member
from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.runtime.hosting import HostingError, SessionHost
from tests.support.jupyter_api import API, receive_until, wait_until

KAZOO = "Please bring a kazoo"


# -- in-process servers -----------------------------------------------------------------------

@pytest.fixture
def jp_server_config(request, tmp_path):
    """The extension on, results in tmp_path; ``indirect`` param "redis" hosts on a real Redis."""
    cogym: dict[str, Any] = {"results_dir": str(tmp_path / "results")}
    if getattr(request, "param", None) == "redis":
        cogym["redis_url"] = request.getfixturevalue("redis_server").url
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True}}, "CogymLab": cogym}


@pytest.fixture
def run(jp_asyncio_loop):
    """Run a coroutine to completion in the test's (and in-process server's) loop."""
    return lambda coroutine: jp_asyncio_loop.run_until_complete(
        asyncio.wait_for(coroutine, 180))


def host_of(serverapp) -> SessionHost:
    return serverapp.web_app.settings["cogym_lab_host"]


def is_settled(snapshot: dict[str, Any]) -> bool:
    """The example agent took the kazoo request and asked before adding an extra item; it now
    waits for the person."""
    state = snapshot["state"]  # None until the session has started
    return state is not None and "kazoo" in state["outcome"] and bool(
        state["pending_confirmations"])


def event_of(notification: dict[str, Any]) -> dict[str, Any]:
    return notification.get("event") or {}


@pytest.fixture
def serverapp_host(jp_serverapp):
    return host_of(jp_serverapp)


def test_new_endpoints_refuse_a_missing_token(run, api, serverapp_host):
    async def body():
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        no_token = {"Authorization": ""}
        status, _ = await api("POST", session_id, "resume", headers=no_token)
        assert status == 403
        status, _ = await api("POST", session_id, "rating", headers=no_token,
                              body={"role": "user", "outcome_rating": 5, "satisfaction": 5})
        assert status == 403
        assert serverapp_host.ratings(session_id) == {}  # the refused rating left nothing
        status, _ = await api("DELETE", session_id)
        assert status == 200

    run(body())


def test_ratings_are_validated_saved_and_shown(run, api, serverapp_host, tmp_path):
    async def body():
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        ratings_file = tmp_path / "results" / session_id / "ratings.json"
        bad_bodies = [
            ({"role": "user", "outcome_rating": 6, "satisfaction": 3}, "outcome_rating"),
            ({"role": "user", "outcome_rating": 0, "satisfaction": 3}, "outcome_rating"),
            ({"role": "user", "outcome_rating": 3, "satisfaction": "3"}, "satisfaction"),
            ({"role": "user", "outcome_rating": 3.5, "satisfaction": 3}, "outcome_rating"),
            ({"outcome_rating": 3, "satisfaction": 3}, "role"),
            ({"role": "user", "outcome_rating": 3, "satisfaction": 3, "stars": 9}, "stars"),
            ({"role": "agent", "outcome_rating": 3, "satisfaction": 3}, "not a person seat"),
        ]
        for payload, complaint in bad_bodies:
            status, error = await api("POST", session_id, "rating", body=payload)
            assert status == 400, (payload, error)
            assert complaint in error["message"], (payload, error)
        status, error = await api("POST", session_id, "rating", raw="{not json")
        assert status == 400 and "not JSON" in error["message"]
        status, error = await api("POST", "no-such-session", "rating",
                                  body={"role": "user", "outcome_rating": 3, "satisfaction": 3})
        assert status == 404, error
        assert not ratings_file.exists()

        # While the session runs...
        status, saved = await api("POST", session_id, "rating", body={
            "role": "user", "outcome_rating": 2, "satisfaction": 3, "comment": "so far"})
        assert status == 201, saved
        assert saved["ratings"]["user"]["outcome_rating"] == 2
        # ...and after it ended, when the form is shown; the later rating replaces the first.
        status, ended = await api("DELETE", session_id)
        assert (status, ended["status"]) == (200, "finished")
        status, saved = await api("POST", session_id, "rating", body={
            "role": "user", "outcome_rating": 4, "satisfaction": 5,
            "comment": "Good list <b>really</b>"})
        assert status == 201, saved
        on_disk = json.loads(ratings_file.read_text())
        assert set(on_disk) == {"user"}
        entry = on_disk["user"]
        assert (entry["outcome_rating"], entry["satisfaction"], entry["comment"]) == (
            4, 5, "Good list <b>really</b>")
        assert abs(entry["ts"] - time.time()) < 3600
        status, snapshot = await api("GET", session_id)
        assert snapshot["ratings"] == on_disk

        # The same through Python, as the in-kernel panel calls it.
        with pytest.raises(HostingError, match="satisfaction") as refused:
            serverapp_host.rate(session_id, "user", 3, 9, "")
        assert refused.value.status == 400
        with pytest.raises(HostingError) as unknown:
            serverapp_host.rate("nope", "user", 3, 3, "")
        assert unknown.value.status == 404
        ratings = serverapp_host.rate(session_id, "user", 1, 2, "changed my mind")
        assert ratings["user"]["comment"] == "changed my mind"
        assert json.loads(ratings_file.read_text())["user"]["outcome_rating"] == 1

    run(body())


def test_resume_refuses_unknown_running_and_finished_sessions(run, api):
    async def body():
        status, error = await api("POST", "no-such-session", "resume")
        assert status == 404 and "no-such-session" in error["message"]
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 60})
        session_id = created["session_id"]
        status, error = await api("POST", session_id, "resume")
        assert status == 409 and "running" in error["message"]
        await api("DELETE", session_id)
        status, error = await api("POST", session_id, "resume")
        assert status == 409 and "finished" in error["message"]

    run(body())


def test_a_reconnecting_browser_gets_the_full_current_state(run, api, jp_ws_fetch):
    async def body():
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 60})
        session_id = created["session_id"]
        first = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        await receive_until(first, lambda n: n.get("context") is not None)
        first.write_message(json.dumps({"action": f'SEND_TEAMMATE_MESSAGE(message="{KAZOO}")'}))
        settled = await wait_until(api, session_id, is_settled)
        first.close()  # the page reloads

        second = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        caught_up = (await receive_until(second, lambda n: n.get("context") is not None))[-1]
        state = settled["state"]
        assert event_of(caught_up)["type"] == "sync"
        assert caught_up["seq"] == state["seq"]
        assert caught_up["whole"]  # a sync sends the whole view and chat
        assert {"components": caught_up["components"]} == state["views"]["user"]
        assert caught_up["messages"] == state["chat"]
        assert caught_up["pending_confirmations"] == state["pending_confirmations"]
        assert caught_up["step_counts"] == state["step_counts"]
        # And the reloaded page is a working seat: it answers the agent's request.
        request_id = state["pending_confirmations"][0]["request_id"]
        second.write_message(json.dumps({"action": {"name": "ACCEPT_CONFIRMATION",
                                                    "args": {"request_id": request_id}}}))
        accepted = await receive_until(second, lambda n: event_of(n).get("type")
                                       == "confirm_accept")
        assert accepted[-1]["seq"] > state["seq"]
        second.close()
        await api("DELETE", session_id)

    run(body())


def test_a_kernel_restart_does_not_end_a_session(run, api, jp_fetch, jp_ws_fetch):
    async def body():
        response = await jp_fetch("api", "kernels", method="POST", body="{}")
        kernel = json.loads(response.body)
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 60})
        session_id = created["session_id"]
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        await receive_until(ws, lambda n: n.get("context") is not None)

        response = await jp_fetch("api", "kernels", kernel["id"], "restart", method="POST",
                                  body="{}")
        assert response.code == 200
        assert json.loads(response.body)["id"] == kernel["id"]

        status, snapshot = await api("GET", session_id)
        assert (status, snapshot["status"]) == (200, "running")
        ws.write_message(json.dumps({"action": 'ADD_ITEM(text="spare socks")'}))
        added = await receive_until(ws, lambda n: "spare socks" in (event_of(n).get("action")
                                                                   or ""))
        assert event_of(added[-1])["status"] == "ok"
        await wait_until(api, session_id, lambda s: "spare socks" in s["state"]["outcome"])
        ws.close()
        await jp_fetch("api", "kernels", kernel["id"], method="DELETE")
        await api("DELETE", session_id)

    run(body())


@pytest.mark.parametrize("jp_server_config", ["redis"], indirect=True)
def test_sessions_are_hosted_on_a_real_redis_server(run, api, jp_ws_fetch, serverapp_host,
                                                    redis_server, tmp_path):
    async def body():
        assert serverapp_host.redis_url == redis_server.url  # set as c.CogymLab.redis_url
        status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                                  "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "user"})
        await receive_until(ws, lambda n: n.get("context") is not None)
        ws.write_message(json.dumps({"action": f'SEND_TEAMMATE_MESSAGE(message="{KAZOO}")'}))
        await receive_until(ws, lambda n: event_of(n).get("actor") == "agent"
                            and "kazoo" in (event_of(n).get("action") or ""))
        status, accepted = await api("POST", session_id, "actions", body={
            "role": "user", "action": {"name": "ADD_ITEM", "args": {"text": "tent pegs"}}})
        assert status == 200 and accepted["status"] == "applied", accepted
        await wait_until(api, session_id, lambda s: "tent pegs" in s["state"]["outcome"])

        # The steps really went through Redis streams; the env trims the step stream as it
        # logs them (in batches, every 0.1 s): soon only what it has not logged is left.
        client = redis.Redis.from_url(redis_server.url)
        try:
            assert client.exists(f"cogym:{session_id}/step")
            for _ in range(100):
                if client.xlen(f"cogym:{session_id}/step") == 0:
                    break
                await asyncio.sleep(0.02)
            assert client.xlen(f"cogym:{session_id}/step") == 0
            assert client.xlen(f"cogym:{session_id}/user/obs") >= 1
        finally:
            client.close()
        status, ended = await api("DELETE", session_id)
        assert (status, ended["status"]) == (200, "finished")
        end = await receive_until(ws, lambda n: n.get("done"))
        assert end[-1]["end_reason"] == "ended by the user"
        ws.close()
        saved = read_session(tmp_path / "results" / session_id)
        assert saved["status"] == "finished" and "tent pegs" in saved["outcome"]

    run(body())


# -- deferred work across an interruption -----------------------------------------------------

HELD: set[str] = set()  # items whose slow work never finishes (until the test lets it)
CALLS: dict[str, int] = {}  # how often each item's slow work ran


class SlowListEnv(CoEnv):
    """A shared list whose items arrive through slow (deferred) work, like a kernel cell."""

    name = "slow_list"

    @property
    def task_description(self) -> str:
        return "Put 'quick' and 'held' on the list."

    def _reset(self, seed: int | None) -> None:
        self.items: list[str] = []
        self.pending: list[str] = []

    def public_components(self) -> list[Component]:
        return [Component(name="list", title="List", render_type=RenderType.CHECKLIST,
                          content={"items": list(self.items), "pending": list(self.pending)})]

    def outcome(self) -> list[str]:
        return list(self.items)

    @action("Add an item after some slow work.", text="The item")
    def slow_add(self, role: str, text: str) -> ActionOutcome:
        if text in self.items or text in self.pending:
            raise ActionError(f"{text!r} is already on its way.")
        self.pending.append(text)

        async def work() -> dict[str, Any]:
            CALLS[text] = CALLS.get(text, 0) + 1
            if text in HELD:
                await asyncio.Event().wait()  # the server goes down before this ends
            return {"name": "RECORD_ITEM", "args": {"text": text}}

        return ActionOutcome(deferred=Deferred(work=work, label="Adding"))

    @action("Record an item the slow work produced.", internal=True, text="The item")
    def record_item(self, role: str, text: str) -> None:
        self.pending.remove(text)
        self.items.append(text)


class SlowListAgent:
    """Asks for 'quick', then for 'held', each once it is neither listed nor on its way."""

    def start(self, context) -> None:
        pass

    async def act(self, notification: Notification) -> str | None:
        content = notification.view["list"].content
        for text in ("quick", "held"):
            if text not in content["items"]:
                return None if text in content["pending"] else f'SLOW_ADD(text="{text}")'
        return None

    def end(self, final: Notification) -> None:
        pass


register_env("slow_list", SlowListEnv)


@pytest.fixture
def slow_list_member():
    """Team files may name SlowListAgent as ``slow-list-agent`` while a test runs."""
    register_member(MemberType(name="slow-list-agent", kind="agent", uses_lm=False,
                               build=lambda setup: SlowListAgent()))
    yield "slow-list-agent"
    unregister_member("slow-list-agent")


def test_resume_takes_deferred_results_from_the_log_and_redoes_unfinished_work(
        run, tmp_path, slow_list_member):
    team = tmp_path / "slow-team.toml"
    team.write_text('name = "slow"\n[members.agent]\nkind = "agent"\n'
                    f'type = "{slow_list_member}"\n')
    results = tmp_path / "results"

    async def state_of(host, session_id, predicate):
        async with asyncio.timeout(60):
            while True:
                snapshot = host.snapshot(session_id)
                if snapshot["state"] is not None and predicate(snapshot["state"]):
                    return snapshot
                await asyncio.sleep(0.05)

    def listed(state):
        return state["views"]["agent"]["components"][0]["content"]

    async def body():
        HELD.clear()
        CALLS.clear()
        HELD.add("held")
        first = SessionHost(results)
        hosted = await first.create("slow_list", team=str(team), people=["user"],
                                    idle_seconds=120)
        session_id = hosted.session_id
        await state_of(first, session_id, lambda s: listed(s) == {"items": ["quick"],
                                                                  "pending": ["held"]})
        await first.close()  # the server shuts down while 'held' is still being worked on
        assert hosted.status == "interrupted"
        saved = read_session(results / session_id)
        assert saved["status"] == "interrupted"
        logged = read_events(results / session_id)
        assert [e.type.value for e in logged][-1] != "end"

        HELD.clear()
        second = SessionHost(results)
        [stored] = second.recover()
        assert (stored.session_id, stored.status) == (session_id, "interrupted")
        resumed = await second.resume(session_id)
        assert listed(resumed.restored_state) == {"items": ["quick"], "pending": ["held"]}
        assert resumed.restored_state["seq"] == len(logged)
        await state_of(second, session_id, lambda s: listed(s)["items"] == ["quick", "held"])
        # 'quick' came from the log; only the unfinished 'held' ran again.
        assert CALLS == {"quick": 1, "held": 2}
        ended = await second.end(session_id)
        assert ended.status == "finished"

        events = read_events(results / session_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert events[:len(logged)] == logged
        assert [e.type.value for e in events].count("start") == 1
        assert replay(results / session_id).final_state["outcome"] == ["quick", "held"]
        assert read_session(results / session_id)["resumed_at"]

    run(body())


def test_resume_cuts_a_torn_last_line_and_refuses_a_log_that_does_not_replay(run, tmp_path):
    results = tmp_path / "results"

    async def body():
        first = SessionHost(results)
        hosted = await first.create("todo", people=["user"], idle_seconds=60)
        session_id = hosted.session_id
        await first.act(session_id, "user", 'ADD_ITEM(text="tent")')
        async with asyncio.timeout(60):
            while "tent" not in ((first.snapshot(session_id)["state"] or {}).get("outcome")
                                 or []):
                await asyncio.sleep(0.05)
        await first.close()
        log = results / session_id / "events.jsonl"
        good = log.read_bytes()
        events = read_events(results / session_id)

        tampered = [e.model_copy(update={"type": EventType.ERROR, "status": "error",
                                         "error": "edited"})
                    if e.action == 'ADD_ITEM(text="tent")' else e for e in events]
        log.write_text("".join(e.model_dump_json(exclude_defaults=True) + "\n"
                               for e in tampered))
        second = SessionHost(results)
        second.recover()
        with pytest.raises(HostingError, match="cannot be restored") as refused:
            await second.resume(session_id)
        assert refused.value.status == 500
        assert second.snapshot(session_id)["status"] == "interrupted"

        log.write_bytes(good + b'{"seq": 999, "time": 1.0, "ty')  # the server died mid-line
        resumed = await second.resume(session_id)
        assert resumed.restored_state["seq"] == len(events)
        assert "tent" in resumed.restored_state["outcome"]
        assert log.read_bytes().startswith(good)
        await second.end(session_id)
        assert [e.seq for e in read_events(results / session_id)] == list(
            range(1, len(read_events(results / session_id)) + 1))

    run(body())


def test_a_restarted_server_leaves_alone_sessions_another_live_process_hosts(run, tmp_path):
    """A kernel's own host may share the results folder: its running session is not the
    restarted server's to mark interrupted; once that process is gone, it is."""
    results = tmp_path / "results"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        async def body():
            host = SessionHost(results)
            hosted = await host.create("todo", people=["user"], idle_seconds=60)
            await asyncio.sleep(0)  # let it start writing
            record_path = results / hosted.session_id / "hosting.json"
            record = json.loads(record_path.read_text())
            assert record["pid"] == os.getpid() and record["spec"]["task"] == "todo"
            record["pid"], record["process_start"] = other.pid, _start_of(other.pid)
            record_path.write_text(json.dumps(record))
            assert SessionHost(results).recover() == []  # hosted by a live process
            other.kill()
            other.wait(30)
            [stored] = SessionHost(results).recover()
            assert (stored.session_id, stored.status) == (hosted.session_id, "interrupted")
            await host.end(hosted.session_id)

        run(body())
    finally:
        other.kill()
        other.wait(30)


def _start_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


# -- real server processes that are killed ----------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """``python -m jupyter_server`` with the extension, on a free loopback port."""

    def __init__(self, workdir: Path, results: Path, redis_url: str | None = None) -> None:
        self.workdir, self.results = workdir, results
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {"ServerApp": {"jpserver_extensions": {"cogym_lab": True},
                                "open_browser": False, "port": self.port, "port_retries": 0,
                                "ip": "127.0.0.1", "allow_root": True},  # CI runs as root
                  "IdentityProvider": {"token": self.token},
                  "CogymLab": {"results_dir": str(results),
                               **({"redis_url": redis_url} if redis_url else {})}}
        self.config_dir = workdir / "config"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
        self.log_path = workdir / f"server-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self, timeout: float = 90.0) -> ServerProcess:
        env = os.environ | {"JUPYTER_CONFIG_DIR": str(self.config_dir),
                            "JUPYTER_RUNTIME_DIR": str(self.workdir / "runtime"),
                            "JUPYTER_DATA_DIR": str(self.workdir / "data"),
                            "JUPYTER_PLATFORM_DIRS": "1"}
        root = self.workdir / "root"
        root.mkdir(exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={root}"],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)  # its files stay here
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, f"the server exited:\n{self.log()}"
            try:
                status, _ = await self.call("GET")
                if status == 200:
                    return self
            except OSError:
                pass
            assert time.monotonic() < deadline, f"the server did not answer:\n{self.log()}"
            await asyncio.sleep(0.2)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    async def call(self, method: str, *path: str, body: Any = None,
                   token: str | None = None) -> tuple[int, Any]:
        token = self.token if token is None else token
        url = "/".join([self.url, *API, *path])
        payload = json.dumps(body) if body is not None else ("{}" if method == "POST" else None)
        request = HTTPRequest(url, method=method, body=payload, request_timeout=60,
                              headers={"Authorization": f"token {token}"})
        try:
            response = await AsyncHTTPClient().fetch(request)
        except HTTPClientError as error:
            if error.response is None:
                raise
            response = error.response
        return response.code, json.loads(response.body or b"null")

    async def websocket(self, session_id: str, role: str):
        url = f"ws://127.0.0.1:{self.port}/{'/'.join(API)}/{session_id}/ws?role={role}"
        return await websocket_connect(HTTPRequest(
            url, headers={"Authorization": f"token {self.token}"}))

    def signal(self, sig: signal.Signals, timeout: float = 60.0) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


@pytest.fixture
def servers(tmp_path):
    """Start server processes with ``servers(results, redis_url=None)``; all die at the end."""
    started: list[ServerProcess] = []

    async def start(results: Path, redis_url: str | None = None) -> ServerProcess:
        server = ServerProcess(tmp_path / f"server{len(started)}", results, redis_url)
        started.append(server)
        return await server.start()

    yield start
    for server in started:
        server.close()


async def poll(server: ServerProcess, session_id: str, predicate, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        status, snapshot = await server.call("GET", session_id)
        assert status == 200, snapshot
        if predicate(snapshot):
            return snapshot
        assert time.monotonic() < deadline, f"timed out; last snapshot: {snapshot}"
        await asyncio.sleep(0.1)


async def settled_session(server: ServerProcess) -> tuple[str, dict[str, Any]]:
    """A todo session with a person seat, where the agent has done its part and now waits for
    the person to answer its confirmation request."""
    status, created = await server.call("POST", body={"task": "todo", "people": ["user"],
                                                      "idle_seconds": 120})
    assert status == 201, created
    session_id = created["session_id"]
    status, _ = await server.call("POST", session_id, "actions", body={
        "role": "user", "action": f'SEND_TEAMMATE_MESSAGE(message="{KAZOO}")'})
    assert status == 200
    return session_id, await poll(server, session_id, is_settled)


def test_a_killed_server_leaves_sessions_interrupted_and_the_next_one_resumes_them(
        run, servers, tmp_path):
    results = tmp_path / "results"

    async def body():
        first = await servers(results)
        status, done = await first.call("POST", body={"task": "todo", "idle_seconds": 2})
        finished_id = done["session_id"]
        await poll(first, finished_id, lambda s: s["status"] == "finished")
        session_id, before = await settled_session(first)
        log_before = (results / session_id / "events.jsonl").read_bytes()

        assert first.signal(signal.SIGKILL) == -signal.SIGKILL  # no chance to clean up
        assert read_session(results / session_id)["status"] == "running"

        second = await servers(results)
        status, listing = await second.call("GET")
        by_id = {entry["session_id"]: entry for entry in listing["sessions"]}
        assert by_id[session_id]["status"] == "interrupted"
        assert by_id[session_id]["people"] == ["user"]
        assert by_id[finished_id]["status"] == "finished"
        assert by_id[finished_id]["delivered"] is True and by_id[finished_id]["scores"]
        on_disk = read_session(results / session_id)
        assert on_disk["status"] == "interrupted" and on_disk["interrupted_at"]
        assert (results / session_id / "events.jsonl").read_bytes() == log_before
        status, finished = await second.call("GET", finished_id)
        assert finished["result"]["end_reason"] == "finished" and finished["state"]["done"]

        # An interrupted session answers, but takes no actions and no websocket until resumed.
        status, snapshot = await second.call("GET", session_id)
        assert (status, snapshot["status"]) == (200, "interrupted")
        status, refused = await second.call("POST", session_id, "actions",
                                            body={"role": "user", "action": "WAIT()"})
        assert status == 409 and "Resume it" in refused["message"]
        with pytest.raises(HTTPClientError) as no_ws:
            await second.websocket(session_id, "user")
        assert no_ws.value.code == 409
        assert (await second.call("POST", finished_id, "resume"))[0] == 409
        assert (await second.call("POST", session_id, "resume", token="wrong"))[0] == 403

        status, resumed = await second.call("POST", session_id, "resume")
        assert status == 200, resumed
        assert resumed["status"] == "running"
        assert resumed["state"] == before["state"]  # exactly where the log left it
        assert (await second.call("POST", session_id, "resume"))[0] == 409

        # The person's page reconnects and carries on; the log continues its numbering.
        ws = await second.websocket(session_id, "user")
        synced = (await receive_until(ws, lambda n: n.get("context") is not None))[-1]
        assert synced["messages"] == before["state"]["chat"]
        request_id = before["state"]["pending_confirmations"][0]["request_id"]
        ws.write_message(json.dumps({"action": f'ACCEPT_CONFIRMATION(request_id="{request_id}")'}))
        accepted = await receive_until(ws, lambda n: event_of(n).get("type") == "confirm_accept")
        assert accepted[-1]["seq"] > before["state"]["seq"]
        ws.write_message(json.dumps({"action": "FINISH()"}))
        end = await receive_until(ws, lambda n: n.get("done"))
        assert end[-1]["end_reason"] == "finished"
        ws.close()
        final = await poll(second, session_id, lambda s: s["status"] == "finished")

        events = read_events(results / session_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert (results / session_id / "events.jsonl").read_bytes().startswith(log_before)
        resumed_part = events[before["state"]["seq"]:]
        assert any(e.actor == "agent" for e in resumed_part)  # the agent carried on, too
        assert replay(results / session_id).final_state["outcome"] == final["state"]["outcome"]
        saved = read_session(results / session_id)
        assert saved["status"] == "finished" and saved["delivered"]
        assert saved["started_at"] == on_disk["started_at"] and saved["resumed_at"]
        assert second.signal(signal.SIGTERM) == 0

    run(body())


def test_a_server_shut_down_on_redis_interrupts_its_sessions_and_the_next_one_resumes_them(
        run, servers, redis_server, tmp_path):
    results = tmp_path / "results"

    async def body():
        first = await servers(results, redis_server.url)
        session_id, before = await settled_session(first)
        assert first.signal(signal.SIGTERM) == 0  # a clean shutdown interrupts, never ends
        on_disk = read_session(results / session_id)
        assert on_disk["status"] == "interrupted"
        assert on_disk["interrupt_reason"] == "the server stopped"
        logged = read_events(results / session_id)
        assert "end" not in [e.type.value for e in logged]
        client = redis.Redis.from_url(redis_server.url)
        try:  # the step stream is still there, less the steps the env logged (it trims them)
            assert client.exists(f"cogym:{session_id}/step")
            assert client.xlen(f"cogym:{session_id}/step") <= 3
        finally:
            client.close()

        second = await servers(results, redis_server.url)
        status, resumed = await second.call("POST", session_id, "resume")
        assert status == 200, resumed
        assert resumed["state"] == before["state"]
        status, _ = await second.call("POST", session_id, "actions",
                                      body={"role": "user", "action": 'ADD_ITEM(text="map case")'})
        assert status == 200
        after = await poll(second, session_id, lambda s: "map case" in s["state"]["outcome"])
        kazoo_messages = [m for m in after["state"]["chat"] if m["text"] == KAZOO]
        assert len(kazoo_messages) == 1
        assert after["state"]["outcome"].count("kazoo") == 1
        new_events = read_events(results / session_id)[len(logged):]
        assert [e.seq for e in new_events][:1] == [len(logged) + 1]
        assert not [e for e in new_events if e.actor == "user" and e.type.value == "message"]
        status, ended = await second.call("DELETE", session_id)
        assert (status, ended["status"]) == (200, "finished")
        assert second.signal(signal.SIGTERM) == 0

        # Without any server, a host on the same folder lists it as finished and takes a rating.
        host = SessionHost(results)
        [stored] = host.recover()
        assert (stored.session_id, stored.status) == (session_id, "finished")
        ratings = host.rate(session_id, "user", 5, 4, "kept my kazoo")
        assert json.loads((results / session_id / "ratings.json").read_text()) == ratings
        assert host.snapshot(session_id)["ratings"]["user"]["satisfaction"] == 4
        with pytest.raises(HostingError) as refused:
            await host.resume(session_id)
        assert refused.value.status == 409

    run(body())


def test_a_session_whose_log_fails_is_shown_as_failed(run, tmp_path, monkeypatch):
    """The event log could not take an event: the session stops there, and the host reports it
    failed (with why), as session.json does, rather than finished."""
    from cogym_lab.nodes import results

    written = {"events": 0}
    append = results.ResultsWriter.append_event

    def full_disk_after_two(self, event):
        written["events"] += 1
        if written["events"] > 2:
            raise OSError(28, "No space left on device")
        return append(self, event)

    monkeypatch.setattr(results.ResultsWriter, "append_event", full_disk_after_two)

    async def body():
        host = SessionHost(tmp_path / "results")
        hosted = await host.create("todo", team="example", people=[], idle_seconds=30)
        async with asyncio.timeout(60):
            while hosted.status == "running":
                await asyncio.sleep(0.05)
        summary = host.snapshot(hosted.session_id)
        assert summary["status"] == "failed" and summary["end_reason"] == "log_failed"
        assert "No space left on device" in summary["error"]
        assert read_session(hosted.directory)["status"] == "failed"
        await host.close()

    run(body())
