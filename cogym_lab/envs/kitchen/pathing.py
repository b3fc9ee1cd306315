"""Shortest paths on a kitchen's floor, for the macros: the next atomic action towards using a
tile, re-planned every tick around where the other chefs stand now.

Grids are small (a few dozen floor tiles), so a breadth-first search per chef per tick costs
microseconds; the layout's precomputed distances (``Layout.distances``) pick *which* tile to go
to, and this module only finds the first step there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection

from cogym_lab.envs.kitchen.layout import DIRECTIONS, Layout, Pos

INTERACT = "interact"


def first_step(layout: Layout, start: Pos, goals: Collection[Pos],
               blocked: Collection[Pos] = ()) -> str | None:
    """The direction of the first move on a shortest walk from ``start`` to any of ``goals``,
    going round the ``blocked`` tiles (other chefs) when there is a way round, else straight
    through them (the move then waits until they step aside). ``None`` when ``start`` is a
    goal or no goal can be reached at all."""
    if start in goals:
        return None
    around = _search(layout, start, goals, frozenset(blocked) - {start})
    return around if around is not None else _search(layout, start, goals, frozenset())


def _search(layout: Layout, start: Pos, goals: Collection[Pos],
            blocked: frozenset[Pos]) -> str | None:
    first: dict[Pos, str] = {start: ""}
    queue = deque([start])
    floor = layout.floor
    while queue:
        x, y = here = queue.popleft()
        for direction, (dx, dy) in DIRECTIONS.items():
            step = (x + dx, y + dy)
            if step in first or step not in floor or step in blocked:
                continue
            first[step] = first[here] or direction
            if step in goals:
                return first[step]
            queue.append(step)
    return None


def step_to_use(layout: Layout, pos: Pos, facing: str, target: Pos,
                blocked: Collection[Pos] = ()) -> str | None:
    """The atomic action that brings a chef at ``pos`` facing ``facing`` closer to using the
    tile ``target``: a move along the way, a move towards ``target`` that turns the chef to face
    it, or ``"interact"`` once it does. ``None`` when ``target`` cannot be reached."""
    spots = layout.access.get(target, ())
    for spot, direction in spots:
        if spot == pos:
            return INTERACT if facing == direction else direction
    return first_step(layout, pos, [spot for spot, _ in spots], blocked)


def nearest(layout: Layout, pos: Pos, targets: Collection[Pos]) -> Pos | None:
    """The target closest to use from ``pos`` (ties: the first in reading order), or ``None``
    when none can be reached."""
    best: tuple[int, int, int] | None = None
    for target in targets:
        distance = layout.distance_to_use(pos, target)
        if distance is not None:
            key = (distance, target[1], target[0])
            if best is None or key < best:
                best = key
    return None if best is None else (best[2], best[1])
