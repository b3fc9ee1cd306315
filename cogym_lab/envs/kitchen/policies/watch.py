"""What a rule-based chef keeps an eye on between its decisions: its macros that failed (so
it does not try them again at once) and moves that went nowhere (so it steps aside when stuck
or in its partner's way)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cogym_lab.envs.kitchen.policies.choices import move_away
from cogym_lab.envs.kitchen.policies.situation import DIRECTIONS, Pos, Situation, chef_pos, step

#: Ticks a macro that failed is not tried again by the situational states (it would fail
#: again at once: the ingredient is gone, the path is blocked).
FAILED_MACRO_PAUSE = 8
#: Ticks of moves that went nowhere after which a chef steps aside (:class:`StuckWatch`).
STUCK_TICKS = 4


class FailedMacros:
    """The macros one chef tried lately that failed, each resting for
    :data:`FAILED_MACRO_PAUSE` ticks: a situational choice that failed would fail again at once
    (the ingredient is gone, the way is blocked), so the chef does something else meanwhile."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.tick = 0
        self._until: dict[str, int] = {}  # macro name -> last tick it rests

    def note_tick(self, info: Mapping[str, Any]) -> None:
        self.tick = int(info.get("tick", self.tick))
        for happened in info.get("happened") or ():
            if isinstance(happened, Mapping) and happened.get("kind") == "macro_failed" \
                    and happened.get("chef") == self.role:
                self._until[str(happened.get("macro"))] = self.tick + FAILED_MACRO_PAUSE

    def resting(self, action: str) -> bool:
        return self._until.get(action.split("(", 1)[0], -1) >= self.tick

    def first(self, situation: Situation,
              choices: Iterable[tuple[str, Callable[[Situation], str | None]]]
              ) -> tuple[str | None, str]:
        """The first choice that gives an action that is not resting, with its state name."""
        self.tick = max(self.tick, situation.tick)
        for state, choose in choices:
            action = choose(situation)
            if action is not None and not self.resting(action):
                return action, state
        return None, "idle"


class StuckWatch:
    """Notices a chef that is stuck, or in its partner's way, and steps it aside.

    Two chefs that want the same tile of a one-tile corridor wait for each other for ever, and
    a chef standing still where its partner must pass blocks it for good. So when my moves
    have gone nowhere for :data:`STUCK_TICKS` ticks, or the partner's moves into my tile have,
    :meth:`step_aside` gives a ``MOVE`` to a free floor tile away from the partner (which also
    cancels my macro), and the policy decides afresh the next tick.
    """

    def __init__(self, role: str) -> None:
        self.role = role
        self.blocked = 0  # ticks my moves went nowhere
        self.blocking = 0  # ticks the partner's moves into my tile went nowhere
        self._my_tries = 0
        self._partner_moves: list[str] = []
        self._last: tuple[Pos | None, Pos | None] = (None, None)  # (mine, partner's)

    def note_tick(self, info: Mapping[str, Any]) -> None:
        for role, atomic in (info.get("atomic") or {}).items():
            if role == self.role and atomic in DIRECTIONS:
                self._my_tries += 1
            elif role == self.role:
                self.blocked = 0  # it interacted: it is getting on with the job
            elif atomic in DIRECTIONS:
                self._partner_moves.append(str(atomic))

    def step_aside(self, situation: Situation) -> str | None:
        """A ``MOVE`` when my chef is stuck or in the partner's way, else ``None``."""
        mine, other = chef_pos(situation.me), chef_pos(situation.partner)
        last_mine, last_other = self._last
        self.blocked = self.blocked + self._my_tries if mine is not None and mine == last_mine \
            else 0
        into_me = [d for d in self._partner_moves if last_other is not None
                   and step(last_other, d) == last_mine]
        self.blocking = self.blocking + len(into_me) if into_me and other == last_other \
            and mine == last_mine else 0
        self._my_tries, self._partner_moves, self._last = 0, [], (mine, other)
        # Two stuck chefs must not both step aside at once (and both come back): the role that
        # sorts first gives way first, the other only if that did not help.
        patience = STUCK_TICKS if situation.partner is None or \
            self.role <= str(situation.partner.get("role")) else 2 * STUCK_TICKS
        if mine is None or max(self.blocked, self.blocking) < patience:
            return None
        self.blocked = self.blocking = 0
        return move_away(situation, mine, other)


__all__ = ["FAILED_MACRO_PAUSE", "STUCK_TICKS", "FailedMacros", "StuckWatch"]
