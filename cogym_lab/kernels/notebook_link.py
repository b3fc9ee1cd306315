"""What a task needs from a person's own notebook, without depending on Jupyter.

A task that runs in a notebook (``CoEnv.runs_in_notebook``) is given a :class:`NotebookLink`: the
agent's code runs in the notebook's kernel, each agent cell is shown in the live notebook
document, and what the person runs there is reported back as :class:`PersonCell`. The Jupyter
server extension implements it (``cogym_lab.server.live_notebooks``); tasks only use this protocol.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from cogym_lab.kernels.cells import CellResult
from cogym_lab.kernels.executor import KernelExecutor

__all__ = ["NOTEBOOK_CELL", "Happening", "KernelRestarted", "NotebookLink", "PersonCell"]


@dataclass(frozen=True)
class PersonCell:
    """A cell the person ran in their notebook, with its outputs."""

    code: str
    result: CellResult


@dataclass(frozen=True)
class KernelRestarted:
    """The notebook's kernel restarted (or died and came back): every variable is gone."""


Happening = PersonCell | KernelRestarted


@runtime_checkable
class NotebookLink(Protocol):
    """A person's notebook as a task uses it."""

    #: Runs the agent's cells in the notebook's kernel.
    executor: KernelExecutor
    #: The person's seat in the session: what they run in the notebook is recorded as theirs.
    person: str

    async def show_cell(self, role: str, code: str) -> Any:
        """Add ``role``'s cell to the live notebook before it runs; returns a handle for
        :meth:`show_outputs`. Never raises: the notebook view is a courtesy, the kernel is not."""

    async def show_outputs(self, handle: Any, result: CellResult) -> None:
        """Put the finished cell's outputs and execution count under it. Never raises."""

    def happenings(self) -> AsyncIterator[Happening]:
        """What happens in the notebook that the session did not cause, as it happens."""

    async def close(self) -> None:
        """Stop watching and disconnect; the person's kernel keeps running."""


#: The key of ``RECORD_CELL``'s ``result`` that names the notebook cell showing the cell, when
#: :meth:`NotebookLink.show_cell` returned a cell id (a recorded cell keeps it as ``cell_id``).
#: A link that keeps the agent's cells in the notebook may have ``follow_record(cells)``: the
#: task hands it a function returning the cells it recorded, which a resume rebuilds from the
#: event log, so the link knows what the agent wrote even after a server restart.
NOTEBOOK_CELL = "notebook_cell"
