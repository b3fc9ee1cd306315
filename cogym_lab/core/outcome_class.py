"""Which sessions say something about the team, and which ended for a cause outside it.

One place decides it, from what ``session.json`` records, for the session itself (its
``outcome_class``), the batch's ``run.json``, ``eval run --retry-failed`` and the report:

* ``completed``: the session ran to an end of its own (finished, idle, a step or time limit ...),
  delivered or not, and was graded if it delivered. It counts.
* ``agent_failure``: an agent's LM failed past its retries and deadline (it hung, trickled,
  kept answering 5xx or 429, or sent replies that could not be read), so the session ended
  there. The agent never got to show what it can do: the model's endpoint failed, not the
  model.
* ``simulator_error``: the simulated user's LM failed the same way: the person's side of the
  session broke.
* ``infrastructure``: anything else outside the team: a judge's or a task tool's LM failed
  (so there is no grade), the session crashed (``status`` ``failed``), its event log could not
  be written, or the task itself failed.

A wrong answer, an unusable action or a refusal by the model are the team's own doing: such a
session is ``completed``. Reports leave every other class out of delivery, performance and
pass^k unless asked to count them (``include_failures``), and count them apart, so that the
classes always add up to the sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

OutcomeClass = Literal["completed", "infrastructure", "simulator_error", "agent_failure"]
OUTCOME_CLASSES: tuple[OutcomeClass, ...] = ("completed", "infrastructure", "simulator_error",
                                             "agent_failure")
FAILURE_CLASSES: tuple[OutcomeClass, ...] = OUTCOME_CLASSES[1:]

#: The end reason of a session stopped because a member's LM failed past its retries.
LM_FAILED = "lm_failed"
#: End reasons that are failures of the harness or the task, not of the team.
INFRASTRUCTURE_ENDINGS = frozenset({"log_failed", "task_failed"})

#: Each class in words, for the report and the terminal.
CLASS_WORDS: dict[str, str] = {"completed": "completed", "infrastructure": "infrastructure",
                               "simulator_error": "simulator error",
                               "agent_failure": "agent failure"}


def class_of_failure(failure: Mapping[str, Any] | None) -> OutcomeClass | None:
    """The class an LM failure (``LMFailure`` as a dict) puts its session in."""
    if not failure:
        return None
    side = failure.get("side")
    if side == "agent":
        return "agent_failure"
    if side == "user":
        return "simulator_error"
    return "infrastructure"


def outcome_class(session: Mapping[str, Any]) -> OutcomeClass:
    """The class of the session whose ``session.json`` is ``session`` (see the module)."""
    if session.get("status") == "failed" or session.get("error"):
        return "infrastructure"  # it crashed (a batch records the error over what was there)
    recorded = session.get("outcome_class")
    for name in OUTCOME_CLASSES:
        if recorded == name:
            return name
    by_failure = class_of_failure(session.get("failure"))
    if by_failure is not None:
        return by_failure
    if session.get("end_reason") in INFRASTRUCTURE_ENDINGS:
        return "infrastructure"
    return "completed"


__all__ = ["CLASS_WORDS", "FAILURE_CLASSES", "INFRASTRUCTURE_ENDINGS", "LM_FAILED",
           "OUTCOME_CLASSES", "OutcomeClass", "class_of_failure", "outcome_class"]
