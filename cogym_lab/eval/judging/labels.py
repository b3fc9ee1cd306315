"""What the LM judges answer, as validated models (the judges' wire format), and the content of
the label files a session folder keeps them in (``user_audit.json``, ``failures.json``, read and
written by :mod:`cogym_lab.records.label_files`)."""

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
    halt: bool = False  # a human stops the agent from doing what it is doing
    #: A human's reply that answers (yes or no alike) the question in the message right before
    #: it, when that one is an agent's: the Co-Gym release's "effective confirmation".
    confirms: bool = False


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


# -- the simulated-user audit (``<session>/user_audit.json``) ----------------------------------

#: What a user error did to the agent's chances: made its work easier than a real person
#: would, made it harder, or neither in a way that matters.
UserErrorSeverity = Literal["helped", "hindered", "minor"]


class UserError(BaseModel):
    """One error of a simulated user, as the reviewer tagged it and as the log confirms it."""

    type: str  # a key of cogym_lab.eval.users.audit.USER_ERROR_TYPES
    severity: UserErrorSeverity
    quote: str = ""  # the reviewer's evidence, copied from the log
    seq: int | None = None  # the event the quote was found in (None: not found in one event)
    verified: bool = False  # the quote occurs in the log (whitespace and case aside)
    critical: bool = False  # verified and "hindered": the session's result is in doubt
    explanation: str = ""


class UserCheck(BaseModel):
    """A programmatic check of the simulated user that failed (see ``eval.users.checks``)."""

    check: str
    detail: str
    seq: int | None = None


class UserAudit(BaseModel):
    """The audit of one session's simulated user(s): the LM reviewer's errors and the failed
    programmatic checks. ``flagged`` when any error is critical or any check failed."""

    reviewer: str
    errors: list[UserError] = Field(default_factory=list)
    checks: list[UserCheck] = Field(default_factory=list)
    flagged: bool = False
    roles: list[str] = Field(default_factory=list)  # the simulated users audited
    reviewed: bool = True  # False when the reviewer gave no usable review (checks only)
    dropped: int = 0  # review entries left out: unknown type or severity, not an object
    notes: list[str] = Field(default_factory=list)


# -- the fine-grained failure taxonomy (``<session>/failures.json``) ---------------------------


class TaxonomyEvidence(BaseModel):
    """One quote the annotator gave, checked against the log."""

    quote: str
    seq: int | None = None
    verified: bool = False


class TaxonomyFinding(BaseModel):
    """One second-level failure type (``C.1`` ... ``P.3``) found in a trajectory."""

    code: str  # a key of cogym_lab.eval.judging.failure_taxonomy.FAILURE_TYPES
    category: str  # its top-level category, a key of FAILURE_CATEGORIES
    attribution: Literal["lm", "scaffolding"]
    evidence: list[TaxonomyEvidence] = Field(default_factory=list)

    @property
    def supported(self) -> bool:
        """At least one of its quotes occurs in the log: only these findings are counted."""
        return any(item.verified for item in self.evidence)


class FailureTaxonomy(BaseModel):
    """A trajectory annotated with the fine-grained failure types of Co-Gym's Table 10."""

    annotator: str
    findings: list[TaxonomyFinding] = Field(default_factory=list)
    dropped: int = 0  # reply entries left out: unknown code or attribution, not an object
