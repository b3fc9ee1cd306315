"""A notebook cell's outputs as the kernel reports them: one record per output, the cell's result,
and the collector that builds them from kernel messages under a size budget.

Shared by every code that reads kernel messages: a private kernel's executor and the watcher of a
person's notebook kernel both turn IOPub messages into the same :class:`CellResult`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["TEXT_TRACEBACK_LINES", "CellOutput", "CellResult", "OutputCollector", "strip_ansi"]

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")

#: How many trailing traceback lines `CellResult.text()` keeps.
TEXT_TRACEBACK_LINES = 15


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor moves) from `text`."""
    return _ANSI_RE.sub("", text)


def _truncation_marker(n: int) -> str:
    return f"[... output truncated: {n} more characters]"


@dataclass
class CellOutput:
    """One output of a cell, as shown under it in a notebook."""

    kind: Literal["stream", "result", "display", "error"]
    text: str = ""
    name: str | None = None  # "stdout" / "stderr" for streams; the exception name for errors
    html: str | None = None
    png: str | None = None  # base64-encoded PNG
    traceback: str | None = None  # ANSI-stripped, for errors

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CellResult:
    """The outcome of executing one cell."""

    code: str
    status: Literal["ok", "error", "timeout", "died"]
    execution_count: int | None
    outputs: list[CellOutput] = field(default_factory=list)
    error: str | None = None
    truncated: bool = False
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "status": self.status,
            "execution_count": self.execution_count,
            "outputs": [o.to_dict() for o in self.outputs],
            "error": self.error,
            "truncated": self.truncated,
            "duration": self.duration,
        }

    def text(self) -> str:
        """The outputs as plain text, suitable for a prompt."""
        parts: list[str] = []
        for out in self.outputs:
            if out.kind == "error":
                chunk = out.text
                if out.traceback:
                    lines = out.traceback.rstrip("\n").splitlines()
                    if len(lines) > TEXT_TRACEBACK_LINES:
                        lines = ["...", *lines[-TEXT_TRACEBACK_LINES:]]
                    chunk = "\n".join(lines)
                    if out.text and out.text not in chunk:
                        chunk += "\n" + out.text
                parts.append(chunk)
            elif out.text:
                parts.append(out.text)
            elif out.png is not None:
                parts.append("[image/png]")
        if self.status in ("timeout", "died") and self.error:
            parts.append(self.error)
        return "\n".join(p.rstrip("\n") for p in parts if p)


class OutputCollector:
    """Accumulates a cell's outputs under a total character budget."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.used = 0
        self.dropped = 0
        self.outputs: list[CellOutput] = []
        self._marker_target: CellOutput | None = None

    def _take(self, text: str) -> str:
        """Return the part of `text` that fits in the budget; count the rest as dropped."""
        room = max(self.max_chars - self.used, 0)
        if len(text) <= room:
            self.used += len(text)
            return text
        self.used += room
        self.dropped += len(text) - room
        return text[:room]

    def _mark(self, out: CellOutput) -> None:
        if self.dropped and self._marker_target is None:
            self._marker_target = out

    def stream(self, name: str, text: str) -> None:
        last = self.outputs[-1] if self.outputs else None
        kept = self._take(text)
        if last is not None and last.kind == "stream" and last.name == name:
            last.text += kept
            self._mark(last)
            return
        if not kept and self.dropped:
            return
        out = CellOutput(kind="stream", name=name, text=kept)
        self.outputs.append(out)
        self._mark(out)

    def rich(self, kind: Literal["result", "display"], data: dict[str, Any]) -> None:
        text = data.get("text/plain") or ""
        html = data.get("text/html")
        png = data.get("image/png")
        if isinstance(text, list):
            text = "".join(text)
        if isinstance(html, list):
            html = "".join(html)
        if isinstance(png, str):
            png = png.replace("\n", "")
        kept = self._take(text)
        if html is not None:
            room = self.max_chars - self.used
            if len(html) <= room:
                self.used += len(html)
            else:  # a cut-off HTML fragment is useless: drop it entirely
                self.dropped += len(html)
                html = None
        out = CellOutput(kind=kind, text=kept, html=html, png=png)
        if not kept and html is None and png is None and self.dropped:
            return
        self.outputs.append(out)
        self._mark(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        head = f"{ename}: {evalue}" if evalue else ename
        tb = strip_ansi("\n".join(traceback)) if traceback else None
        # the error itself is always kept; only the traceback is subject to the budget
        self.used += len(head)
        if tb is not None:
            tb = self._take(tb) or None
        out = CellOutput(kind="error", text=head, name=ename, traceback=tb)
        self.outputs.append(out)
        self._mark(out)

    def finish(self) -> bool:
        """Append the truncation marker if anything was dropped; return `truncated`."""
        if not self.dropped:
            return False
        marker = _truncation_marker(self.dropped)
        target = self._marker_target
        if target is not None and target.kind == "stream":
            sep = "" if not target.text or target.text.endswith("\n") else "\n"
            target.text += sep + marker + "\n"
        else:
            self.outputs.append(CellOutput(kind="stream", name="stderr", text=marker + "\n"))
        return True
