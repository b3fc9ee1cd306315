"""A study's design, as data: what a TOML design file holds, validated with clear errors.

A design says what participants do and in which order, and what they are asked:

* **conditions**: the systems compared. Each names a session to run (task, team, instances, and
  the mode the paper compares: notifications or turns, plans or chat, macros or moves) and the
  neutral label participants see instead of its name (``"Agent A"``).
* **design**: ``between`` (each participant meets one condition) or ``within`` (each meets
  all), the order they meet them in (``random``, ``blocked``, ``latin`` square), and how many
  consecutive sessions each condition gets (``repeat``: DPT-Agent plays each agent twice).
* **consent**, **instructions**, **practice** and **calibration** rounds, a time limit per
  session;
* **questionnaires** after each session, after each condition's block (a pair of games), and
  at the end: Likert items, free text, rankings of the conditions, a task-load form;
* **measures** to report, by name (``borda``, ``win_rate``, ``wilcoxon``, ``mann_whitney``...).

Designs are loaded by :func:`cogym_lab.studies.designs.load_design`; this module only says what
a valid one is. Every model forbids unknown fields, so a misspelt key is an error that names it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

_STRICT = ConfigDict(extra="forbid")

#: A short identifier: a condition's, an item's, a questionnaire's.
Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_\-]*$")]
#: When a questionnaire is given: after every session, after the baseline's outcome was shown
#: (a session whose condition compares with a baseline), after each condition's block of
#: ``repeat`` sessions, or once at the end.
Moment = Literal["session", "comparison", "block", "end"]


class SessionPlan(BaseModel):
    """The session a condition runs (what ``cogym-lab run`` would be given)."""

    model_config = _STRICT

    task: str = Field(min_length=1)
    team: str = Field(min_length=1)
    #: Instances to draw from, in order (each participant's sessions take the next ones).
    instances: list[int] = Field(default_factory=lambda: [0], min_length=1)
    #: ``notifications`` (Co-Gym's) or ``turns``; ``plans`` or ``chat`` (Cocoa's); for the
    #: kitchen, ``moves`` (a person has moves and interact only) or ``macros``.
    mode: list[str] = Field(default_factory=list)
    #: The person's seat (the role the participant takes).
    person: str = "user"
    env_args: dict[str, object] = Field(default_factory=dict)
    #: Seconds a participant has for one session (``None``: the session's own limits).
    time_limit_seconds: float | None = Field(default=None, gt=0)


class Condition(BaseModel):
    """One system compared, and the name participants see instead of its own."""

    model_config = _STRICT

    name: Name
    label: str = Field(min_length=1, max_length=80)
    session: SessionPlan
    #: The autonomous baseline this condition's outcome is compared with (Co-Gym Real), if any:
    #: a ``baseline`` condition, run on the same instance, whose outcome the participant is
    #: shown after the session (a ``comparison`` step).
    compare_with: Name | None = None
    #: Run by the agents alone and never met by a participant: only compared with. Assignment
    #: leaves baselines out.
    baseline: bool = False
    #: The simulated user's traits when this condition runs with simulated participants.
    simulated_traits: list[str] = Field(default_factory=list)


class Assignment(BaseModel):
    """Who meets which conditions, in which order."""

    model_config = _STRICT

    subjects: Literal["between", "within"]
    order: Literal["random", "blocked", "latin"] = "latin"
    #: Consecutive sessions per condition in a participant's sequence.
    repeat: int = Field(default=1, ge=1, le=10)
    #: Conditions shown under their neutral labels only (never their names).
    anonymise: bool = True


class Round(BaseModel):
    """A practice or calibration round: a session that is not analysed."""

    model_config = _STRICT

    title: str = Field(min_length=1)
    text: str = ""
    session: SessionPlan


class LikertItem(BaseModel):
    model_config = _STRICT

    kind: Literal["likert"] = "likert"
    name: Name
    text: str = Field(min_length=1)
    points: int = Field(default=5, ge=3, le=11)
    low: str = "Strongly disagree"
    high: str = "Strongly agree"


class FreeTextItem(BaseModel):
    model_config = _STRICT

    kind: Literal["text"] = "text"
    name: Name
    text: str = Field(min_length=1)
    required: bool = False


class RankingItem(BaseModel):
    """Rank the conditions met so far (by their labels), best first."""

    model_config = _STRICT

    kind: Literal["ranking"] = "ranking"
    name: Name
    text: str = Field(min_length=1)


class ChoiceItem(BaseModel):
    """Pick one option (the pairwise preference: ``own``, ``autonomous``, ``tie``)."""

    model_config = _STRICT

    kind: Literal["choice"] = "choice"
    name: Name
    text: str = Field(min_length=1)
    options: list[str] = Field(min_length=2)


class TaskLoadItem(BaseModel):
    """The NASA task-load form: six subscales, each 0-100 in steps of 5."""

    model_config = _STRICT

    kind: Literal["task_load"] = "task_load"
    name: Name = "task_load"
    text: str = "How demanding was the task you just did?"


Item = Annotated[LikertItem | FreeTextItem | RankingItem | ChoiceItem | TaskLoadItem,
                 Field(discriminator="kind")]


class Questionnaire(BaseModel):
    model_config = _STRICT

    name: Name
    after: Moment
    title: str = ""
    items: list[Item] = Field(min_length=1)


class AnalysisPlan(BaseModel):
    """How the measures are computed where a name alone does not say it."""

    model_config = _STRICT

    #: Correction of the p-values of the tests between conditions (Cocoa: Bonferroni over its
    #: three outcomes, alpha = 0.05 / 3).
    correction: Literal["none", "bonferroni", "holm"] = "none"
    alpha: float = Field(default=0.05, gt=0, lt=1)
    #: The outcomes the tests compare (Likert items or composites); empty: every Likert item.
    tested: list[Name] = Field(default_factory=list)
    #: Composite scores, each the mean of some Likert items (Cocoa's general utility).
    composites: dict[str, list[Name]] = Field(default_factory=dict)


class StudyDesign(BaseModel):
    """A whole study (see the module docstring)."""

    model_config = _STRICT

    name: Name
    title: str = Field(min_length=1)
    #: The paper (or the lab's protocol) the design follows, for the export's provenance.
    source: str = ""
    consent: str = Field(min_length=1)
    instructions: str = ""
    conditions: list[Condition] = Field(min_length=1)
    assignment: Assignment
    practice: list[Round] = Field(default_factory=list)
    calibration: list[Round] = Field(default_factory=list)
    questionnaires: list[Questionnaire] = Field(default_factory=list)
    measures: list[str] = Field(default_factory=list)
    analysis: AnalysisPlan = Field(default_factory=AnalysisPlan)

    @model_validator(mode="after")
    def _names_fit(self) -> StudyDesign:
        names = [c.name for c in self.conditions]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"condition {', '.join(repeated)} is named more than once")
        labels = [c.label for c in self.conditions]
        if self.assignment.anonymise and len(set(labels)) != len(labels):
            raise ValueError("anonymised conditions need a label each (two share one)")
        baselines = {c.name for c in self.conditions if c.baseline}
        for condition in self.conditions:
            if condition.compare_with is not None and condition.compare_with not in names:
                raise ValueError(f"condition {condition.name!r} compares with "
                                 f"{condition.compare_with!r}, which is not a condition")
            if condition.compare_with is not None and condition.compare_with not in baselines:
                raise ValueError(f"condition {condition.name!r} compares with "
                                 f"{condition.compare_with!r}, which is not a baseline "
                                 f"(baseline = true)")
            if condition.baseline and condition.compare_with is not None:
                raise ValueError(f"baseline {condition.name!r} cannot compare with another")
        compared = {c.compare_with for c in self.conditions}
        unused = sorted(baselines - compared)
        if unused:
            raise ValueError(f"baseline {', '.join(unused)} is compared with by no condition, "
                             f"so it would never run")
        if not self.participant_conditions():
            raise ValueError("every condition is a baseline: participants would meet none")
        if any(q.after == "comparison" for q in self.questionnaires) and not compared - {None}:
            raise ValueError("a questionnaire is given after a comparison, but no condition "
                             "compares with a baseline")
        questionnaires = [q.name for q in self.questionnaires]
        if len(set(questionnaires)) != len(questionnaires):
            raise ValueError("two questionnaires share a name")
        for questionnaire in self.questionnaires:
            items = [i.name for i in questionnaire.items]
            if len(set(items)) != len(items):
                raise ValueError(f"questionnaire {questionnaire.name!r} names an item twice")
        if self.assignment.subjects == "within" and len(self.participant_conditions()) < 2:
            raise ValueError("a within-subjects design needs two conditions or more")
        return self

    def participant_conditions(self) -> list[Condition]:
        """The conditions participants meet (the baselines left out), in the file's order."""
        return [c for c in self.conditions if not c.baseline]

    def condition(self, name: str) -> Condition:
        for condition in self.conditions:
            if condition.name == name:
                return condition
        raise KeyError(name)


__all__ = ["AnalysisPlan", "Assignment", "ChoiceItem", "Condition", "FreeTextItem", "Item",
           "LikertItem", "Moment", "Questionnaire", "RankingItem", "Round", "SessionPlan",
           "StudyDesign", "TaskLoadItem"]
