"""A participant's way through a study: what they may see of their current step, and moving on.

What a participant is shown is built here and nowhere else, so that it never holds a
condition's name, its team, its mode or another participant's anything: a step's neutral
title, its kind, the texts it shows (consent, instructions, a practice round's), a
questionnaire's items, and for a session the session the participant holds a seat in. A
comparison step's outcomes are added by :mod:`cogym_lab.studies.hub.comparison`, under neutral
labels.
"""

from __future__ import annotations

import time
from typing import Any

from cogym_lab.errors import CogymError
from cogym_lab.studies.design import Questionnaire, StudyDesign
from cogym_lab.studies.hub.answers import AnswerError, check_answers
from cogym_lab.studies.hub.store import GivenAnswer, ParticipantState
from cogym_lab.studies.steps import Step, plan_steps


class FlowError(CogymError, ValueError):
    """A request that does not fit the participant's place in the study (HTTP ``status``)."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class ParticipantFlow:
    """One participant's steps under one design."""

    def __init__(self, design: StudyDesign, state: ParticipantState) -> None:
        self.design = design
        self.state = state
        self.steps: list[Step] = plan_steps(design, state.sequence, state.number)

    @property
    def current(self) -> Step:
        return self.steps[min(self.state.step, len(self.steps) - 1)]

    def expect(self, step_id: str, *kinds: str) -> Step:
        """The current step, when it is ``step_id`` of one of ``kinds``; ``FlowError`` else."""
        step = self.current
        if step.id != step_id:
            raise FlowError(f"Step {step_id[:80]!a} is not the current step "
                            f"({step.id}).")
        if kinds and step.kind not in kinds:
            raise FlowError(f"Step {step.id} is a {step.kind} step.")
        return step

    def questionnaire(self, step: Step) -> Questionnaire:
        return next(q for q in self.design.questionnaires if q.name == step.questionnaire)

    def labels_met(self, step: Step) -> list[str]:
        """The neutral labels a ranking on ``step`` orders: those met so far (all at the
        end), in the order first met."""
        last = step.position if step.position >= 0 else len(self.state.sequence) - 1
        labels: list[str] = []
        for name in self.state.sequence[:last + 1]:
            label = self.design.condition(name).label
            if label not in labels:
                labels.append(label)
        return labels

    # -- what the participant sees -------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """The participant's state as their browser may see it."""
        step = self.current
        shown: dict[str, Any] = {"id": step.id, "kind": step.kind, "title": step.title}
        if step.kind == "consent":
            shown["text"] = self.design.consent
        elif step.kind == "instructions":
            shown["text"] = self.design.instructions
        elif step.kind in ("practice", "calibration"):
            rounds = self.design.practice if step.kind == "practice" else self.design.calibration
            shown["text"] = rounds[-step.position - 1].text
        elif step.kind == "session":
            shown["text"] = ""
        if step.session is not None and step.kind != "comparison":  # never the baseline's
            shown["time_limit_seconds"] = step.session.time_limit_seconds
            played = self.state.sessions.get(step.id)
            if played is not None:
                shown["session"] = {"session_id": played.session_id, "role": played.role}
        if step.kind == "questionnaire":
            questionnaire = self.questionnaire(step)
            shown["items"] = [self._item(item.model_dump(), step)
                              for item in questionnaire.items]
            if step.label and self.design.assignment.anonymise:
                shown["about"] = step.label
        return {"participant": self.state.participant, "study": self.design.title,
                "status": self.state.status, "step": shown,
                "index": self.state.step, "total": len(self.steps)}

    def _item(self, item: dict[str, Any], step: Step) -> dict[str, Any]:
        if item["kind"] == "ranking":
            item["labels"] = self.labels_met(step)
        return item

    # -- moving on -------------------------------------------------------------------------------

    def finish(self, step: Step) -> None:
        """Mark ``step`` finished and move to the next one."""
        now = time.time()
        self.state.finished_steps[step.id] = now
        self.state.step = min(self.state.step + 1, len(self.steps) - 1)
        if self.current.kind == "done":
            self.state.status = "finished"
            self.state.finished_at = now
        elif self.state.status in ("assigned", "consented"):
            self.state.status = "in_progress" if step.kind != "consent" else "consented"

    def consent(self, agree: Any) -> Step:
        step = self.expect("consent", "consent")
        if agree is not True:
            raise FlowError("Consent is given with {\"agree\": true}.", status=400)
        self.finish(step)
        return step

    def answer(self, step_id: str, given: Any) -> tuple[Step, list[GivenAnswer]]:
        step = self.expect(step_id, "questionnaire")
        questionnaire = self.questionnaire(step)
        try:
            rows = check_answers(questionnaire, given, self.labels_met(step))
        except AnswerError as error:
            raise FlowError(str(error), status=400) from None
        stored = [GivenAnswer(step=step.id, questionnaire=questionnaire.name, item=item,
                              kind=kind, part=part, value=value)
                  for item, kind, part, value in rows]
        self.state.answers.extend(stored)
        self.finish(step)
        return step, stored


__all__ = ["FlowError", "ParticipantFlow"]
