"""What tests of the agent's writes into a person's notebook share: real cell results of every
kind (a stream with a result, an error, a large image, a long stream) from a real kernel, and
checks of a saved notebook."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nbformat

from cogym_lab.kernels import CellResult
from cogym_lab.server.live_notebooks.link import AGENT_CELL_KEY
from cogym_lab.server.live_notebooks.server_kernel import ServerKernelExecutor

#: A PNG of random pixels, built in the kernel without any plotting library: a large image
#: output (about 640 kB once base64-encoded).
IMAGE_CELL = """\
import os, struct, zlib
from IPython.display import Image, display

def png(width, height):
    rows = b''.join(b'\\x00' + os.urandom(width * 3) for _ in range(height))
    def chunk(kind, data):
        return (struct.pack('>I', len(data)) + kind + data
                + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
    header = struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)
    return (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', header)
            + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))

display(Image(data=png(400, 400)))
print('an image')"""

#: One cell per kind of output the agent's writes must carry.
RESULT_CELLS = {
    "stream and result": "print('hello from the agent')\n6 * 7",
    "error": "undefined_name + 1",
    "image": IMAGE_CELL,
    "long stream": "for i in range(4000):\n    print(i, 'a line of the agent output')",
}


async def real_results(kernels: Any, kernel_id: str, folder: Path) -> dict[str, CellResult]:
    """Each of :data:`RESULT_CELLS` run in the notebook's real kernel (by name)."""
    executor = ServerKernelExecutor(kernels, kernel_id, folder, timeout=60)
    await executor.start()
    try:
        results = {name: await executor.execute(code) for name, code in RESULT_CELLS.items()}
    finally:
        await executor.shutdown()
    kinds = {name: [o.kind for o in result.outputs] for name, result in results.items()}
    assert kinds["error"] == ["error"], kinds
    assert any(o.png for o in results["image"].outputs), kinds
    assert results["long stream"].truncated, kinds  # cut at the output budget, marked as cut
    return results


def read_saved(path: Path) -> dict[str, Any]:
    """The notebook file as saved, checked against the nbformat schema."""
    notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
    nbformat.validate(notebook)
    return json.loads(json.dumps(notebook))


def agent_cells(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [cell for cell in cells if AGENT_CELL_KEY in cell.get("metadata", {})]


def cell_by_id(cells: list[dict[str, Any]], cell_id: str) -> dict[str, Any] | None:
    return next((cell for cell in cells if cell.get("id") == cell_id), None)


def source_of(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def text_of(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for output in outputs:
        text = output.get("text") or output.get("data", {}).get("text/plain", "")
        parts.append("".join(text) if isinstance(text, list) else text)
    return "".join(parts)


# -- a person's notebook and a two-cell session on a test Jupyter server ---------------------------

#: A team whose scripted agent writes two cells, the first running ``seconds`` long.
TWO_CELL_TEAM = ('name = "two-cells"\n[members.agent]\ntype = "two-cell-analyst"\n'
                 '[members.agent.options]\nseconds = 2.5\n')
#: The member type behind it, for the server's ``CogymLabApp.members``.
TWO_CELL_MEMBERS = {"two-cell-analyst": "tests.support.notebook_agents:TWO_CELL_ANALYST"}


def write_two_cell_team(folder: Path) -> dict[str, str]:
    """Write :data:`TWO_CELL_TEAM` into ``folder``: the server's ``CogymLabApp.teams``."""
    path = folder / "team-two-cells.toml"
    path.write_text(TWO_CELL_TEAM)
    return {"two-cells": str(path)}


def notebook_opener(root: Path, fetch: Any, name: str,
                    person_cell: str) -> Callable[[], Awaitable[str]]:
    """Write the person's notebook ``name`` in ``root`` (a heading, and their code cell
    ``person_cell``); the returned call opens it with a kernel, as JupyterLab does (through
    ``fetch``, the server's REST API), and gives the kernel's id."""
    person = nbformat.v4.new_notebook()
    person.cells = [nbformat.v4.new_markdown_cell("# My analysis"),
                    nbformat.v4.new_code_cell("x = 1", id=person_cell)]
    (root / name).write_text(nbformat.writes(person))

    async def open_it() -> str:
        response = await fetch("api", "sessions", method="POST", body=json.dumps({
            "path": name, "type": "notebook", "name": name, "kernel": {"name": "python3"}}))
        return str(json.loads(response.body)["kernel"]["id"])

    return open_it


def two_cell_session(notebook: str, kernel_id: str) -> dict[str, Any]:
    """The request that starts the two-cell team on the tabular task in a person's notebook."""
    return {"task": "tabular_analysis", "team": "two-cells", "people": ["user"],
            "idle_seconds": 60, "notebook": {"path": notebook, "kernel_id": kernel_id},
            "env_args": {"query": "What do the numbers say?"}}


async def until(check: Callable[[], Any], what: str, timeout: float = 30.0, *,
                detail: Callable[[], Any] | None = None, every: float = 0.05) -> Any:
    """Poll ``check`` (sync or async) every ``every`` seconds until it gives something truthy:
    that. On a time-out the failure says ``what`` it waited for, and ``detail()`` (sync or
    async) where given."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            state = detail() if detail else None
            if asyncio.iscoroutine(state):
                state = await state
            raise AssertionError(f"timed out waiting for {what}" + (f"; {state}" if state else ""))
        await asyncio.sleep(every)
