"""The session a study step runs: a :class:`SessionPlan` as the session host's spec."""

from __future__ import annotations

from cogym_lab.sessions.spec import Limits, SessionSpec
from cogym_lab.studies.design import SessionPlan

#: Plan modes that are the session's interaction protocol (the others are the team's own).
_INTERACTION = {"notifications", "turns"}


def spec_for(plan: SessionPlan, instance: int | None, *, person: bool = True) -> SessionSpec:
    """The spec of one session of ``plan`` on ``instance``, with the participant in its person
    seat (``person=False``: no person seat, the team alone, as a baseline plays); its time
    limit becomes the session's timeout."""
    interaction = next((mode for mode in plan.mode if mode in _INTERACTION), None)
    limits = Limits(interaction=interaction,  # type: ignore[arg-type]
                    timeout=plan.time_limit_seconds)
    return SessionSpec(task=plan.task, team=plan.team, instance=instance,
                       env_args=dict(plan.env_args), people=[plan.person] if person else [],
                       limits=limits)


__all__ = ["spec_for"]
