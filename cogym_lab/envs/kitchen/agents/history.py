"""The game history a kitchen agent keeps: the moments something changed, for its prompts.

Each notification stands for one or more ticks (the ``clock`` events it merges) and ends with
the newest view. A *scene* is recorded when something happened in those ticks (an order
arrived, was served or missed, a fire) or a chef started or ended a macro, or its hands changed:
the tick, the score, what each chef runs and holds, and what happened. Ticks where nothing
changed are left out, so a 500-tick game fits in a few dozen lines.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: What happened, in words for a history line (``macro_done`` is shown by the macro changing).
_HAPPENED = {
    "served": "{chef} served {dish} ({reward:+})",
    "wrong_served": "{chef} served {dish}, which nobody ordered ({reward:+})",
    "missed": "the {dish} order ran out of time ({reward:+})",
    "order": "new order: {dish} ({total} ticks)",
    "fire": "a pan caught fire",
    "fire_out": "{chef} put out a fire",
    "macro_failed": "{chef}'s {macro} failed: {reason}",
}
#: What counts as a failure for reflection.
FAILURES = ("fire", "missed", "wrong_served")


@dataclass
class Scene:
    tick: int
    score: float
    chefs: dict[str, tuple[str | None, str | None]]  # role -> (macro, held item)
    events: list[str] = field(default_factory=list)

    def render(self, me: str) -> str:
        who = " | ".join(f"{role}{' (you)' if role == me else ''}: {macro or '-'}"
                         + (f", holding {held}" if held else "")
                         for role, (macro, held) in self.chefs.items())
        happened = "; ".join(self.events)
        return f"tick {self.tick}, score {self.score:g} | {who}" + (f" | {happened}"
                                                                    if happened else "")


class GameHistory:
    """The last ``limit`` scenes of one game, and the failures seen since a given tick."""

    def __init__(self, limit: int = 200) -> None:
        self.scenes: deque[Scene] = deque(maxlen=limit)
        self.failures: list[tuple[int, str]] = []  # (tick, kind) of fires, misses, wrong dishes
        self.events: list[tuple[int, Mapping[str, Any]]] = []  # every happening, with its tick
        self._last_chefs: dict[str, tuple[str | None, str | None]] = {}
        self._tick = 0

    def observe(self, infos: Iterable[Mapping[str, Any]], content: Mapping[str, Any]) -> None:
        """Add what the ticks ``infos`` did and the view ``content`` now shows."""
        words = []
        for info in infos:
            self._tick = int(info.get("tick", self._tick))
            for happened in info.get("happened") or ():
                if not isinstance(happened, Mapping):
                    continue
                kind = str(happened.get("kind"))
                self.events.append((self._tick, happened))
                if kind in FAILURES:
                    self.failures.append((self._tick, kind))
                line = _describe(kind, happened)
                if line:
                    words.append(line)
        chefs = {str(chef.get("role")): (chef.get("macro"), _held(chef.get("holding")))
                 for chef in content.get("chefs") or () if isinstance(chef, Mapping)}
        if words or chefs != self._last_chefs:
            self.scenes.append(Scene(tick=int(content.get("tick", self._tick)),
                                     score=float(content.get("score", 0)), chefs=chefs,
                                     events=words))
            self._last_chefs = chefs

    def render(self, me: str, last: int) -> str:
        """The last ``last`` scenes, one a line, oldest first."""
        scenes = list(self.scenes)[-last:] if last > 0 else []
        return "\n".join(scene.render(me) for scene in scenes) or "(nothing has happened yet)"

    def failures_since(self, tick: int) -> list[str]:
        """The failures after ``tick``, in words."""
        names = {"fire": "a pan caught fire", "missed": "an order ran out of time",
                 "wrong_served": "a dish nobody ordered was served"}
        return [f"{names[kind]} at tick {at}" for at, kind in self.failures if at > tick]


def _held(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return None
    name, status = str(item.get("name", "")), str(item.get("status") or "")
    contents = [part for part in item.get("contents") or () if isinstance(part, Mapping)]
    if name == "Plate":
        if not contents:
            return "Plate (Empty)"
        return "Plate with " + " and ".join(_held(part) or "?" for part in contents)
    return f"{name} ({status})" if status else name


def _describe(kind: str, happened: Mapping[str, Any]) -> str | None:
    template = _HAPPENED.get(kind)
    if template is None:
        return None
    values = {"chef": "?", "dish": "?", "reward": 0, "total": "?", "macro": "?",
              "reason": "?", **dict(happened)}
    try:
        return template.format(**values)
    except (ValueError, TypeError, KeyError):
        return kind


__all__ = ["FAILURES", "GameHistory", "Scene"]
