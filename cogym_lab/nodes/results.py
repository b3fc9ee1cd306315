"""The results directory: ``session.json``, append-only ``events.jsonl``, a folder per member."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cogym_lab.core import Event

SESSION_FILE = "session.json"
EVENTS_FILE = "events.jsonl"


class ResultsWriter:
    """Writes one session's results: ``session.json`` atomically, events by appending."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._events = (self.directory / EVENTS_FILE).open("a", encoding="utf-8")
        self._session: dict[str, Any] = {}

    def write_session(self, **fields: Any) -> None:
        """Merge ``fields`` into ``session.json``."""
        self._session.update(fields)
        path = self.directory / SESSION_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self._session, indent=2, ensure_ascii=False, default=str))
        os.replace(tmp, path)

    def append_event(self, event: Event) -> None:
        self._events.write(event.model_dump_json(exclude_defaults=True) + "\n")
        self._events.flush()  # a crash must not lose the events so far

    def close(self) -> None:
        self._events.close()


def read_session(directory: str | Path) -> dict[str, Any]:
    return json.loads((Path(directory) / SESSION_FILE).read_text(encoding="utf-8"))


def read_events(directory: str | Path) -> list[Event]:
    lines = (Path(directory) / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    return [Event.model_validate_json(line) for line in lines if line.strip()]
