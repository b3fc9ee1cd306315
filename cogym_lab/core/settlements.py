"""What became of each action request the env took: the env's answers on ``{session}/settled``.

A member's action travels as a :class:`~cogym_lab.core.messages.StepRequest` on the session's
step channel, and only the env node knows whether it was applied. So the env node settles every
action request it reads, once:

* **applied**: the coordinator took it and the event that records it (``seq``) is in the event
  log; ``error`` holds the env's refusal when that event is an ERROR (a bad action, not your
  turn): the action was taken and logged, and changed nothing;
* **refused**: it was not applied, because the session had ended (``end_reason`` says how), was
  stopping, or its log could not be written (``message`` says so in words for the person).

When the env node reads no more requests it drains what is still queued on the step channel,
refuses each action there, and publishes :class:`StepsClosed` last: a sender still waiting for an
answer after that (its request arrived after the node's last read) is refused by whoever waits
for it (:class:`cogym_lab.runtime.settlements.Settlements`), so no request is left unanswered.

A session that is interrupted (a server that stops; ``end=False``) is not ended: its queued
requests are left on the step channel, where a resumed session on a lasting transport (Redis) may
still apply them. Its :class:`StepsClosed` says ``interrupted``, and what was pending is answered
``interrupted``, never ``refused``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

SettledStatus = Literal["applied", "refused", "interrupted"]


class Settlement(BaseModel):
    """The env's answer to one action request (see the module docstring)."""

    kind: Literal["settled"] = "settled"
    request_id: str
    role: str
    status: SettledStatus
    seq: int | None = None  # applied: the logged event that records it
    error: str | None = None  # applied, but as an ERROR event: the env's reason
    end_reason: str | None = None  # refused: the session's end reason, when it has ended
    message: str | None = None  # refused or interrupted: why, in words for the person

    @property
    def applied(self) -> bool:
        return self.status == "applied"


class StepsClosed(BaseModel):
    """The env node's last word on ``{session}/settled``: it reads no more step requests."""

    kind: Literal["closed"] = "closed"
    end_reason: str | None = None
    interrupted: bool = False
    #: What a request that gets no answer of its own is told, in words for the person.
    message: str

    def settle(self, request_id: str, role: str) -> Settlement:
        """The answer to a request the env node never read."""
        return Settlement(request_id=request_id, role=role,
                          status="interrupted" if self.interrupted else "refused",
                          end_reason=self.end_reason, message=self.message)


SETTLED = TypeAdapter(Settlement | StepsClosed)


def settled_channel(session_id: str) -> str:
    """Where the env node publishes its :class:`Settlement` answers and :class:`StepsClosed`."""
    return f"{session_id}/settled"


#: How each end reason the coordinator and the session give reads in a refusal; the fields of
#: the END event's ``info`` fill the blanks. Other reasons (``"ended by the user"``, the panel
#: grace period's) are words already.
_ENDINGS: dict[str, tuple[str, str]] = {
    "finished": ("finished by {by}", "finished"),
    "step_limit": ("{role} reached its step limit", "a step limit was reached"),
    "idle": ("nobody acted for a while", "nobody acted for a while"),
    "task_done": ("the task is done", "the task is done"),
    "event_limit": ("it reached its event limit", "it reached its event limit"),
    "log_failed": ("its event log could not be written", "its event log could not be written"),
    "time_up": ("the time is up", "the time is up"),
    "task_failed": ("the task failed", "the task failed"),
    "timeout": ("it reached its time limit", "it reached its time limit"),
    "cancelled": ("it was cancelled", "it was cancelled"),
    "lm_failed": ("a language model failed", "a language model failed"),
}


def ending_words(end_reason: str | None, info: dict[str, Any] | None = None) -> str:
    """How the session ended, in words (``"finished by agent"``)."""
    if not end_reason:
        return "it was stopped"
    words = _ENDINGS.get(end_reason)
    if words is None:
        return end_reason
    try:
        return words[0].format(**(info or {}))
    except (KeyError, IndexError, ValueError):
        return words[1]


def ended_before(end_reason: str | None, info: dict[str, Any] | None = None) -> str:
    """The refusal of an action that came after the session's end."""
    return (f"The session ended before this action was applied (it ended: "
            f"{ending_words(end_reason, info)}).")


#: What a request pending when the session was interrupted is told.
INTERRUPTED = ("The server stopped the session before this action was applied. Once the "
               "session is resumed, check whether it is there and send it again if not.")
