"""A typed, read-only reading of the kitchen view, for agents and partners.

Members never get the env: they decide from the ``kitchen`` component's content, which is plain
JSON. :meth:`KitchenView.from_content` parses it (raising ``ValueError`` on content that is not
a kitchen view) into frozen objects with the questions a player asks::

    view = KitchenView.from_content(observation["kitchen"].content)
    me = view.chef("agent")
    view.where("Beef", "Well-cooked")   # tiles where such beef lies (on_plates=True: plated too)
    view.counts()[("Plate", "Empty")]   # the paper's object counts
    view.free_counters()                # counters with nothing on them
    view.tiles("pan")                   # where the pans are (tile kinds: layout.TILE_KINDS)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cogym_lab.envs.kitchen import items as it
from cogym_lab.envs.kitchen.layout import (
    CENTER_COUNTER,
    COUNTER_KINDS,
    FLOOR,
    TILE_KINDS,
    WALL,
    Pos,
)

#: The paper's object counts, in its order: every key :meth:`KitchenView.counts` gives.
COUNT_KEYS: tuple[tuple[str, str], ...] = (
    (it.BEEF, it.FRESH), (it.BEEF, it.IN_PROGRESS), (it.BEEF, it.WELL_COOKED),
    (it.BEEF, it.OVERCOOKED), (it.LETTUCE, it.UNCHOPPED), (it.LETTUCE, it.CHOPPED),
    (it.BREAD, ""), ("BeefLettuce", ""), ("BeefBurger", ""), ("LettuceBurger", ""),
    ("BeefLettuceBurger", ""), (it.PLATE, it.EMPTY), (it.EXTINGUISHER, ""), (it.FIRE, ""),
)

__all__ = ["COUNT_KEYS", "TILE_KINDS", "KitchenView", "ViewChef", "ViewItem", "ViewOrder"]


@dataclass(frozen=True)
class ViewItem:
    """An item as the view shows it. A plate's ``name`` is its dish once it is one."""

    name: str
    status: str = ""
    progress: float = 0.0
    contents: tuple[ViewItem, ...] = ()

    @property
    def is_plate(self) -> bool:
        return self.name == it.PLATE or self.name in it.RECIPES

    @property
    def ingredients(self) -> frozenset[str]:
        """The names of what is on this plate."""
        return frozenset(item.name for item in self.contents)

    @property
    def key(self) -> tuple[str, str]:
        """``(name, status)``, the paper's way of naming a thing; an empty plate's status is
        ``"Empty"``."""
        if self.name == it.PLATE and not self.contents:
            return it.PLATE, it.EMPTY
        return self.name, self.status

    def is_(self, name: str, status: str | None = None) -> bool:
        """Whether this item is ``name`` (and, if given, in ``status``)."""
        return self.name == name and (status is None or self.key[1] == status)

    @classmethod
    def from_content(cls, data: Any) -> ViewItem:
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ValueError(  # noqa: TRY004 - one error type for any content that is not a view
                f"an item must be an object with a name, not {_brief(data)}")
        contents = data.get("contents") or []
        if not isinstance(contents, list):
            raise ValueError(  # noqa: TRY004 - one error type for any content that is not a view
                f"an item's contents must be a list, not {_brief(contents)}")
        return cls(name=data["name"], status=str(data.get("status") or ""),
                   progress=float(data.get("progress") or 0.0),
                   contents=tuple(cls.from_content(item) for item in contents))


@dataclass(frozen=True)
class ViewChef:
    role: str
    pos: Pos
    facing: str
    holding: ViewItem | None
    macro: str | None  # the running macro as it was sent, or None
    queued: int  # atomic actions waiting

    @property
    def faced(self) -> Pos:
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}.get(
            self.facing, (0, 0))
        return self.pos[0] + dx, self.pos[1] + dy


@dataclass(frozen=True)
class ViewOrder:
    id: int
    dish: str
    remaining: int  # ticks left before the order is missed
    total: int  # ticks the customer waits in all
    reward: int


@dataclass(frozen=True)
class KitchenView:
    """One moment of the kitchen (see the module doc)."""

    layout: str
    grid: tuple[str, ...]
    legend: Mapping[str, str]
    tick: int
    ticks: int
    tick_seconds: float
    score: int
    done: bool
    chefs: tuple[ViewChef, ...]
    items: Mapping[Pos, ViewItem]  # items lying on tiles (counters, pans, boards)
    orders: tuple[ViewOrder, ...]
    fires: tuple[Pos, ...]
    served: int
    missed: int
    wrong: int
    result: Mapping[str, Any] | None

    @classmethod
    def from_content(cls, content: Any) -> KitchenView:
        """Parse the ``kitchen`` component's content; ``ValueError`` if it is not one."""
        if not isinstance(content, Mapping):
            raise ValueError(  # noqa: TRY004 - one error type for any content that is not a view
                f"a kitchen view is an object, not {_brief(content)}")
        try:
            grid = tuple(content["grid"])
            legend = dict(content["legend"])
            if not grid or not all(isinstance(row, str) for row in grid):
                raise ValueError("the grid must be a list of strings")
            unknown = {char for row in grid for char in row} - set(legend)
            if unknown:
                raise ValueError(f"the legend lacks {sorted(unknown)}")
            items = {_pos(entry["pos"]): ViewItem.from_content(entry["item"])
                     for entry in content.get("items", [])}
            return cls(
                layout=str(content.get("layout", "")),
                grid=grid,
                legend=MappingProxyType(legend),
                tick=int(content["tick"]), ticks=int(content["ticks"]),
                tick_seconds=float(content.get("tick_seconds", 0.25)),
                score=int(content.get("score", 0)), done=bool(content.get("done", False)),
                chefs=tuple(ViewChef(
                    role=str(chef["role"]), pos=_pos(chef["pos"]),
                    facing=str(chef.get("facing", "down")),
                    holding=ViewItem.from_content(chef["holding"])
                    if chef.get("holding") else None,
                    macro=chef.get("macro"), queued=int(chef.get("queued", 0)))
                    for chef in content.get("chefs", [])),
                items=MappingProxyType(items),
                orders=tuple(ViewOrder(id=int(order["id"]), dish=str(order["dish"]),
                                       remaining=int(order["remaining"]),
                                       total=int(order["total"]), reward=int(order["reward"]))
                             for order in content.get("orders", [])),
                fires=tuple(_pos(fire) for fire in content.get("fires", [])),
                served=int(content.get("served", 0)), missed=int(content.get("missed", 0)),
                wrong=int(content.get("wrong", 0)),
                result=content.get("result"),
            )
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"not a kitchen view: {type(error).__name__} {error}") from None

    # -- the layout ---------------------------------------------------------------------------

    def kind(self, pos: Pos) -> str:
        """The tile kind at ``pos`` (``"wall"`` off the grid)."""
        x, y = pos
        if 0 <= y < len(self.grid) and 0 <= x < len(self.grid[y]):
            return self.legend.get(self.grid[y][x], WALL)
        return WALL

    def walkable(self, pos: Pos) -> bool:
        return self.kind(pos) == FLOOR

    def tiles(self, kind: str) -> list[Pos]:
        """Every tile of this kind (``"pan"``, ``"serving window"``...), in reading order."""
        return [(x, y) for y, row in enumerate(self.grid) for x, char in enumerate(row)
                if self.legend.get(char) == kind]

    def stations(self) -> dict[str, list[Pos]]:
        """Every tile kind but floor and wall, with where its tiles are."""
        return {kind: self.tiles(kind) for kind in TILE_KINDS
                if kind not in (FLOOR, WALL) and self.tiles(kind)}

    def counters(self) -> list[Pos]:
        """Counters and center counters: the tiles anything may be put down on."""
        return [pos for kind in sorted(COUNTER_KINDS) for pos in self.tiles(kind)]

    def center_counters(self) -> list[Pos]:
        return self.tiles(CENTER_COUNTER)

    def free_counters(self) -> list[Pos]:
        """Counters with nothing on them, in reading order."""
        return sorted((pos for pos in self.counters() if pos not in self.items),
                      key=lambda pos: (pos[1], pos[0]))

    # -- what is where ------------------------------------------------------------------------

    def chef(self, role: str) -> ViewChef | None:
        return next((chef for chef in self.chefs if chef.role == role), None)

    def partners(self, role: str) -> list[ViewChef]:
        """The other chefs."""
        return [chef for chef in self.chefs if chef.role != role]

    def item_at(self, pos: Pos) -> ViewItem | None:
        return self.items.get(pos)

    def where(self, name: str, status: str | None = None, *, on_plates: bool = False
              ) -> list[Pos]:
        """Tiles where an item ``name`` (in ``status``, if given) lies, not counting what is
        in hands. An empty plate is ``where("Plate", "Empty")``. With ``on_plates``, a tile
        whose plate holds such an ingredient counts too (``counts()`` counts a plate holding
        one ingredient as that ingredient)."""
        return sorted((pos for pos, item in self.items.items()
                       if item.is_(name, status) or (on_plates and any(
                           inner.is_(name, status) for inner in item.contents))),
                      key=lambda pos: (pos[1], pos[0]))

    def held(self) -> list[ViewItem]:
        return [chef.holding for chef in self.chefs if chef.holding is not None]

    def counts(self) -> dict[tuple[str, str], int]:
        """The paper's object counts: every ``(name, status)`` of :data:`COUNT_KEYS`, with how
        many there are on tiles and in hands. A dish counts as itself; a plate with one
        ingredient counts as that ingredient; a fire counts once per burning pan."""
        counts = dict.fromkeys(COUNT_KEYS, 0)
        for item in [*self.items.values(), *self.held()]:
            counted = item.contents[0] if item.is_plate and len(item.contents) == 1 else item
            counts[counted.key] = counts.get(counted.key, 0) + 1
        counts[(it.FIRE, "")] = len(self.fires)
        return counts

    def counter_counts(self) -> dict[str, int]:
        """How many counters are empty, as the paper's state has it."""
        return {"Empty": len(self.free_counters())}

    @property
    def remaining_ticks(self) -> int:
        return max(0, self.ticks - self.tick)


def _pos(value: Any) -> Pos:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise TypeError(f"a position is [x, y], not {_brief(value)}")
    return int(value[0]), int(value[1])


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
