"""An export folder read back for analysis: the four tables and ``study.json``, each row
validated, with an error that names the file, the row and the field when something is wrong.

Only the sessions and answers that are analysed are kept apart from the rest: practice and
calibration rounds (``practice`` or a negative position) are never part of a measure.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cogym_lab.errors import CogymError
from cogym_lab.studies.tables import AnswerRow, EventRow, ParticipantRow, SessionRow

Row = TypeVar("Row", bound=BaseModel)


class ExportError(CogymError, ValueError):
    """An export folder that cannot be analysed: a table missing, a row or a value malformed."""


@dataclass
class StudyExport:
    """One arm's export, validated."""

    folder: Path
    meta: dict[str, Any]
    participants: list[ParticipantRow]
    sessions: list[SessionRow]
    answers: list[AnswerRow]
    events: list[EventRow]
    #: Condition name -> the neutral label participants saw (from the analysed sessions).
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def arm(self) -> str:
        return str(self.meta.get("arm", ""))

    @property
    def design(self) -> str:
        return str(self.meta.get("design", ""))

    def analysed_sessions(self) -> list[SessionRow]:
        """The sessions measured: practice and calibration rounds left out."""
        return [s for s in self.sessions if not s.practice and s.position >= 0 and s.condition]

    def conditions(self) -> list[str]:
        """Condition names in the order they first appear (sessions, then answers)."""
        seen: dict[str, None] = {}
        for session in self.analysed_sessions():
            seen.setdefault(session.condition)
        for answer in self.answers:
            if answer.condition:
                seen.setdefault(answer.condition)
        return list(seen)

    def label(self, condition: str) -> str:
        return self.labels.get(condition, condition)


def _read_rows(path: Path, model: type[Row]) -> list[Row]:
    """Like :func:`cogym_lab.studies.tables.read_table`, but an error names the row."""
    if not path.is_file():
        raise ExportError(f"{path.name} is missing from the export folder {path.parent}")
    with path.open(newline="", encoding="utf-8") as source:
        reader = csv.DictReader(source)
        header = reader.fieldnames or []
        missing = [name for name, info in model.model_fields.items()
                   if name not in header and info.is_required()]
        unknown = [name for name in header if name not in model.model_fields]
        if missing or unknown:
            raise ExportError(f"{path.name}: the header does not fit the export's table "
                              f"(missing {missing or 'none'}, unknown {unknown or 'none'})")
        rows: list[Row] = []
        for number, raw in enumerate(reader, start=2):  # line 1 is the header
            cells = {k: (None if v == "" and model.model_fields[k].default is None else v)
                     for k, v in raw.items()}
            try:
                rows.append(model.model_validate(cells))
            except ValidationError as error:
                problem = error.errors()[0]
                where = ".".join(str(p) for p in problem["loc"])
                raise ExportError(f"{path.name}, line {number}: {where}: {problem['msg']} "
                                  f"(value {problem.get('input')!r})") from None
    return rows


def read_export(folder: Path) -> StudyExport:
    """The export in ``folder`` (written by :func:`cogym_lab.studies.tables.write_export`)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ExportError(f"{folder} is not an export folder (no such directory)")
    meta_path = folder / "study.json"
    if not meta_path.is_file():
        raise ExportError(f"study.json is missing from the export folder {folder}")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ExportError(f"study.json is not JSON: {error}") from None
    if not isinstance(meta, dict):
        raise ExportError("study.json must hold an object (design, arm, cogym_lab, rows)")
    export = StudyExport(
        folder=folder, meta=meta,
        participants=_read_rows(folder / "participants.csv", ParticipantRow),
        sessions=_read_rows(folder / "sessions.csv", SessionRow),
        answers=_read_rows(folder / "answers.csv", AnswerRow),
        events=_read_rows(folder / "events.csv", EventRow))
    known = {p.participant for p in export.participants}
    for name, rows in (("sessions", export.sessions), ("answers", export.answers)):
        strangers = sorted({r.participant for r in rows} - known)
        if strangers:
            raise ExportError(f"{name}.csv names participants that participants.csv does not: "
                              f"{', '.join(strangers[:5])}")
    for session in export.analysed_sessions():
        seen = export.labels.setdefault(session.condition, session.label)
        if seen != session.label:
            raise ExportError(f"sessions.csv: condition {session.condition!r} is shown under "
                              f"two labels ({seen!r} and {session.label!r})")
    return export


def number(answer: AnswerRow, low: float = -math.inf, high: float = math.inf) -> float:
    """An answer's value as a number in [low, high], or an :class:`ExportError` naming it."""
    try:
        value = float(answer.value)
    except ValueError:
        value = math.nan
    if math.isnan(value) or not low <= value <= high:
        raise ExportError(f"answers.csv: participant {answer.participant}, item {answer.item!r}"
                          f"{' (' + answer.part + ')' if answer.part else ''}: "
                          f"{answer.value!r} is not a {answer.kind} value"
                          f"{f' in [{low:g}, {high:g}]' if math.isfinite(high) else ''}")
    return value


__all__ = ["ExportError", "StudyExport", "number", "read_export"]
