"""The tabular task in a person's notebook when the live documents come from
jupyter-server-documents (the backend jupyter-ai v3 installs), not jupyter-collaboration.

The two backends cannot share a venv, so a second venv is built with jupyter-server-documents and
a regular install of this repository, and a real ``jupyter server`` runs from it. As in
test_notebook_bridge.py, the notebook is opened with a kernel through the sessions API (as
JupyterLab does), a cogym session is created from it over REST, and a scripted agent
(tests/support/notebook_agents.py, imported by that server) reacts to its notifications. The
person runs cells both ways JupyterLab can with this backend: over the kernel websocket, and
through the backend's server-side execution (``POST /api/kernels/<id>/execute``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.agent_writes import agent_cells, cell_by_id, source_of
from tests.support.notebook_agents import GREETING, NEXT_CELL, SUM_SALES, heard
from tests.support.server_documents import (
    ServerDocumentsServer,
    build_server_documents_venv,
    installed_modules,
    source_hash,
)
from tests.support.yroom import type_into

# The first test waits for the venv (a minute or two with pip's cache); cells wait up to 60 s.
pytestmark = pytest.mark.timeout(900)

SESSIONS = "cogym/api/sessions"
AGENT_CELL_KEY = "cogym"


@pytest.fixture(scope="session")
def server_documents_python(tmp_path_factory) -> Path:
    return build_server_documents_venv(tmp_path_factory.mktemp("server-documents") / "venv")


@pytest.fixture(scope="module")
def server(server_documents_python, tmp_path_factory):
    root = tmp_path_factory.mktemp("server-documents-server") / "root"
    root.mkdir()
    running = ServerDocumentsServer(server_documents_python, root).start()
    yield running
    running.stop()


def open_notebook(server: ServerDocumentsServer, path: str, cells: list[Any]) -> str:
    """Write a notebook and open it with a kernel, as JupyterLab does: its kernel id."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells.extend(cells)
    (server.root / path).write_text(nbformat.writes(notebook))
    status, model = server.call("POST", "api/sessions", {
        "path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}})
    assert status == 201, model
    return model["kernel"]["id"]


def team_file(server: ServerDocumentsServer, greet: bool) -> str:
    """The registered team (the server takes no paths) whose analyst greets, or not."""
    return "server-documents-greet" if greet else "server-documents-quiet"


def create_session(server: ServerDocumentsServer, path: str, kernel_id: str,
                   greet: bool, team: str | None = None) -> dict[str, Any]:
    status, created = server.call("POST", SESSIONS, {
        "task": "tabular_analysis", "team": team or team_file(server, greet), "people": ["user"],
        "idle_seconds": 60, "notebook": {"path": path, "kernel_id": kernel_id},
        "env_args": {"query": "What do the sales say?"}})
    assert status == 201, (created, server.log())
    return created


async def until(check: Callable[[], Any], what: str, server: ServerDocumentsServer,
                timeout: float = 60.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail with the server's log."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; server log:\n{server.log()}")
        await asyncio.sleep(0.2)


def saved_agent_cell(server: ServerDocumentsServer, path: str, output: str
                     ) -> dict[str, Any] | None:
    """The agent's cell whose outputs include ``output``, once the backend saved it."""
    for cell in server.notebook(path)["cells"]:
        if AGENT_CELL_KEY in cell["metadata"] and output in text_of(cell["outputs"]):
            return cell
    return None


def text_of(outputs: list[dict[str, Any]]) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)


def snapshot(server: ServerDocumentsServer, session_id: str) -> dict[str, Any]:
    status, state = server.call("GET", f"{SESSIONS}/{session_id}")
    assert status == 200, state
    return state


def component(state: dict[str, Any], name: str) -> Any:
    view = state["state"]["views"]["user"]  # the caller's own seat: all it may read
    return next(c for c in view["components"] if c["name"] == name)["content"]


def findings(server: ServerDocumentsServer, session_id: str) -> str:
    """The shared findings editor, where the agent writes down the person's cells."""
    return component(snapshot(server, session_id), "findings")


def recorded_cells(state: dict[str, Any]) -> list[dict[str, Any]]:
    return component(state, "notebook")["cells"]


# -- the tests ----------------------------------------------------------------------------------

def test_the_second_venv_serves_documents_with_jupyter_server_documents_only(
        server_documents_python):
    found = installed_modules(server_documents_python, "jupyter_server_documents",
                              "jupyter_server_ydoc", "cogym_lab")
    # cogym_lab no longer pulls in jupyter-collaboration (its jupyter_server_ydoc extension)
    assert found == {"jupyter_server_documents": True, "jupyter_server_ydoc": False,
                     "cogym_lab": True}


async def test_an_agent_cell_lands_in_the_notebook_with_its_outputs(server):
    path = "greeting.ipynb"
    kernel_id = open_notebook(server, path, [nbformat.v4.new_markdown_cell("# My analysis")])
    created = create_session(server, path, kernel_id, greet=True)
    session_id = created["session_id"]
    assert created["people"] == ["user"]

    # Read back from the server: the backend saved the live document to the file.
    shown = await until(lambda: saved_agent_cell(server, path, "42"),
                        "the agent's cell in the saved notebook", server)
    assert shown["source"] == (f"# written by agent (cogym agent, session {session_id})\n"
                               + GREETING)
    assert shown["metadata"][AGENT_CELL_KEY] == {"author": "agent", "session": session_id}
    assert isinstance(shown["execution_count"], int) and shown["execution_count"] >= 1
    assert [o["output_type"] for o in shown["outputs"]] == ["stream", "execute_result"]
    assert shown["outputs"][0]["text"] == "hello from the agent\n"
    assert shown["outputs"][1]["data"]["text/plain"] == "42"
    assert server.notebook(path)["cells"][0]["source"] == "# My analysis"  # the person's stays

    (recorded,) = recorded_cells(snapshot(server, session_id))
    assert (recorded["ran_by"], recorded["status"]) == ("agent", "ok")
    assert recorded["execution_count"] == shown["execution_count"]
    assert server.call("DELETE", f"{SESSIONS}/{session_id}")[0] == 200
    # ending the session disconnects from the kernel but never stops it: it is the person's
    assert server.call("GET", f"api/kernels/{kernel_id}")[0] == 200


async def test_the_persons_cells_reach_the_agent_both_ways_jupyterlab_runs_them(server):
    path = "person.ipynb"
    later = nbformat.v4.new_code_cell("print('person sees', total)", id="person-cell")
    kernel_id = open_notebook(server, path, [nbformat.v4.new_markdown_cell("# Sales"), later])
    browser = await server.person(kernel_id)
    session_id = create_session(server, path, kernel_id, greet=False)["session_id"]

    # 1. Over the kernel websocket: the agent's notification holds the cell and its outputs,
    # which the agent writes into the findings.
    first = "import pandas as pd\nsales = pd.DataFrame({'amount': [3, 4, 5]})\n" \
            "print('rows', len(sales))"
    assert text_of(await browser.execute(first)) == "rows 3\n"
    quote = heard({"source": first, "outputs": [{"text": "rows 3\n"}]})
    await until(lambda: quote in findings(server, session_id),
                "the agent to write down the person's cell", server)
    # ...and the agent uses the person's variable in a cell that lands in the notebook.
    summed = await until(lambda: saved_agent_cell(server, path, "total 12"),
                         "the agent's cell in the saved notebook", server)
    assert summed["source"].split("\n", 1) == [
        f"# written by agent (cogym agent, session {session_id})", SUM_SALES]

    # 2. Server-side execution, the way JupyterLab runs a cell with this backend: the backend
    # runs the document's cell and writes its outputs; the agent hears of it all the same.
    status, reply = server.call("POST", f"api/kernels/{kernel_id}/execute", {
        "document_id": server.room_id(path),
        "cells": [{"cell_id": "person-cell",
                   "source_hash": source_hash(server.python, later.source)}]})
    assert status == 200, reply
    second = heard({"source": later.source, "outputs": [{"text": "person sees 12\n"}]})
    await until(lambda: second in findings(server, session_id),
                "the agent to write down the cell run server-side", server)
    ran = [(c["ran_by"], c["status"]) for c in recorded_cells(snapshot(server, session_id))]
    assert ran == [("user", "ok"), ("agent", "ok"), ("user", "ok")]

    def person_cell_saved() -> dict[str, Any] | None:
        cell = next(c for c in server.notebook(path)["cells"] if c.get("id") == "person-cell")
        return cell if text_of(cell["outputs"]) == "person sees 12\n" else None

    await until(person_cell_saved, "the person's cell to be saved with its outputs", server)
    assert server.call("DELETE", f"{SESSIONS}/{session_id}")[0] == 200
    browser.close()


async def test_a_persons_typing_in_the_agents_cell_survives_its_outputs_and_next_cell(server):
    """The person types into the agent's running cell from a replica of the live document
    (joined over the backend's room websocket); the replica then hears nothing while the
    agent's outputs, execution count and next cell arrive, and types again from that stale
    view. Both edits are in the saved notebook, beside the agent's outputs, and it validates."""
    path = "typing.ipynb"
    kernel_id = open_notebook(server, path, [
        nbformat.v4.new_markdown_cell("# Mine"), nbformat.v4.new_code_cell("x = 1", id="mine")])
    replica = await server.replica(path)
    try:
        create_session(server, path, kernel_id, greet=False, team=server.TWO_CELLS)
        first = (await replica.until(lambda: [c["id"] for c in agent_cells(replica.cells())],
                                     "the agent's cell"))[0]
        await replica.send(replica.edit(type_into(first, "\n# typed while it runs")))

        def saved_with_both() -> dict[str, Any] | None:
            cells = agent_cells(server.notebook(path)["cells"])
            return cells if len([c for c in cells if c["outputs"]]) == 2 else None

        await until(saved_with_both, "the agent's outputs and next cell, saved", server)
        await replica.send(replica.edit(type_into(first, " and after")))  # a stale view

        def saved_typing() -> dict[str, Any] | None:
            saved = server.notebook(path)
            cell = cell_by_id(saved["cells"], first)
            return saved if cell and source_of(cell).endswith("and after") else None

        saved = await until(saved_typing, "the person's stale edit, saved", server)
        nbformat.validate(nbformat.from_dict(saved))
        shown = cell_by_id(saved["cells"], first)
        assert source_of(shown).endswith("6 * 7\n# typed while it runs and after")
        assert text_of(shown["outputs"]) == "slow cell done\n42"
        assert isinstance(shown["execution_count"], int)
        following = agent_cells(saved["cells"])[1]
        assert source_of(following).endswith(NEXT_CELL)
        assert text_of(following["outputs"]) == "the next cell\n"
        assert source_of(cell_by_id(saved["cells"], "mine")) == "x = 1"
        fields = ("source", "outputs", "execution_count")

        def replica_agrees() -> bool:
            cell = cell_by_id(replica.cells(), first) or {}
            return all(cell.get(key) == shown[key] for key in fields)

        await replica.until(replica_agrees, "the replica to agree")
    finally:
        await replica.close()
