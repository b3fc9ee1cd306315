"""A scripted analyst for notebook sessions hosted by a Jupyter server in another process.

The server imports it by name from a team file (``tests.support.notebook_agents:ScriptedAnalyst``,
with the repository root on its ``PYTHONPATH``), so this module needs only ``cogym_lab``: no
pytest, nothing from the test process. A test cannot look inside that server, so the agent makes
what it heard visible: it writes every cell the person ran, with the cell's outputs as its
notification showed them, into the shared findings editor.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cogym_lab.core.member import MemberType

GREETING = "print('hello from the agent')\n6 * 7"
SUM_SALES = "total = int(sales['amount'].sum())\nprint('total', total)"


def cell(code: str) -> dict[str, Any]:
    return {"name": "EXECUTE_JUPYTER_CELL", "args": {"code": code}}


def outputs_text(outputs: Iterable[dict[str, Any]]) -> str:
    return "".join(str(output.get("text", "")) for output in outputs)


def heard(person_cell: dict[str, Any]) -> str:
    """How the agent writes down a person's cell in the findings: its code, then its outputs."""
    return f"person ran:\n{person_cell['source']}\nand saw:\n{outputs_text(person_cell['outputs'])}"


class ScriptedAnalyst:
    """Greets with a cell at the start (``greet``), writes down each cell the person runs, and
    once the person has defined ``sales`` sums it in a cell of its own.

    One action per notification, in order; a cell waits until the agent's previous cell is done.
    """

    def __init__(self, greet: bool = True, person: str = "user") -> None:
        self.person = person
        self.todo: list[dict[str, Any]] = [cell(GREETING)] if greet else []
        self.written: list[str] = []  # the findings, one entry per person's cell

    def start(self, context: Any) -> None:
        self.context = context

    async def act(self, notification: Any) -> Any:
        notebook = notification.view["notebook"].content
        people = [c for c in notebook["cells"] if c["ran_by"] == self.person]
        for person_cell in people[len(self.written):]:
            self.written.append(heard(person_cell))
            self.todo.append({"name": "EDITOR_UPDATE", "args": {"text": "\n\n".join(self.written)}})
            if "sales = " in person_cell["source"]:
                self.todo.append(cell(SUM_SALES))
        if not self.todo:
            return None
        if self.todo[0]["name"] == "EXECUTE_JUPYTER_CELL" and "agent" in notebook["running"]:
            return None  # the cell's result is a notification too: the next one goes then
        return self.todo.pop(0)

    def end(self, final: Any) -> None:
        self.final = final


SCRIPTED_ANALYST = MemberType(name="scripted-analyst", kind="agent", uses_lm=False,
                              build=lambda setup: ScriptedAnalyst(**setup.options))


#: The first cell of :class:`TwoCellAnalyst`: slow enough for a person to type into it while it
#: runs. Its outputs are a stream and a result.
SLOW_CELL = "import time\ntime.sleep({seconds})\nprint('slow cell done')\n6 * 7"
#: Its second cell, added once the first one's outputs are in.
NEXT_CELL = "print('the next cell')"


class TwoCellAnalyst:
    """Runs :data:`SLOW_CELL` at the start and :data:`NEXT_CELL` once the first is recorded:
    outputs, execution count and the next agent cell reach the notebook one after the other
    while a person may be typing."""

    def __init__(self, seconds: float = 2.0, role: str = "agent") -> None:
        self.role = role
        self.todo = [cell(SLOW_CELL.format(seconds=seconds)), cell(NEXT_CELL)]
        self.sent = 0

    def start(self, context: Any) -> None:
        self.context = context

    async def act(self, notification: Any) -> Any:
        notebook = notification.view["notebook"].content
        recorded = [c for c in notebook["cells"] if c["ran_by"] == self.role]
        if not self.todo or self.role in notebook["running"] or len(recorded) < self.sent:
            return None  # its previous cell has not come back yet
        self.sent += 1
        return self.todo.pop(0)

    def end(self, final: Any) -> None:
        self.final = final


TWO_CELL_ANALYST = MemberType(name="two-cell-analyst", kind="agent", uses_lm=False,
                              build=lambda setup: TwoCellAnalyst(**setup.options))
