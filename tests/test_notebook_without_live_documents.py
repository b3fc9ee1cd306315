"""A server with no live-document extension refuses a session from a notebook, and says what to
install, rather than running the agent's cells where nobody sees them."""

from __future__ import annotations

import asyncio
import json

import nbformat
import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

NOTEBOOK = "analysis.ipynb"


@pytest.fixture
def jp_server_config(tmp_path):
    # Only cogym_lab: neither jupyter-collaboration nor jupyter-server-documents is enabled.
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True,
                                                  "jupyter_server_ydoc": False}},
            "CogymLabApp": {"results_dir": str(tmp_path / "results")}}


def test_a_notebook_session_is_refused_without_a_live_document_backend(
        jp_asyncio_loop, jp_serverapp, jp_fetch, jp_root_dir):
    (jp_root_dir / NOTEBOOK).write_text(nbformat.writes(nbformat.v4.new_notebook()))

    async def post(*path, body):
        try:
            response = await jp_fetch(*path, method="POST", body=json.dumps(body))
        except HTTPClientError as error:
            response = error.response
        return response.code, json.loads(response.body)

    async def body():
        status, model = await post("api", "sessions", body={
            "path": NOTEBOOK, "type": "notebook", "name": NOTEBOOK,
            "kernel": {"name": "python3"}})
        assert status == 201, model
        status, error = await post("cogym", "api", "sessions", body={
            "task": "tabular_analysis", "people": ["user"], "env_args": {"query": "Anything?"},
            "notebook": {"path": NOTEBOOK, "kernel_id": model["kernel"]["id"]}})
        assert 400 <= status < 500, error
        assert "install jupyter-collaboration" in error["message"]
        assert "jupyter-server-documents" in error["message"]
        listing = json.loads((await jp_fetch("cogym", "api", "sessions")).body)
        assert listing["sessions"] == []  # nothing was left half-started

    jp_asyncio_loop.run_until_complete(asyncio.wait_for(body(), 120))
