"""One input to the coordinator: what it came with and what it produced.

Every entry point of :class:`~cogym_lab.core.coordinator.Coordinator` makes one
:class:`StepContext` (who acts, and how the input came in) and hands it down the call chain
with the input, so nothing about the request being handled is kept on the coordinator between
calls. What the input produced is a :class:`Transition`. The parts the coordinator composes
(:mod:`cogym_lab.core.confirmations`, :mod:`cogym_lab.core.live_edits`) make their events
through :class:`Emitter`, which the coordinator is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cogym_lab.core.actions import Action, ActionSpec
from cogym_lab.core.env import Deferred, StepResult
from cogym_lab.core.grammar import RawAction
from cogym_lab.core.messages import Event, EventType, Update


@dataclass
class Transition:
    """What one input produced: the events to log, the updates to send (one per member it
    notifies), and slow work (role, Deferred) that actions started, for the EnvNode to run."""

    events: list[Event] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    deferred: list[tuple[str, Deferred]] = field(default_factory=list)

    def extend(self, other: Transition) -> Transition:
        self.events += other.events
        self.updates += other.updates
        self.deferred += other.deferred
        return self


@dataclass(frozen=True)
class StepContext:
    """One input's circumstances.

    ``role`` acts (``None`` for a tick, a clock tick or an end nobody asked for), under the
    request id ``request_id`` when a bus request carried it. ``base_text`` and ``seen_seq`` say
    where an edit of a shared text started (the text the sender edited, the update it acted
    on). ``follow_up``: the input is the result of ``role``'s deferred work; ``observed``: the env
    saw ``role`` take it outside the session. ``replaying`` is the logged event being re-applied,
    whose recorded merges are used instead of merging again.
    """

    role: str | None = None
    request_id: str | None = None
    base_text: str | None = None
    seen_seq: int | None = None
    follow_up: bool = False
    observed: bool = False
    replaying: Event | None = None

    def acts_as(self, actor: str | None) -> bool:
        """Whether an event by ``actor`` is this input's own act (not one of its consequences
        by someone else, such as the end it brings about)."""
        return actor is not None and actor == self.role

    def request_of(self, actor: str | None) -> str | None:
        """The request id an event by ``actor`` carries: this input's, for its own acts."""
        return self.request_id if self.acts_as(actor) else None

    def marks(self, actor: str | None) -> dict[str, Any]:
        """What an event by ``actor`` records of how its input came in (``info`` entries):
        ``follow_up``, ``observed``, and ``seen_seq``, the update a member's own act was made
        on (what it had been shown when it chose: the training export rebuilds its context
        from it)."""
        if not self.acts_as(actor):
            return {}
        return {**({"follow_up": True} if self.follow_up else {}),
                **({"observed": True} if self.observed else {}),
                **({"seen_seq": self.seen_seq}
                   if self.seen_seq is not None and not self.follow_up else {})}

    def replayed(self, seq: int) -> Event | None:
        """The logged event being re-applied, if it is event ``seq``."""
        return self.replaying if self.replaying is not None \
            and self.replaying.seq == seq else None


#: The circumstances of an input no member sent (a tick, an end asked for by the host).
NO_REQUEST = StepContext()


class Emitter(Protocol):
    """What the coordinator lends the parts it composes, to turn an act into events."""

    @property
    def seq(self) -> int:
        """The seq of the last event (the next one is ``seq + 1``)."""
        ...

    def team_roles(self) -> list[str]: ...

    def last_shown(self, role: str) -> int | None:
        """The seq of the last update ``role`` was sent."""
        ...

    def parse_task_action(self, raw: RawAction) -> tuple[Action, ActionSpec]:
        """Parse a task action that arrived inside an act (the one parse of that text)."""
        ...

    def admit_internal(self, step: StepContext, spec: ActionSpec) -> None: ...

    def apply(self, step: StepContext, role: str, action: Action, *, count: bool = True,
              on_behalf: bool = False) -> StepResult:
        """Run a task action on the env (a failure recorded in the event ``step`` replays is
        repeated instead: :mod:`cogym_lab.core.failures`)."""
        ...

    def after_task_action(self, step: StepContext, role: str, result: StepResult,
                          transition: Transition, now: float) -> Transition: ...

    def emit(self, step: StepContext, now: float, type_: EventType, actor: str | None,
             recipients: Sequence[str], **fields: Any) -> Transition: ...

    def refuse(self, step: StepContext, now: float, role: str, raw: RawAction, message: str,
               *, also: Sequence[str] = (), info: dict[str, Any] | None = None
               ) -> Transition: ...


__all__ = ["NO_REQUEST", "Emitter", "StepContext", "Transition"]
