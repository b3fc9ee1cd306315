"""A person's panel replica of a shared text, in Python: what the browser's Yjs editor does.

It follows the panel's protocol (docs/editing.md): local typing is collected in a batch, made on
the text of the last update applied (``seen_seq``); a batch is sent as an ``EDIT_TEXT`` with its
``seen_seq``; before an incoming update is applied, a pending batch is sent first.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from pycrdt import Doc, Text

from cogym_lab.core.shared_text import ROOT


@dataclass(frozen=True)
class Batch:
    """Local typing to send: the replica's own operations, and what they were made on."""

    update: bytes
    seen_seq: int | None
    base: str  # the replica's text before the batch
    text: str  # the replica's text after it

    def action(self, component: str, client: int) -> dict:
        return {"name": "EDIT_TEXT", "args": {
            "component": component, "client": client,
            "update": base64.b64encode(self.update).decode("ascii")}}


class PanelReplica:
    """One panel's copy of one shared text."""

    def __init__(self, client: int, component: str = "editor") -> None:
        self.client = client
        self.component = component
        self.doc: Doc = Doc(client_id=client)
        self.text = self.doc.get(ROOT, type=Text)
        self.seen_seq: int | None = None  # the seq of the last update applied
        self._batch: tuple[bytes, int | None, str] | None = None  # (state, seen_seq, text)

    @property
    def value(self) -> str:
        return str(self.text)

    def type(self, start: int, end: int, insert: str) -> None:
        """Replace characters ``[start, end)`` of the replica's text with ``insert``."""
        value = self.value
        start, end = max(0, min(start, len(value))), max(0, min(end, len(value)))
        start, end = min(start, end), max(start, end)
        if start == end and not insert:
            return
        if self._batch is None:
            self._batch = (self.doc.get_state(), self.seen_seq, value)
        byte_start = len(value[:start].encode())
        byte_end = byte_start + len(value[start:end].encode())
        with self.doc.transaction():
            if byte_end > byte_start:
                del self.text[byte_start:byte_end]
            if insert:
                self.text.insert(byte_start, insert)

    def take(self) -> Batch | None:
        """The typing not yet sent, as one batch (``None`` when there is none)."""
        if self._batch is None:
            return None
        state, seen_seq, base = self._batch
        self._batch = None
        if self.doc.get_state() == state and self.value == base:
            return None  # nothing typed (a deletion shows in the text, an insertion in the state)
        return Batch(self.doc.get_update(state), seen_seq, base, self.value)

    def receive(self, texts: dict[str, str] | None, seq: int) -> Batch | None:
        """Apply an update's news for this text; the batch that had to be sent first."""
        encoded = (texts or {}).get(self.component)
        if encoded is None:
            return None
        pending = self.take()
        self.doc.apply_update(base64.b64decode(encoded))
        self.seen_seq = seq
        return pending
