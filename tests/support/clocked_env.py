"""A tiny clocked env for the clock's tests: tokens on a track that move only on the clock.

Each role has a token. ``PUSH(step)`` only *queues* a wish; at the next tick the wishes are
applied in team order, and a token may not land on another. A public ``beat`` changes every
third tick, and each role's private ``mine`` shows its own token, so some ticks change nobody's
view, some one member's, some everyone's.
"""

from __future__ import annotations

from typing import Any

from cogym_lab.core import ActionError, CoEnv, Component, TickResult, action
from cogym_lab.envs.registry import register_env

TRACK = 10


class Track(CoEnv):
    name = "clock_track"

    def __init__(self, *, ticks: int = 20, tick_seconds: float = 0.02,
                 roles: tuple[str, ...] = ("agent", "user")) -> None:
        super().__init__()
        self.ticks, self._tick_seconds, self.players = ticks, tick_seconds, tuple(roles)
        self.tick = 0
        self.position: dict[str, int] = {}
        self.wish: dict[str, int] = {}
        self.moves = 0

    @property
    def tick_seconds(self) -> float:
        return self._tick_seconds

    @property
    def task_description(self) -> str:
        return "Push your token along the track; it moves on the next tick."

    def env_args(self) -> dict[str, Any]:
        return {"ticks": self.ticks, "tick_seconds": self._tick_seconds,
                "roles": list(self.players)}

    def _reset(self, seed: int | None) -> None:
        self.tick, self.moves, self.wish = 0, 0, {}
        self.position = {role: index for index, role in enumerate(self.players)}

    def public_components(self) -> list[Component]:
        return [Component(name="beat", render_type="text", content=str(self.tick // 3))]

    def private_components(self, role: str) -> list[Component]:
        if role not in self.position:
            return []
        return [Component(name="mine", render_type="text", private=True,
                          content=str(self.position[role]))]

    def outcome(self) -> dict[str, int]:
        return dict(self.position)

    @action("Push your token one cell at the next tick.", private=True, step="-1 or 1")
    def push(self, role: str, step: int) -> None:
        if role not in self.position:
            raise ActionError(f"{role} has no token on this track.")
        if step not in (-1, 1):
            raise ActionError("step must be -1 or 1.")
        if self.tick >= self.ticks:
            raise ActionError("The game is over.")
        self.wish[role] = step

    def advance(self) -> TickResult:
        self.tick += 1
        for role in self.players:  # team order: the first wish wins a contested cell
            step = self.wish.pop(role, None)
            if step is None:
                continue
            target = self.position[role] + step
            if 0 <= target < TRACK and target not in self.position.values():
                self.position[role] = target
                self.moves += 1
        return TickResult(reward=0.0, done=self.tick >= self.ticks,
                          info={"positions": dict(self.position)})


register_env(Track.name, Track)
