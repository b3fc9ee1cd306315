"""The notebook's live shared document: where agent cells appear for everyone who has it open.

Two server extensions serve live notebook documents, and both expose the same Python API under
the server setting ``jupyter_server_ydoc``: ``get_document(path=..., content_type="notebook",
file_format="json", copy=False)`` returns the live ``YNotebook`` (jupyter_ydoc):

* jupyter-collaboration (the ``jupyter_server_ydoc`` extension itself), which opens the room on
  request (``create=True``, in recent versions) when no browser has the notebook open;
* jupyter-server-documents (installed by jupyter-ai v3), whose compatibility API creates rooms
  by itself.

A server with neither has no live document: the agent's cells then go into the notebook file
(``file_notebook.FileNotebook``).

Changes to the live document reach every open browser at once and are saved to the file by the
extension.

An agent writes only what it owns, in place: a new cell (inserted, never by rewriting the cell
list), then that cell's outputs and execution count, in the cell's own Y map. The cell's source,
a shared text the person may be typing into, is written once, when the cell is added, and never
again; every other cell is left alone. A person's edit made at the same time, even from a copy
that has not seen the agent's write yet, is merged by the CRDT and kept.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterable
from typing import Any

from pycrdt import Array, Map, Text

from cogym_lab.errors import CogymError
from cogym_lab.kernels import CellResult
from cogym_lab.server.live_notebooks.agent_cells import AgentCell, nbformat_outputs, new_cell_id

DOCUMENT_SETTING = "jupyter_server_ydoc"
COLLABORATION = "jupyter-collaboration"
SERVER_DOCUMENTS = "jupyter-server-documents"
NO_BACKEND = "This Jupyter server has no live notebook documents (no real-time collaboration)."


class NotebookDocumentError(CogymError):
    """The live document cannot be reached."""


def document_backend(settings: dict[str, Any]) -> str | None:
    """Which extension serves live documents in a server with these ``web_app.settings``."""
    api = settings.get(DOCUMENT_SETTING)
    if api is None or not callable(getattr(api, "get_document", None)):
        return None
    module = type(api).__module__
    if module.startswith("jupyter_server_documents"):
        return SERVER_DOCUMENTS
    if module.startswith("jupyter_server_ydoc"):
        return COLLABORATION
    return None


class LiveNotebook:
    """One notebook's live document, reached through the server's ``settings``."""

    def __init__(self, settings: dict[str, Any], path: str) -> None:
        self.backend = document_backend(settings)
        if self.backend is None:
            raise NotebookDocumentError(NO_BACKEND)
        self.api = settings[DOCUMENT_SETTING]
        self.path = path

    async def document(self) -> Any:
        """The live ``YNotebook`` (the room is opened if nobody has the notebook open)."""
        options: dict[str, Any] = {"path": self.path, "content_type": "notebook",
                                   "file_format": "json", "copy": False}
        if "create" in inspect.signature(self.api.get_document).parameters:
            options["create"] = True  # jupyter-collaboration opens rooms only when asked to
        document = await self.api.get_document(**options)
        if document is None:
            raise NotebookDocumentError(f"The live document of {self.path} could not be opened.")
        return document

    async def add_code_cell(self, code: str, metadata: dict[str, Any],
                            after: str | None = None, cell_id: str | None = None) -> str:
        """Add a code cell (no outputs yet) right below cell ``after``, or at the end when that
        cell is not there (none given, or the person deleted it); returns its cell id. Only the
        cell list changes, by one insertion: no other cell is rewritten."""
        document = await self.document()
        cell_id = cell_id or new_cell_id()
        cell: dict[str, Any] = {"id": cell_id, "cell_type": "code", "source": code,
                                "metadata": copy.deepcopy(metadata), "outputs": [],
                                "execution_count": None}
        below = _index_of(document, after) if after is not None else None
        ycell = document.create_ycell(cell)  # jupyter_ydoc's own: source a Text, outputs an Array
        if below is None:
            document.ycells.append(ycell)
        else:
            document.ycells.insert(below + 1, ycell)
        return cell_id

    async def set_outputs(self, cell_id: str, result: CellResult) -> bool:
        """Give cell ``cell_id`` the outputs and execution count of ``result``, in place and in
        one transaction; ``False`` if the cell is gone (the person deleted it, or made it a
        markdown cell). The cell's source and metadata are not touched."""
        document = await self.document()
        with document.ydoc.transaction():
            ycell = _code_ycell(document, cell_id)
            if ycell is None:
                return False
            _write_outputs(document, ycell, nbformat_outputs(result))
            ycell["execution_count"] = result.execution_count
        return True

    async def set_cell_outputs(self, cell_id: str, outputs: list[dict[str, Any]]) -> bool:
        """Only the outputs of cell ``cell_id`` (the file format), in place."""
        document = await self.document()
        with document.ydoc.transaction():
            ycell = _code_ycell(document, cell_id)
            if ycell is None:
                return False
            _write_outputs(document, ycell, outputs)
        return True

    async def set_execution_count(self, cell_id: str, count: int | None) -> bool:
        """Only the execution count of cell ``cell_id``, in place."""
        document = await self.document()
        with document.ydoc.transaction():
            ycell = _code_ycell(document, cell_id)
            if ycell is None:
                return False
            ycell["execution_count"] = count
        return True

    async def restore_outputs(self, expected: Iterable[AgentCell]) -> list[str]:
        """Give back their outputs to finished agent cells that lost them: a cell the person
        moved from a copy taken before the outputs arrived is a new cell without them (the
        outputs went to the old one, which the move deleted). A cell that has outputs or an
        execution count of its own (the person ran it again) is left alone, and so is a cell
        the person deleted. Returns the ids of the cells given back their outputs."""
        document = await self.document()
        given: list[str] = []
        with document.ydoc.transaction():
            for agent in expected:
                if not agent.finished:
                    continue
                ycell = _code_ycell(document, agent.cell_id)
                if ycell is None or len(_outputs_of(ycell)) or \
                        ycell.get("execution_count") is not None:
                    continue
                _write_outputs(document, ycell, agent.outputs or [])
                ycell["execution_count"] = agent.execution_count
                given.append(agent.cell_id)
        return given

    async def cells(self) -> list[dict[str, Any]]:
        """The notebook's cells as they are now."""
        document = await self.document()
        return [document.get_cell(index) for index in range(document.cell_number)]

    async def close(self) -> None:
        """Nothing to let go of: the backend keeps the room."""


def _index_of(document: Any, cell_id: str | None) -> int | None:
    return next((index for index, ycell in enumerate(document.ycells)
                 if cell_id is not None and ycell.get("id") == cell_id), None)


def _code_ycell(document: Any, cell_id: str) -> Map | None:
    """The Y map of code cell ``cell_id``, or ``None``."""
    index = _index_of(document, cell_id)
    if index is None:
        return None
    ycell = document.ycells[index]
    return ycell if ycell.get("cell_type") == "code" else None


def _outputs_of(ycell: Map) -> Any:
    outputs = ycell.get("outputs")
    return outputs if outputs is not None else ()


def _write_outputs(document: Any, ycell: Map, outputs: list[dict[str, Any]]) -> None:
    """Replace the items of the cell's outputs array (the array itself stays, so every open
    view of it follows). jupyter_ydoc builds the output entries where it can: a stream's text
    is then a shared text, as JupyterLab expects."""
    setter = getattr(document, "_set_ycell_outputs", None)
    if callable(setter):
        setter(ycell, outputs)
        return
    youtputs = ycell.get("outputs")
    if not isinstance(youtputs, Array):
        youtputs = ycell["outputs"] = Array()
    youtputs.clear()
    youtputs.extend(_youtputs(document, outputs))


def _youtputs(document: Any, outputs: list[dict[str, Any]]) -> list[Map]:
    make = getattr(document, "_create_youtputs", None)
    if callable(make):
        return make(outputs)
    entries = []
    for output in copy.deepcopy(outputs):
        if output.get("output_type") == "stream":
            text = output.get("text", "")
            output["text"] = Text("".join(text) if isinstance(text, list) else text)
        entries.append(Map(output))
    return entries
