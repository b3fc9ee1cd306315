"""What a kitchen agent writes to its results folder (``context.results_dir``).

* ``latency.jsonl``: one line per measured decision, ``{"kind", "seconds", "tick"}`` (kind
  ``macro``: request to output of a macro action; ``policy``: of a code-as-policy;
  ``belief``, ``guideline``: of a belief or a guideline), plus ``calls``, the seconds of each
  LM call the decision made, and ``accepted`` for outputs that could not be used;
* ``policy_rejections.jsonl``: each policy refused, with the reason and the start of its text;
* ``lm_failures.jsonl``: each LM call that failed, with the reason;
* ``usage.json`` and ``mind.json`` at the end (see the agents).

Without a results folder the records are kept in memory only (for tests and notebooks). A file
that cannot be written costs the record, never the game.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from cogym_lab.core.text import clean

log = logging.getLogger(__name__)

#: Characters of a rejected policy's text kept in its record.
KEPT_TEXT = 2000


class AgentRecords:
    """Appends an agent's records to its results folder, and keeps them in memory."""

    def __init__(self, folder: str | Path | None) -> None:
        self.folder = Path(folder) if folder else None
        self.latencies: list[dict[str, Any]] = []
        self.rejections: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []

    def latency(self, kind: str, seconds: float, tick: int, **extra: Any) -> None:
        record = {"kind": kind, "seconds": round(seconds, 4), "tick": tick, **extra}
        self.latencies.append(record)
        self._append("latency.jsonl", record)

    def rejection(self, tick: int, reason: str, text: str, kind: str = "policy") -> None:
        record = {"tick": tick, "kind": kind, "reason": reason, "text": text[:KEPT_TEXT]}
        self.rejections.append(record)
        self._append("policy_rejections.jsonl", record)

    def failure(self, kind: str, tick: int, error: str) -> None:
        record = {"tick": tick, "kind": kind, "error": error[:KEPT_TEXT]}
        self.failures.append(record)
        self._append("lm_failures.jsonl", record)

    def write_json(self, name: str, data: Any) -> None:
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / name).write_text(json.dumps(clean(data), indent=2,
                                                       ensure_ascii=False), encoding="utf-8")
        except OSError as error:
            log.warning("could not write %s: %s", self.folder / name, error)

    def _append(self, name: str, record: dict[str, Any]) -> None:
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with (self.folder / name).open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(clean(record), ensure_ascii=False) + "\n")
        except OSError as error:
            log.warning("could not append to %s: %s", self.folder / name, error)


__all__ = ["AgentRecords"]
