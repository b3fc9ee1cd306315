"""The study's telemetry through ``jupyter_events``: one schema for the participant flow's
events, emitted on the server's event logger, and a listener that appends them to the study
folder's ``events.jsonl`` (what ``cogym-lab study export`` reads).

Only anonymous ids and step ids go into an event: never a login, an answer's text or a
condition's name (the export joins those from the participant's file).
"""

from __future__ import annotations

import time
from typing import Any

from cogym_lab.studies.hub.store import StudyFolder

#: The schema's id (a URN: it names the schema and is not fetched).
STUDY_EVENTS_SCHEMA = "urn:cogym-lab:events:study:v1"

#: What happened: the names the export's events table uses.
STUDY_EVENTS = ("assigned", "consented", "step_started", "step_finished", "answer_submitted",
                "session_started", "session_ended", "baseline_started", "comparison_shown",
                "left", "returned")

SCHEMA: dict[str, Any] = {
    "$id": STUDY_EVENTS_SCHEMA,
    "version": "1",
    "title": "cogym_lab study: a participant's way through a study",
    "personal-data": True,
    "description": "A participant (by anonymous id) was assigned, gave consent, started or "
                   "finished a step, submitted a questionnaire, started or ended a session, "
                   "had a baseline started or two outcomes shown for a comparison, left the "
                   "study's page or came back to it.",
    "type": "object",
    "required": ["event", "participant", "ts"],
    "additionalProperties": False,
    "properties": {
        "event": {"enum": list(STUDY_EVENTS)},
        "participant": {"type": "string", "pattern": "^p-[0-9a-f]+$"},
        "study": {"type": "string"},
        "ts": {"type": "number"},
        "step": {"type": "string"},
        "detail": {"type": "object"},
    },
}


class StudyTelemetry:
    """Emits the study's events on ``event_logger`` (a ``jupyter_events.EventLogger``) and
    writes each into ``folder``'s events file."""

    def __init__(self, event_logger: Any, folder: StudyFolder, study: str) -> None:
        self.event_logger = event_logger
        self.folder = folder
        self.study = study
        if STUDY_EVENTS_SCHEMA not in event_logger.schemas.schema_ids:
            event_logger.register_event_schema(SCHEMA)
        event_logger.add_listener(schema_id=STUDY_EVENTS_SCHEMA, listener=self._write)

    async def _write(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        self.folder.append_event(dict(data))

    def emit(self, event: str, participant: str, step: str = "",
             detail: dict[str, Any] | None = None) -> None:
        data: dict[str, Any] = {"event": event, "participant": participant,
                                "study": self.study, "ts": time.time()}
        if step:
            data["step"] = step
        if detail:
            data["detail"] = detail
        self.event_logger.emit(schema_id=STUDY_EVENTS_SCHEMA, data=data)


__all__ = ["SCHEMA", "STUDY_EVENTS", "STUDY_EVENTS_SCHEMA", "StudyTelemetry"]
