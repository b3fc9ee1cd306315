"""The situational choices of the kitchen's rule-based chefs: each reads a
:class:`~.situation.Situation` and gives a macro action (or ``None`` when
it does not apply). The FSM tries them in its priority order; each rule-based partner tries the
few that make up its habit.

Jobs either chef could do (a fire, burnt beef) fall to one of them only
(:meth:`Situation.mine_to_do`), so two chefs running the same rules do not both go.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable

from cogym_lab.core.actions import Action, format_action
from cogym_lab.envs.kitchen.policies.situation import (
    BURGERS,
    CENTER,
    COUNTER_KINDS,
    DIRECTIONS,
    PAN,
    PLATE_STATION,
    RECIPES,
    SERVING,
    STATION_OF,
    Pos,
    Situation,
    chef_pos,
    macro,
    step,
)

#: What a choice returns to hold the chef still this tick (the FSM then sends nothing).
WAIT = "WAIT"

#: Tile kinds a chef may stand next to without being in anyone's way.
QUIET_TILES = frozenset({"floor", "wall", "counter", "center counter"})
#: How far cooked beef may get towards overcooking in a pan (0 to 1) before the FSM moves it
#: out when nothing has taken it.
RESCUE_PROGRESS = 0.3
#: Ticks a chef is away preparing lettuce (fetch, chop, come back): too long to leave cooking
#: beef that will overcook sooner than this (plus the walk back to its pan).
LETTUCE_TICKS = 35
#: Ticks the FSM waits for beef about to be well-cooked rather than start something else.
WAIT_FOR_BEEF = 8


def fire_choice(situation: Situation) -> str | None:
    """Put out a fire my chef can reach, unless the other chef is doing it already or is the
    one to do it (:meth:`Situation.mine_to_do`)."""
    fires = [pos for pos in situation.fires if situation.reaches(pos)]
    if not fires or situation.running(situation.partner)[0] == "PUT_OUT_FIRE":
        return None
    if not situation.mine_to_do(fires):
        return None
    return macro("PUT_OUT_FIRE")


def clean_choice(situation: Situation) -> str | None:
    """Throw away overcooked beef before it catches fire (or blocks a pan for good)."""
    burnt = situation.lying("Beef", "Overcooked", kinds=(*COUNTER_KINDS, PAN))
    burnt = [p for p in burnt if p.pos not in situation.fires]
    if not burnt or situation.chefs_running("CLEAN_A_COUNTER"):
        return None
    if not situation.mine_to_do(p.pos for p in burnt):
        return None
    return macro("CLEAN_A_COUNTER")


def serve_choice(situation: Situation, dishes: Iterable[str] | None = None) -> str | None:
    """Serve a made burger an order asks for, most urgent first, that my chef holds or can
    reach and the other chef neither holds nor is serving."""
    if not situation.can_use(SERVING):
        return None
    partner = situation.partner
    mine = situation.holding(situation.me)
    for dish in dishes if dishes is not None else situation.order_dishes():
        if mine == (dish, ""):
            return macro("SERVE", food=dish)
        taken = int(situation.running(partner) == ("SERVE", dish)
                    or situation.holding(partner) == (dish, ""))
        if len(situation.lying(dish)) - taken > 0:
            return macro("SERVE", food=dish)
    return None


def hand_over_choice(situation: Situation) -> str | None:
    """In a split kitchen, pass a made burger an order asks for to the center counter when my
    chef cannot reach the serving window and the partner's can."""
    if situation.can_use(SERVING) or not situation.can_use(SERVING, partner=True):
        return None
    wanted = set(situation.order_dishes())
    mine = situation.holding(situation.me)
    for dish in BURGERS:
        here = [p for p in situation.lying(dish) if p.kind != CENTER]
        if dish in wanted and (mine == (dish, "") or here):
            return macro("PASS_ON", thing=dish)
    return None


def assemble_choice(situation: Situation, dishes: Iterable[str] | None = None) -> str | None:
    """Assemble the most urgent open order whose ingredients my chef can reach ready, when it
    can reach a plate and bread."""
    if not (situation.can_use(PLATE_STATION) or situation.lying("Plate")) or not (
            situation.can_use(STATION_OF["Bread"]) or situation.lying("Bread")):
        return None
    pool = Counter({food: situation.ready(food, reachable=True) for food in ("Beef", "Lettuce")})
    for dish in dishes if dishes is not None else situation.open_orders():
        needs = Counter(RECIPES.get(dish, ()))
        if all(pool[food] >= count for food, count in needs.items()):
            return macro("ASSEMBLE", food=dish)
        # Not ready: what it would use stays free for a later order that is.
    return None


def prepare_choice(situation: Situation, dishes: Iterable[str] | None = None,
                   foods: Iterable[str] = ("Beef", "Lettuce")) -> str | None:
    """Prepare the first ingredient (of ``foods``, and that my chef can make) the open orders,
    most urgent first, lack and nobody has ready or on the way."""
    allowed = {food for food in foods if situation.can_prepare(food)}
    if any(over < LETTUCE_TICKS for _, over in situation.pan_beef()):
        allowed.discard("Lettuce")  # the beef would overcook while the lettuce is chopped
    pool = Counter({food: situation.ready(food) + situation.coming(food)
                    for food in ("Beef", "Lettuce")})
    for dish in dishes if dishes is not None else situation.open_orders():
        for food in RECIPES.get(dish, ()):
            if pool[food] > 0:
                pool[food] -= 1
            elif food in allowed:
                return macro("PREPARE", food=food, **_plating(situation, food))
    return None


def _plating(situation: Situation, food: str) -> dict[str, bool]:
    """Beef is prepared onto a plate (the chef waits by the pan and plates it as soon as it
    is well-cooked) when the chef may also be called away to chop lettuce, which would leave
    the beef to overcook; a chef that cannot chop keeps an eye on its pans anyway and cooks
    in several at once."""
    return {"plate": True} if food == "Beef" and situation.can_prepare("Lettuce") else {}


def rescue_choice(situation: Situation) -> str | None:
    """Move cooked beef out of a pan to a center counter before it overcooks there, once it
    has waited a while and no assembly took it (unless a chef is moving it already)."""
    waiting = [p for p in situation.lying("Beef", "Well-cooked", kinds=(PAN,))
               if float(p.item.get("progress") or 0.0) >= RESCUE_PROGRESS]
    if not waiting or situation.chefs_running("PASS_ON", "Beef"):
        return None
    return macro("PASS_ON", thing="Beef", thing_status="Well-cooked")


def wait_choice(situation: Situation) -> str | None:
    """Wait (no action, :data:`WAIT`) by beef that is about to be well-cooked, when an open
    order needs beef: starting anything else would leave it to overcook."""
    if not any("Beef" in RECIPES.get(dish, ()) for dish in situation.open_orders()):
        return None
    if any(ready <= WAIT_FOR_BEEF for ready, _ in situation.pan_beef()):
        return WAIT
    return None


def supply_choice(situation: Situation) -> str | None:
    """In a split kitchen, keep one empty plate on a center counter for a partner who cannot
    reach the plates, while orders are open."""
    if not situation.open_orders() or not situation.can_use(PLATE_STATION) \
            or situation.can_use(PLATE_STATION, partner=True) or situation.partner is None:
        return None
    if situation.lying("Plate", kinds=(CENTER,)) or situation.chefs_running("PASS_ON", "Plate"):
        return None
    return macro("PASS_ON", thing="Plate")


def park_choice(situation: Situation) -> str | None:
    """With nothing to do, step off a tile from which a station, pan, board, window or trash
    can is used (the partner may need it) towards the nearest tile that touches none."""
    mine = chef_pos(situation.me)
    if mine is None or not _in_the_way(situation, mine):
        return None
    other = chef_pos(situation.partner)
    first: dict[Pos, str] = {mine: ""}
    queue = deque([mine])
    while queue:
        here = queue.popleft()
        for direction in DIRECTIONS:
            nxt = step(here, direction)
            if nxt in first or nxt == other or situation.tiles.get(nxt) != "floor":
                continue
            first[nxt] = first[here] or direction
            if not _in_the_way(situation, nxt):
                return format_action(Action(name="MOVE", args={"direction": first[nxt]}))
            queue.append(nxt)
    return None


def _in_the_way(situation: Situation, pos: Pos) -> bool:
    return any(situation.tiles.get(step(pos, d)) not in QUIET_TILES for d in DIRECTIONS)


def move_away(situation: Situation, mine: Pos, other: Pos | None) -> str | None:
    """A ``MOVE`` to the free floor tile next to ``mine`` farthest from ``other``."""
    free = [(direction, step(mine, direction)) for direction in DIRECTIONS
            if situation.tiles.get(step(mine, direction)) == "floor"
            and step(mine, direction) != other]
    if not free:
        return None
    away = max(free, key=lambda entry: _distance(entry[1], other) if other else 0)
    return format_action(Action(name="MOVE", args={"direction": away[0]}))


def _distance(a: Pos, b: Pos) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


__all__ = ["LETTUCE_TICKS", "QUIET_TILES", "RESCUE_PROGRESS", "WAIT", "WAIT_FOR_BEEF",
           "assemble_choice", "clean_choice", "fire_choice", "hand_over_choice", "move_away",
           "park_choice", "prepare_choice", "rescue_choice", "serve_choice", "supply_choice",
           "wait_choice"]
