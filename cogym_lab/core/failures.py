"""A task's own code failing on an action, recorded as what happened so that replay repeats it.

A refusal (:class:`~cogym_lab.core.actions.ActionError`) is part of the task's rules: the same
action on the same state is refused again, so replay simply applies it again. A *failure* is
not: an action handler that raised anything else (a search index that could not be read, a
service that timed out) may well succeed the next time. Were replay to run it again, it would
get an action where the log holds an error, and the log could neither be replayed nor resumed.

So a failure is logged as an outcome: its ``error`` event carries ``info["failed"]`` (the
exception's type name; :data:`FAILED`), and replay applies that recorded failure without calling
the task. Deferred work that failed (an LM draft, a kernel cell) is recorded the same way on its
``deferred`` error event. Logs written before this marker replay as they always did.
"""

from __future__ import annotations

from typing import Any

from cogym_lab.core.actions import ActionError
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.text import clean_text

#: The ``info`` key of an error event whose cause is the task's code failing, not a refusal:
#: the exception's type name.
FAILED = "failed"


class TaskFailed(ActionError):
    """The task's code raised while applying an action (not one of its refusals): raised where
    a step's result turns into an error, so that the error event records the failure."""

    def __init__(self, message: str, failed: str) -> None:
        super().__init__(message)
        self.failed = failed


def failure_message(error: BaseException) -> str:
    """What the actor is told when the task failed on its action."""
    return clean_text(f"The task failed on this action: {type(error).__name__}: {error}")


def failure_info(error: BaseException) -> dict[str, Any]:
    """The ``info`` of a step's result (and of its error event) for a task that raised
    ``error``."""
    return {"error": failure_message(error), FAILED: type(error).__name__}


def recorded_failure(event: Event | None) -> dict[str, Any] | None:
    """When ``event`` (the logged event being replayed) records a failure of the task's code,
    the ``info`` of the step's result that repeats it; otherwise ``None``."""
    if event is None or event.type is not EventType.ERROR or not event.info.get(FAILED):
        return None
    return {"error": event.error or "", FAILED: event.info[FAILED]}


def failure_marks(info: dict[str, Any]) -> dict[str, Any]:
    """What an error event records of a step result's ``info``: the failure, if it was one."""
    return {FAILED: info[FAILED]} if info.get(FAILED) else {}


__all__ = ["FAILED", "TaskFailed", "failure_info", "failure_marks", "failure_message",
           "recorded_failure"]
