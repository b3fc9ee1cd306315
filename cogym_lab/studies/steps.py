"""A participant's way through a study, step by step: what the participant is shown next.

:func:`plan_steps` turns a design and a participant's sequence into the steps both arms follow:
consent, instructions, practice and calibration rounds, then each session with the
questionnaires due after it (after each session, after each condition's block) and the end
questionnaires. A session whose condition ``compare_with`` a baseline is followed, after its
``session`` questionnaires, by a ``comparison`` step: the participant is shown the baseline's
outcome on the same instance (the step's ``condition`` is the baseline), then answers the
``comparison`` questionnaires (which outcome they prefer).
People are led through these steps in JupyterLab; simulated participants walk the same list.
A step's ``id`` is stable, so answers and events name it.

Instances: a condition met ``k`` times by each participant gives participant ``p`` its instances
number ``p * k`` to ``p * k + k - 1`` of the condition's list (wrapping round), so consecutive
participants take the next ones rather than all the first.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from cogym_lab.studies.design import Condition, Questionnaire, SessionPlan, StudyDesign

StepKind = Literal["consent", "instructions", "practice", "calibration", "session",
                   "comparison", "questionnaire", "done"]


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


def _asked(questionnaires: list[Questionnaire], condition: Condition,
           position: int) -> list[Step]:
    """The questionnaire steps due at ``position``, about ``condition``."""
    return [Step(id=f"{q.name}-{position}", kind="questionnaire", title=q.title or q.name,
                 condition=condition.name, label=condition.label, position=position,
                 questionnaire=q.name) for q in questionnaires]


def plan_steps(design: StudyDesign, sequence: list[str], participant: int = 0) -> list[Step]:
    """Every step of participant number ``participant``, whose sessions meet ``sequence``
    (condition names)."""
    steps = [Step(id="consent", kind="consent", title="Consent")]
    if design.instructions:
        steps.append(Step(id="instructions", kind="instructions", title="Instructions"))
    for kind, rounds in (("practice", design.practice), ("calibration", design.calibration)):
        for n, round_ in enumerate(rounds):
            steps.append(Step(id=f"{kind}-{n}", kind=kind, title=round_.title,  # type: ignore[arg-type]
                              position=-(n + 1), instance=round_.session.instances[0],
                              session=round_.session))
    after = {moment: [q for q in design.questionnaires if q.after == moment]
             for moment in ("session", "comparison", "block", "end")}
    met: dict[str, int] = {}
    for position, name in enumerate(sequence):
        condition = design.condition(name)
        count = met.get(name, 0)
        met[name] = count + 1
        instances = condition.session.instances
        instance = instances[(participant * sequence.count(name) + count) % len(instances)]
        shown = condition.label if design.assignment.anonymise else condition.name
        steps.append(Step(id=f"session-{position}", kind="session", title=shown,
                          condition=name, label=condition.label, position=position,
                          instance=instance, session=condition.session))
        steps += _asked(after["session"], condition, position)
        if condition.compare_with is not None:
            baseline = design.condition(condition.compare_with)
            steps.append(Step(id=f"comparison-{position}", kind="comparison",
                              title=baseline.label if design.assignment.anonymise
                              else baseline.name,
                              condition=baseline.name, label=baseline.label, position=position,
                              instance=instance, session=baseline.session))
            steps += _asked(after["comparison"], condition, position)
        if position + 1 == len(sequence) or sequence[position + 1] != name:
            steps += _asked(after["block"], condition, position)
    for questionnaire in after["end"]:
        steps.append(Step(id=f"{questionnaire.name}-end", kind="questionnaire",
                          title=questionnaire.title or questionnaire.name,
                          questionnaire=questionnaire.name))
    steps.append(Step(id="done", kind="done", title="Thank you"))
    return steps


__all__ = ["Step", "StepKind", "plan_steps"]
