"""Whole-text replacements made on a stale copy: remember what each role saw, merge what it sends.

An action marked ``@action(replaces="editor")`` replaces the editor's whole text. A member who
edited an older copy (an agent thinking while the person typed) would erase the edits made
meanwhile. :class:`ReplacementTracker` remembers, per role, the text of each replaceable
component that role was shown and at which event, so the coordinator can find the text the
sender started from (its *base*) and merge ``merge_text(base, current, sent)`` instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from cogym_lab.core.actions import Action, ActionSpec
from cogym_lab.core.observation import Observation
from cogym_lab.core.text_merge import merge_text

#: Texts kept per role and component; a base older than these is treated as unknown.
HISTORY = 64


class ReplacementTracker:
    """Per role and component: the texts shown, with the seq of the event that showed them."""

    def __init__(self, specs: Iterable[ActionSpec]) -> None:
        self.components = {spec.replaces for spec in specs if spec.replaces}
        self._shown: dict[tuple[str, str], deque[tuple[int, str]]] = {}

    def shown(self, role: str, seq: int, view: Observation) -> None:
        """``role`` was shown ``view`` with the event ``seq``."""
        for name in self.components:
            if name not in view:
                continue
            text = view[name].content
            if not isinstance(text, str):
                continue
            history = self._shown.setdefault((role, name), deque(maxlen=HISTORY))
            if not history or history[-1][1] != text:
                history.append((seq, text))

    def base(self, role: str, component: str, seen_seq: int | None = None) -> str | None:
        """The text ``role`` last saw of ``component`` (as of event ``seen_seq`` when given)."""
        history = self._shown.get((role, component))
        if not history:
            return None
        if seen_seq is None:
            return history[-1][1]
        if seen_seq < history[0][0]:
            return None  # older than what is kept: no safe base
        return next(text for seq, text in reversed(history) if seq <= seen_seq)

    @staticmethod
    def merged(action: Action, spec: ActionSpec, base: str | None,
               current: str | None) -> Action | None:
        """``action`` with its text merged into ``current``, or ``None`` when nothing changed
        since ``base`` (or no base is known): then the action replaces the text as sent."""
        if spec.replaces is None or base is None or current is None or base == current:
            return None
        sent = action.args.get("text")
        if not isinstance(sent, str):
            return None
        return action.model_copy(update={"args": {**action.args,
                                                  "text": merge_text(base, current, sent)}})
