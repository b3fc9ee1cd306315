"""FlakyNotesEnv: NotesEnv whose work fails now and then, the way real work does (a search
index that cannot be read for a moment, a service that times out), and would not fail again.

Each time the task's code runs (an action's handler, or the deferred work a DRAFT starts) it
takes the next entry of :attr:`FlakyNotesEnv.failures`, a schedule a test fills: ``True`` makes
that run raise a transient error, ``False`` or an empty schedule lets it work. A replay of the
log runs on an env with an empty schedule, where nothing fails: if replay ran the failed work
again it would succeed, and the log would not replay.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from cogym_lab.core import Action, Deferred
from cogym_lab.core.env import StepResult
from tests.support.notes_env import NotesEnv

#: What the transient failures raise, in turn: none of them is a refusal (ActionError).
TRANSIENT = (OSError("the index could not be read"), TimeoutError("the service timed out"),
             ConnectionError("the connection was reset"))


class FlakyNotesEnv(NotesEnv):
    name = "flaky_notes"

    def __init__(self) -> None:
        super().__init__()
        self.failures: deque[bool] = deque()
        self.failed = 0  # how many runs of the task's code failed so far
        self.runs = 0  # how many runs of the task's code there were

    def fail(self) -> None:
        """Raise a transient error if the schedule says this run fails."""
        self.runs += 1
        if self.failures and self.failures.popleft():
            error = TRANSIENT[self.failed % len(TRANSIENT)]
            self.failed += 1
            raise type(error)(*error.args)

    def apply(self, role: str, action: Action) -> StepResult:
        # The failure comes from inside the task's code, before the handler changes anything,
        # as a handler whose I/O failed would (CoEnv.apply calls the handler right after).
        if action.name in self._handlers:
            self.fail()
        result = super().apply(role, action)
        if result.deferred is None:
            return result
        return replace(result, deferred=Deferred(self._flaky(result.deferred.work),
                                                 label=result.deferred.label))

    def _flaky(self, work: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
        async def flaky_work() -> Any:
            result = await work()  # a held draft takes its turn in the schedule once released
            self.fail()
            return result

        return flaky_work
