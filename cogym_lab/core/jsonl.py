"""The one reader of the JSON Lines files a session writes (``events.jsonl``, ``lm_calls.jsonl``).

Every reader of a results directory goes through :func:`read_jsonl`, so they all agree on what a
log holds:

* records are separated by ``\\n`` and nothing else. ``str.splitlines`` would also split on
  U+2028, U+2029, U+0085 and the other Unicode line breaks, which JSON writers (pydantic
  included) leave raw inside strings: a message pasted from a PDF would cut its event in two;
* each line is decoded as UTF-8 on its own, so a byte sequence cut short hurts one line only;
* blank lines are skipped;
* the **last** line may be bad: a crash (or a full disk) can leave it torn, even inside a UTF-8
  character. It is skipped with a warning that names the file and the line;
* a bad line **before** the last one is not a torn write but a damaged log: :class:`LogReadError`
  names the file and the line. Reading on past it would silently drop an event, and replay or
  evaluation would report a session that did not happen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, overload

from cogym_lab.errors import CogymError

log = logging.getLogger(__name__)

T = TypeVar("T")


class LogReadError(CogymError, ValueError):
    """A line of a JSON Lines log, not its last, cannot be read."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}, line {line}: {reason}")
        self.path = path
        self.line = line


@overload
def read_jsonl(path: str | Path) -> list[Any]: ...


@overload
def read_jsonl(path: str | Path, parse: Callable[[str], T]) -> list[T]: ...


def read_jsonl(path: str | Path, parse: Callable[[str], Any] = json.loads) -> list[Any]:
    """Every record of the JSON Lines file at ``path``, each line given to ``parse`` (which
    raises ``ValueError`` on a line it cannot read; pydantic's ``model_validate_json`` does).

    A bad last line is skipped with a warning; a bad line before it raises
    :class:`LogReadError`. ``FileNotFoundError`` when there is no file.
    """
    path = Path(path)
    lines = path.read_bytes().split(b"\n")
    numbered = [(number, line) for number, line in enumerate(lines, start=1) if line.strip()]
    records: list[Any] = []
    for index, (number, line) in enumerate(numbered):
        try:
            records.append(parse(line.decode("utf-8")))
        except ValueError as error:  # UnicodeDecodeError and pydantic's errors are ValueErrors
            reason = _reason(error)
            if index < len(numbered) - 1:
                raise LogReadError(path, number, reason) from None
            torn = "" if number < len(lines) else " (no newline: a write cut short)"
            log.warning("%s, line %d: skipping the last line%s: %s", path, number, torn, reason)
    return records


def _reason(error: Exception) -> str:
    """A one-line account of why a line could not be read."""
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 at byte {error.start}"
    lines = [line.strip() for line in str(error).strip().split("\n")[:3]]  # pydantic: which field
    return f"{type(error).__name__}: {'; '.join(lines)}"[:300]


def read_jsonl_or_empty(path: str | Path, parse: Callable[[str], Any] = json.loads) -> list[Any]:
    """:func:`read_jsonl`, or no records when the file does not exist (a member that wrote no
    call log)."""
    try:
        return read_jsonl(path, parse)
    except FileNotFoundError:
        return []
