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
    """Writes one session's results: ``session.json`` atomically, events by appending.

    ``keep=True`` (a resumed session) starts from the ``session.json`` already there.
    """

    def __init__(self, directory: str | Path, keep: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._events = (self.directory / EVENTS_FILE).open("a", encoding="utf-8")
        existing = self.directory / SESSION_FILE
        self._session: dict[str, Any] = read_session(self.directory) \
            if keep and existing.is_file() else {}

    @property
    def session(self) -> dict[str, Any]:
        """What ``session.json`` holds so far."""
        return dict(self._session)

    def write_session(self, **fields: Any) -> None:
        """Merge ``fields`` into ``session.json``."""
        self._session.update(fields)
        _write_json(self.directory / SESSION_FILE, self._session)

    def append_event(self, event: Event) -> None:
        self._events.write(event.model_dump_json(exclude_defaults=True) + "\n")
        self._events.flush()  # a crash must not lose the events so far

    def close(self) -> None:
        self._events.close()


def update_session(directory: str | Path, **fields: Any) -> dict[str, Any]:
    """Merge ``fields`` into an existing ``session.json`` (atomically) and return it."""
    data = read_session(directory) | fields
    _write_json(Path(directory) / SESSION_FILE, data)
    return data


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")  # readers never see half a file
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    os.replace(tmp, path)


def read_session(directory: str | Path) -> dict[str, Any]:
    return json.loads((Path(directory) / SESSION_FILE).read_text(encoding="utf-8"))


def read_events(directory: str | Path) -> list[Event]:
    lines = (Path(directory) / EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    return [Event.model_validate_json(line) for line in lines if line.strip()]


def trim_torn_tail(directory: str | Path) -> int:
    """Cut a last line that a crash left half-written from ``events.jsonl`` (so that appending
    can go on); returns how many bytes were cut."""
    path = Path(directory) / EVENTS_FILE
    if not path.is_file():
        return 0
    raw = path.read_bytes()
    keep = raw.rfind(b"\n") + 1
    if keep == len(raw):
        return 0
    with path.open("r+b") as handle:
        handle.truncate(keep)
    return len(raw) - keep
