"""The kitchen game itself: its state, its rules, and one tick of its world. Pure Python, no I/O.

A :class:`Game` is made from a :class:`~cogym_lab.envs.kitchen.layout.Layout`, the roles that
get a chef, the game length and a seed. Members' wishes reach it only as queued atomic actions
(:meth:`Game.queue`) and running macros (:meth:`Game.set_macro`); :meth:`Game.advance` then
plays one tick:

1. every chef, in chef order, picks at most one atomic action: its oldest queued one, else its
   macro's next step (decided from the state at the start of the tick);
2. moves are resolved together: of two chefs stepping onto one tile, the first in chef order
   gets it and the other stays; two chefs swapping tiles both stay where they are; a chef
   stepping onto a tile another chef keeps stays too; a move towards a
   tile that is not floor only turns the chef to face it;
3. interactions happen in chef order, on the tile each chef faces;
4. beef in pans cooks, orders run down, expire and arrive.

The rules of INTERACT, by the tile faced (nothing happens when none applies):

* a dispenser (beef, lettuce, bread, plate station) gives one new item to an empty hand; the
  bread station also puts bread straight onto a held plate;
* a counter takes what is held, or gives what it holds; a held plate takes a ready ingredient
  (or everything on a plate) from it, and a plate on it takes a held ready ingredient;
* a pan takes beef that is not overcooked, which cooks while it stays there (Fresh, then
  In-progress, Well-cooked, Overcooked, and in the end a fire); an empty hand takes the beef
  out, a held plate takes well-cooked beef; a pan on fire does nothing until the fire is put out
  by interacting with it :data:`EXTINGUISH_SPRAYS` times while holding the extinguisher, which
  also clears the burnt beef away;
* a chopping board takes lettuce; an empty hand chops unchopped lettuce on it (a chop per
  interact, :data:`CHOPS_NEEDED` in all) and picks chopped lettuce up; a held plate takes it;
* the serving window takes anything but the extinguisher: a dish an open order asks for earns
  that order's reward (the oldest such order), anything else is a wrong serve;
* the trash can destroys anything held but the extinguisher.

Key events of the contribution rate are credited to the chef who completes them: putting fresh
beef in a pan (cook beef), the chop that finishes a lettuce (prepare lettuce), an ingredient
joining a plate (use beef, lettuce, bread), taking a plate from its station (use plate), and the
serve.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cogym_lab.envs.kitchen import items as it
from cogym_lab.envs.kitchen.items import Item
from cogym_lab.envs.kitchen.layout import (
    BEEF_STATION,
    BOARD,
    BREAD_STATION,
    COUNTER_KINDS,
    DIRECTIONS,
    LETTUCE_STATION,
    PAN,
    PLATE_STATION,
    SERVING,
    TRASH,
    Layout,
    Pos,
)

# The timing constants are calibrated against the paper (docs/real-time.md, "Calibration").
#: Ticks a beef spends in a pan before it is well-cooked (15 s at 0.25 s a tick): twice the
#: paper's released code, so that the rule-based chef alone scores what the paper reports.
WELL_COOKED_AFTER = 60
#: Ticks in a pan before it is overcooked: the paper's 10 s window to take it out well-cooked.
OVERCOOKED_AFTER = 100
#: Ticks in a pan before overcooked beef catches fire: 3 s more to rescue the pan.
FIRE_AFTER = 112
#: Interacts with an empty hand that chop a lettuce (the paper's code: 8).
CHOPS_NEEDED = 8
#: Interacts with the extinguisher, facing the fire, that put a fire out (the paper's code: 5).
EXTINGUISH_SPRAYS = 5
#: Atomic actions a chef may have waiting at once.
MAX_QUEUED = 4
#: Ticks a macro keeps walking into another chef before it gives up (3 s): a partner standing
#: still in the only way through would otherwise hold it forever.
MACRO_PATIENCE = 12
INTERACT = "interact"
ATOMIC_ACTIONS = (*DIRECTIONS, INTERACT)

_DISPENSED = {BEEF_STATION: (it.BEEF, it.FRESH), LETTUCE_STATION: (it.LETTUCE, it.UNCHOPPED),
              BREAD_STATION: (it.BREAD, ""), PLATE_STATION: (it.PLATE, "")}


@dataclass(frozen=True)
class Decision:
    """A macro's answer for this tick: an atomic action, nothing yet (``action=None``), or
    that it is finished (``done``) or cannot go on (``failure`` says why)."""

    action: str | None = None
    done: bool = False
    failure: str | None = None


class Macro(Protocol):
    """A running macro action (``macros.py``), as the game drives it."""

    name: str  # PREPARE, SERVE, ...
    label: str  # the action as it was sent, for the view

    def decide(self, game: Game, chef: Chef) -> Decision:
        """The next step, from the state as it is now; must not change the state."""
        ...

    def observe(self, interaction: Interaction) -> None:
        """What the chef's INTERACT just did (so the macro knows its step succeeded)."""
        ...


@dataclass(frozen=True)
class Interaction:
    """What one INTERACT did: ``kind`` names the rule that applied ("nothing" when none)."""

    kind: str
    pos: Pos
    item: str = ""  # the name of the item involved, if any


@dataclass
class Chef:
    role: str
    pos: Pos
    facing: str = "down"
    holding: Item | None = None
    queue: deque[str] = field(default_factory=deque)
    macro: Macro | None = None
    moved: bool = False  # whether it stepped to another tile last tick
    stuck: int = 0  # ticks in a row its moves were blocked by another chef

    @property
    def faced(self) -> Pos:
        dx, dy = DIRECTIONS[self.facing]
        return self.pos[0] + dx, self.pos[1] + dy


@dataclass
class Order:
    id: int
    dish: str
    remaining: int
    total: int

    @property
    def reward(self) -> int:
        return it.BURGER_REWARDS[self.dish]

    def to_view(self) -> dict[str, Any]:
        return {"id": self.id, "dish": self.dish, "remaining": self.remaining,
                "total": self.total, "reward": self.reward}


@dataclass
class Ledger:
    """Items made and destroyed during one tick, for checks that nothing appears or vanishes
    otherwise: ``removed`` holds (uid, why) with why in served, wrong_served, trash, burnt."""

    created: list[int] = field(default_factory=list)
    removed: list[tuple[int, str]] = field(default_factory=list)


class Game:
    """One game of the kitchen (see the module doc for the rules)."""

    def __init__(self, layout: Layout, roles: Sequence[str], ticks: int, seed: int) -> None:
        if len(roles) > len(layout.chef_starts):
            raise ValueError(f"Layout {layout.name!r} has room for {len(layout.chef_starts)} "
                             f"chefs, not {len(roles)}.")
        self.layout = layout
        self.ticks = ticks
        self.tick = 0
        self.score = 0
        self.served = self.missed = self.wrong = 0
        self.closed_reward = 0  # what the orders served or missed were worth
        self.chefs = [Chef(role=role, pos=start) for role, start in zip(roles, layout.chef_starts,
                                                                        strict=False)]
        self.placed: dict[Pos, Item] = {}  # items on counters, pans and boards
        self.fires: dict[Pos, int] = {}  # burning pan -> sprays so far
        self.orders: list[Order] = []
        self.key_events: Counter[str] = Counter()  # role -> key events of served dishes
        self.ledger = Ledger()
        self._rng = random.Random(seed)
        self._next_uid = 1
        self._next_order_id = 1
        self._happened: list[dict[str, Any]] = []
        if layout.extinguisher is not None:
            self.placed[layout.extinguisher] = self._make(it.EXTINGUISHER, "")
        for _ in range(layout.orders.first):
            self._new_order()
        self._next_order_at = self._order_gap()
        self.ledger = Ledger()  # what the set-up made is not a tick's doing

    # -- reading the state --------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.tick >= self.ticks

    def chef(self, role: str) -> Chef | None:
        return next((chef for chef in self.chefs if chef.role == role), None)

    def chef_at(self, pos: Pos) -> Chef | None:
        return next((chef for chef in self.chefs if chef.pos == pos), None)

    def all_items(self) -> list[tuple[str, Item]]:
        """Every item in the game, each once, with where it is: ``"tile x,y"``,
        ``"hand ROLE"`` or ``"on #UID"`` for an ingredient on a plate."""
        found: list[tuple[str, Item]] = []

        def add(place: str, item: Item) -> None:
            found.append((place, item))
            for inner in item.contents:
                add(f"on #{item.uid}", inner)

        for (x, y), item in sorted(self.placed.items()):
            add(f"tile {x},{y}", item)
        for chef in self.chefs:
            if chef.holding is not None:
                add(f"hand {chef.role}", chef.holding)
        return found

    def predicted_pos(self, chef: Chef) -> tuple[Pos, str]:
        """Where ``chef`` will stand, and face, once its queued moves are done, if nothing
        blocks them: what a new MOVE is checked against."""
        pos, facing = chef.pos, chef.facing
        for atomic in chef.queue:
            if atomic in DIRECTIONS:
                facing = atomic
                step = _step(pos, atomic)
                if self.layout.walkable(step):
                    pos = step
        return pos, facing

    # -- members' wishes ----------------------------------------------------------------------

    def queue(self, chef: Chef, atomic: str) -> None:
        """Queue an atomic action (checked by the caller), cancelling the running macro."""
        chef.macro = None
        chef.queue.append(atomic)

    def set_macro(self, chef: Chef, macro: Macro) -> None:
        """Run ``macro`` for ``chef`` from the next tick, replacing the running one."""
        chef.macro = macro
        chef.stuck = 0

    # -- one tick -----------------------------------------------------------------------------

    def advance(self) -> tuple[int, dict[str, Any]]:
        """Play one tick; return the score change and the tick's info (contract format)."""
        if self.over:
            raise RuntimeError("The game is over.")
        self.tick += 1
        self.ledger = Ledger()
        happened, self._happened = self._happened, []
        score_before = self.score
        chosen = self._choose_actions(happened)
        self._move([(chef, atomic) for chef, atomic in chosen if atomic in DIRECTIONS])
        for chef, atomic in chosen:
            if atomic == INTERACT:
                chef.stuck = 0
                interaction = self._interact(chef, happened)
                if chef.macro is not None:
                    chef.macro.observe(interaction)
        self._cook(happened)
        self._run_orders(happened)
        self._check_macros(happened)
        info = {"score": self.score, "happened": happened,
                "atomic": {chef.role: atomic for chef, atomic in chosen}}
        return self.score - score_before, info

    def _choose_actions(self, happened: list[dict[str, Any]]) -> list[tuple[Chef, str]]:
        chosen: list[tuple[Chef, str]] = []
        for chef in self.chefs:
            if chef.queue:
                chosen.append((chef, chef.queue.popleft()))
            elif chef.macro is not None:
                decision = chef.macro.decide(self, chef)
                if decision.action is not None:
                    chosen.append((chef, decision.action))
                else:
                    self._finish_macro(chef, decision, happened)
        return chosen

    def _check_macros(self, happened: list[dict[str, Any]]) -> None:
        """Report a macro that this tick finished (or made impossible) at once, so that its
        member can send the next one before the next tick."""
        for chef in self.chefs:
            if chef.macro is not None and chef.stuck >= MACRO_PATIENCE:
                self._finish_macro(chef, Decision(failure=f"another chef has stood in the way "
                                                          f"for {chef.stuck} ticks"), happened)
            if chef.macro is not None and not chef.queue:
                decision = chef.macro.decide(self, chef)
                if decision.action is None:
                    self._finish_macro(chef, decision, happened)

    def _finish_macro(self, chef: Chef, decision: Decision, happened: list[dict[str, Any]]
                      ) -> None:
        if chef.macro is None or not (decision.done or decision.failure):
            return  # waiting (for beef to cook, say): the macro goes on
        if decision.failure:
            happened.append({"kind": "macro_failed", "chef": chef.role, "macro": chef.macro.name,
                             "reason": decision.failure})
        else:
            happened.append({"kind": "macro_done", "chef": chef.role, "macro": chef.macro.name})
        chef.macro = None

    def _move(self, moves: list[tuple[Chef, str]]) -> None:
        wanted: dict[int, Pos] = {}
        for index, (chef, direction) in enumerate(moves):
            chef.facing = direction
            step = _step(chef.pos, direction)
            if self.layout.walkable(step):
                wanted[index] = step
        changed = True
        while changed:  # drop blocked moves until every remaining one can happen
            changed = False
            for index, step in list(wanted.items()):
                chef = moves[index][0]
                rivals = [other for other, target in wanted.items()
                          if other != index and target == step]
                blocker = self.chef_at(step)
                blocker_index = next((n for n, (c, _) in enumerate(moves) if c is blocker), None)
                swapping = blocker_index in wanted and wanted[blocker_index] == chef.pos
                staying = blocker is not None and blocker_index not in wanted
                if rivals or swapping or staying:
                    # Two chefs stepping onto one tile: the first in chef order gets it, so
                    # that two chefs meeting in a corridor never wait on each other for ever.
                    contenders = [index, *rivals]
                    dropped = [n for n in contenders if n != min(contenders)] if rivals \
                        else [index]
                    if swapping and blocker_index is not None:
                        dropped.append(blocker_index)
                    for gone in dropped:
                        wanted.pop(gone, None)
                    changed = True
                    break
        for chef in self.chefs:
            chef.moved = False
        for index, step in wanted.items():
            moves[index][0].pos = step
            moves[index][0].moved = True
        for chef, direction in moves:  # a step onto floor that did not happen: a chef blocked it
            blocked = self.layout.walkable(_step(chef.pos, direction)) and not chef.moved
            chef.stuck = chef.stuck + 1 if blocked else 0

    # -- interacting --------------------------------------------------------------------------

    def _interact(self, chef: Chef, happened: list[dict[str, Any]]) -> Interaction:
        target = chef.faced
        kind = self.layout.kind(target)
        if kind in _DISPENSED:
            return self._use_dispenser(chef, target, kind)
        if kind in COUNTER_KINDS:
            return self._use_counter(chef, target)
        if kind == PAN:
            return self._use_pan(chef, target, happened)
        if kind == BOARD:
            return self._use_board(chef, target)
        if kind == SERVING:
            return self._serve(chef, target, happened)
        if kind == TRASH:
            return self._trash(chef, target)
        return Interaction("nothing", target)

    def _use_dispenser(self, chef: Chef, target: Pos, kind: str) -> Interaction:
        name, status = _DISPENSED[kind]
        held = chef.holding
        if held is None:
            chef.holding = self._make(name, status)
            if name == it.PLATE:
                chef.holding.credits[it.USE_PLATE] = chef.role
            return Interaction("dispense", target, name)
        if name == it.BREAD and held.is_plate and it.BREAD not in held.ingredient_names:
            self._plate(chef, held, self._make(name, status))
            return Interaction("plate", target, name)
        return Interaction("nothing", target)

    def _use_counter(self, chef: Chef, target: Pos) -> Interaction:
        held, there = chef.holding, self.placed.get(target)
        if held is None and there is not None:
            chef.holding = self.placed.pop(target)
            return Interaction("pick", target, there.name)
        if held is not None and there is None:
            self.placed[target] = held
            chef.holding = None
            return Interaction("put", target, held.name)
        if held is None or there is None:
            return Interaction("nothing", target)
        if held.accepts(there):
            self._plate(chef, held, self.placed.pop(target))
            return Interaction("plate", target, there.name)
        if there.accepts(held):
            chef.holding = None
            self._plate(chef, there, held)
            return Interaction("plate_onto", target, held.name)
        if held.accepts_all(there):
            for ingredient in there.take_all():
                held.add(ingredient)  # credits stay: these were used when first plated
            return Interaction("transfer", target, held.name)
        return Interaction("nothing", target)

    def _use_pan(self, chef: Chef, target: Pos, happened: list[dict[str, Any]]) -> Interaction:
        held, there = chef.holding, self.placed.get(target)
        if target in self.fires:
            if held is None or held.name != it.EXTINGUISHER:
                return Interaction("nothing", target)
            self.fires[target] += 1
            held.progress = self.fires[target] / EXTINGUISH_SPRAYS
            if self.fires[target] < EXTINGUISH_SPRAYS:
                return Interaction("spray", target, it.FIRE)
            del self.fires[target]
            held.progress = 0.0
            burnt = self.placed.pop(target, None)
            if burnt is not None:
                self._remove(burnt, "burnt")
            happened.append({"kind": "fire_out", "chef": chef.role, "pos": list(target)})
            return Interaction("fire_out", target, it.FIRE)
        if held is None and there is not None:
            chef.holding = self.placed.pop(target)
            return Interaction("pick", target, there.name)
        if (held is not None and there is None and held.name == it.BEEF
                and held.status != it.OVERCOOKED):
            chef.holding = None
            if held.status == it.FRESH:
                held.status = it.IN_PROGRESS
                held.credits.setdefault(it.COOK_BEEF, chef.role)
            self.placed[target] = held
            return Interaction("put", target, held.name)
        if held is not None and there is not None and held.accepts(there):
            self._plate(chef, held, self.placed.pop(target))
            return Interaction("plate", target, there.name)
        return Interaction("nothing", target)

    def _use_board(self, chef: Chef, target: Pos) -> Interaction:
        held, there = chef.holding, self.placed.get(target)
        if held is None and there is not None and there.status == it.UNCHOPPED:
            there.ticks += 1
            there.progress = there.ticks / CHOPS_NEEDED
            if there.ticks < CHOPS_NEEDED:
                return Interaction("chop", target, there.name)
            there.status, there.progress = it.CHOPPED, 1.0
            there.credits[it.PREPARE_LETTUCE] = chef.role
            return Interaction("chopped", target, there.name)
        if held is None and there is not None:
            chef.holding = self.placed.pop(target)
            return Interaction("pick", target, there.name)
        if held is not None and there is None and held.name == it.LETTUCE:
            self.placed[target] = held
            chef.holding = None
            return Interaction("put", target, held.name)
        if held is not None and there is not None and held.accepts(there):
            self._plate(chef, held, self.placed.pop(target))
            return Interaction("plate", target, there.name)
        return Interaction("nothing", target)

    def _serve(self, chef: Chef, target: Pos, happened: list[dict[str, Any]]) -> Interaction:
        held = chef.holding
        if held is None or held.name == it.EXTINGUISHER:
            return Interaction("nothing", target)
        chef.holding = None
        order = next((order for order in self.orders if order.dish == held.name), None)
        if order is None:
            self._remove(held, "wrong_served")
            self.wrong += 1
            self.score += it.WRONG_SERVE_PENALTY
            happened.append({"kind": "wrong_served", "chef": chef.role, "dish": held.name,
                             "reward": it.WRONG_SERVE_PENALTY})
            return Interaction("wrong_serve", target, held.name)
        self.orders.remove(order)
        self._remove(held, "served")
        self.served += 1
        self.score += order.reward
        self.closed_reward += order.reward
        credits = Counter(role for item in held.walk() for role in item.credits.values())
        credits[chef.role] += 1  # the serve itself
        self.key_events.update(credits)
        happened.append({"kind": "served", "chef": chef.role, "dish": held.name, "id": order.id,
                         "reward": order.reward, "credits": dict(sorted(credits.items()))})
        return Interaction("serve", target, held.name)

    def _trash(self, chef: Chef, target: Pos) -> Interaction:
        held = chef.holding
        if held is None or held.name == it.EXTINGUISHER:
            return Interaction("nothing", target)
        chef.holding = None
        self._remove(held, "trash")
        return Interaction("trash", target, held.name)

    def _plate(self, chef: Chef, plate: Item, ingredient: Item) -> None:
        ingredient.credits.setdefault(it.USE_EVENT[ingredient.name], chef.role)
        plate.add(ingredient)

    def _remove(self, item: Item, why: str) -> None:
        self.ledger.removed += [(gone.uid, why) for gone in item.walk()]

    def _make(self, name: str, status: str) -> Item:
        item = Item(uid=self._next_uid, name=name, status=status)
        self._next_uid += 1
        self.ledger.created.append(item.uid)
        return item

    # -- the world's own clock ----------------------------------------------------------------

    def _cook(self, happened: list[dict[str, Any]]) -> None:
        for pos in self.layout.tiles(PAN):
            beef = self.placed.get(pos)
            if beef is None or pos in self.fires or beef.name != it.BEEF:
                continue
            beef.ticks += 1
            if beef.ticks >= FIRE_AFTER:
                self.fires[pos] = 0
                beef.progress = 1.0
                happened.append({"kind": "fire", "pos": list(pos)})
            elif beef.ticks >= OVERCOOKED_AFTER:
                beef.status = it.OVERCOOKED
                beef.progress = _share(beef.ticks, OVERCOOKED_AFTER, FIRE_AFTER)
            elif beef.ticks >= WELL_COOKED_AFTER:
                beef.status = it.WELL_COOKED
                beef.progress = _share(beef.ticks, WELL_COOKED_AFTER, OVERCOOKED_AFTER)
            else:
                beef.progress = _share(beef.ticks, 0, WELL_COOKED_AFTER)

    def _run_orders(self, happened: list[dict[str, Any]]) -> None:
        for order in list(self.orders):
            order.remaining -= 1
            if order.remaining <= 0:
                self.orders.remove(order)
                self.missed += 1
                self.score += it.MISSED_ORDER_PENALTY
                self.closed_reward += order.reward
                happened.append({"kind": "missed", "id": order.id, "dish": order.dish,
                                 "reward": it.MISSED_ORDER_PENALTY})
        settings = self.layout.orders
        due = self.tick >= self._next_order_at or not self.orders
        if due and len(self.orders) < settings.max_open and not self.over:
            happened.append(self._new_order())
            self._next_order_at = self.tick + self._order_gap()

    def _new_order(self) -> dict[str, Any]:
        settings = self.layout.orders
        dish = self._rng.choice(settings.dishes)
        total = settings.deadline_of(dish)
        order = Order(id=self._next_order_id, dish=dish, remaining=total, total=total)
        self._next_order_id += 1
        self.orders.append(order)
        happening = {"kind": "order", "id": order.id, "dish": dish, "total": total}
        if self.tick == 0:
            self._happened.append(happening)  # reported with the first tick
        return happening

    def _order_gap(self) -> int:
        settings = self.layout.orders
        return settings.interval + self._rng.randint(-settings.jitter, settings.jitter)

    # -- the result ---------------------------------------------------------------------------

    def contribution(self) -> dict[str, float]:
        """Each chef's share of the key events of the dishes served so far."""
        total = sum(self.key_events.values())
        return {chef.role: (self.key_events[chef.role] / total if total else 0.0)
                for chef in self.chefs}

    def result(self) -> dict[str, Any]:
        return {"score": self.score, "served": self.served, "missed": self.missed,
                "wrong": self.wrong, "contribution": self.contribution()}

    def content(self, tick_seconds: float) -> dict[str, Any]:
        """The view's content (contract format)."""
        return {
            "layout": self.layout.name,
            "grid": list(self.layout.grid),
            "legend": self.layout.view_legend(),
            "tick": self.tick, "ticks": self.ticks, "tick_seconds": tick_seconds,
            "score": self.score, "done": self.over,
            "chefs": [{"role": chef.role, "pos": list(chef.pos), "facing": chef.facing,
                       "holding": chef.holding.to_view() if chef.holding else None,
                       "macro": chef.macro.label if chef.macro else None,
                       "queued": len(chef.queue)} for chef in self.chefs],
            "items": [{"pos": [x, y], "item": item.to_view()}
                      for (x, y), item in sorted(self.placed.items(),
                                                 key=lambda entry: (entry[0][1], entry[0][0]))],
            "orders": [order.to_view() for order in self.orders],
            "fires": [list(pos) for pos in sorted(self.fires, key=lambda p: (p[1], p[0]))],
            "served": self.served, "missed": self.missed, "wrong": self.wrong,
            "result": self.result() if self.over else None,
        }


def _step(pos: Pos, direction: str) -> Pos:
    dx, dy = DIRECTIONS[direction]
    return pos[0] + dx, pos[1] + dy


def _share(ticks: int, start: int, end: int) -> float:
    return min(1.0, (ticks - start) / (end - start))
