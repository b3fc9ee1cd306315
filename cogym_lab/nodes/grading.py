"""Grading a session that ended: its scores, each explained by the task, or in plain words why
there are none. A grader or an explanation that fails costs the scores or the reasons only,
never the session's result."""

from __future__ import annotations

import logging

from pydantic import BaseModel

from cogym_lab.core.env import CoEnv, ScoreReport
from cogym_lab.core.protocol import get_protocol
from cogym_lab.lm import LMError
from cogym_lab.lm.failures import LMFailure

__all__ = ["Grading", "GradingStatus", "grade", "is_delivered"]

log = logging.getLogger(__name__)


class Grading(BaseModel):
    """A session's graded end as ``session.json`` keeps it and the panels show it: the scores
    with their reports, or in plain words why there are none (``note``), and the raw ``error``
    of a grader that failed (for the record, not for the panel's text)."""

    delivered: bool
    end_reason: str | None
    scores: dict[str, float]
    score_reports: list[ScoreReport]
    note: str | None = None
    error: str | None = None
    #: What ended the session or cost its grade, when an LM failed past its retries (a member's
    #: during the session, the judge's while grading): the panel shows ``note``, which says it.
    failure: LMFailure | None = None


class GradingStatus(BaseModel):
    """Published on ``status_channel`` once the session is graded, beside the agents' statuses,
    so that a panel that saw the end shows the scores as soon as the grader is done (an LM judge
    may take a while after the last event)."""

    grading: Grading
    ts: float


def is_delivered(env: CoEnv, end_reason: str | None) -> bool:
    """Whether a session on ``env`` that ended for ``end_reason`` delivered its outcome, by the
    env's scoring protocol: the ending must count (``ScoringProtocol.delivers``) and the task
    must have something to deliver (``CoEnv.delivered``)."""
    return get_protocol(env.protocol).delivers(end_reason) and env.delivered()


async def grade(env: CoEnv, end_reason: str | None, session_id: str = "") -> Grading:
    """Grade what ``env`` holds at the end of a session that ended for ``end_reason``."""
    delivered = is_delivered(env, end_reason)

    def ungraded(note: str, error: str | None = None,
                 failure: LMFailure | None = None) -> Grading:
        return Grading(delivered=delivered, end_reason=end_reason, scores={}, score_reports=[],
                       note=note, error=error, failure=failure)

    if not delivered:
        return ungraded(
            f"Not graded: under this session's scoring, a session that ends this way "
            f"({end_reason or 'no reason given'}) delivers nothing."
            if not get_protocol(env.protocol).delivers(end_reason) else
            "Not graded: the result is empty, so nothing was delivered.")
    try:
        scores = await env.aevaluate()
    except Exception as error:  # noqa: BLE001 - a failing judge costs the score only
        log.warning("grading session %s failed: %s", session_id, error)
        failure = error.failure("judge", "judge") if isinstance(error, LMError) else None
        return ungraded(_grading_failed(error), f"{type(error).__name__}: {error}", failure)
    if not scores:
        return ungraded("This task has no grader for this result, so there are no scores.")
    return Grading(delivered=delivered, end_reason=end_reason, scores=scores,
                   score_reports=explain(env, scores, session_id))


def explain(env: CoEnv, scores: dict[str, float], session_id: str = "") -> list[ScoreReport]:
    """The task's reports on ``scores`` (``CoEnv.explain_scores``); what is not a
    :class:`ScoreReport` is dropped and logged."""
    if not scores:
        return []
    try:
        reports = env.explain_scores(dict(scores))
    except Exception:  # a failing explanation costs the reasons only
        log.warning("explaining the scores of session %s failed", session_id, exc_info=True)
        return []
    if not isinstance(reports, list):
        log.warning("session %s: explain_scores returned %s, not a list of ScoreReport",
                    session_id, type(reports).__name__)
        return []
    kept = [report for report in reports if isinstance(report, ScoreReport)]
    if len(kept) < len(reports):
        log.warning("session %s: explain_scores returned %d item(s) that are not a "
                    "ScoreReport; they are left out", session_id, len(reports) - len(kept))
    return kept


def _grading_failed(error: BaseException) -> str:
    """Why a session has no scores when its grader failed, in plain words for the person; the
    error itself goes to the log and to ``session.json``."""
    if isinstance(error, LMError):
        return (f"Not graded: the grader's language model failed ({error.reason}), so this "
                f"session has no scores. The result itself is saved.")
    return ("Not graded: the grader failed, so this session has no scores. The result itself is "
            "saved; the server's log says what went wrong.")
