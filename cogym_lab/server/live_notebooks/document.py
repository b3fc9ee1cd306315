"""The notebook's live shared document: where agent cells appear for everyone who has it open.

Two server extensions serve live notebook documents, and both expose the same Python API under
the server setting ``jupyter_server_ydoc``: ``get_document(path=..., content_type="notebook",
file_format="json", copy=False)`` returns the live ``YNotebook`` (jupyter_ydoc):

* jupyter-collaboration (the ``jupyter_server_ydoc`` extension itself), which opens the room on
  request (``create=True``, in recent versions) when no browser has the notebook open;
* jupyter-server-documents (installed by jupyter-ai v3), whose compatibility API creates rooms
  by itself.

Changes to the live document reach every open browser at once and are saved to the file by the
extension.
"""

from __future__ import annotations

import inspect
import uuid
from typing import Any

from cogym_lab.kernels import CellOutput, CellResult

DOCUMENT_SETTING = "jupyter_server_ydoc"
COLLABORATION = "jupyter-collaboration"
SERVER_DOCUMENTS = "jupyter-server-documents"
MISSING_BACKEND = (
    "Sessions from a notebook need a live notebook document, and this Jupyter server has none: "
    "install jupyter-collaboration (pip install jupyter-collaboration) or jupyter-server-documents "
    "and restart the server. (Without it, start the session outside a notebook: the agent then "
    "gets a kernel of its own.)")


class NotebookDocumentError(Exception):
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


def nbformat_outputs(result: CellResult) -> list[dict[str, Any]]:
    """A cell's outputs in the notebook file format."""
    return [_nbformat_output(output, result.execution_count) for output in result.outputs]


def _nbformat_output(output: CellOutput, execution_count: int | None) -> dict[str, Any]:
    if output.kind == "stream":
        return {"output_type": "stream", "name": output.name or "stdout", "text": output.text}
    if output.kind == "error":
        evalue = output.text.split(": ", 1)[1] if ": " in output.text else ""
        return {"output_type": "error", "ename": output.name or "Error", "evalue": evalue,
                "traceback": (output.traceback or output.text).splitlines()}
    data: dict[str, Any] = {"text/plain": output.text}
    if output.html is not None:
        data["text/html"] = output.html
    if output.png is not None:
        data["image/png"] = output.png
    if output.kind == "result":
        return {"output_type": "execute_result", "data": data, "metadata": {},
                "execution_count": execution_count}
    return {"output_type": "display_data", "data": data, "metadata": {}}


class LiveNotebook:
    """One notebook's live document, reached through the server's ``settings``."""

    def __init__(self, settings: dict[str, Any], path: str) -> None:
        self.backend = document_backend(settings)
        if self.backend is None:
            raise NotebookDocumentError(MISSING_BACKEND)
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
                            after: str | None = None) -> str:
        """Add a code cell (no outputs yet) right below cell ``after``, or at the end when that
        cell is not there (none given, or the person deleted it); returns its cell id."""
        document = await self.document()
        cell_id = uuid.uuid4().hex[:12]
        cell: dict[str, Any] = {"id": cell_id, "cell_type": "code", "source": code,
                                "metadata": metadata, "outputs": [], "execution_count": None}
        below = next((index for index, ycell in enumerate(document.ycells)
                      if after is not None and ycell.get("id") == after), None)
        if below is None:
            document.append_cell(cell)
        else:
            document.ycells.insert(below + 1, document.create_ycell(cell))
        return cell_id

    async def set_outputs(self, cell_id: str, result: CellResult) -> bool:
        """Give cell ``cell_id`` the outputs and execution count of ``result``; ``False`` if the
        cell is gone (the person deleted it)."""
        document = await self.document()
        for index, ycell in enumerate(document.ycells):
            if ycell.get("id") == cell_id:
                cell = document.get_cell(index)  # ids of old-format notebooks are stripped here
                cell.update(id=cell_id, outputs=nbformat_outputs(result),
                            execution_count=result.execution_count)
                document.set_cell(index, cell)
                return True
        return False

    async def cells(self) -> list[dict[str, Any]]:
        """The notebook's cells as they are now."""
        document = await self.document()
        return [document.get_cell(index) for index in range(document.cell_number)]
