"""What the LM judges answer, as validated models (the judges' wire format)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

FAILURE_CATEGORIES: dict[str, str] = {
    "communication": "Communication",
    "situational_awareness": "Situational awareness",
    "planning": "Planning",
    "environment_awareness": "Environment awareness",
    "personalisation": "Personalisation",
}


class MessageLabel(BaseModel):
    """The judge's reading of one chat message."""

    n: int  # the message's number in the prompt, from 1
    initiative: bool = False
    kind: Literal["task", "dialogue", "none"] = "none"
    confirmation: bool = False  # an agent asks the human to approve a step before taking it
    halt: bool = False  # a human stops or redirects what the agent is doing


class MessageLabels(BaseModel):
    labels: list[MessageLabel]


class PairwiseVerdict(BaseModel):
    """Which of two outcomes for the same request is better: ``A``, ``B`` or ``tie``."""

    winner: Literal["A", "B", "tie"]
    reason: str = ""


class RoundProgress(BaseModel):
    round: int
    rating: int = Field(ge=1, le=5)


class ProgressRatings(BaseModel):
    ratings: list[RoundProgress]


class FailureFinding(BaseModel):
    present: bool = False
    evidence: list[str] = Field(default_factory=list)  # quotes from the trajectory


class FailureAnnotation(BaseModel):
    """One trajectory tagged with the five failure categories of Co-Gym's error analysis."""

    communication: FailureFinding = Field(default_factory=FailureFinding)
    situational_awareness: FailureFinding = Field(default_factory=FailureFinding)
    planning: FailureFinding = Field(default_factory=FailureFinding)
    environment_awareness: FailureFinding = Field(default_factory=FailureFinding)
    personalisation: FailureFinding = Field(default_factory=FailureFinding)

    def present(self) -> dict[str, bool]:
        return {name: getattr(self, name).present for name in FAILURE_CATEGORIES}
