"""Macro actions: a goal (prepare beef, serve a burger) turned into one atomic action per tick.

Each tick the game asks the chef's macro :meth:`~Macro.decide` what to do *now*, from the state
as it is: which item to fetch, which tile to use, and the first step of a shortest walk there
around the other chef. Nothing is planned ahead, so a macro copes when the partner moves, takes
an item or cooks something first. A macro remembers little: mostly the id of the item it is
working on, so that it knows when that item is where it should be (done) or was taken away
(failed). ``decide`` never changes the game; the game calls it again after the tick to report
a macro that just finished at once.

What each macro does (all of them first put down whatever the chef holds that is in the way,
on the nearest free counter):

* ``PREPARE(food, plate)``: Beef is fetched (a fresh one lying on a counter, else from its
  station) and put in a free pan; Lettuce is fetched and chopped on a free board (an unchopped
  one already on a board is chopped where it is); Bread is fetched from its station and put on a
  counter. Without ``plate`` it is done there (beef once it is cooking). With ``plate`` the chef
  then takes a plate, waits by the pan for the beef to be well-cooked, plates the ingredient and
  puts the plate on a counter.
* ``ASSEMBLE(food)``: picks the plate that already holds most of the dish (or a new one),
  then adds each missing ingredient from wherever one is ready (a pan, a board, a counter,
  another plate; bread also from its station); it ends with the dish in hand. It fails at once
  if an ingredient is not ready anywhere.
* ``SERVE(food)``: takes the dish (from the hand or a counter) to the serving window.
* ``PASS_ON(thing, thing_status)``: puts such a thing (one lying about, alone or as the only
  thing on a plate, else a new one from its station) on a free center counter.
* ``PUT_OUT_FIRE()``: fetches the extinguisher and sprays the nearest fire until it is out.
* ``CLEAN_A_COUNTER()``: takes overcooked beef (first) or else the item on the nearest counter
  (never the extinguisher) to the trash can.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection
from dataclasses import dataclass

from cogym_lab.envs.kitchen import items as it
from cogym_lab.envs.kitchen.game import Chef, Decision, Game, Interaction
from cogym_lab.envs.kitchen.items import Item
from cogym_lab.envs.kitchen.layout import (
    BEEF_STATION,
    BOARD,
    BREAD_STATION,
    CENTER_COUNTER,
    COUNTER_KINDS,
    LETTUCE_STATION,
    PAN,
    PLATE_STATION,
    SERVING,
    TRASH,
    Pos,
)
from cogym_lab.envs.kitchen.pathing import INTERACT, nearest, step_to_use

#: What PREPARE takes: the food and the station it comes from.
PREPARE_FOODS = {it.BEEF: BEEF_STATION, it.LETTUCE: LETTUCE_STATION, it.BREAD: BREAD_STATION}
#: What ASSEMBLE makes.
ASSEMBLE_FOODS = tuple(it.RECIPES)
#: What SERVE delivers.
SERVE_FOODS = tuple(it.BURGER_REWARDS)
#: What PASS_ON passes, with the statuses each may be asked for ("" = any).
PASS_THINGS: dict[str, tuple[str, ...]] = {
    it.BEEF: (it.FRESH, it.IN_PROGRESS, it.WELL_COOKED, it.OVERCOOKED),
    it.LETTUCE: (it.UNCHOPPED, it.CHOPPED),
    it.BREAD: (), it.PLATE: (it.EMPTY,), it.EXTINGUISHER: (),
    **dict.fromkeys(it.RECIPES, ()),
}

WAIT = Decision()
DONE = Decision(done=True)


def failed(reason: str) -> Decision:
    return Decision(failure=reason)


# -- looking around -------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """Where an item is: in a chef's hand (``role``) or on a tile (``pos``), alone or on the
    plate ``top``."""

    item: Item
    top: Item
    role: str | None = None
    pos: Pos | None = None

    @property
    def loose(self) -> bool:
        return self.top is self.item


def locate(game: Game, uid: int | None) -> Found | None:
    if uid is None:
        return None
    for pos, top in game.placed.items():
        for item in top.walk():
            if item.uid == uid:
                return Found(item=item, top=top, pos=pos)
    for chef in game.chefs:
        if chef.holding is not None:
            for item in chef.holding.walk():
                if item.uid == uid:
                    return Found(item=item, top=chef.holding, role=chef.role)
    return None


def others(game: Game, chef: Chef) -> list[Pos]:
    """The chefs to walk round: every one that stands still, and every one before this chef
    in chef order. A later chef on the move is ignored (it makes way), so two chefs meeting
    in a one-tile corridor never both turn back, tick after tick."""
    order = game.chefs.index(chef)
    return [other.pos for index, other in enumerate(game.chefs)
            if other is not chef and (index < order or not other.moved)]


def placed_where(game: Game, kinds: Collection[str],
                 match: Callable[[Item], bool] | None = None) -> list[tuple[Pos, Item]]:
    """Items lying on tiles of these kinds (never in a burning pan), in reading order; with
    ``match`` (a predicate), only those it accepts."""
    found = []
    for pos in game.layout.tiles(*kinds):
        item = game.placed.get(pos)
        if item is not None and pos not in game.fires and (match is None or match(item)):
            found.append((pos, item))
    return found


def go_use(game: Game, chef: Chef, target: Pos | None, what: str) -> Decision:
    """The next step towards using ``target`` (``what`` names it for a failure)."""
    if target is None:
        return failed(f"no {what} within reach")
    action = step_to_use(game.layout, chef.pos, chef.facing, target, others(game, chef))
    if action is None:
        return failed(f"cannot reach the {what} at {target[0]},{target[1]}")
    return Decision(action=action)


def go_nearest(game: Game, chef: Chef, targets: list[Pos], what: str) -> Decision:
    """Go and use the nearest of ``targets``, leaving out those that another chef blocks
    (standing on every tile they are used from) while there are others."""
    taken = {other.pos for other in game.chefs if other is not chef}
    free = [target for target in targets
            if any(spot not in taken for spot, _ in game.layout.access.get(target, ()))]
    return go_use(game, chef, nearest(game.layout, chef.pos, free or targets), what)


def reachable(game: Game, chef: Chef, targets: list[Pos]) -> list[Pos]:
    """The targets the chef can walk up to (the other side of a pass counter is not)."""
    return [target for target in targets
            if game.layout.distance_to_use(chef.pos, target) is not None]


def free_counters(game: Game, kinds: frozenset[str] = COUNTER_KINDS) -> list[Pos]:
    return [pos for pos in game.layout.tiles(*kinds) if pos not in game.placed]


def put_down(game: Game, chef: Chef, kinds: frozenset[str] = COUNTER_KINDS) -> Decision:
    """Put what the chef holds on the nearest free counter."""
    held = chef.holding
    name = held.name if held else "item"
    free = reachable(game, chef, free_counters(game, kinds))
    if not free:
        return failed(f"no free counter to put the {name} down on")
    return go_nearest(game, chef, free, "free counter")


def fetch_plate(game: Game, chef: Chef) -> Decision:
    """Go and take an empty plate: one on a counter, else a new one from the plate station."""
    if chef.holding is not None:
        return put_down(game, chef)
    plates = reachable(game, chef, [pos for pos, _ in placed_where(
        game, COUNTER_KINDS, lambda item: item.name == it.PLATE and not item.contents)])
    return go_nearest(game, chef, plates or list(game.layout.tiles(PLATE_STATION)), "plate")


# -- the macros -----------------------------------------------------------------------------


class Macro(abc.ABC):
    """Base of the macros: a name, the label the view shows, and no memory of interactions."""

    name = "MACRO"

    def __init__(self, label: str) -> None:
        self.label = label

    @abc.abstractmethod
    def decide(self, game: Game, chef: Chef) -> Decision:
        """The chef's atomic action this tick, or that the macro is done or failed."""

    def observe(self, interaction: Interaction) -> None:  # noqa: B027 - optional hook
        """Most macros read everything they need from the state."""


class Prepare(Macro):
    """PREPARE(food, plate): see the module doc."""

    name = "PREPARE"

    def __init__(self, label: str, food: str, plate: bool) -> None:
        super().__init__(label)
        self.food, self.plate = food, plate
        self.uid: int | None = None  # the ingredient this macro prepares, once it has one

    def decide(self, game: Game, chef: Chef) -> Decision:
        found = locate(game, self.uid)
        if found is None:
            if self.uid is not None:
                return failed(f"the {self.food} being prepared is gone")
            return self._start(game, chef)
        if found.role is not None:
            if found.role != chef.role:
                return failed(f"the other chef took the {self.food}")
            return self._in_hand(game, chef, found)
        assert found.pos is not None  # on a tile
        if not found.loose:
            return DONE  # on a plate, on a counter
        return self._on_tile(game, chef, found.item, found.pos)

    def _start(self, game: Game, chef: Chef) -> Decision:
        held = chef.holding
        if held is not None and held.name == self.food and held.status != it.OVERCOOKED:
            self.uid = held.uid  # already holding one: prepare that
            return self._in_hand(game, chef, Found(item=held, top=held, role=chef.role))
        if self.food == it.LETTUCE and held is None:
            waiting = placed_where(game, {BOARD}, lambda item: item.status == it.UNCHOPPED)
            target = nearest(game.layout, chef.pos, [pos for pos, _ in waiting])
            if target is not None:  # an unchopped lettuce left on a board: chop that one
                self.uid = game.placed[target].uid
                return self._on_tile(game, chef, game.placed[target], target)
        if held is not None:
            return put_down(game, chef)
        raw = {it.BEEF: it.FRESH, it.LETTUCE: it.UNCHOPPED}.get(self.food)
        lying = [] if raw is None else reachable(game, chef, [pos for pos, _ in placed_where(
            game, COUNTER_KINDS, lambda item: item.name == self.food and item.status == raw)])
        station = list(game.layout.tiles(PREPARE_FOODS[self.food]))
        return go_nearest(game, chef, lying or station, f"{self.food} station")

    def _in_hand(self, game: Game, chef: Chef, found: Found) -> Decision:
        if not found.loose:
            return put_down(game, chef)  # plated: set the plate down and it is done
        item = found.item
        if item.name == it.BEEF and item.status != it.WELL_COOKED:
            pans = [pos for pos in game.layout.tiles(PAN)
                    if pos not in game.placed and pos not in game.fires]
            return go_nearest(game, chef, pans, "free pan")
        if item.name == it.LETTUCE and item.status == it.UNCHOPPED:
            boards = [pos for pos in game.layout.tiles(BOARD) if pos not in game.placed]
            return go_nearest(game, chef, boards, "free chopping board")
        if self.plate:  # ready in hand: onto a plate lying on a counter, if one takes it
            plates = reachable(game, chef, [pos for pos, _ in placed_where(
                game, COUNTER_KINDS, lambda there: there.accepts(item))])
            if plates:
                return go_nearest(game, chef, plates, "plate")
        return put_down(game, chef)

    def _on_tile(self, game: Game, chef: Chef, item: Item, pos: Pos) -> Decision:
        if pos in game.fires:
            return failed(f"the pan with the {self.food} caught fire")
        if item.status == it.OVERCOOKED:
            return failed(f"the {self.food} overcooked")
        if item.name == it.LETTUCE and item.status == it.UNCHOPPED:
            if chef.holding is not None:
                return put_down(game, chef)
            return go_use(game, chef, pos, "chopping board")  # each interact chops
        cooking = item.name == it.BEEF and game.layout.kind(pos) == PAN
        if not self.plate and (cooking or item.is_ready_ingredient):
            return DONE
        held = chef.holding
        if held is None or not held.is_plate or item.name in held.ingredient_names:
            return fetch_plate(game, chef)
        step = go_use(game, chef, pos, self.food)
        if step.action == INTERACT and not item.is_ready_ingredient:
            return WAIT  # by the pan, plate in hand, until the beef is well-cooked
        return step


class Assemble(Macro):
    """ASSEMBLE(food): see the module doc."""

    name = "ASSEMBLE"

    def __init__(self, label: str, food: str) -> None:
        super().__init__(label)
        self.food = food
        self.recipe = it.RECIPES[food]

    def decide(self, game: Game, chef: Chef) -> Decision:
        held = chef.holding
        if held is not None and held.is_plate and held.ingredient_names <= self.recipe:
            missing = self.recipe - held.ingredient_names
            if not missing:
                return DONE
            sources = self._sources(game, chef, held, missing)
            lacking = missing - {name for _, names in sources for name in names}
            if lacking:
                return failed(self._not_ready(lacking))
            return go_nearest(game, chef, [pos for pos, _ in sources], "ingredient")
        if held is not None:
            return put_down(game, chef)
        return self._pick_base(game, chef)

    def _pick_base(self, game: Game, chef: Chef) -> Decision:
        """Go and take the plate to build on: the one holding most of the dish (nearest
        first) whose missing ingredients are all ready somewhere, else a new plate."""
        fresh = Item(uid=0, name=it.PLATE)  # stands for a plate from the station
        best: tuple[int, int, Pos] | None = None
        for pos, plate in placed_where(game, COUNTER_KINDS, lambda item: item.is_plate):
            if not plate.ingredient_names <= self.recipe:
                continue
            missing = self.recipe - plate.ingredient_names
            if not missing:
                continue  # a dish already made is not a base: taking it would make nothing new
            sources = [(spot, names) for spot, names
                       in self._sources(game, chef, plate, missing) if spot != pos]
            if missing <= {name for _, names in sources for name in names}:
                distance = game.layout.distance_to_use(chef.pos, pos)
                if distance is not None:
                    key = (-len(plate.contents), distance, pos)
                    best = key if best is None or key < best else best
        if best is not None:
            return go_use(game, chef, best[2], "plate")
        sources = self._sources(game, chef, fresh, self.recipe)
        lacking = self.recipe - {name for _, names in sources for name in names}
        if lacking:
            return failed(self._not_ready(lacking))
        return go_nearest(game, chef, list(game.layout.tiles(PLATE_STATION)), "plate station")

    def _sources(self, game: Game, chef: Chef, plate: Item, missing: frozenset[str]
                 ) -> list[tuple[Pos, frozenset[str]]]:
        """Tiles within the chef's reach to take missing ingredients from, each with the
        ingredients it gives."""
        found: list[tuple[Pos, frozenset[str]]] = []
        for pos, item in placed_where(game, COUNTER_KINDS | {PAN, BOARD}):
            if item.name in missing and plate.accepts(item):
                found.append((pos, frozenset({item.name})))
            elif (game.layout.kind(pos) in COUNTER_KINDS and plate.accepts_all(item)
                  and item.ingredient_names <= missing):
                found.append((pos, item.ingredient_names))
        if it.BREAD in missing and it.BREAD not in plate.ingredient_names:
            found += [(pos, frozenset({it.BREAD})) for pos in game.layout.tiles(BREAD_STATION)]
        return [(pos, names) for pos, names in found
                if game.layout.distance_to_use(chef.pos, pos) is not None]

    def _not_ready(self, lacking: frozenset[str]) -> str:
        names = ", ".join(f"{it.READY_STATUS[name]} {name}".strip()
                          for name in it.INGREDIENT_ORDER if name in lacking)
        return f"no {names} ready for a {self.food}"


class Serve(Macro):
    """SERVE(food): see the module doc."""

    name = "SERVE"

    def __init__(self, label: str, food: str) -> None:
        super().__init__(label)
        self.food = food
        self.served = False

    def observe(self, interaction: Interaction) -> None:
        if interaction.kind in ("serve", "wrong_serve"):
            self.served = True

    def decide(self, game: Game, chef: Chef) -> Decision:
        if self.served:
            return DONE
        held = chef.holding
        if held is not None and held.name == self.food:
            return go_nearest(game, chef, list(game.layout.tiles(SERVING)), "serving window")
        ready = reachable(game, chef, [pos for pos, _ in placed_where(
            game, COUNTER_KINDS, lambda item: item.name == self.food)])
        if not ready:
            return failed(f"no {self.food} ready to serve within reach")
        if held is not None:
            return put_down(game, chef)
        return go_nearest(game, chef, ready, self.food)


class PassOn(Macro):
    """PASS_ON(thing, thing_status): see the module doc."""

    name = "PASS_ON"

    def __init__(self, label: str, thing: str, status: str) -> None:
        super().__init__(label)
        self.thing, self.status = thing, status
        self.uid: int | None = None

    def _matches(self, item: Item) -> bool:
        """Whether ``item`` is the thing asked for: a plate holding only such an ingredient
        counts as one (the paper's object counts do the same)."""
        if item.name == it.PLATE and len(item.contents) == 1 and self.thing != it.PLATE:
            item = item.contents[0]
        if item.name != self.thing:
            return False
        if self.thing == it.PLATE:
            return not item.contents
        return not self.status or item.status == self.status

    def _station(self) -> str | None:
        """The station a new such thing comes from, if any does."""
        if self.thing in (it.PLATE, it.BREAD):
            return PLATE_STATION if self.thing == it.PLATE else BREAD_STATION
        if self.thing == it.BEEF and self.status in ("", it.FRESH):
            return BEEF_STATION
        if self.thing == it.LETTUCE and self.status in ("", it.UNCHOPPED):
            return LETTUCE_STATION
        return None

    def decide(self, game: Game, chef: Chef) -> Decision:
        found = locate(game, self.uid)
        if found is not None and found.pos is not None and found.loose \
                and game.layout.kind(found.pos) == CENTER_COUNTER:
            return DONE
        held = chef.holding
        if held is not None and self._matches(held):
            self.uid = held.uid
            if not game.layout.tiles(CENTER_COUNTER):
                return failed("this kitchen has no center counter")
            return put_down(game, chef, frozenset({CENTER_COUNTER}))
        if self.uid is not None:
            return failed(f"the {self.thing} being passed on was taken")
        lying = reachable(game, chef, [pos for pos, _ in placed_where(
            game, (COUNTER_KINDS - {CENTER_COUNTER}) | {PAN, BOARD}, self._matches)])
        station = self._station()
        if not lying and station is not None:  # none lying about: a new one
            lying = list(game.layout.tiles(station))
        if not lying:
            return failed(f"no {self.status + ' ' if self.status else ''}{self.thing} "
                          f"to pass on")
        if held is not None:
            return put_down(game, chef)
        return go_nearest(game, chef, lying, self.thing)


class PutOutFire(Macro):
    """PUT_OUT_FIRE(): see the module doc."""

    name = "PUT_OUT_FIRE"

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.target: Pos | None = None

    def decide(self, game: Game, chef: Chef) -> Decision:
        if self.target is None:
            self.target = nearest(game.layout, chef.pos, sorted(game.fires))
            if self.target is None:
                return failed("there is no fire within reach" if game.fires
                              else "there is no fire")
        if self.target not in game.fires:
            return DONE  # put out, by this chef or the other
        held = chef.holding
        if held is not None and held.name == it.EXTINGUISHER:
            return go_use(game, chef, self.target, "fire")
        holder = next((other for other in game.chefs if other.holding is not None
                       and other.holding.name == it.EXTINGUISHER), None)
        if holder is not None:
            return failed("the other chef has the extinguisher")
        lying = [pos for pos, _ in placed_where(game, COUNTER_KINDS,
                                                lambda item: item.name == it.EXTINGUISHER)]
        if not lying:
            return failed("there is no extinguisher")
        if held is not None:
            return put_down(game, chef)
        return go_nearest(game, chef, lying, "extinguisher")


class CleanACounter(Macro):
    """CLEAN_A_COUNTER(): see the module doc."""

    name = "CLEAN_A_COUNTER"

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.uid: int | None = None  # the item being taken to the trash
        self.kept: Pos | None = None  # where the chef set down what it held: not junk
        self.trashed = False

    def observe(self, interaction: Interaction) -> None:
        if interaction.kind == "trash":
            self.trashed = True
        elif interaction.kind == "put" and self.uid is None:
            self.kept = interaction.pos

    def decide(self, game: Game, chef: Chef) -> Decision:
        if self.trashed:
            return DONE
        held = chef.holding
        if held is not None and (held.uid == self.uid or _is_junk(held)):
            self.uid = held.uid
            return go_nearest(game, chef, list(game.layout.tiles(TRASH)), "trash can")
        if self.uid is not None:
            found = locate(game, self.uid)
            if found is None or found.role is not None:
                return failed("the item to clean away was taken")
        junk = reachable(game, chef, [pos for pos, _ in placed_where(
            game, COUNTER_KINDS | {PAN}, _is_junk)])
        targets = junk or [pos for pos, item in placed_where(game, COUNTER_KINDS)
                           if item.name != it.EXTINGUISHER and pos != self.kept]
        target = nearest(game.layout, chef.pos, targets)
        if target is None:
            return failed("there is nothing to clean away")
        if held is not None:
            return put_down(game, chef)
        step = go_use(game, chef, target, "counter")
        if step.action == INTERACT:
            self.uid = game.placed[target].uid  # about to pick it up
        return step


def _is_junk(item: Item) -> bool:
    return item.name == it.BEEF and item.status == it.OVERCOOKED
