"""The scratchpad: short notes an agent keeps for itself across a long session."""

from __future__ import annotations

from cogym_lab.core import Action, ActionError
from cogym_lab.core.actions import ActionSpec, ParamSpec
from cogym_lab.core.grammar import parse_action

SPECS: dict[str, ActionSpec] = {spec.name: spec for spec in (
    ActionSpec(name="ADD_NOTE", description="Add a note.",
               params=(ParamSpec(name="note", description="What to remember."),)),
    ActionSpec(name="EDIT_NOTE", description="Replace the text of a note.",
               params=(ParamSpec(name="note_id", type="integer", description="The note's id."),
                       ParamSpec(name="note", description="The new text."))),
    ActionSpec(name="DELETE_NOTE", description="Delete a note that is no longer true or useful.",
               params=(ParamSpec(name="note_id", type="integer", description="The note's id."),)),
    ActionSpec(name="DO_NOTHING", description="Leave the scratchpad as it is."),
)}


class Scratchpad:
    """Numbered notes; ids are never reused so that an edit always means the same note."""

    def __init__(self, max_notes: int = 30) -> None:
        self.notes: dict[int, str] = {}
        self.max_notes = max_notes
        self._next_id = 1

    def apply(self, reply: str) -> Action:
        """Apply the action in an LM reply. Raises :class:`ActionError` if it is not one."""
        action, _ = parse_action(reply, SPECS)
        note_id = action.args.get("note_id")
        if note_id is not None and note_id not in self.notes:
            known = list(self.notes) or "none"
            raise ActionError(f"There is no note {note_id}; notes are {known}.")
        if action.name == "ADD_NOTE":
            if len(self.notes) >= self.max_notes:
                self.notes.pop(next(iter(self.notes)))  # the oldest note gives way
            self.notes[self._next_id] = action.args["note"]
            self._next_id += 1
        elif action.name in ("EDIT_NOTE", "DELETE_NOTE"):
            assert isinstance(note_id, int)  # a required integer param: parse_action checked it
            if action.name == "EDIT_NOTE":
                self.notes[note_id] = action.args["note"]
            else:
                del self.notes[note_id]
        return action

    def render(self) -> str:
        return "\n".join(f"{i}. {note}" for i, note in self.notes.items()) or "(empty)"

    def to_dict(self) -> dict[str, str]:
        return {str(i): note for i, note in self.notes.items()}
