"""The export of a study: one tidy table per level, the same for people and for simulated
participants, so that the two arms of one study are analysed by the same code.

* ``participants.csv``: one row per participant (an anonymous id, never a login name);
* ``sessions.csv``: one row per session a participant played, practice included (flagged);
* ``answers.csv``: one row per questionnaire answer (a ranking is one row per ranked label, a
  task-load form one row per subscale);
* ``events.csv``: one row per interaction event of the study's flow (consent given, step
  started, step finished, left, came back...).

``study.json`` beside them says which design, which arm, and the package's version.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cogym_lab._version import __version__

Arm = Literal["human", "simulated"]
#: A share of a session's time, 0 to 1.
Share = Annotated[float | None, Field(ge=0.0, le=1.0)]

_ROW = ConfigDict(extra="forbid")


class ParticipantRow(BaseModel):
    model_config = _ROW

    participant: str  # anonymous: "p-" and a hash, the same in every table
    arm: Arm
    #: The conditions met, in order, as names (the export is the researcher's: names are fine).
    sequence: str  # names joined by "|"
    status: Literal["assigned", "consented", "in_progress", "finished", "withdrew"]
    started_at: float | None = None
    finished_at: float | None = None
    #: The simulated participant's traits ("" for a person).
    traits: str = ""


class SessionRow(BaseModel):
    model_config = _ROW

    participant: str
    position: int  # 0-based place in the participant's sequence (practice rounds: -1, -2...)
    condition: str  # "" for practice and calibration
    label: str  # what the participant saw
    practice: bool
    task: str
    instance: int
    session_id: str
    end_reason: str = ""
    delivered: bool | None = None
    performance: float | None = None
    duration_seconds: float | None = None
    person_messages: int = 0
    agent_messages: int = 0
    person_actions: int = 0
    agent_actions: int = 0
    confirmations_asked: int = 0  # by the agent
    confirmations_given: int = 0  # accepted by the person
    interruptions: int = 0  # the person paused the agent
    #: The share of the session's initiative that was the person's (counted, not judged:
    #: :mod:`cogym_lab.studies.session_rows`).
    person_initiative: float | None = None
    #: Cocoa's plans-vs-chat measures (:mod:`cogym_lab.eval.metrics.activity_codes`), the same
    #: for a session with a plan and a chat session: the share of the session's time the person
    #: spent on each activity (the five add up to 1; ``None`` for a session without time)...
    share_planning: Share = None
    share_executing: Share = None
    share_inspecting: Share = None
    share_waiting: Share = None
    share_other: Share = None
    #: ...and the output-to-input item ratio: its mean over the session's rounds, each round's
    #: ratio joined by "|" (the unit of Cocoa's test), and the rounds that produced items.
    item_ratio: float | None = None
    item_ratios: str = ""
    item_rounds: int = 0
    #: The simulated participant's traits in this session, joined by "|" ("" for a person).
    traits: str = ""

    @field_validator("item_ratios")
    @classmethod
    def _ratios(cls, cell: str) -> str:
        for part in cell.split("|") if cell else ():
            try:
                value = float(part)
            except ValueError:
                raise ValueError(f"{part!r} is not a number (ratios are joined by '|')") from None
            if not value >= 0:
                raise ValueError(f"{part!r} is not a ratio (0 or more)")
        return cell


class AnswerRow(BaseModel):
    model_config = _ROW

    participant: str
    questionnaire: str
    moment: Literal["session", "comparison", "block", "end"]
    #: The condition the answer is about ("" for an end questionnaire that is about all).
    condition: str
    position: int  # the sequence position the questionnaire followed (-1 at the end)
    item: str
    kind: str  # likert, text, ranking, choice, task_load
    #: The subscale of a task-load form, or the label ranked for a ranking ("" otherwise).
    part: str = ""
    value: str  # as given: a number for likert/task_load/ranking position, text otherwise


class EventRow(BaseModel):
    model_config = _ROW

    participant: str
    ts: float
    event: str  # e.g. "consented", "step_started", "step_finished", "left", "returned"
    step: str = ""  # the step's id, when about one
    detail: str = ""  # JSON


TABLES: dict[str, type[BaseModel]] = {
    "participants": ParticipantRow, "sessions": SessionRow, "answers": AnswerRow,
    "events": EventRow,
}


def write_table(path: Path, rows: Iterable[BaseModel], model: type[BaseModel]) -> int:
    """Write ``rows`` as CSV with ``model``'s fields as the header; the number written."""
    fields = list(model.model_fields)
    count = 0
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=fields)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.model_dump().items()})
            count += 1
    return count


def read_table(path: Path, model: type[BaseModel]) -> list[BaseModel]:
    """The rows of one exported table, validated (empty cells are ``None``)."""
    with path.open(newline="", encoding="utf-8") as source:
        return [model.model_validate({k: (None if v == "" and
                                          model.model_fields[k].default is None else v)
                                      for k, v in row.items()})
                for row in csv.DictReader(source)]


def write_export(folder: Path, *, design: str, arm: Arm,
                 participants: Sequence[ParticipantRow], sessions: Sequence[SessionRow],
                 answers: Sequence[AnswerRow], events: Sequence[EventRow]) -> dict[str, int]:
    """Write the four tables and ``study.json`` into ``folder``; rows written per table."""
    folder.mkdir(parents=True, exist_ok=True)
    counts = {name: write_table(folder / f"{name}.csv", rows, TABLES[name])
              for name, rows in (("participants", participants), ("sessions", sessions),
                                 ("answers", answers), ("events", events))}
    (folder / "study.json").write_text(json.dumps(
        {"design": design, "arm": arm, "cogym_lab": __version__, "rows": counts}, indent=2))
    return counts


__all__ = ["TABLES", "AnswerRow", "Arm", "EventRow", "ParticipantRow", "SessionRow",
           "read_table", "write_export", "write_table"]
