"""A person types into the live notebook while the agent writes to it (jupyter-collaboration).

The person is a replica of the notebook's live document that joins the room over its websocket,
as JupyterLab does (tests/support/yroom.py), and whose edits are made on a copy that has not yet
heard the agent's latest writes: the person typing into a stale view while the agent's write is
on its way. The agent's writes are the real ones (``LiveNotebook`` and ``ServerNotebookLink``)
with outputs from a real kernel, in a real Jupyter server (pytest-jupyter). Whatever the order
in which the two sides' writes arrive, nothing the person typed is lost, the agent's outputs and
execution count are there, and the notebook the backend saves is valid nbformat.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from cogym_lab.core.messages import status_channel
from cogym_lab.server.live_notebooks import NotebookOpener
from cogym_lab.server.live_notebooks.agent_cells import nbformat_outputs
from cogym_lab.server.live_notebooks.document import LiveNotebook
from cogym_lab.server.live_notebooks.link import agent_metadata, marked_source
from tests.support.agent_writes import (
    TWO_CELL_MEMBERS,
    agent_cells,
    cell_by_id,
    notebook_opener,
    read_saved,
    real_results,
    source_of,
    text_of,
    two_cell_session,
    until,
    write_two_cell_team,
)
from tests.support.notebook_agents import NEXT_CELL
from tests.support.yroom import RoomReplica, type_into

pytestmark = pytest.mark.timeout(300)

NOTEBOOK = "shared.ipynb"
PERSON_CELL = "person-cell"
SESSION = "20260101-000000-concurrent"
OPS = ("person", "outputs", "count", "next")


@pytest.fixture
def jp_server_config(tmp_path, jp_root_dir):
    return {
        "ServerApp": {"jpserver_extensions": {"cogym_lab": True, "jupyter_server_ydoc": True,
                                              "jupyter_server_fileid": True}},
        "CogymLabApp": {"results_dir": str(tmp_path / "results"),
                        "teams": write_two_cell_team(tmp_path), "members": TWO_CELL_MEMBERS},
        "SQLiteYStore": {"db_path": str(tmp_path / "ystore.db")},
        "BaseFileIdManager": {"root_dir": str(jp_root_dir), "db_path": str(tmp_path / "ids.db"),
                              "db_journal_mode": "OFF"},
        "YDocExtension": {"document_save_delay": 0.2},
    }


@pytest.fixture
def notebook(jp_root_dir, jp_fetch):
    """Write the person's notebook and open it with a kernel, as JupyterLab does: its kernel
    id."""
    return notebook_opener(jp_root_dir, jp_fetch, NOTEBOOK, PERSON_CELL)


@pytest.fixture
def person(jp_fetch, jp_http_port, jp_base_url, jp_auth_header):
    """Join the notebook's room as the person's browser does: a replica of the document."""
    replicas: list[RoomReplica] = []

    async def join() -> RoomReplica:
        response = await jp_fetch("api", "collaboration", "session", NOTEBOOK, method="PUT",
                                  body=json.dumps({"format": "json", "type": "notebook"}))
        session = json.loads(response.body)
        room = f"{session['format']}:{session['type']}:{session['fileId']}"
        # The room's name as JupyterLab sends it, its colons unescaped.
        url = (f"ws://127.0.0.1:{jp_http_port}{jp_base_url}api/collaboration/room/{room}"
               f"?sessionId={session['sessionId']}")
        ws = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
        replica = RoomReplica(ws)
        replicas.append(replica)
        return await replica.join()

    yield join
    for replica in replicas:
        replica.ws.close()


def typing_at(source: str, number: int) -> int:
    """Where the person types, varied: the end, the start of the code, the very start."""
    return [len(source), source.index("\n") + 1, 0][number % 3]


def with_typed(source: str, at: int, typed: str) -> str:
    return source[:at] + typed + source[at:]


def test_a_persons_typing_survives_every_order_of_the_agents_writes(
        run, notebook, person, jp_serverapp, jp_root_dir):
    """The four writes (the person's edit, the agent's outputs, its execution count, its next
    cell) in each of their 24 orders. The person's edit is made on a replica that has heard
    none of the agent's writes to the cell; it types into the agent's cell and into its own
    cell at once."""

    async def body():
        kernel_id = await notebook()
        results = list((await real_results(jp_serverapp.kernel_manager, kernel_id,
                                           jp_root_dir)).values())
        live = LiveNotebook(jp_serverapp.web_app.settings, NOTEBOOK)
        replica = await person()
        own_typed = ""
        checks = []
        for number, order in enumerate(itertools.permutations(OPS)):
            own_typed += f"+{number}"
            checks.append(await _one_order(live, replica, number, order,
                                           results[number % len(results)], own_typed))

        # What the backend saved: valid nbformat, every agent cell with the person's typing, its
        # outputs and its count, and the person's own cell with everything they typed.
        def saved_all() -> dict[str, Any] | None:
            try:
                saved = read_saved(jp_root_dir / NOTEBOOK)
            except (nbformat.ValidationError, ValueError):
                return None  # not saved yet, or read in the middle of a save
            cell = cell_by_id(saved["cells"], PERSON_CELL)
            return saved if cell and source_of(cell).endswith(own_typed) and \
                len(agent_cells(saved["cells"])) == 2 * len(checks) else None

        saved = await until(saved_all, "the backend to save the notebook")
        for cell_id, expected, outputs, count in checks:
            cell = cell_by_id(saved["cells"], cell_id)
            assert (source_of(cell), cell["execution_count"]) == (expected, count)
            assert text_of(cell["outputs"]) == text_of(outputs)
        await replica.close()

    run(body())


async def _one_order(live: LiveNotebook, replica: RoomReplica, number: int,
                     order: tuple[str, ...], result: Any, own_typed: str
                     ) -> tuple[str, str, list[dict[str, Any]], int]:
    """One agent cell: the person's stale edit and the agent's three writes in ``order``;
    checks the live notebook and that the replica agrees. Returns what the file must keep."""
    metadata = agent_metadata("agent", SESSION)
    source = marked_source("agent", SESSION, f"print({number})")
    cell_id = await live.add_code_cell(source, metadata)
    await replica.until(lambda: replica.index_of(cell_id) is not None, "the agent cell")
    typed = f"# note {number} "
    at = typing_at(source, number)

    def person_types(notebook: Any) -> None:  # into the agent's cell and into their own
        type_into(cell_id, typed, at)(notebook)
        type_into(PERSON_CELL, f"+{number}")(notebook)

    update = replica.edit(person_types)  # on a copy that has heard none of what follows
    outputs = nbformat_outputs(result)
    next_id = None
    for op in order:
        if op == "person":
            await replica.send(update)
            await until(lambda: _source(live, cell_id, typed), "the person's edit")
        elif op == "outputs":
            assert await live.set_cell_outputs(cell_id, outputs)
        elif op == "count":
            assert await live.set_execution_count(cell_id, number + 1)
        else:
            next_id = await live.add_code_cell(
                marked_source("agent", SESSION, NEXT_CELL), metadata, after=cell_id)
    expected = with_typed(source, at, typed)
    cells = await live.cells()
    shown = cell_by_id(cells, cell_id)
    assert shown is not None, order
    assert source_of(shown) == expected, order
    assert shown["outputs"] == outputs, order
    assert shown["execution_count"] == number + 1, order
    assert cells[cells.index(shown) + 1]["id"] == next_id, order  # right below, as added
    assert source_of(cell_by_id(cells, PERSON_CELL)) == "x = 1" + own_typed, order
    # The person's replica, once it hears everything, sees the same notebook.
    await replica.until(lambda: replica.cells() == cells, f"the replica to agree ({order})")
    return cell_id, expected, outputs, number + 1


def _source(live: LiveNotebook, cell_id: str, typed: str):
    async def check() -> bool:
        cell = cell_by_id(await live.cells(), cell_id)
        return cell is not None and typed in source_of(cell)

    return check()


def test_deleting_moving_and_two_cells_in_flight(run, notebook, person, jp_serverapp,
                                                  jp_root_dir):
    """The same failure elsewhere, through the session's link with a real kernel: a person who
    deletes an agent cell while it runs (it stays deleted), who moves one from a stale view at
    the moment its outputs arrive (the outputs are put back in the moved cell, and the panel is
    told), and two agent cells in flight at once, typed into while they run."""

    async def body():
        kernel_id = await notebook()
        link = NotebookOpener(jp_serverapp).link({"path": NOTEBOOK, "kernel_id": kernel_id},
                                                 "user")
        notices: list[dict[str, Any]] = []

        async def publish(session_id: str, status: dict[str, Any]) -> bool:
            notices.append(status)
            return True

        link._publish = publish
        await link.start(SESSION)
        replica = await person()
        live = link.document
        try:
            # 1. Deleted while it runs: its outputs do not bring it back.
            doomed = await link.show_cell("agent", "import time\ntime.sleep(0.3)\nprint('gone')")
            await replica.until(lambda: replica.index_of(doomed) is not None, "the agent cell")
            running = asyncio.create_task(link.executor.execute(
                "import time\ntime.sleep(0.3)\nprint('gone')"))
            await replica.send(replica.edit(lambda nb: nb.ycells.pop(replica.index_of(doomed))))
            await until(lambda: _absent(live, doomed), "the deletion")
            await link.show_outputs(doomed, await running)
            assert cell_by_id(await live.cells(), doomed) is None

            # 2. Moved from a stale view while its outputs arrive: a new cell without them.
            moved = await link.show_cell("agent", "print('moved')")
            await replica.until(lambda: replica.index_of(moved) is not None, "the agent cell")
            result = await link.executor.execute("print('moved')")
            move = replica.edit(lambda nb: _move_to_top(nb, moved))  # before it hears outputs
            await link.show_outputs(moved, result)
            await replica.send(move)
            await until(lambda: _at_top(live, moved), "the move")
            assert cell_by_id(await live.cells(), moved)["outputs"] == []  # lost to the move

            # 3. Two agent cells in flight; the person types into both before either finishes.
            first = await link.show_cell("agent", "print('first')")
            second = await link.show_cell("analyst", "print('second')")
            await replica.until(lambda: replica.index_of(second) is not None, "both cells")
            typing = replica.edit(lambda nb: (type_into(first, "# mine 1\n", 0)(nb),
                                              type_into(second, "\n# mine 2")(nb)))
            second_result = await link.executor.execute("print('second')")
            first_result = await link.executor.execute("print('first')")
            await link.show_outputs(second, second_result)
            await replica.send(typing)
            await until(lambda: _source(live, first, "# mine 1"), "the person's typing")
            await link.show_outputs(first, first_result)

            cells = await live.cells()
            order = [cell.get("id") for cell in cells]
            assert order.index(second) == order.index(first) + 1
            assert source_of(cell_by_id(cells, first)).startswith("# mine 1\n# written by agent")
            assert source_of(cell_by_id(cells, second)).endswith("print('second')\n# mine 2")
            assert text_of(cell_by_id(cells, first)["outputs"]) == "first\n"
            assert text_of(cell_by_id(cells, second)["outputs"]) == "second\n"
            # The moved cell got its outputs back at the agent's next write, where it was moved.
            assert order[0] == moved
            assert text_of(cell_by_id(cells, moved)["outputs"]) == "moved\n"
            await until(lambda: notices, "the panel to be told")
            put_back = [item for status in notices for item in status["notebook"]["restored"]]
            assert {(item["cell_id"], item["what"]) for item in put_back} == {(moved, "outputs")}
            assert "moved" in notices[-1]["notebook"]["summary"]
            await replica.until(lambda: replica.cells() == cells, "the replica to agree")
            saved = await until(lambda: _saved_with(jp_root_dir / NOTEBOOK, "# mine 2"),
                                "the saved notebook")
            assert text_of(cell_by_id(saved["cells"], moved)["outputs"]) == "moved\n"
        finally:
            await link.close()
            await replica.close()

    run(body())


def test_a_session_with_a_person_typing_into_the_agents_running_cell(
        run, api, notebook, person, jp_serverapp, jp_root_dir):
    """End to end: a scripted agent's slow cell; the person types into it while it runs, from a
    replica that then hears nothing until the agent's outputs, execution count and next cell
    are all in. Their typing is in the live notebook and in the saved file, beside the agent's
    outputs, and the file validates."""

    async def body():
        kernel_id = await notebook()
        replica = await person()
        status, created = await api("POST", body=two_cell_session(NOTEBOOK, kernel_id))
        assert status == 201, created
        session_id = created["session_id"]
        first = await replica.until(lambda: _agent_ids(replica), "the agent's first cell")
        first = first[0]
        typing = replica.edit(type_into(first, "\n# the person's note"))
        await replica.send(typing)  # while the cell runs; then the replica stops listening
        live = LiveNotebook(jp_serverapp.web_app.settings, NOTEBOOK)
        cells = await until(lambda: _two_finished(live), "the agent's two cells", timeout=60)
        more = replica.edit(type_into(first, " (stale)"))  # made before hearing any of it
        await replica.send(more)
        await until(lambda: _source(live, first, "(stale)"), "the person's second edit")

        cells = await live.cells()
        shown = cell_by_id(cells, first)
        assert source_of(shown).endswith("print('slow cell done')\n6 * 7\n"
                                         "# the person's note (stale)")
        assert text_of(shown["outputs"]) == "slow cell done\n42"
        assert isinstance(shown["execution_count"], int)
        following = agent_cells(cells)
        assert following[0]["id"] == first and len(following) == 2
        assert source_of(following[1]).endswith(NEXT_CELL)
        await replica.until(lambda: replica.cells() == cells, "the replica to agree")
        saved = await until(lambda: _saved_with(jp_root_dir / NOTEBOOK, "(stale)", 2),
                            "the saved notebook")
        assert text_of(cell_by_id(saved["cells"], first)["outputs"]) == "slow cell done\n42"
        # The session's record has the cell the agent ran, not the person's typing.
        status, snapshot = await api("GET", session_id)
        view = snapshot["state"]["views"]["user"]
        recorded = next(c for c in view["components"] if c["name"] == "notebook")
        assert recorded["content"]["cells"][0]["cell_id"] == first
        # With a live document, the panel is told nothing about the notebook: nothing was lost.
        bus = jp_serverapp.web_app.settings["cogym_lab_host"].get(session_id).bus
        statuses = await bus.subscribe(status_channel(session_id), from_beginning=True)
        seen = []
        while (message := await statuses.get(timeout=0.2)) is not None:
            seen.append(message)
        await statuses.close()
        assert not [m for m in seen if "notebook" in m]
        assert (await api("DELETE", session_id))[0] == 200
        await replica.close()

    run(body())


# -- helpers ------------------------------------------------------------------------------------

async def _absent(live: LiveNotebook, cell_id: str) -> bool:
    return cell_by_id(await live.cells(), cell_id) is None


async def _at_top(live: LiveNotebook, cell_id: str) -> bool:
    return (await live.cells())[0].get("id") == cell_id


def _move_to_top(notebook: Any, cell_id: str) -> None:
    """Move a cell as JupyterLab does: the cell as this view has it, re-created where it goes
    and deleted where it was, in one transaction."""
    index = next(i for i, ycell in enumerate(notebook.ycells) if ycell.get("id") == cell_id)
    cell = notebook.get_cell(index)
    with notebook.ydoc.transaction():
        del notebook.ycells[index]
        notebook.ycells.insert(0, notebook.create_ycell(cell))


def _agent_ids(replica: RoomReplica) -> list[str]:
    return [cell["id"] for cell in agent_cells(replica.cells())]


async def _two_finished(live: LiveNotebook) -> list[dict[str, Any]] | None:
    cells = agent_cells(await live.cells())
    done = [cell for cell in cells if cell["execution_count"] is not None]
    return cells if len(done) == 2 else None


def _saved_with(path: Path, typed: str, agent_count: int | None = None
                ) -> dict[str, Any] | None:
    try:
        saved = read_saved(path)
    except (nbformat.ValidationError, ValueError):
        return None
    cells = agent_cells(saved["cells"])
    if agent_count is not None and len([c for c in cells if c["outputs"]]) < agent_count:
        return None
    return saved if any(typed in source_of(cell) for cell in saved["cells"]) else None
