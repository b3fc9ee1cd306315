"""The results directory: ``session.json``, append-only ``events.jsonl``, a folder per member.

The log format, what its reader tolerates and what happens when it cannot be written are
described in ``docs/event-log.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from cogym_lab.core.jsonl import read_jsonl
from cogym_lab.core.messages import Event
from cogym_lab.core.text import clean
from cogym_lab.errors import CogymError

SESSION_FILE = "session.json"
EVENTS_FILE = "events.jsonl"


class LogWriteError(CogymError, OSError):
    """An event could not be appended to ``events.jsonl``; the log is left as it was before."""


class ResultsWriter:
    """Writes one session's results: ``session.json`` atomically, events by appending.

    ``keep=True`` (a resumed session) starts from the ``session.json`` already there.
    """

    def __init__(self, directory: str | Path, keep: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        # Unbuffered: each event goes to the OS in one write, and a failed write leaves no bytes
        # behind in a buffer for a later flush (or close) to try again.
        self._events = (self.directory / EVENTS_FILE).open("ab", buffering=0)
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

    def add_to_next_write(self, fields: dict[str, Any]) -> None:
        """Merge ``fields`` into what the next :meth:`write_session` writes, without a write of
        their own; that write's own fields win where both name one."""
        self._session.update(fields)

    def append_event(self, event: Event) -> None:
        """Append ``event`` as one line, whole or not at all.

        Raises :class:`LogWriteError` when the event cannot be encoded (text the text policy
        should have cleaned) or written (a full disk): a partly written line is cut off again,
        so the log still ends after its last whole event.
        """
        path = self.directory / EVENTS_FILE
        try:
            line = (event.model_dump_json(exclude_defaults=True) + "\n").encode("utf-8")
        except ValueError as error:  # pydantic's serialization errors, UnicodeEncodeError
            raise LogWriteError(f"event {event.seq} cannot be written to {path}: "
                                f"{_first_line(error)}") from error
        descriptor = self._events.fileno()
        size_before = os.fstat(descriptor).st_size
        try:
            written = memoryview(line)
            while written:  # a write may stop short (a file-size limit): go on until it fails
                written = written[os.write(descriptor, written):]
        except OSError as error:
            # If this fails too, nothing more can be done; the reader skips a torn tail anyway.
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, size_before)
            raise LogWriteError(error.errno, f"event {event.seq} could not be appended to "
                                             f"{path}: {error.strerror or error}") from error

    def close(self) -> None:
        self._events.close()


def _first_line(error: Exception) -> str:
    return str(error).strip().split("\n")[0]


def update_session(directory: str | Path, **fields: Any) -> dict[str, Any]:
    """Merge ``fields`` into an existing ``session.json`` (atomically) and return it."""
    data = read_session(directory) | fields
    _write_json(Path(directory) / SESSION_FILE, data)
    return data


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")  # readers never see half a file
    # The text policy once more: a lone surrogate in an outcome must not leave the session
    # "running" because its final record could not be encoded.
    text = json.dumps(clean(data), indent=2, ensure_ascii=False, default=str)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk must not leave half a file beside the old one
        raise


def read_session(directory: str | Path) -> dict[str, Any]:
    return json.loads((Path(directory) / SESSION_FILE).read_text(encoding="utf-8"))


def read_events(directory: str | Path) -> list[Event]:
    """The events of ``directory``'s log, read by :func:`cogym_lab.core.jsonl.read_jsonl`: a
    torn last line is skipped with a warning, a bad line before it raises ``LogReadError``."""
    return read_jsonl(Path(directory) / EVENTS_FILE, Event.model_validate_json)


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
