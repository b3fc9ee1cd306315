"""A comparison step (Co-Gym Real): the participant's outcome beside the baseline's team's
outcome on the same task and instance.

The baseline runs as a hosted session with no person seat (the team alone), started when the
participant's session ends (or when the comparison step begins, if it was not started then).
The step shows the two outcomes side by side as "Outcome 1" and "Outcome 2", in an order drawn
at random once and kept in the participant's state; nothing shown says which system made
which. The outcomes are read and written as the rating form's pairwise question reads them
(:func:`cogym_lab.runtime.hosted.final_outcome`, :func:`cogym_lab.runtime.pairwise.outcome_text`).
"""

from __future__ import annotations

import random
import time
from typing import Any, Literal

from cogym_lab.runtime.hosted import final_outcome
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.runtime.pairwise import outcome_text
from cogym_lab.studies.hub.flow import ParticipantFlow
from cogym_lab.studies.hub.store import ComparisonShown
from cogym_lab.studies.steps import Step

#: What the step says above the two outcomes (neutral: it names neither system).
COMPARISON_TEXT = ("Here are two results for the same task: the one from your session and "
                   "another one. They are shown side by side in a random order. Read both, "
                   "then continue to say which you prefer.")
WAITING_TEXT = "The other result is still being made. This page updates by itself."
LABELS = ("Outcome 1", "Outcome 2")

_DRAW = random.SystemRandom()


def comparison_after(flow: ParticipantFlow, step: Step) -> Step | None:
    """The comparison step that follows session step ``step``, if its condition has one."""
    if step.kind != "session":
        return None
    return next((s for s in flow.steps if s.kind == "comparison"
                 and s.position == step.position), None)


def own_step(flow: ParticipantFlow, comparison: Step) -> Step:
    """The session step whose outcome ``comparison`` compares."""
    return next(s for s in flow.steps if s.kind == "session"
                and s.position == comparison.position)


def needs_baseline(host: SessionHost, flow: ParticipantFlow, step: Step) -> bool:
    """Whether comparison ``step`` has no baseline session that is running or has ended
    (none started, or one an earlier server left interrupted)."""
    played = flow.state.sessions.get(step.id)
    if played is None:
        return True
    try:
        entry = host.find(played.session_id)
    except HostingError:
        return True
    return entry.status == "interrupted"


def draw_order(flow: ParticipantFlow, step: Step) -> ComparisonShown:
    """The order of ``step``'s two outcomes, drawn the first time and kept after."""
    kept = flow.state.comparisons.get(step.id)
    if kept is None:
        order: list[Literal["own", "baseline"]] = (["own", "baseline"] if _DRAW.random() < 0.5
                                                  else ["baseline", "own"])
        kept = ComparisonShown(order=order, drawn_at=time.time())
        flow.state.comparisons[step.id] = kept
    return kept


def outcomes_view(host: SessionHost, flow: ParticipantFlow, step: Step) -> dict[str, Any]:
    """What comparison ``step`` shows: its text and, once both sessions have ended, the two
    outcomes in the kept order (``ready``)."""
    texts: dict[str, str] = {}
    for side, step_id in (("own", own_step(flow, step).id), ("baseline", step.id)):
        played = flow.state.sessions.get(step_id)
        if played is None:
            return {"text": WAITING_TEXT, "ready": False}
        try:
            ended, outcome = final_outcome(host.find(played.session_id))
        except HostingError:
            return {"text": WAITING_TEXT, "ready": False}
        if not ended:
            return {"text": WAITING_TEXT, "ready": False}
        texts[side] = outcome_text(outcome)
    order = draw_order(flow, step).order
    return {"text": COMPARISON_TEXT, "ready": True, "outcomes": [
        {"label": label, "text": texts[side]} for label, side in zip(LABELS, order, strict=True)]}


__all__ = ["COMPARISON_TEXT", "LABELS", "WAITING_TEXT", "comparison_after", "draw_order",
           "needs_baseline", "outcomes_view", "own_step"]
