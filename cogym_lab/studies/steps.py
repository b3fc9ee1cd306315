"""A participant's way through a study, step by step: what the participant is shown next.

:func:`plan_steps` turns a design and a participant's sequence into the steps both arms follow:
consent, instructions, practice and calibration rounds, then each session with the
questionnaires due after it (after each session, after each condition's block) and the end
questionnaires. People are led through these steps in JupyterLab; simulated participants walk
the same list. A step's ``id`` is stable, so answers and events name it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from cogym_lab.studies.design import SessionPlan, StudyDesign

StepKind = Literal["consent", "instructions", "practice", "calibration", "session",
                   "questionnaire", "done"]


class Step(BaseModel):
    """One step. ``position`` is the place in the sequence for a session (and for the
    questionnaires after it; ``-1`` for the end), a practice round's is negative."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: StepKind
    title: str = ""
    condition: str = ""
    label: str = ""
    position: int = -1
    instance: int | None = None
    session: SessionPlan | None = None
    questionnaire: str = ""


def plan_steps(design: StudyDesign, sequence: list[str]) -> list[Step]:
    """Every step of a participant whose sessions meet ``sequence`` (condition names)."""
    steps = [Step(id="consent", kind="consent", title="Consent")]
    if design.instructions:
        steps.append(Step(id="instructions", kind="instructions", title="Instructions"))
    for kind, rounds in (("practice", design.practice), ("calibration", design.calibration)):
        for n, round_ in enumerate(rounds):
            steps.append(Step(id=f"{kind}-{n}", kind=kind, title=round_.title,  # type: ignore[arg-type]
                              position=-(n + 1), instance=round_.session.instances[0],
                              session=round_.session))
    after = {moment: [q for q in design.questionnaires if q.after == moment]
             for moment in ("session", "block", "end")}
    met: dict[str, int] = {}
    for position, name in enumerate(sequence):
        condition = design.condition(name)
        count = met.get(name, 0)
        met[name] = count + 1
        instances = condition.session.instances
        shown = condition.label if design.assignment.anonymise else condition.name
        steps.append(Step(id=f"session-{position}", kind="session", title=shown,
                          condition=name, label=condition.label, position=position,
                          instance=instances[count % len(instances)], session=condition.session))
        block_ends = position + 1 == len(sequence) or sequence[position + 1] != name
        due = after["session"] + (after["block"] if block_ends else [])
        for questionnaire in due:
            steps.append(Step(id=f"{questionnaire.name}-{position}", kind="questionnaire",
                              title=questionnaire.title or questionnaire.name, condition=name,
                              label=condition.label, position=position,
                              questionnaire=questionnaire.name))
    for questionnaire in after["end"]:
        steps.append(Step(id=f"{questionnaire.name}-end", kind="questionnaire",
                          title=questionnaire.title or questionnaire.name,
                          questionnaire=questionnaire.name))
    steps.append(Step(id="done", kind="done", title="Thank you"))
    return steps


__all__ = ["Step", "StepKind", "plan_steps"]
