"""What a session's agents wrote into a notebook, and how to put it back into a notebook that
lost some of it.

An agent owns little of its notebook cells: that the cell exists (with the source it wrote when
it added the cell, and its ``cogym`` metadata), its outputs and its execution count. Everything
else is the person's, including what they type into an agent's cell afterwards. :func:`reconcile`
works on a notebook in the file format (a plain ``dict``, as the contents manager and the
browser's save hand it over) and changes only what the agent owns:

* an agent cell that is missing is put back, below the agent cell before it (or the cell the
  session started from, or at the end);
* an agent cell that has lost its outputs (no outputs and no execution count, as a copy saved
  before the outputs arrived has it) gets them back.

A cell the person edited, moved or ran again keeps what the person made of it. The person's own
cells are never touched.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import nbformat

from cogym_lab.kernels import CellOutput, CellResult

__all__ = ["AgentCell", "Restored", "agent_cell_from_record", "cell_label", "ensure_cell_ids",
           "nbformat_outputs", "new_cell_id", "reconcile", "source_text",
           "validation_problem"]


@dataclass
class AgentCell:
    """One cell an agent wrote: what the notebook must keep of it."""

    cell_id: str
    source: str  # as the agent wrote it, first line included
    metadata: dict[str, Any]
    #: The outputs in the file format once the cell finished; ``None`` while it runs.
    outputs: list[dict[str, Any]] | None = None
    execution_count: int | None = None
    #: The cell it was put below when it was added (``None``: at the end).
    after: str | None = None

    @property
    def finished(self) -> bool:
        return self.outputs is not None

    def as_nbformat(self) -> dict[str, Any]:
        """The whole cell, as the agent wrote it."""
        return {"id": self.cell_id, "cell_type": "code", "source": self.source,
                "metadata": copy.deepcopy(self.metadata),
                "outputs": copy.deepcopy(self.outputs or []),
                "execution_count": self.execution_count if self.finished else None}


@dataclass(frozen=True)
class Restored:
    """Something :func:`reconcile` put back: a whole cell (``what="cell"``) or the outputs of
    one (``what="outputs"``)."""

    cell_id: str
    what: str
    label: str

    def to_dict(self) -> dict[str, str]:
        return {"cell_id": self.cell_id, "what": self.what, "label": self.label}


@dataclass
class _Placement:
    """Where the next missing agent cell goes: below ``anchor`` if it is in the notebook."""

    anchor: str | None
    ids: dict[str, int] = field(default_factory=dict)


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


def agent_cell_from_record(recorded: dict[str, Any], source: str,
                           metadata: dict[str, Any]) -> AgentCell:
    """The agent cell that a cell the session recorded (the tabular env's ``cells``, rebuilt
    from the event log on a resume) stands for; ``source`` and ``metadata`` as the agent's
    cells carry them."""
    outputs = [CellOutput(**{key: value for key, value in output.items()
                             if key in CellOutput.__dataclass_fields__})
               for output in recorded.get("outputs") or [] if isinstance(output, dict)]
    count = recorded.get("execution_count")
    result = CellResult(code=recorded.get("source", ""), status=recorded.get("status") or "ok",
                        execution_count=count, outputs=outputs)
    return AgentCell(cell_id=recorded["cell_id"], source=source, metadata=metadata,
                     outputs=nbformat_outputs(result), execution_count=count)


def source_text(source: Any) -> str:
    """A cell's source as one string (the file format allows a list of lines)."""
    return "".join(source) if isinstance(source, list) else str(source or "")


def cell_label(number: int, cell: AgentCell) -> str:
    """How the panel names an agent cell: its number among the agent's cells and its first
    line of code (the line after the "written by" line)."""
    lines = [line for line in cell.source.splitlines()[1:] if line.strip()]
    first = lines[0].strip() if lines else ""
    if len(first) > 60:
        first = first[:57] + "..."
    return f"agent cell {number}" + (f" ({first})" if first else "")


def ensure_cell_ids(notebook: dict[str, Any]) -> bool:
    """Bring a notebook older than format 4.5 to 4.5, where every cell has an id (the agent's
    cells are found by theirs), with nbformat's own upgrade; ``True`` if it changed."""
    if int(notebook.get("nbformat", 4)) != 4 or int(notebook.get("nbformat_minor", 0)) >= 5:
        return False
    upgraded = nbformat.v4.upgrade(nbformat.from_dict(notebook), from_version=4,
                                   from_minor=int(notebook.get("nbformat_minor", 0)))
    notebook.clear()
    notebook.update(upgraded)
    return True


def _has_lost_outputs(cell: dict[str, Any]) -> bool:
    """A code cell with no outputs and no execution count: saved from a copy taken before the
    agent's outputs arrived (or cleared)."""
    return not cell.get("outputs") and cell.get("execution_count") is None


def reconcile(notebook: dict[str, Any], expected: Sequence[AgentCell],
              anchor: str | None = None, previous: dict[str, Any] | None = None
              ) -> list[Restored]:
    """Put back into ``notebook`` (the file format, changed in place) what it lost of the agent
    cells ``expected`` (in the order the agent added them); returns what was put back.

    ``anchor`` is the cell the session started from: the first agent cell goes below it when
    it must be put back and no agent cell before it is in the notebook. ``previous`` is the
    notebook as it was before (the file that a save is about to replace): a missing agent cell
    comes back as it was there, with whatever the person had typed into it, rather than as the
    agent first wrote it."""
    if not expected:
        return []
    cells: list[dict[str, Any]] = notebook.setdefault("cells", [])
    restored: list[Restored] = []
    if ensure_cell_ids(notebook):
        cells = notebook["cells"]
    placement = _Placement(anchor)
    for number, agent in enumerate(expected, start=1):
        index = _index_of(cells, agent.cell_id)
        if index is None:
            later = [cell.cell_id for cell in expected[number:]]
            where = _insert_at(cells, placement, agent, later)
            cells.insert(where, _as_it_was(agent, previous))
            restored.append(Restored(agent.cell_id, "cell", cell_label(number, agent)))
        else:
            cell = cells[index]
            if cell.get("cell_type") == "code" and agent.finished and _has_lost_outputs(cell):
                cell["outputs"] = copy.deepcopy(agent.outputs)
                cell["execution_count"] = agent.execution_count
                restored.append(Restored(agent.cell_id, "outputs", cell_label(number, agent)))
        placement.anchor = agent.cell_id
    return restored


def _as_it_was(agent: AgentCell, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The agent's cell as ``previous`` had it (the person's edits kept), else as the agent
    wrote it; with the agent's outputs unless it has some of its own."""
    cells = previous.get("cells", []) if isinstance(previous, dict) else []
    index = _index_of(cells, agent.cell_id)
    if index is None or cells[index].get("cell_type") != "code":
        return agent.as_nbformat()
    cell = copy.deepcopy(cells[index])
    if agent.finished and _has_lost_outputs(cell):
        cell["outputs"] = copy.deepcopy(agent.outputs)
        cell["execution_count"] = agent.execution_count
    return cell


def _index_of(cells: Iterable[dict[str, Any]], cell_id: str) -> int | None:
    return next((index for index, cell in enumerate(cells) if cell.get("id") == cell_id), None)


def _insert_at(cells: list[dict[str, Any]], placement: _Placement, agent: AgentCell,
               later: Sequence[str]) -> int:
    """Below the agent cell before it (or the session's cell, for the first), else below the
    cell it was added below, else above the next agent cell the notebook has, else at the
    end."""
    for anchor in (placement.anchor, agent.after):
        if anchor is not None:
            index = _index_of(cells, anchor)
            if index is not None:
                return index + 1
    for cell_id in later:
        index = _index_of(cells, cell_id)
        if index is not None:
            return index
    return len(cells)


def validation_problem(notebook: dict[str, Any]) -> str | None:
    """Why ``notebook`` is not valid nbformat, or ``None`` if it is."""
    try:
        nbformat.validate(nbformat.from_dict(copy.deepcopy(notebook)))
    except nbformat.ValidationError as error:
        return str(error).splitlines()[0]
    return None


def new_cell_id() -> str:
    """An id for a new cell: valid in the file format (letters, digits, ``-``, ``_``)."""
    return uuid.uuid4().hex[:12]
