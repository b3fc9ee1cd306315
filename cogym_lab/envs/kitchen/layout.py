"""Kitchen layouts: reading the TOML files in ``layouts/`` and what is derived from them once.

A layout file (``layouts/NAME.toml``; the file's stem is the name the ``layout`` env argument
takes) holds::

    title = "New Counter Circuit"              # shown to people
    paper_map = 1                              # optional: the DPT-Agent paper's map number,
                                               # which orders the task's instances
    partner = "assembler"                      # optional: the habit of the rule-based partner
                                               # the ready teams seat here (assembler, beef or
                                               # lettuce); it must make every order possible
    description = "A ring of counters ..."     # one or two sentences, for the task description
    grid = '''
    #XBXXLXXOXO#
    X..........X
    R.CCCCCCCC.S
    '''                                        # one character per tile, all rows equally long
    chefs = [[1, 1], [10, 4]]                  # [x, y] start tiles, in team order (floor tiles)
    extinguisher = [3, 5]                      # [x, y] of the counter the extinguisher starts on

    [legend]                                   # optional: extra or changed characters
    "H" = "counter"

    [orders]
    dishes = ["BeefBurger", "LettuceBurger", "BeefLettuceBurger"]  # drawn uniformly
    first = 2          # orders open when the game starts
    interval = 70      # ticks between two new orders ...
    jitter = 15        # ... give or take up to this many (drawn from the seeded generator)
    deadline = 200     # ticks a customer waits before the order is missed
    max_open = 4       # no new order while this many are open

    [orders.deadlines] # optional: a deadline for one dish instead of ``deadline``
    BeefLettuceBurger = 240

x counts columns from the left and y rows from the top, both from 0. The characters, unless
``[legend]`` says otherwise (a legend value must be one of :data:`TILE_KINDS`)::

    .  floor             #  wall               X  counter          C  center counter
    B  beef station      L  lettuce station    R  bread station    P  plate station
    O  pan               K  chopping board     S  serving window   T  trash can

Chefs walk on floor only; everything else is faced and used with INTERACT. Center counters are
counters that the PASS_ON macro puts things on for the partner. A new layout needs no code:
drop a file here and pass its stem as ``layout``.
"""

from __future__ import annotations

import functools
import tomllib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from cogym_lab.envs.kitchen.items import BURGER_REWARDS
from cogym_lab.errors import CogymError

Pos = tuple[int, int]

#: Atomic moves: direction -> (dx, dy), y growing downwards.
DIRECTIONS: dict[str, Pos] = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}

FLOOR = "floor"
WALL = "wall"
COUNTER = "counter"
CENTER_COUNTER = "center counter"
BEEF_STATION = "beef station"
LETTUCE_STATION = "lettuce station"
BREAD_STATION = "bread station"
PLATE_STATION = "plate station"
PAN = "pan"
BOARD = "chopping board"
SERVING = "serving window"
TRASH = "trash can"

TILE_KINDS = (FLOOR, WALL, COUNTER, CENTER_COUNTER, BEEF_STATION, LETTUCE_STATION, BREAD_STATION,
              PLATE_STATION, PAN, BOARD, SERVING, TRASH)
#: Tiles an item may be put down on and picked up from.
COUNTER_KINDS = frozenset({COUNTER, CENTER_COUNTER})
DEFAULT_LEGEND: dict[str, str] = {
    ".": FLOOR, "#": WALL, "X": COUNTER, "C": CENTER_COUNTER, "B": BEEF_STATION,
    "L": LETTUCE_STATION, "R": BREAD_STATION, "P": PLATE_STATION, "O": PAN, "K": BOARD,
    "S": SERVING, "T": TRASH,
}


class LayoutError(CogymError, ValueError):
    """A layout file that cannot be played; the message says what to fix."""


@dataclass(frozen=True)
class OrderSettings:
    """How customers order: see the module doc for each field."""

    dishes: tuple[str, ...]
    first: int
    interval: int
    jitter: int
    deadline: int
    max_open: int
    deadlines: Mapping[str, int] = field(default_factory=dict)

    def deadline_of(self, dish: str) -> int:
        return self.deadlines.get(dish, self.deadline)


@dataclass(frozen=True)
class Layout:
    """A parsed layout, with the distances and neighbours play needs precomputed."""

    name: str
    title: str
    description: str
    grid: tuple[str, ...]
    legend: Mapping[str, str]  # every character the grid uses -> its tile kind
    chef_starts: tuple[Pos, ...]
    extinguisher: Pos | None
    orders: OrderSettings
    paper_map: int | None = None  # the DPT-Agent paper's map number; None for a layout of one's own
    partner: str = "assembler"  # the ready teams' rule-based partner's habit on this map

    @property
    def map_title(self) -> str:
        """The title as the paper names the map ("Map 1 - New Counter Circuit")."""
        return self.title if self.paper_map is None else f"Map {self.paper_map} - {self.title}"

    @property
    def width(self) -> int:
        return len(self.grid[0])

    @property
    def height(self) -> int:
        return len(self.grid)

    def kind(self, pos: Pos) -> str:
        """The tile kind at ``pos``; off the grid is a wall."""
        x, y = pos
        if 0 <= y < self.height and 0 <= x < self.width:
            return self.legend[self.grid[y][x]]
        return WALL

    def walkable(self, pos: Pos) -> bool:
        return self.kind(pos) == FLOOR

    @functools.cached_property
    def tiles_by_kind(self) -> dict[str, tuple[Pos, ...]]:
        """Every tile position of each kind, in reading order."""
        found: dict[str, list[Pos]] = {}
        for y, row in enumerate(self.grid):
            for x, char in enumerate(row):
                found.setdefault(self.legend[char], []).append((x, y))
        return {kind: tuple(positions) for kind, positions in found.items()}

    def tiles(self, *kinds: str) -> tuple[Pos, ...]:
        """The tiles of these kinds, in reading order."""
        found = [pos for kind in kinds for pos in self.tiles_by_kind.get(kind, ())]
        return tuple(sorted(found, key=lambda pos: (pos[1], pos[0])))

    @functools.cached_property
    def floor(self) -> frozenset[Pos]:
        return frozenset(self.tiles_by_kind.get(FLOOR, ()))

    @functools.cached_property
    def access(self) -> dict[Pos, tuple[tuple[Pos, str], ...]]:
        """For each tile that is not floor: the floor tiles next to it, each with the
        direction a chef standing there faces to use it."""
        found: dict[Pos, tuple[tuple[Pos, str], ...]] = {}
        for y, row in enumerate(self.grid):
            for x in range(len(row)):
                if self.walkable((x, y)):
                    continue
                found[(x, y)] = tuple(((x - dx, y - dy), direction)
                                      for direction, (dx, dy) in DIRECTIONS.items()
                                      if self.walkable((x - dx, y - dy)))
        return found

    @functools.cached_property
    def distances(self) -> dict[Pos, dict[Pos, int]]:
        """Walking distance (in moves, around counters, ignoring chefs) between floor tiles."""
        return {start: _distances_from(start, self.floor) for start in sorted(self.floor)}

    def distance_to_use(self, start: Pos, target: Pos) -> int | None:
        """Moves from ``start`` to a floor tile next to ``target``, or ``None`` if there is
        none reachable."""
        reach = self.distances.get(start, {})
        found = [reach[spot] for spot, _ in self.access.get(target, ()) if spot in reach]
        return min(found) if found else None

    def view_legend(self) -> dict[str, str]:
        """The legend of the characters the grid uses, for the view."""
        return {char: self.legend[char] for char in sorted({c for row in self.grid for c in row})}


def _distances_from(start: Pos, floor: frozenset[Pos]) -> dict[Pos, int]:
    reach = {start: 0}
    queue = deque([start])
    while queue:
        x, y = current = queue.popleft()
        for dx, dy in DIRECTIONS.values():
            step = (x + dx, y + dy)
            if step in floor and step not in reach:
                reach[step] = reach[current] + 1
                queue.append(step)
    return reach


# -- reading --------------------------------------------------------------------------------


def available_layouts() -> list[str]:
    """The names of the layouts shipped in ``layouts/``, alphabetically (see
    :func:`paper_order` for the paper's)."""
    folder = resources.files(__package__).joinpath("layouts")
    return sorted(entry.name.removesuffix(".toml") for entry in folder.iterdir()
                  if entry.name.endswith(".toml"))


def paper_order() -> list[str]:
    """The shipped layouts in the DPT-Agent paper's order (Map 1 first), then any others by
    name: the kitchen's instances are numbered this way."""
    def key(name: str) -> tuple[int, str]:
        number = load_layout(name).paper_map
        return (number if number is not None else 1_000_000, name)

    return sorted(available_layouts(), key=key)


@functools.cache
def load_layout(name: str) -> Layout:
    """The shipped layout ``name``, read once and cached (layouts never change in play)."""
    if name not in available_layouts():
        raise LayoutError(f"Unknown kitchen layout {name[:60]!r}; the layouts are "
                          f"{', '.join(available_layouts())}.")
    text = resources.files(__package__).joinpath("layouts", f"{name}.toml").read_text("utf-8")
    return parse_layout(name, text)


def parse_layout(name: str, text: str) -> Layout:
    """Parse one layout file's text (see the module doc), checking it can be played."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise LayoutError(f"Layout {name!r} is not valid TOML: {error}") from None
    legend = dict(DEFAULT_LEGEND)
    for char, kind in _table(data, "legend", name).items():
        if len(char) != 1 or kind not in TILE_KINDS:
            raise LayoutError(f"Layout {name!r}: legend entry {char!r} = {kind!r} must map one "
                              f"character to one of {', '.join(TILE_KINDS)}.")
        legend[char] = kind
    grid = _grid(data, name, legend)
    used = {char for row in grid for char in row}
    layout = Layout(
        name=name,
        title=str(data.get("title", name)),
        description=str(data.get("description", "")),
        grid=grid,
        legend={char: legend[char] for char in sorted(used)},
        chef_starts=tuple(_pos(value, f"chefs[{n}]", name)
                          for n, value in enumerate(_list(data, "chefs", name))),
        extinguisher=_pos(data["extinguisher"], "extinguisher", name)
        if "extinguisher" in data else None,
        orders=_orders(_table(data, "orders", name), name),
        paper_map=_paper_map(data.get("paper_map"), name),
        partner=_partner(data.get("partner", "assembler"), name),
    )
    _check_places(layout)
    return layout


def _grid(data: dict[str, Any], name: str, legend: Mapping[str, str]) -> tuple[str, ...]:
    raw = data.get("grid")
    if not isinstance(raw, str):
        raise LayoutError(f"Layout {name!r} needs a grid: a multi-line string, one character "
                          f"per tile.")
    rows = tuple(line.strip() for line in raw.splitlines() if line.strip())
    if not rows or len({len(row) for row in rows}) != 1:
        raise LayoutError(f"Layout {name!r}: the grid's rows must all be the same length.")
    unknown = sorted({char for row in rows for char in row} - set(legend))
    if unknown:
        raise LayoutError(f"Layout {name!r}: the grid uses {', '.join(map(repr, unknown))}, "
                          f"which the legend does not define.")
    return rows


def _orders(table: dict[str, Any], name: str) -> OrderSettings:
    dishes = tuple(table.get("dishes", tuple(BURGER_REWARDS)))
    if not dishes or any(dish not in BURGER_REWARDS for dish in dishes):
        raise LayoutError(f"Layout {name!r}: orders.dishes must list dishes from "
                          f"{', '.join(BURGER_REWARDS)}.")
    numbers = {}
    for key, default, least in (("first", 2, 0), ("interval", 70, 1), ("jitter", 0, 0),
                                ("deadline", 200, 1), ("max_open", 4, 1)):
        value = table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise LayoutError(f"Layout {name!r}: orders.{key} must be a whole number of at "
                              f"least {least}.")
        numbers[key] = value
    if numbers["jitter"] >= numbers["interval"]:
        raise LayoutError(f"Layout {name!r}: orders.jitter must be smaller than "
                          f"orders.interval.")
    deadlines = _table(table, "deadlines", name)
    if any(dish not in BURGER_REWARDS or not isinstance(ticks, int) or ticks < 1
           for dish, ticks in deadlines.items()):
        raise LayoutError(f"Layout {name!r}: orders.deadlines maps dishes to whole numbers of "
                          f"ticks.")
    return OrderSettings(dishes=dishes, deadlines=dict(deadlines), **numbers)


#: The habits of the rule-based partners (cogym_lab.envs.kitchen.policies.partners).
PARTNER_HABITS = ("assembler", "beef", "lettuce")


def _paper_map(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise LayoutError(f"Layout {name!r}: paper_map must be a whole number of at least 1.")
    return value


def _partner(value: Any, name: str) -> str:
    if value not in PARTNER_HABITS:
        raise LayoutError(f"Layout {name!r}: partner must be one of "
                          f"{', '.join(PARTNER_HABITS)}.")
    return str(value)


def _check_places(layout: Layout) -> None:
    name = layout.name
    if len(layout.chef_starts) < 1:
        raise LayoutError(f"Layout {name!r} needs chefs = [[x, y], ...]: where each chef "
                          f"starts.")
    if len(set(layout.chef_starts)) != len(layout.chef_starts) or not all(
            layout.walkable(pos) for pos in layout.chef_starts):
        raise LayoutError(f"Layout {name!r}: each chef must start on a floor tile of its own.")
    if layout.extinguisher is not None and layout.kind(layout.extinguisher) not in COUNTER_KINDS:
        raise LayoutError(f"Layout {name!r}: the extinguisher must start on a counter.")
    if layout.tiles(PAN) and layout.extinguisher is None:
        raise LayoutError(f"Layout {name!r} has pans, so it needs an extinguisher = [x, y]: "
                          f"else a fire could never be put out.")


def _table(data: dict[str, Any], key: str, name: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise LayoutError(f"Layout {name!r}: {key} must be a table.")
    return value


def _list(data: dict[str, Any], key: str, name: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise LayoutError(f"Layout {name!r}: {key} must be a list.")
    return value


def _pos(value: Any, what: str, name: str) -> Pos:
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in value)):
        raise LayoutError(f"Layout {name!r}: {what} must be [x, y], two whole numbers.")
    return value[0], value[1]
