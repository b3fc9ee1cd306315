"""``cogym-lab study export``: a study folder's participants, answers, events and sessions as
the export's four tables (arm ``human``).

The session rows come from each session's results folder, read by
:func:`cogym_lab.studies.session_rows.session_row` as the simulated arm's are: both arms are
counted by the same code. A comparison step's baseline session (its team alone, on the
participant's instance) is a row under the baseline's condition, with no person, as the
simulated arm writes it; the order its two outcomes were shown in is the ``comparison_shown``
event's detail.
"""

from __future__ import annotations

import json
from pathlib import Path

from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.hub.store import ParticipantState, StudyFolder
from cogym_lab.studies.session_rows import session_row
from cogym_lab.studies.steps import plan_steps
from cogym_lab.studies.tables import AnswerRow, EventRow, ParticipantRow, SessionRow, write_export

_STATUSES = {"assigned", "consented", "in_progress", "finished", "withdrew"}


def _rows(design: StudyDesign, state: ParticipantState
          ) -> tuple[ParticipantRow, list[SessionRow], list[AnswerRow]]:
    steps = {step.id: step for step in plan_steps(design, state.sequence, state.number)}
    status = state.status if state.status in _STATUSES else "in_progress"
    participant = ParticipantRow(participant=state.participant, arm="human",
                                 sequence="|".join(state.sequence), status=status,  # type: ignore[arg-type]
                                 started_at=state.started_at, finished_at=state.finished_at)
    sessions = []
    for step_id, played in state.sessions.items():
        step = steps[step_id]
        assert step.session is not None
        sessions.append(session_row(
            Path(played.results_dir), participant=state.participant, position=step.position,
            condition=step.condition, label=step.label or step.title,
            practice=step.kind not in ("session", "comparison"), instance=step.instance or 0,
            person="" if step.kind == "comparison" else step.session.person))
    moments = {q.name: q.after for q in design.questionnaires}
    answers = [AnswerRow(participant=state.participant, questionnaire=answer.questionnaire,
                         moment=moments[answer.questionnaire],
                         condition=steps[answer.step].condition,
                         position=steps[answer.step].position, item=answer.item,
                         kind=answer.kind, part=answer.part, value=answer.value)
               for answer in state.answers]
    return participant, sessions, answers


def export_study(study_dir: str | Path, out: str | Path) -> dict[str, int]:
    """Write the study's export into ``out``; the rows written per table."""
    folder = StudyFolder(study_dir)
    if not folder.exists():
        raise ValueError(f"{folder.root} is not a study folder (no design.json/study.json)")
    design = folder.design()
    participants, sessions, answers = [], [], []
    for state in folder.participants():
        row, played, given = _rows(design, state)
        participants.append(row)
        sessions.extend(played)
        answers.extend(given)
    events = [EventRow(participant=str(event["participant"]), ts=float(event["ts"]),
                       event=str(event["event"]), step=str(event.get("step", "")),
                       detail=json.dumps(event["detail"]) if event.get("detail") else "")
              for event in folder.events() if "participant" in event and "ts" in event]
    return write_export(Path(out), design=design.name, arm="human", participants=participants,
                        sessions=sessions, answers=answers, events=events)


__all__ = ["export_study"]
