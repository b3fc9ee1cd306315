"""Link a session to a person's open notebook: its kernel, its live document, its executions."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from cogym_lab.kernels import CellResult, Happening
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.server.live_notebooks.document import LiveNotebook, NotebookDocumentError
from cogym_lab.server.live_notebooks.server_kernel import ServerKernelExecutor
from cogym_lab.server.live_notebooks.watch import KernelWatcher
from cogym_lab.sessions.spec import NotebookRef

log = logging.getLogger(__name__)

AGENT_CELL_KEY = "cogym"  # cell metadata key that marks cells written by a session's member
AGENT_CELL_TAG = "cogym-agent"  # the cell tag that JupyterLab shows on such cells


def marked_source(role: str, session_id: str | None, code: str) -> str:
    """The cell as the notebook shows it: a first line that says who wrote it (metadata alone is
    invisible to a person), then the code, which runs unchanged."""
    session = f", session {session_id}" if session_id else ""
    return f"# written by {role} (cogym agent{session})\n{code}"


class NotebookError(HostingError):
    """A notebook a session cannot use; ``status`` is the HTTP status that fits. A host refusal
    like any other, so the host passes it on as it is."""


class ServerNotebookLink:
    """A :class:`~cogym_lab.kernels.NotebookLink` inside the Jupyter server.

    Nothing connects until :meth:`start`, so a link that is never started needs no closing.
    """

    def __init__(self, executor: ServerKernelExecutor, watcher: KernelWatcher,
                 document: LiveNotebook, person: str, anchor_cell: str | None = None) -> None:
        self.executor = executor
        self.watcher = watcher
        self.document = document
        self.person = person
        self.session_id: str | None = None
        #: Where the next agent cell goes: below the session's own cell, then below the last
        #: agent cell shown, so they read in order next to the panel, not at the notebook's end.
        self.insert_below = anchor_cell

    @property
    def path(self) -> str:
        return self.document.path

    @property
    def kernel_id(self) -> str:
        return self.executor.kernel_id

    async def start(self, session_id: str) -> None:
        """Connect to the kernel and start watching it, before the person can act."""
        self.session_id = session_id
        await self.executor.start()
        await self.watcher.start()

    async def show_cell(self, role: str, code: str) -> str | None:
        metadata = {AGENT_CELL_KEY: {"author": role, "session": self.session_id},
                    "tags": [AGENT_CELL_TAG]}
        try:
            cell_id = await self.document.add_code_cell(
                marked_source(role, self.session_id, code), metadata, after=self.insert_below)
        except Exception as error:  # noqa: BLE001 - the cell runs anyway: the view is a courtesy
            log.warning("could not add %s's cell to %s: %s", role, self.path, error)
            return None
        if self.insert_below is not None:
            self.insert_below = cell_id
        return cell_id

    async def show_outputs(self, handle: Any, result: CellResult) -> None:
        if handle is None:
            return
        try:
            await self.document.set_outputs(handle, result)
        except Exception as error:  # noqa: BLE001 - the log has them; showing them is a courtesy
            log.warning("could not show a cell's outputs in %s: %s", self.path, error)

    def happenings(self) -> AsyncIterator[Happening]:
        return self.watcher.happenings()

    async def close(self) -> None:
        await self.watcher.close()
        await self.executor.shutdown()  # disconnects only: the kernel is the person's


class NotebookOpener:
    """Checks a create request's ``notebook`` against a running server and links sessions to
    it. The server extension gives one to the :class:`~cogym_lab.runtime.hosting.SessionHost`."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp

    def link(self, request: Any, person: str, *, cell_timeout: float = 60.0
             ) -> ServerNotebookLink:
        """A link to the notebook that ``request`` (``{"path", "kernel_id"}``) names. Raises
        :class:`NotebookError` if the kernel is not running here, the notebook does not exist
        or no live-document extension is enabled."""
        try:
            ref = NotebookRef.model_validate(request)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "notebook"
            raise NotebookError(f"'notebook' must be {{\"path\": ..., \"kernel_id\": ...}}: "
                                f"{where}: {problem['msg']}.") from None
        kernels = self.serverapp.kernel_manager
        if ref.kernel_id not in kernels:
            raise NotebookError(f"No running kernel {ref.kernel_id!r} in this Jupyter server.",
                                status=404)
        path = self._api_path(ref.path)
        folder = self._folder_of(path)
        try:
            document = LiveNotebook(self.serverapp.web_app.settings, path)
        except NotebookDocumentError as error:
            raise NotebookError(str(error), status=409) from None
        executor = ServerKernelExecutor(kernels, ref.kernel_id, folder, timeout=cell_timeout)
        watcher = KernelWatcher(kernels, ref.kernel_id, ignore=executor.owns)
        return ServerNotebookLink(executor, watcher, document, person, anchor_cell=ref.cell_id)

    def _api_path(self, path: str) -> str:
        """The notebook's path relative to the server's root, with ``/`` separators."""
        root = Path(self.serverapp.root_dir).resolve()
        try:  # relative paths are relative to the root; neither kind may leave it
            given = (root / path).resolve().relative_to(root)
        except ValueError:
            raise NotebookError(f"{path} is outside the server's root folder.") from None
        api_path = PurePosixPath(*given.parts).as_posix().lstrip("/")
        if not api_path.endswith(".ipynb"):
            raise NotebookError(f"{path} is not a notebook (.ipynb).")
        if not (root / api_path).is_file():
            raise NotebookError(f"No notebook {api_path} in the server's root folder.",
                                status=404)
        return api_path

    def _folder_of(self, api_path: str) -> Path:
        return Path(self.serverapp.root_dir).resolve() / os.path.dirname(api_path)
