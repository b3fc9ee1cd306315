"""NotesEnv: a small task with everything the protocol must handle, for the property tests.

* ``editor``: a shared text that ``WRITE`` replaces whole (``@action(replaces="editor")``), so
  a write made on a stale copy is merged with the writes made since;
* ``board``: shared notes that ``POST`` adds to (an agent's note that starts with ``!`` needs a
  teammate's confirmation first);
* ``scratch``: each member's private notes (``JOT``); every entry records who wrote it, so a test
  can check that no member is ever shown another's;
* ``DRAFT``: starts deferred work whose result is a ``WRITE`` (or a failure, for a prompt that
  starts with ``fail``); a prompt that starts with ``wait`` is held until :meth:`release`;
* ``RECORD``: an internal action that only deferred work or an observed step may apply.
"""

from __future__ import annotations

import asyncio
from typing import Any

from cogym_lab.core import (
    Action,
    ActionError,
    ActionOutcome,
    CoEnv,
    Component,
    Deferred,
    RenderType,
    action,
)

MAX_NOTES = 12


class NotesEnv(CoEnv):
    name = "notes"

    def __init__(self) -> None:
        super().__init__()
        self.gate: asyncio.Event | None = None  # holds "wait" drafts; made in the running loop

    @property
    def task_description(self) -> str:
        return "Keep shared notes and write a summary together."

    def _reset(self, seed: int | None) -> None:
        self.text = ""
        self.board: list[dict[str, str]] = []
        self.scratch: dict[str, list[dict[str, str]]] = {}
        self.records: list[str] = []

    def public_components(self) -> list[Component]:
        return [Component(name="editor", render_type=RenderType.EDITOR, content=self.text),
                Component(name="board", render_type=RenderType.CHECKLIST,
                          content=[dict(note) for note in self.board]),
                Component(name="records", render_type=RenderType.TEXT,
                          content=list(self.records))]

    def private_components(self, role: str) -> list[Component]:
        return [Component(name="scratch", render_type=RenderType.TEXT,
                          content=[dict(note) for note in self.scratch.get(role, [])])]

    def outcome(self) -> Any:
        return {"text": self.text, "notes": [note["note"] for note in self.board]}

    def needs_confirmation(self, role: str, action: Action) -> bool:
        return action.name == "POST" and str(action.args.get("note", "")).startswith("!")

    @action("Replace the shared text.", replaces="editor", text="The whole new text")
    def write(self, role: str, text: str) -> None:
        self.text = text

    @action("Post a note on the shared board.", note="The note")
    def post(self, role: str, note: str) -> None:
        if not note.strip():
            raise ActionError("POST needs a non-empty note.")
        if len(self.board) >= MAX_NOTES:
            raise ActionError("The board is full.")
        self.board.append({"by": role, "note": note})

    @action("Jot a private note only you see.", private=True, note="The note")
    def jot(self, role: str, note: str) -> None:
        self.scratch.setdefault(role, []).append({"by": role, "note": note})

    @action("Ask the assistant to draft the shared text.", prompt="What to draft")
    def draft(self, role: str, prompt: str) -> ActionOutcome:
        async def work() -> dict[str, Any]:
            if prompt.startswith("wait"):
                await self._gate().wait()
            if prompt.startswith("fail"):
                raise RuntimeError(f"the assistant could not draft {prompt[:20]!r}")
            return {"name": "WRITE", "args": {"text": f"{self.text}\n{prompt}"}}

        return ActionOutcome(deferred=Deferred(work, label="draft"))

    @action("Record a line (applied by deferred work or an observed step).", internal=True,
            line="The line")
    def record(self, role: str, line: str) -> None:
        self.records.append(line)

    def _gate(self) -> asyncio.Event:
        if self.gate is None:
            self.gate = asyncio.Event()
        return self.gate

    def release(self) -> None:
        """Let every held draft finish."""
        self._gate().set()
        self.gate = None
