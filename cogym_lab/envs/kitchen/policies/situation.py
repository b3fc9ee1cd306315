"""What a kitchen member reads off the shared view: counts, orders, who holds what, and what
each chef can reach.

Members decide from the view content only (grid, legend, chefs, items, orders, fires), never
from the env. This module is the one reader they share: the rule-based partners and the FSM
plan from a :class:`Situation`; the LM agents' prompts and the code-as-policy preconditions
read :func:`game_state`, the paper's game-state dict (object counts keyed by ``(name,
status)``, counters, orders, the other player's inventory).

It also holds the macro vocabulary (which foods, burgers and things the macros take) and
:func:`macro`, which writes a macro action in the env's canonical action syntax.
"""

from __future__ import annotations

import functools
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core.actions import Action, format_action
from cogym_lab.envs.kitchen.game import OVERCOOKED_AFTER, WELL_COOKED_AFTER
from cogym_lab.envs.kitchen.view import KitchenView

Pos = tuple[int, int]

#: Ingredients ``PREPARE`` takes, and the status each has once it is ready to assemble.
READY_STATUS = {"Beef": "Well-cooked", "Lettuce": "Chopped", "Bread": ""}
#: Ingredients on their way to ready: raw, cooking or waiting to be chopped.
COMING_STATUSES = {"Beef": ("Fresh", "In-progress"), "Lettuce": ("Unchopped",), "Bread": ()}
#: Each burger's ingredients besides bread (bread comes from its station when assembling).
RECIPES: dict[str, tuple[str, ...]] = {
    "BeefBurger": ("Beef",),
    "LettuceBurger": ("Lettuce",),
    "BeefLettuceBurger": ("Beef", "Lettuce"),
}
BURGERS = tuple(RECIPES)
FOODS = tuple(READY_STATUS)
#: What ``PASS_ON`` takes.
THINGS = ("Plate", "Bread", "Beef", "Lettuce", "BeefLettuce", *BURGERS, "FireExtinguisher")
STATUSES = ("", "Fresh", "In-progress", "Well-cooked", "Overcooked", "Unchopped", "Chopped")
#: The macro actions, by name, with the params each takes (the env's action names).
MACROS: dict[str, tuple[str, ...]] = {
    "PREPARE": ("food", "plate"),
    "ASSEMBLE": ("food",),
    "SERVE": ("food",),
    "PASS_ON": ("thing", "thing_status"),
    "PUT_OUT_FIRE": (),
    "CLEAN_A_COUNTER": (),
}
#: Tile kinds, as the view's legend names them.
FLOOR = "floor"
COUNTER_KINDS = ("counter", "center counter")
CENTER = "center counter"
PAN = "pan"
BOARD = "chopping board"
SERVING = "serving window"
PLATE_STATION = "plate station"
#: Where each ingredient comes from and where it is made ready.
STATION_OF = {"Beef": "beef station", "Lettuce": "lettuce station", "Bread": "bread station"}
TOOL_OF = {"Beef": PAN, "Lettuce": BOARD}
_STEPS = ((0, -1), (0, 1), (-1, 0), (1, 0))
#: The atomic moves by name, as actions and the tick info name them.
DIRECTIONS: dict[str, Pos] = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


def macro(name: str, **args: Any) -> str:
    """A macro action in canonical syntax: ``macro("PREPARE", food="Beef")`` ->
    ``PREPARE(food="Beef")``. Raises ``ValueError`` for a name or param the macros lack."""
    params = MACROS.get(name)
    if params is None:
        raise ValueError(f"{name!r} is not a macro action; they are {', '.join(MACROS)}")
    unknown = [key for key in args if key not in params]
    if unknown:
        raise ValueError(f"{name} takes {', '.join(params) or 'no params'}, not {unknown[0]!r}")
    return format_action(Action(name=name, args=args))


def macro_name(text: str | None) -> str | None:
    """The name of a macro as the view shows it (``'PREPARE(food="Beef")'`` -> ``PREPARE``)."""
    if not text:
        return None
    return text.split("(", 1)[0].strip() or None


def macro_food(text: str | None) -> str | None:
    """The food or thing a macro names, as the view shows it; ``None`` when it names none."""
    if not text or "=" not in text:
        return None
    value = text.split("=", 1)[1].lstrip()
    if not value.startswith('"'):
        return None
    return value[1:].split('"', 1)[0] or None


def _walk(item: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """An item and what sits on it: the ingredients on a plain plate count as themselves. A
    dish's do not: the beef in a burger is no longer beef anyone can use."""
    yield item
    if item.get("name") == "Plate":
        for inner in item.get("contents") or ():
            if isinstance(inner, Mapping):
                yield from _walk(inner)


def _key(item: Mapping[str, Any]) -> tuple[str, str]:
    name = str(item.get("name", ""))
    if name == "Plate":
        return name, "Occupied" if item.get("contents") else "Empty"
    return name, str(item.get("status") or "")


@dataclass(frozen=True)
class Placed:
    """An item lying on a tile, with the tile's kind."""

    pos: Pos
    kind: str
    item: Mapping[str, Any]


@dataclass
class Situation:
    """One moment of the game as seen by ``role``."""

    role: str
    tick: int
    ticks: int
    score: float
    done: bool
    me: Mapping[str, Any] | None
    partner: Mapping[str, Any] | None
    orders: list[Mapping[str, Any]]  # most urgent first
    counts: Counter[tuple[str, str]]
    fires: list[Pos]
    placed: list[Placed] = field(default_factory=list)
    tiles: dict[Pos, str] = field(default_factory=dict)
    #: The grid and legend, hashable: what the per-layout caches are keyed by.
    layout_key: tuple[tuple[str, ...], tuple[tuple[str, str], ...]] = ((), ())

    @classmethod
    def read(cls, content: Mapping[str, Any], role: str) -> Situation:
        chefs = [c for c in content.get("chefs") or () if isinstance(c, Mapping)]
        me = next((c for c in chefs if c.get("role") == role), None)
        partner = next((c for c in chefs if c.get("role") != role), None)
        counts: Counter[tuple[str, str]] = Counter()
        layout_key = (tuple(content.get("grid") or ()),
                      tuple(sorted((content.get("legend") or {}).items())))
        tiles = _tile_kinds(*layout_key)
        placed = []
        for entry in content.get("items") or ():
            item = entry.get("item") if isinstance(entry, Mapping) else None
            pos = _pos(entry.get("pos")) if isinstance(entry, Mapping) else None
            if not isinstance(item, Mapping) or pos is None:
                continue
            placed.append(Placed(pos, tiles.get(pos, ""), item))
            counts.update(_key(part) for part in _walk(item))
        for chef in chefs:
            if isinstance(chef.get("holding"), Mapping):
                counts.update(_key(part) for part in _walk(chef["holding"]))
        fires = [p for p in (_pos(f) for f in content.get("fires") or ()) if p is not None]
        counts[("Fire", "")] = len(fires)
        orders = sorted((o for o in content.get("orders") or () if isinstance(o, Mapping)),
                        key=lambda o: (o.get("remaining", 0), o.get("id", 0)))
        return cls(role=role, tick=int(content.get("tick", 0)), ticks=int(content.get("ticks", 0)),
                   score=float(content.get("score", 0)), done=bool(content.get("done")), me=me,
                   partner=partner, orders=orders, counts=counts, fires=fires, placed=placed,
                   tiles=tiles, layout_key=layout_key)

    # -- who is doing what ---------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """My chef is running a macro (or still has atomic actions queued)."""
        return self.me is not None and bool(self.me.get("macro") or self.me.get("queued"))

    def running(self, chef: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
        """The macro ``chef`` runs and the food or thing it names."""
        text = chef.get("macro") if chef else None
        return macro_name(text), macro_food(text)

    def chefs_running(self, name: str, food: str | None = None) -> int:
        """How many chefs run macro ``name`` (on ``food``, when given)."""
        return sum(1 for chef in (self.me, self.partner) if chef is not None
                   and self.running(chef)[0] == name
                   and (food is None or self.running(chef)[1] == food))

    def holding(self, chef: Mapping[str, Any] | None) -> tuple[str, str] | None:
        held = chef.get("holding") if chef else None
        return _key(held) if isinstance(held, Mapping) else None

    # -- where each chef can go ------------------------------------------------------------------

    def region(self, chef: Mapping[str, Any] | None) -> frozenset[Pos]:
        """The floor tiles ``chef`` can walk to (other chefs aside)."""
        start = _pos(chef.get("pos")) if chef else None
        if start is None:
            return frozenset()
        return _region(start, self.floor)

    @functools.cached_property
    def floor(self) -> frozenset[Pos]:
        return frozenset(p for p, kind in self.tiles.items() if kind == FLOOR)

    @functools.cached_property
    def my_region(self) -> frozenset[Pos]:
        return self.region(self.me)

    @functools.cached_property
    def partner_region(self) -> frozenset[Pos]:
        return self.region(self.partner)

    def reaches(self, pos: Pos, partner: bool = False) -> bool:
        """Whether my chef (or the partner's) can stand next to tile ``pos`` to use it."""
        region = self.partner_region if partner else self.my_region
        return any((pos[0] + dx, pos[1] + dy) in region for dx, dy in _STEPS)

    def distance(self, chef: Mapping[str, Any] | None, targets: Iterable[Pos]) -> int | None:
        """Moves ``chef`` needs to stand next to the nearest of ``targets`` (``None``: none can
        be reached), walking round counters, not round chefs."""
        start = _pos(chef.get("pos")) if chef else None
        goals = {(x + dx, y + dy) for x, y in targets for dx, dy in _STEPS}
        if start is None or not goals:
            return None
        reach = _distances(start, self.floor)
        return min((reach[goal] for goal in goals if goal in reach), default=None)

    def mine_to_do(self, targets: Iterable[Pos]) -> bool:
        """Whether a job at ``targets`` that either chef could do falls to mine: the partner's
        chef is busy, or cannot reach it, or is farther (a tie goes to the role sorting
        first). Both chefs' policies work this out alike, so only one goes."""
        targets = list(targets)
        partner = self.partner
        if partner is None or partner.get("macro"):
            return True
        theirs = self.distance(partner, targets)
        if theirs is None:
            return True
        mine = self.distance(self.me, targets)
        if mine is None:
            return False
        return (mine, self.role) <= (theirs, str(partner.get("role")))

    def can_use(self, kind: str, partner: bool = False) -> bool:
        """Whether my chef (or the partner's) can reach a tile of ``kind``."""
        return kind in (self._partner_kinds if partner else self._my_kinds)

    @functools.cached_property
    def _my_kinds(self) -> frozenset[str]:
        return _kinds_reached(self.my_region, self.layout_key)

    @functools.cached_property
    def _partner_kinds(self) -> frozenset[str]:
        return _kinds_reached(self.partner_region, self.layout_key)

    def can_prepare(self, food: str, partner: bool = False) -> bool:
        tool = TOOL_OF.get(food)
        return self.can_use(STATION_OF[food], partner) and (
            tool is None or self.can_use(tool, partner))

    # -- what there is ---------------------------------------------------------------------------

    def ready(self, food: str, reachable: bool = False) -> int:
        """Ingredients ready to assemble (only those my chef can reach or holds, if asked)."""
        key = (food, READY_STATUS[food])
        if not reachable:
            return self.counts[key]
        held = self.me.get("holding") if self.me else None
        in_hand = sum(1 for part in _walk(held) if _key(part) == key) \
            if isinstance(held, Mapping) else 0
        return in_hand + sum(1 for placed in self.placed if self.reaches(placed.pos)
                             for part in _walk(placed.item) if _key(part) == key)

    def coming(self, food: str) -> int:
        """Ingredients on their way to ready: raw, cooking, being chopped, or being fetched by a
        chef whose ``PREPARE`` has not picked one up yet (whichever count is larger, since a
        preparing chef may hold the raw one already)."""
        visible = sum(self.counts[(food, status)] for status in COMING_STATUSES[food])
        return max(visible, self.chefs_running("PREPARE", food))

    def pan_beef(self) -> list[tuple[int, int]]:
        """Each beef cooking in a pan (not on fire): ticks until it is well-cooked and ticks
        until it is overcooked, read off its status and progress."""
        timings = []
        for placed in self.lying("Beef", kinds=(PAN,), reachable=False):
            if placed.pos in self.fires:
                continue
            progress = float(placed.item.get("progress") or 0.0)
            status = placed.item.get("status")
            if status in ("Fresh", "In-progress"):
                in_pan = progress * WELL_COOKED_AFTER
            elif status == "Well-cooked":
                in_pan = WELL_COOKED_AFTER + progress * (OVERCOOKED_AFTER - WELL_COOKED_AFTER)
            else:
                continue
            timings.append((max(0, round(WELL_COOKED_AFTER - in_pan)),
                            max(0, round(OVERCOOKED_AFTER - in_pan))))
        return timings

    def burgers(self, dish: str) -> int:
        return self.counts[(dish, "")]

    def lying(self, name: str, status: str | None = None, kinds: Iterable[str] = COUNTER_KINDS,
              reachable: bool = True) -> list[Placed]:
        """Items called ``name`` (with ``status``) on tiles of ``kinds`` (that my chef can
        reach, unless ``reachable`` is false)."""
        wanted = set(kinds)
        return [p for p in self.placed if p.kind in wanted and p.item.get("name") == name
                and (status is None or p.item.get("status") == status)
                and (not reachable or self.reaches(p.pos))]

    def order_dishes(self) -> list[str]:
        return [str(o.get("dish")) for o in self.orders]

    def open_orders(self) -> list[str]:
        """The dishes of the orders no burger covers yet (made, or being assembled by a chef),
        most urgent first."""
        spare = Counter({dish: self.burgers(dish) + self.chefs_running("ASSEMBLE", dish)
                         for dish in BURGERS})
        open_dishes = []
        for dish in self.order_dishes():
            if spare[dish] > 0:
                spare[dish] -= 1
            else:
                open_dishes.append(dish)
        return open_dishes

    def shortfall(self, food: str) -> int:
        """How many more of ``food`` the open orders need than are ready or coming."""
        needed = sum(RECIPES.get(dish, ()).count(food) for dish in self.open_orders())
        return needed - self.ready(food) - self.coming(food)


def step(pos: Pos, direction: str) -> Pos:
    """The tile one move in ``direction`` from ``pos``."""
    dx, dy = DIRECTIONS[direction]
    return pos[0] + dx, pos[1] + dy


def chef_pos(chef: Mapping[str, Any] | None) -> Pos | None:
    """Where a chef of the view stands (``None`` for no chef)."""
    return _pos(chef.get("pos")) if chef else None


def _pos(value: Any) -> Pos | None:
    if isinstance(value, list | tuple) and len(value) == 2 \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return int(value[0]), int(value[1])
    return None


@functools.lru_cache(maxsize=16)
def _tile_kinds(grid: tuple[str, ...], legend: tuple[tuple[str, str], ...]) -> dict[Pos, str]:
    """Each tile's kind by position, from the grid and its legend (layouts never change in a
    game, so this is worked out once per layout)."""
    kinds = dict(legend)
    return {(x, y): str(kinds.get(char, "")) for y, row in enumerate(grid)
            for x, char in enumerate(str(row))}


@functools.lru_cache(maxsize=64)
def _kinds_reached(region: frozenset[Pos], layout_key: tuple[tuple[str, ...],
                                                             tuple[tuple[str, str], ...]]
                   ) -> frozenset[str]:
    """The tile kinds a chef walking ``region`` can use (stand next to)."""
    return frozenset(kind for (x, y), kind in _tile_kinds(*layout_key).items()
                     if any((x + dx, y + dy) in region for dx, dy in _STEPS))


@functools.lru_cache(maxsize=64)
def _region(start: Pos, floor: frozenset[Pos]) -> frozenset[Pos]:
    seen = {start}
    queue = deque([start])
    while queue:
        x, y = queue.popleft()
        for dx, dy in _STEPS:
            step = (x + dx, y + dy)
            if step in floor and step not in seen:
                seen.add(step)
                queue.append(step)
    return frozenset(seen)


@functools.lru_cache(maxsize=256)
def _distances(start: Pos, floor: frozenset[Pos]) -> dict[Pos, int]:
    reach = {start: 0}
    queue = deque([start])
    while queue:
        x, y = here = queue.popleft()
        for dx, dy in _STEPS:
            step = (x + dx, y + dy)
            if step in floor and step not in reach:
                reach[step] = reach[here] + 1
                queue.append(step)
    return reach


def game_state(content: Mapping[str, Any], role: str) -> dict[str, Any]:
    """The paper's game-state dict for ``role``: what code-as-policy preconditions read.

    ``objects`` counts every item in the kitchen by ``(name, status)`` as
    :meth:`KitchenView.counts` does (every known key is present, zero or not); ``counters`` the
    empty counters; ``orders`` each order's dish (``name``) and remaining ticks
    (``remain_time``), most urgent first; ``inventory_other_player`` what the teammate's chef
    holds (``None`` for empty hands), and ``inventory_self`` what mine holds; ``score`` and
    ``time_left`` (ticks).
    """
    view = KitchenView.from_content(content)
    me = view.chef(role)
    orders = sorted(view.orders, key=lambda order: (order.remaining, order.id))
    return {
        "objects": view.counts(),
        "counters": view.counter_counts(),
        "orders": [{"name": order.dish, "remain_time": order.remaining} for order in orders],
        "inventory_other_player": {chef.role: chef.holding.key if chef.holding else None
                                   for chef in view.partners(role)},
        "inventory_self": me.holding.key if me is not None and me.holding else None,
        "score": view.score,
        "time_left": view.remaining_ticks,
    }


__all__ = ["BURGERS", "DIRECTIONS", "FOODS", "MACROS", "READY_STATUS", "RECIPES", "STATUSES",
           "THINGS", "Placed", "Situation", "chef_pos", "game_state", "macro", "macro_food",
           "macro_name", "step"]
