"""``cogym-lab study export``: a study folder's participants, answers, events and sessions as
the export's four tables (arm ``human``).

The session rows come from each session's results folder (``session.json`` and
``events.jsonl``); :func:`session_row` is a minimal reader of its own until the simulated arm's
``cogym_lab.studies.session_rows`` is merged, which both arms should then share.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.hub.store import ParticipantState, StudyFolder
from cogym_lab.studies.steps import plan_steps
from cogym_lab.studies.tables import AnswerRow, EventRow, ParticipantRow, SessionRow, write_export

_STATUSES = {"assigned", "consented", "in_progress", "finished", "withdrew"}


def _count(events: list[dict[str, Any]], actor: str | None, kind: str) -> int:
    return sum(1 for event in events if event.get("type") == kind
               and (actor is None or event.get("actor") == actor))


def session_row(folder: Path, **fields: Any) -> SessionRow:
    """One session's row from its results folder (what is missing stays empty)."""
    summary: dict[str, Any] = {}
    if (folder / "session.json").is_file():
        summary = json.loads((folder / "session.json").read_text("utf-8"))
    events: list[dict[str, Any]] = []
    if (folder / "events.jsonl").is_file():
        for line in (folder / "events.jsonl").read_text("utf-8").splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # a torn last line
    person = fields.pop("person", "user")
    scores = summary.get("scores") if isinstance(summary.get("scores"), dict) else {}
    person_acts = sum(1 for e in events if e.get("actor") == person
                      and e.get("type") in ("action", "message"))
    agent_acts = sum(1 for e in events if e.get("actor") not in (None, person)
                     and e.get("type") in ("action", "message"))
    duration = summary.get("duration")
    return SessionRow(
        **fields, end_reason=str(summary.get("end_reason") or ""),
        delivered=summary.get("delivered"),
        performance=(scores or {}).get("performance"),
        duration_seconds=duration if isinstance(duration, (int, float)) else None,
        person_messages=_count(events, person, "message"),
        agent_messages=sum(1 for e in events if e.get("type") == "message"
                           and e.get("actor") not in (None, person)),
        person_actions=_count(events, person, "action"),
        agent_actions=sum(1 for e in events if e.get("type") == "action"
                          and e.get("actor") not in (None, person)),
        person_initiative=(person_acts / (person_acts + agent_acts)
                           if person_acts + agent_acts else None))


def _rows(design: StudyDesign, state: ParticipantState
          ) -> tuple[ParticipantRow, list[SessionRow], list[AnswerRow]]:
    steps = {step.id: step for step in plan_steps(design, state.sequence)}
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
            practice=step.kind != "session", task=step.session.task,
            instance=step.instance or 0, session_id=played.session_id,
            person=step.session.person))
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


__all__ = ["export_study", "session_row"]
