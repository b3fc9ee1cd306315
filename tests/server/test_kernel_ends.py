"""A session created from a notebook belongs to that notebook's kernel: it goes on through a
restart of the kernel and ends when the kernel is shut down; a session no kernel created is not
touched.

A real Jupyter server runs in-process (pytest-jupyter, driven from its own loop as in
test_jupyter_server.py) with the cogym_lab extension; its kernels are real, started and shut
down through the server's REST API as JupyterLab does.
"""

from __future__ import annotations

import json

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.server.kernel_ends import KERNEL_ENDED_REASON
from tests.support.jupyter_api import as_user, server_config, wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def jp_server_config(tmp_path):
    return server_config(tmp_path / "results", "alice", "bob")


@pytest.fixture
def kernels(jp_fetch):
    """``await kernels(method, *path)`` on the server's kernels API, as alice: the status."""

    async def call(method: str, *path: str) -> int:
        body = json.dumps({"name": "python3"}) if method == "POST" else None
        response = await jp_fetch("api", "kernels", *path, method=method, body=body,
                                  headers=as_user("alice"))
        return response.code

    return call


async def start_kernel(jp_fetch) -> str:
    response = await jp_fetch("api", "kernels", method="POST",
                              body=json.dumps({"name": "python3"}), headers=as_user("alice"))
    assert response.code == 201
    return json.loads(response.body)["id"]


async def create(api, created_in: dict[str, str] | None = None, **fields) -> str:
    body = {"task": "todo", "team": "example", "people": ["user"], "idle_seconds": 600,
            **fields}
    if created_in is not None:
        body["created_in"] = created_in
    status, created = await api("POST", body=body)
    assert status == 201, created
    assert created["created_in"] == created_in
    return created["session_id"]


def test_a_session_goes_on_through_a_restart_and_ends_with_its_kernel(
        run, alice, jp_fetch, kernels, jp_serverapp, tmp_path) -> None:
    async def body():
        kernel_id = await start_kernel(jp_fetch)
        other_kernel = await start_kernel(jp_fetch)
        mine = await create(alice, {"kernel_id": kernel_id, "path": "analysis.ipynb",
                                    "cell_id": "start-cell"})
        elsewhere = await create(alice, {"kernel_id": other_kernel})
        unbound = await create(alice)  # over REST, from no kernel
        watch = jp_serverapp.extension_manager.extension_apps["cogym_lab"]
        ends = next(iter(watch)).kernel_ends

        assert await kernels("POST", kernel_id, "restart") == 200
        await ends.check()  # a check right after the restart: nothing ends
        status, snapshot = await alice("GET", mine)
        assert snapshot["status"] == "running", snapshot["end_reason"]

        late = await create(alice, {"kernel_id": kernel_id})  # right before the shutdown
        assert await kernels("DELETE", kernel_id) == 204  # the person shuts it down
        late_final = await wait_until(alice, late, lambda s: s["status"] != "running")
        assert late_final["end_reason"] == KERNEL_ENDED_REASON
        final = await wait_until(alice, mine, lambda s: s["status"] != "running")
        assert final["end_reason"] == KERNEL_ENDED_REASON
        folder = tmp_path / "results" / mine
        assert json.loads((folder / "session.json").read_text())["end_reason"] == (
            KERNEL_ENDED_REASON)
        hosting = json.loads((folder / "hosting.json").read_text())
        assert hosting["created_in"]["kernel_id"] == kernel_id

        for session_id in (elsewhere, unbound):
            status, snapshot = await alice("GET", session_id)
            assert snapshot["status"] == "running", snapshot["end_reason"]
            status, _ = await alice("DELETE", session_id)
            assert status == 200
        assert await kernels("DELETE", other_kernel) == 204

    run(body())


def test_the_creator_alone_sees_where_a_session_was_created(run, alice, bob, jp_fetch,
                                                            kernels) -> None:
    async def body():
        kernel_id = await start_kernel(jp_fetch)
        session_id = await create(alice, {"kernel_id": kernel_id, "path": "a.ipynb"},
                                  people=["user", "guest"], seat_users={"guest": "bob"})
        status, seen = await alice("GET", session_id)
        assert seen["created_in"] == {"kernel_id": kernel_id, "path": "a.ipynb"}
        status, seen = await bob("GET", session_id)
        assert status == 200 and seen["seats"] == ["guest"] and seen["created_in"] is None
        status, _ = await alice("DELETE", session_id)
        assert await kernels("DELETE", kernel_id) == 204

    run(body())
