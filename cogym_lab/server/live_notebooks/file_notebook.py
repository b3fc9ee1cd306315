"""A notebook without a live document: the agent's cells go into the notebook file.

When the Jupyter server has no real-time collaboration (neither jupyter-collaboration nor
jupyter-server-documents), there is no shared document to insert cells into. The agent's cells
are then written into the ``.ipynb`` file through the server's contents manager, the way the
browser saves it: read the notebook, change only the agent's cells and fields, save, read it
back and check that the agent's cells are there and the notebook is valid nbformat.

The person's browser holds a copy of the notebook that does not follow the file: it saves that
copy over the file (autosave, Ctrl-S), and the copy may predate the agent's cells or their
outputs. So every save of the notebook while the session runs, the browser's included, passes
through a pre-save hook that puts back what the save would drop of the agent's cells
(:func:`~cogym_lab.server.live_notebooks.agent_cells.reconcile`): the person's own cells, and
what they typed anywhere, are saved as they sent them. What had to be put back is reported, so
that the panel can say so.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import time
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from jupyter_core.utils import ensure_async

from cogym_lab.kernels import CellResult
from cogym_lab.server.live_notebooks.agent_cells import (
    AgentCell,
    Restored,
    ensure_cell_ids,
    nbformat_outputs,
    new_cell_id,
    reconcile,
    validation_problem,
)

log = logging.getLogger(__name__)

FILE_BACKEND = "file"
#: How many times a write is tried again when a save of the notebook got in its way.
WRITE_ATTEMPTS = 6
#: How long a write waits for a save of the notebook that is under way to finish.
SETTLE_SECONDS = 3.0

Expected = Callable[[], Sequence[AgentCell]]
#: Told what was put back and where it was found missing: "save" (a save of the notebook, the
#: browser's, would have dropped it) or "file" (the file lacked it when the agent wrote).
Report = Callable[[list[Restored], str], None]


class SaveWatch:
    """The save hooks of one contents manager, shared by the notebook files that sessions
    write: counts the saves of each watched path and lets every such save keep the agent cells
    of each session that writes the notebook."""

    _watches: ClassVar[weakref.WeakKeyDictionary[Any, SaveWatch]] = weakref.WeakKeyDictionary()

    def __init__(self, contents_manager: Any) -> None:
        self.files: dict[str, list[FileNotebook]] = {}
        self.started: Counter[str] = Counter()
        self.finished: Counter[str] = Counter()
        #: The notebook as the latest save of each path sent it, agent cells put back.
        self.latest: dict[str, dict[str, Any]] = {}
        contents_manager.register_pre_save_hook(self._before_save)
        contents_manager.register_post_save_hook(self._after_save)

    @classmethod
    def of(cls, contents_manager: Any) -> SaveWatch:
        """The watch of ``contents_manager`` (its hooks are registered once)."""
        watch = cls._watches.get(contents_manager)
        if watch is None:
            watch = cls._watches[contents_manager] = cls(contents_manager)
        return watch

    def add(self, notebook: FileNotebook) -> None:
        self.files.setdefault(notebook.path, []).append(notebook)

    def remove(self, notebook: FileNotebook) -> None:
        files = self.files.get(notebook.path, [])
        if notebook in files:
            files.remove(notebook)
        if not files:
            self.files.pop(notebook.path, None)
            self.latest.pop(notebook.path, None)

    def _before_save(self, model: dict[str, Any], path: str, **_: Any) -> None:
        """Every save of a watched notebook keeps the agents' cells. Runs before the contents
        manager writes anything, in the same step as the save's start: nothing else runs in
        between. An error here is logged by the server and the save goes on as sent."""
        path = path.strip("/")
        files = self.files.get(path)
        if not files or model.get("type") != "notebook":
            return
        self.started[path] += 1
        content = model.get("content")
        if not isinstance(content, dict):
            return
        kept = copy.deepcopy(content)
        previous = self.latest.get(path)  # the file this save replaces, as last saved
        for notebook in list(files):
            notebook.keep_agent_cells(kept, found_in="save", previous=previous)
        model["content"] = kept
        self.latest[path] = copy.deepcopy(kept)

    def _after_save(self, model: dict[str, Any], **_: Any) -> None:
        path = str((model or {}).get("path") or "").strip("/")
        if path in self.files:
            self.finished[path] += 1

    async def settled(self, path: str) -> None:
        """Wait until no save of ``path`` is under way (a save that failed never says it
        finished: after a few seconds it counts as over)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while self.finished[path] < self.started[path]:
            if time.monotonic() > deadline:
                self.finished[path] = self.started[path]
                return
            await asyncio.sleep(0.02)


class FileNotebook:
    """The agent's side of one notebook file: adds agent cells and sets their outputs through
    the contents manager, and keeps them in the file while the session runs. Same methods as
    :class:`~cogym_lab.server.live_notebooks.document.LiveNotebook`."""

    backend = FILE_BACKEND

    def __init__(self, contents_manager: Any, path: str) -> None:
        self.contents_manager = contents_manager
        self.path = path.strip("/")
        self._expected: Expected = lambda: ()
        self._report: Report = lambda restored, found_in: None
        self.anchor: str | None = None
        self._lock = asyncio.Lock()
        self._watch: SaveWatch | None = None
        #: The cell right above each agent cell when it was added: where it goes back to.
        self._above: dict[str, str | None] = {}

    def follow(self, expected: Expected, report: Report, anchor: str | None = None) -> None:
        """Keep the agent cells ``expected()`` names in the file (from now until
        :meth:`close`), and tell ``report`` what had to be put back."""
        self._expected, self._report, self.anchor = expected, report, anchor
        if self._watch is None:
            self._watch = SaveWatch.of(self.contents_manager)
            self._watch.add(self)

    async def close(self) -> None:
        """Stop keeping the agent's cells: from now on the notebook is the person's alone."""
        if self._watch is not None:
            self._watch.remove(self)
            self._watch = None

    def keep_agent_cells(self, notebook: dict[str, Any], found_in: str,
                         previous: dict[str, Any] | None = None) -> list[Restored]:
        """Put back into ``notebook`` what it lost of the agent's cells (a missing one as
        ``previous`` had it, if it did); report it."""
        if previous is None and self._watch is not None:
            previous = self._watch.latest.get(self.path)
        restored = reconcile(notebook, self._expected_here(), self.anchor, previous)
        if restored:
            try:
                self._report(restored, found_in)
            except Exception:  # a lost report never stops a save
                log.warning("could not report the agent cells put back in %s", self.path,
                            exc_info=True)
        return restored

    def _expected_here(self) -> list[AgentCell]:
        """The agent cells to keep, each one placed below the cell it was added below."""
        return [cell if cell.after is not None else replace(
                    cell, after=self._above.get(cell.cell_id)) for cell in self._expected()]

    # -- the agent's writes -------------------------------------------------------------------

    async def add_code_cell(self, code: str, metadata: dict[str, Any],
                            after: str | None = None, cell_id: str | None = None) -> str:
        """Add a code cell (no outputs yet) right below cell ``after``, or at the end when that
        cell is not there; returns its cell id."""
        cell_id = cell_id or new_cell_id()
        cell: dict[str, Any] = {"id": cell_id, "cell_type": "code", "source": code,
                                "metadata": copy.deepcopy(metadata), "outputs": [],
                                "execution_count": None}

        def add(notebook: dict[str, Any]) -> None:
            cells = notebook["cells"]
            if _index_of(cells, cell_id) is not None:
                return  # a save put it there already (the agent's cells are kept in saves)
            below = _index_of(cells, after) if after is not None else None
            index = len(cells) if below is None else below + 1
            self._above[cell_id] = cells[index - 1].get("id") if index else None
            cells.insert(index, copy.deepcopy(cell))

        await self._write(add, lambda notebook: _index_of(notebook["cells"], cell_id) is not None)
        return cell_id

    async def set_outputs(self, cell_id: str, result: CellResult) -> bool:
        """Give cell ``cell_id`` the outputs and execution count of ``result``; ``False`` if it
        is not a code cell any more. Only those two fields change."""
        outputs = nbformat_outputs(result)
        found = True

        def fill(notebook: dict[str, Any]) -> None:
            nonlocal found
            index = _index_of(notebook["cells"], cell_id)
            found = index is not None and notebook["cells"][index].get("cell_type") == "code"
            if index is not None and found:
                notebook["cells"][index]["outputs"] = copy.deepcopy(outputs)
                notebook["cells"][index]["execution_count"] = result.execution_count

        def filled(notebook: dict[str, Any]) -> bool:
            index = _index_of(notebook["cells"], cell_id)
            return not found or (index is not None and
                                 bool(notebook["cells"][index].get("outputs")) == bool(outputs))

        await self._write(fill, filled)
        return found

    async def check(self) -> list[Restored]:
        """Read the file and put back what it lost of the agent's cells (none written now)."""
        restored: list[Restored] = []
        await self._write(lambda notebook: None, lambda notebook: True, restored)
        return restored

    async def cells(self) -> list[dict[str, Any]]:
        """The notebook's cells as the file has them."""
        return (await self._read())["cells"]

    async def _read(self) -> dict[str, Any]:
        model = await ensure_async(self.contents_manager.get(self.path, content=True,
                                                             type="notebook"))
        return _plain(model["content"])

    async def _read_between_saves(self, watch: SaveWatch, saves: int) -> dict[str, Any] | None:
        """The notebook, if no save started while it was read (a save writes the file in
        place: a read meanwhile may find it cut short); ``None`` otherwise."""
        try:
            notebook = await self._read()
        except Exception as error:  # noqa: BLE001 - read mid-save, or not a notebook just now
            log.debug("reading %s failed: %s", self.path, error)
            await asyncio.sleep(0.05)
            return None
        return notebook if watch.started[self.path] == saves else None

    async def _save(self, notebook: dict[str, Any]) -> None:
        await ensure_async(self.contents_manager.save(
            {"type": "notebook", "format": "json", "content": notebook}, self.path))

    async def _write(self, change: Callable[[dict[str, Any]], None],
                     done: Callable[[dict[str, Any]], bool],
                     restored_out: list[Restored] | None = None) -> None:
        """Read the notebook, ``change`` it, put back what it lost of the agent's cells, save it,
        read it back and check it (``done``, the agent's cells, nbformat); again if a save of
        the notebook got in the way. Never leaves the person's latest save behind: a save that
        starts while this write reads is read again, and one that runs alongside its save
        (whichever write ends last is in the file) is saved again, as its hook kept it."""
        watch = self._watch or SaveWatch.of(self.contents_manager)
        async with self._lock:
            base: dict[str, Any] | None = None
            for _ in range(WRITE_ATTEMPTS):
                await watch.settled(self.path)
                before = watch.started[self.path]
                if base is None:
                    notebook = await self._read_between_saves(watch, before)
                    if notebook is None:
                        continue  # a save began while the file was read: read it again
                else:
                    notebook, base = base, None
                was_valid = validation_problem(notebook) is None
                ensure_cell_ids(notebook)
                change(notebook)
                restored = self.keep_agent_cells(notebook, found_in="file")
                if restored_out is not None:
                    restored_out.extend(restored)
                await self._save(notebook)
                ours = before + (1 if self.path in watch.files else 0)  # counted by the hook
                await watch.settled(self.path)
                if watch.started[self.path] > ours and self.path in watch.latest:
                    base = copy.deepcopy(watch.latest[self.path])  # another save ran alongside
                    continue
                saved = await self._read_between_saves(watch, ours)
                if saved is None:
                    continue
                problem = validation_problem(saved) if was_valid else None
                lost = reconcile(copy.deepcopy(saved), self._expected_here(), self.anchor)
                if problem is None and not lost and done(saved):
                    return
                log.info("%s read back unlike it was written (%s); writing it again",
                         self.path, problem or "agent cells missing")
            log.warning("could not write the agent's cell into %s: saves kept getting in the way",
                        self.path)


def _index_of(cells: list[dict[str, Any]], cell_id: str | None) -> int | None:
    if cell_id is None:
        return None
    return next((index for index, cell in enumerate(cells) if cell.get("id") == cell_id), None)


def _plain(content: Any) -> dict[str, Any]:
    """The notebook as plain JSON values (the contents manager hands a ``NotebookNode``)."""
    return json.loads(json.dumps(content, default=str))
