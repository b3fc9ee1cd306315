"""Link a session to a person's open notebook: its kernel, its live document (or, without one,
its file), its executions."""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from cogym_lab.core.messages import status_channel
from cogym_lab.kernels import CellResult, Happening
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.server.live_notebooks.agent_cells import (
    AgentCell,
    Restored,
    agent_cell_from_record,
    cell_label,
    nbformat_outputs,
    new_cell_id,
)
from cogym_lab.server.live_notebooks.document import (
    LiveNotebook,
    NotebookDocumentError,
    document_backend,
)
from cogym_lab.server.live_notebooks.file_notebook import FileNotebook
from cogym_lab.server.live_notebooks.server_kernel import ServerKernelExecutor
from cogym_lab.server.live_notebooks.watch import KernelWatcher
from cogym_lab.sessions.spec import NotebookRef

log = logging.getLogger(__name__)

AGENT_CELL_KEY = "cogym"  # cell metadata key that marks cells written by a session's member
AGENT_CELL_TAG = "cogym-agent"  # the cell tag that JupyterLab shows on such cells


#: Keeps the panel's list of what was put back short: the latest this many.
NOTICE_ITEMS = 20
FILE_MODE_MESSAGE = (
    "This Jupyter server has no real-time collaboration, so the agent's cells are written into "
    "the notebook file. Your open notebook does not show them until you reload it from disk "
    "(File > Reload Notebook from Disk); JupyterLab also asks when you save after the file "
    "changed. Your saves keep the agent's cells: what your save would drop of them is put back.")

Publish = Callable[[str, dict[str, Any]], Awaitable[bool]]


def agent_metadata(role: str, session_id: str | None) -> dict[str, Any]:
    """The metadata of an agent's cell, which lets extensions and scripts tell it apart."""
    return {AGENT_CELL_KEY: {"author": role, "session": session_id}, "tags": [AGENT_CELL_TAG]}


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

    It keeps what the session's agents wrote to the notebook: the cells the session recorded
    (the env's record, which a resume rebuilds from the event log; see :meth:`follow_record`)
    and the cells still running. Without a live document, every save of the notebook keeps
    those cells (:class:`~cogym_lab.server.live_notebooks.file_notebook.FileNotebook`); with
    one, a finished agent cell that lost its outputs to a concurrent move gets them back at the
    agent's next write. Whatever is put back is said on the session's status channel, for the
    panel (``{"notebook": {...}, "ts": ...}``).

    Nothing connects until :meth:`start`, so a link that is never started needs no closing.
    """

    def __init__(self, executor: ServerKernelExecutor, watcher: KernelWatcher,
                 document: LiveNotebook | FileNotebook, person: str,
                 anchor_cell: str | None = None, publish: Publish | None = None) -> None:
        self.executor = executor
        self.watcher = watcher
        self.document = document
        self.person = person
        self.session_id: str | None = None
        self.anchor = anchor_cell
        #: Where the next agent cell goes: below the session's own cell, then below the last
        #: agent cell shown, so they read in order next to the panel, not at the notebook's end.
        self.insert_below = anchor_cell
        self._publish = publish
        #: The agent cells shown by this link, in the order they were added.
        self._shown: dict[str, AgentCell] = {}
        self._recorded: Callable[[], list[dict[str, Any]]] = list
        self._restored: list[dict[str, Any]] = []
        self._announced = False
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def path(self) -> str:
        return self.document.path

    @property
    def kernel_id(self) -> str:
        return self.executor.kernel_id

    @property
    def live(self) -> bool:
        """Whether the notebook has a live document (real-time collaboration)."""
        return isinstance(self.document, LiveNotebook)

    def follow_record(self, cells: Callable[[], list[dict[str, Any]]]) -> None:
        """Read the session's recorded cells from ``cells()`` (the env's record: each agent
        cell shown in the notebook carries its ``cell_id``)."""
        self._recorded = cells

    def expected(self) -> list[AgentCell]:
        """The agent cells the notebook must keep, in the order they were added: the recorded
        ones (the log is the truth), then those still running."""
        recorded: dict[str, AgentCell] = {}
        for entry in self._recorded():
            cell_id = entry.get("cell_id")
            role = entry.get("ran_by")
            if not isinstance(cell_id, str) or not isinstance(role, str):
                continue
            recorded[cell_id] = agent_cell_from_record(
                entry, marked_source(role, self.session_id, entry.get("source", "")),
                agent_metadata(role, self.session_id))
        cells = [cell for cell_id, cell in recorded.items() if cell_id not in self._shown]
        for cell_id, shown in self._shown.items():
            cell = recorded.get(cell_id, shown)
            cell.after = shown.after
            cells.append(cell)
        return cells

    async def start(self, session_id: str) -> None:
        """Connect to the kernel and start watching it, before the person can act."""
        self.session_id = session_id
        if isinstance(self.document, FileNotebook):
            self.document.follow(self.expected, self._put_back, self.anchor)
        await self.executor.start()
        await self.watcher.start()
        if isinstance(self.document, FileNotebook) and self.expected():
            await self.document.check()  # a resumed session: saves made meanwhile may lack them

    async def show_cell(self, role: str, code: str) -> str | None:
        metadata = agent_metadata(role, self.session_id)
        source = marked_source(role, self.session_id, code)
        cell_id = new_cell_id()
        # Known before it is written: a save of the notebook that runs meanwhile keeps it.
        self._shown[cell_id] = AgentCell(cell_id, source, copy.deepcopy(metadata),
                                         after=self.insert_below)
        try:
            await self.document.add_code_cell(source, metadata, after=self.insert_below,
                                              cell_id=cell_id)
        except Exception as error:  # noqa: BLE001 - the cell runs anyway: the view is a courtesy
            self._shown.pop(cell_id, None)
            log.warning("could not add %s's cell to %s: %s", role, self.path, error)
            return None
        if self.insert_below is not None:
            self.insert_below = cell_id
        await self._announce()
        return cell_id

    async def show_outputs(self, handle: Any, result: CellResult) -> None:
        if handle is None:
            return
        shown = self._shown.get(handle)
        if shown is not None:
            shown.outputs = nbformat_outputs(result)
            shown.execution_count = result.execution_count
        try:
            await self.document.set_outputs(handle, result)
            await self._restore_live_outputs()
        except Exception as error:  # noqa: BLE001 - the log has them; showing them is a courtesy
            log.warning("could not show a cell's outputs in %s: %s", self.path, error)
        await self._announce()

    async def _restore_live_outputs(self) -> None:
        """In a live document: outputs that a concurrent move of an agent cell lost."""
        if not isinstance(self.document, LiveNotebook):
            return
        expected = self.expected()
        given = set(await self.document.restore_outputs(expected))
        if given:
            self._put_back([Restored(cell.cell_id, "outputs", cell_label(number, cell))
                            for number, cell in enumerate(expected, start=1)
                            if cell.cell_id in given], "live")

    def happenings(self) -> AsyncIterator[Happening]:
        return self._happenings()

    async def _happenings(self) -> AsyncIterator[Happening]:
        await self._announce()  # the session runs now: its panels can be told the mode
        async for happening in self.watcher.happenings():
            yield happening

    async def close(self) -> None:
        try:
            await self._restore_live_outputs()
        except Exception as error:  # noqa: BLE001 - the kernel must be let go of all the same
            log.warning("could not check the agent's cells in %s: %s", self.path, error)
        await self.document.close()
        await self.watcher.close()
        await self.executor.shutdown()  # disconnects only: the kernel is the person's
        for task in list(self._tasks):
            await asyncio.gather(task, return_exceptions=True)

    # -- what the panel is told ---------------------------------------------------------------

    def _put_back(self, restored: list[Restored], found_in: str) -> None:
        """Remember what was put back and tell the panels (called from a save hook too)."""
        now = time.time()
        self._restored += [{**item.to_dict(), "found_in": found_in, "ts": now}
                           for item in restored]
        self._restored = self._restored[-NOTICE_ITEMS:]
        try:
            task = asyncio.get_running_loop().create_task(self._send_notice())
        except RuntimeError:  # no loop: the next write tells them
            self._announced = False
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _announce(self) -> None:
        """Tell the panels once, as soon as they can hear it, how the notebook is written."""
        if not self._announced and (not self.live or self._restored):
            await self._send_notice()

    async def _send_notice(self) -> None:
        if self._publish is None or self.session_id is None:
            return
        status = {"notebook": self.notice(), "ts": time.time()}
        try:
            self._announced = await self._publish(self.session_id, status) or self._announced
        except Exception:  # a lost notice never stops the agent's cells
            log.warning("could not tell the panels about %s", self.path, exc_info=True)

    def notice(self) -> dict[str, Any]:
        """What the panel shows about the notebook: how it is written and what was put back."""
        return {"path": self.path, "live": self.live,
                "message": None if self.live else FILE_MODE_MESSAGE,
                "restored": list(self._restored),
                "summary": restored_summary(self._restored, self.live)}


def restored_summary(restored: list[dict[str, Any]], live: bool) -> str | None:
    """What was last put back (everything put back at once), in plain words for the person;
    ``None``: nothing."""
    if not restored:
        return None
    last = restored[-1]
    batch = [item for item in restored
             if item.get("ts") == last.get("ts") and item.get("found_in") == last.get("found_in")]
    parts = [item["label"] if item.get("what") == "cell" else f"the outputs of {item['label']}"
             for item in batch]
    things = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    it, was = ("it", "was") if len(parts) == 1 else ("them", "were")
    found_in = last.get("found_in")
    if found_in == "save":
        return (f"Your notebook was saved without {things}, which the agent wrote: {it} {was} "
                "put back in the file, and your own changes are saved as you made them. Reload "
                f"the notebook from disk to see {it}.")
    if found_in == "file":
        return (f"The notebook file had lost {things}, which the agent wrote: {it} {was} put "
                f"back. Reload the notebook from disk to see {it}.")
    if live:
        return (f"{things[0].upper()}{things[1:]} went missing while the cell was moved at the "
                f"moment the agent wrote {it}: {it} {was} put back.")
    return f"{things[0].upper()}{things[1:]} {was} put back."


class NotebookOpener:
    """Checks a create request's ``notebook`` against a running server and links sessions to
    it. The server extension gives one to the :class:`~cogym_lab.runtime.hosting.SessionHost`."""

    def __init__(self, serverapp: Any, sessions_loop: Any = None) -> None:
        """``sessions_loop``: the hosted sessions' own loop
        (:class:`~cogym_lab.server.sessions_loop.SessionsLoop`), when they do not run on the
        server's: a link is then used from there (see :mod:`.cross_loop`)."""
        self.serverapp = serverapp
        self.sessions_loop = sessions_loop

    def link(self, request: Any, person: str, *, cell_timeout: float = 60.0) -> Any:
        """A link to the notebook that ``request`` (``{"path", "kernel_id"}``) names: through
        its live document, or through its file on a server without a live-document extension.
        Raises :class:`NotebookError` if the kernel is not running here or the notebook does
        not exist."""
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
        settings = self.serverapp.web_app.settings
        document: LiveNotebook | FileNotebook
        if document_backend(settings) is None:  # no real-time collaboration: the file it is
            document = FileNotebook(self.serverapp.contents_manager, path)
        else:
            try:
                document = LiveNotebook(settings, path)
            except NotebookDocumentError as error:
                raise NotebookError(str(error), status=409) from None
        executor = ServerKernelExecutor(kernels, ref.kernel_id, folder, timeout=cell_timeout)
        watcher = KernelWatcher(kernels, ref.kernel_id, ignore=executor.owns)
        link = ServerNotebookLink(executor, watcher, document, person, anchor_cell=ref.cell_id,
                                  publish=self.publish)
        if self.sessions_loop is None:
            return link
        from cogym_lab.server.live_notebooks.cross_loop import CrossLoopLink

        return CrossLoopLink(link, self.sessions_loop)

    async def publish(self, session_id: str, status: dict[str, Any]) -> bool:
        """Put ``status`` on the session's status channel, beside the agents' statuses;
        ``False`` when the session has no bus (yet, or any more)."""
        if self.sessions_loop is not None and not self.sessions_loop.on_sessions_loop():
            return await self.sessions_loop.run(self.publish(session_id, status))
        host = self.serverapp.web_app.settings.get("cogym_lab_host")
        if host is None:
            return False
        try:
            bus = host.get(session_id).bus
        except HostingError:
            return False
        if bus is None:
            return False
        await bus.publish(status_channel(session_id), status)
        return True

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
