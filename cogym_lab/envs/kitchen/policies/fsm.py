"""The kitchen's finite-state machine: a fast, rule-based chef that code-as-policy can steer.

Each time its chef is free (no macro running) the FSM reads the situation and picks a state,
in this order of priority, and each state gives one macro action:

``fire``
    A pan my chef can reach is on fire and nobody is putting it out: ``PUT_OUT_FIRE``.
``assigned``
    The head of the assigned tasks applies (see below).
``clean``
    Overcooked beef lies about (it will catch fire in a pan): ``CLEAN_A_COUNTER``.
``serve``
    A burger an order asks for is made and nobody else is serving it: ``SERVE``.
``hand_over``
    In a split kitchen, a made burger is on my side and only the partner reaches the serving
    window: ``PASS_ON`` it to the center counter.
``assemble``
    The ingredients of an open order's burger are ready within reach: ``ASSEMBLE``.
``rescue``
    Cooked beef has waited in a pan and nothing took it: ``PASS_ON`` it to a counter before it
    overcooks and catches fire.
``wait``
    Beef an open order needs will be well-cooked within a few ticks: no action, so the chef
    is there to take it rather than off on a long job.
``prepare``
    The most urgent open order lacks an ingredient nobody has ready or on the way, and my chef
    can make it: ``PREPARE`` it.
``supply``
    In a split kitchen whose plates only my chef reaches: keep an empty plate on the center
    counter (``PASS_ON``).
``park``
    Nothing to do, and my chef stands where a station, pan, board, window or trash can is
    used: step towards a tile out of the way.
``idle``
    Nothing to do: no action.
``busy``
    The chef is still running a macro: no action.
``unstick``
    The chef's moves have gone nowhere for a few ticks (the other chef wants the same tile),
    or the other chef's moves into its tile have: step aside with a ``MOVE``, which cancels
    the macro (:class:`~cogym_lab.envs.kitchen.policies.watch.StuckWatch`).

The choices live in :mod:`~.choices` (the partners use them too). A
situational macro that failed rests for a few ticks
(:class:`~.watch.FailedMacros`), so the FSM does something else instead
of failing again at once.

*Assigned tasks* override the situational states (all but ``fire``). They are a list of
:class:`ActionTask` (a precondition over the game state and a macro action) and
:class:`OrderTask` (a dish to make next), executed in order, each once: an action task is
taken off the list when its turn comes, and its action is sent if its precondition holds then;
an order task stays at the head, steering the FSM to make that dish, until the FSM sends the
``SERVE`` that completes it or no order for the dish is left (while there is nothing to do for
it, such as beef cooking, the situational states act meanwhile). Code-as-policy (the LM agents'
output) rewrites this list.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cogym_lab.envs.kitchen.policies.choices import (
    WAIT,
    assemble_choice,
    clean_choice,
    fire_choice,
    hand_over_choice,
    park_choice,
    prepare_choice,
    rescue_choice,
    serve_choice,
    supply_choice,
    wait_choice,
)
from cogym_lab.envs.kitchen.policies.situation import Situation, game_state
from cogym_lab.envs.kitchen.policies.watch import FailedMacros, StuckWatch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActionTask:
    """Send ``action`` (a macro in canonical syntax) if ``precondition`` holds for the game
    state (:func:`~.situation.game_state`) when the task's turn comes."""

    precondition: Callable[[Mapping[str, Any]], bool]
    action: str
    text: str = ""  # how the task was written, to show it back in prompts

    def describe(self) -> str:
        return self.text or f"(precondition, {self.action})"


@dataclass(frozen=True)
class OrderTask:
    """Make and serve a burger of ``dish`` next."""

    dish: str

    def describe(self) -> str:
        return repr(self.dish)


AssignedTask = ActionTask | OrderTask


def always(_state: Mapping[str, Any]) -> bool:
    """The precondition of a task that always applies."""
    return True


#: The situational states after ``fire`` and ``assigned``, in priority order.
SITUATIONAL_STATES: tuple[tuple[str, Callable[[Situation], str | None]], ...] = (
    ("clean", clean_choice),
    ("serve", serve_choice),
    ("hand_over", hand_over_choice),
    ("assemble", assemble_choice),
    ("rescue", rescue_choice),
    ("wait", wait_choice),
    ("prepare", prepare_choice),
    ("supply", supply_choice),
    ("park", park_choice),
)


class KitchenFSM:
    """The FSM chef of ``role``. :meth:`decide` is its policy: view content -> macro or None.

    ``paused_failures``: macros that failed recently, kept out of the situational states for a
    few ticks (:meth:`note_tick` reads the failures from each tick's info).
    """

    def __init__(self, role: str, tasks: Iterable[AssignedTask] = ()) -> None:
        self.role = role
        self.assigned: deque[AssignedTask] = deque(tasks)
        self.state = "idle"
        self.last_action: str | None = None
        self.failed = FailedMacros(role)
        self.stuck = StuckWatch(role)

    # -- steering -----------------------------------------------------------------------------

    def assign(self, tasks: Iterable[AssignedTask]) -> None:
        """Replace the assigned tasks (code-as-policy's output)."""
        self.assigned = deque(tasks)

    def describe_assigned(self) -> str:
        """The assigned tasks as a list literal, for prompts."""
        return "[" + ", ".join(task.describe() for task in self.assigned) + "]"

    def note_tick(self, info: Mapping[str, Any]) -> None:
        """Read one tick's info: a macro of mine that failed rests for a few ticks, and moves
        that went nowhere count towards stepping aside."""
        self.failed.note_tick(info)
        self.stuck.note_tick(info)

    # -- the policy -----------------------------------------------------------------------------

    def decide(self, content: Mapping[str, Any]) -> str | None:
        """The next macro for the chef of :attr:`role`, or ``None`` (busy, idle, no chef)."""
        situation = Situation.read(content, self.role)
        action, self.state = self._choose(situation, content)
        if action is not None:
            self.last_action = action
        return action

    def _choose(self, situation: Situation,
                content: Mapping[str, Any]) -> tuple[str | None, str]:
        if situation.me is None or situation.done:
            return None, "idle"
        aside = self.stuck.step_aside(situation)
        if aside is not None:
            return aside, "unstick"
        if situation.busy:
            return None, "busy"
        fire = fire_choice(situation)
        if fire is not None:
            return fire, "fire"
        assigned = self._assigned_choice(situation, content)
        if assigned is not None:
            return assigned, "assigned"
        action, state = self.failed.first(situation, SITUATIONAL_STATES)
        return (None if action == WAIT else action), state

    def _assigned_choice(self, situation: Situation,
                         content: Mapping[str, Any]) -> str | None:
        state: dict[str, Any] | None = None
        while self.assigned:
            task = self.assigned[0]
            if isinstance(task, ActionTask):
                self.assigned.popleft()  # each task runs once, whether or not it applies
                state = state if state is not None else game_state(content, self.role)
                if _holds(task, state):
                    return task.action
                continue
            if task.dish not in situation.order_dishes():
                self.assigned.popleft()  # no such order (left): nothing to make
                continue
            action = self._order_step(situation, task.dish)
            if action is not None and action.startswith("SERVE("):
                self.assigned.popleft()  # this serve completes the order
            return action  # None: nothing to do for it now (its beef cooks): it stays first
        return None

    def _order_step(self, situation: Situation, dish: str) -> str | None:
        """The next step toward a burger of ``dish``: serve, assemble or prepare."""
        return serve_choice(situation, [dish]) or hand_over_choice(situation) \
            or assemble_choice(situation, [dish]) or prepare_choice(situation, [dish]) or None


def _holds(task: ActionTask, state: Mapping[str, Any]) -> bool:
    """Whether the task's precondition holds; one that cannot be evaluated does not."""
    try:
        return task.precondition(state) is True
    except Exception as error:  # noqa: BLE001 - LM-written conditions may fail in many ways
        log.info("precondition of %s could not be evaluated: %s", task.describe(), error)
        return False


__all__ = ["SITUATIONAL_STATES", "ActionTask", "AssignedTask", "KitchenFSM", "OrderTask",
           "always"]
