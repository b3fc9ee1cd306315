"""A session from a notebook on a server without real-time collaboration (neither
jupyter-collaboration nor jupyter-server-documents): the agent's cells go into the notebook file.

The agent's writes go through the server's contents manager (read, change only the agent's
cells and fields, save, read back, check). The person's browser does not follow the file: it
saves its own copy over it, as JupyterLab does, with ``PUT /api/contents``. Such a copy may
predate the agent's cells or their outputs; whatever the order of the browser's saves and the
agent's writes, the file ends up with everything the person typed and everything the agent
wrote, valid nbformat, and the panel is told what had to be put back.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from functools import partial
from typing import Any

import nbformat
import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.core.messages import status_channel
from cogym_lab.server.live_notebooks import NotebookOpener
from cogym_lab.server.live_notebooks.agent_cells import nbformat_outputs
from cogym_lab.server.live_notebooks.file_notebook import FileNotebook
from cogym_lab.server.live_notebooks.link import FILE_MODE_MESSAGE
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

pytestmark = pytest.mark.timeout(300)

NOTEBOOK = "analysis.ipynb"
PERSON_CELL = "person-cell"
SESSION = "20260101-000000-file"


@pytest.fixture
def jp_server_config(tmp_path):
    # Only cogym_lab: neither jupyter-collaboration nor jupyter-server-documents is enabled.
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True,
                                                  "jupyter_server_ydoc": False}},
            "CogymLabApp": {"results_dir": str(tmp_path / "results"),
                            "teams": write_two_cell_team(tmp_path),
                            "members": TWO_CELL_MEMBERS}}


@pytest.fixture
def notebook(jp_root_dir, jp_fetch):
    """Write the person's notebook and open it with a kernel, as JupyterLab does."""
    return notebook_opener(jp_root_dir, jp_fetch, NOTEBOOK, PERSON_CELL)


@pytest.fixture
def browser(jp_fetch):
    """The person's browser: loads its copy of the notebook and saves it back, by REST."""

    class Browser:
        async def load(self) -> dict[str, Any]:
            response = await jp_fetch("api", "contents", NOTEBOOK, params={"content": "1"})
            return json.loads(response.body)["content"]

        async def save(self, content: dict[str, Any]) -> None:
            await jp_fetch("api", "contents", NOTEBOOK, method="PUT", body=json.dumps(
                {"type": "notebook", "format": "json", "content": content}))

    return Browser()


def type_into(content: dict[str, Any], cell_id: str, text: str) -> None:
    cell = cell_by_id(content["cells"], cell_id)
    cell["source"] = source_of(cell) + text


def file_cells(jp_root_dir) -> list[dict[str, Any]]:
    return read_saved(jp_root_dir / NOTEBOOK)["cells"]


def polled_cells(jp_root_dir) -> list[dict[str, Any]]:
    """The file's cells, or none while a save is writing it (jupyter_server writes in place)."""
    try:
        return file_cells(jp_root_dir)
    except ValueError:
        return []


def test_a_session_runs_and_the_browsers_saves_keep_the_agents_cells(
        run, api, notebook, browser, jp_serverapp, jp_root_dir):
    """A session from a notebook is no longer refused without a live document. The person's
    browser reloads once the agent's first cell is in the file, types into that cell and into
    its own, and saves while the cell runs, after its outputs and after the next cell; a second
    copy, loaded before the agent wrote anything, is saved last. Nothing typed is lost, the
    agent's cells and outputs are all there, and the panel is told what was put back."""

    async def body():
        kernel_id = await notebook()
        stale = await browser.load()  # a copy from before the session
        status, created = await api("POST", body=two_cell_session(NOTEBOOK, kernel_id))
        assert status == 201, created
        session_id = created["session_id"]

        first = (await until(lambda: agent_cells(polled_cells(jp_root_dir)),
                             "the agent's cell in the file", timeout=60))[0]
        assert first["outputs"] == [] and first["execution_count"] is None  # still running
        copy_ = await browser.load()  # File > Reload Notebook from Disk
        type_into(copy_, first["id"], "\n# typed while it runs")
        type_into(copy_, PERSON_CELL, "\ny = 2")
        await browser.save(copy_)  # 1. while it runs

        def finished(count: int):
            cells = [c for c in agent_cells(polled_cells(jp_root_dir)) if c["outputs"]]
            return cells if len(cells) >= count else None

        await until(lambda: finished(1), "the first cell's outputs", timeout=60)
        type_into(copy_, first["id"], " and after")
        await browser.save(copy_)  # 2. after its outputs, from a copy without them
        await until(lambda: finished(2), "the next agent cell", timeout=60)
        type_into(copy_, PERSON_CELL, "\nz = 3")
        await browser.save(copy_)  # 3. after the next cell, from a copy without it
        stale["cells"].append(nbformat.v4.new_markdown_cell("A note of mine", id="my-note"))
        await browser.save(stale)  # 4. a copy older than every agent cell

        cells = file_cells(jp_root_dir)  # read_saved validates it against the schema
        agent = agent_cells(cells)
        assert agent[0]["id"] == first["id"] and len(agent) == 2
        assert source_of(agent[0]).endswith("6 * 7\n# typed while it runs and after")
        assert text_of(agent[0]["outputs"]) == "slow cell done\n42"
        assert isinstance(agent[0]["execution_count"], int)
        assert source_of(agent[1]).endswith(NEXT_CELL)
        assert text_of(agent[1]["outputs"]) == "the next cell\n"
        # The stale copy's own content is what the person saved last: their cell as it had it
        # and their new note; the agent's cells went back where they were.
        assert source_of(cell_by_id(cells, PERSON_CELL)) == "x = 1"
        assert [c["id"] for c in cells][-1] == "my-note"
        assert [c.get("id") for c in cells].index(agent[0]["id"]) == 2

        # The panel heard how the notebook is written, and what was put back and why.
        bus = jp_serverapp.web_app.settings["cogym_lab_host"].get(session_id).bus
        statuses = await bus.subscribe(status_channel(session_id), from_beginning=True)
        notices = []
        while (message := await statuses.get(timeout=0.3)) is not None:
            if "notebook" in message:
                notices.append(message["notebook"])
        await statuses.close()
        assert notices[0]["live"] is False and notices[0]["message"] == FILE_MODE_MESSAGE
        restored = notices[-1]["restored"]
        assert {(item["cell_id"], item["what"], item["found_in"]) for item in restored} >= {
            (first["id"], "outputs", "save"), (agent[1]["id"], "cell", "save"),
            (first["id"], "cell", "save")}
        assert "put back" in notices[-1]["summary"]
        assert (await api("DELETE", session_id))[0] == 200

        # Once the session is over, the notebook is the person's alone: nothing is put back.
        await browser.save(stale)
        assert agent_cells(file_cells(jp_root_dir)) == []

    run(body())


ORDERS = [*itertools.permutations(("person", "outputs", "next")), ("together",)]


@pytest.mark.parametrize("copy_kind", ["reloaded", "stale"])
def test_every_order_of_a_browser_save_and_the_agents_writes(
        copy_kind, run, notebook, browser, jp_serverapp, jp_root_dir):
    """The browser's save, the agent's outputs (with the execution count: one write to the
    file) and its next cell, in each order and all at once, through the session's link with
    outputs of every kind from a real kernel. The browser's copy was loaded after the agent's
    cell was added and has the person's typing in it (``reloaded``), or before (``stale``)."""

    async def body():
        kernel_id = await notebook()
        results = list((await real_results(jp_serverapp.kernel_manager, kernel_id,
                                           jp_root_dir)).values())
        link = NotebookOpener(jp_serverapp).link({"path": NOTEBOOK, "kernel_id": kernel_id},
                                                 "user")
        assert isinstance(link.document, FileNotebook)
        notices: list[dict[str, Any]] = []

        async def publish(session_id: str, status: dict[str, Any]) -> bool:
            notices.append(status["notebook"])
            return True

        link._publish = publish
        await link.start(SESSION)
        own_typed = ""
        try:
            for number, order in enumerate(ORDERS):
                stale = await browser.load()
                cell_id = await link.show_cell("agent", f"print({number})")
                person_copy = await browser.load() if copy_kind == "reloaded" else stale
                typed = f"\n# note {number}"
                if copy_kind == "reloaded":
                    type_into(person_copy, cell_id, typed)
                type_into(person_copy, PERSON_CELL, f"+{number}")
                own_typed += f"+{number}"
                result = results[number % len(results)]
                steps = {"person": partial(browser.save, copy.deepcopy(person_copy)),
                         "outputs": partial(link.show_outputs, cell_id, result),
                         "next": partial(link.show_cell, "agent", NEXT_CELL)}
                if order == ("together",):
                    await asyncio.gather(*(step() for step in steps.values()))
                else:
                    for op in order:
                        await steps[op]()

                cells = file_cells(jp_root_dir)  # validated
                shown = cell_by_id(cells, cell_id)
                assert shown is not None, order
                assert source_of(cell_by_id(cells, PERSON_CELL)).endswith(own_typed), order
                if copy_kind == "reloaded":
                    assert source_of(shown).endswith(f"print({number}){typed}"), order
                assert shown["outputs"] == nbformat_outputs(result), order
                assert shown["execution_count"] == result.execution_count, order
                nexts = [c for c in agent_cells(cells) if source_of(c).endswith(NEXT_CELL)]
                assert len(nexts) == number + 1, order
            # Every agent cell is in the file, in the order the agent added them.
            agent = agent_cells(file_cells(jp_root_dir))
            assert len(agent) == 2 * len(ORDERS)
            if copy_kind == "stale":  # each save of a copy without the agent's cell said so
                assert any(item["what"] == "cell" and item["found_in"] == "save"
                           for notice in notices for item in notice["restored"])
        finally:
            await link.close()

    run(body())
