"""A job done with the keys a person has: the arrow keys and Space (``MOVE`` and ``INTERACT``).

In the DPT-Agent paper's mode people have no macro actions: they walk and interact. A simulated
person who has decided on a job ("cook beef", "serve the burger") must then press the keys for
it, one a tick, as a person would. :class:`KeyPresser` does that from the public view alone:
each tick it rebuilds the game as the view shows it (:func:`game_from_content`: the same rules,
the same tiles, the same items by their ids) and asks the job's macro, as the game would run
it, which key it would press now. The env never runs the macro: it only gets the keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogym_lab.core.actions import Action, format_action
from cogym_lab.envs.kitchen import macros
from cogym_lab.envs.kitchen.game import INTERACT, Game, Order
from cogym_lab.envs.kitchen.items import Item
from cogym_lab.envs.kitchen.layout import DIRECTIONS, load_layout


def item_from_view(view: Any) -> Item | None:
    """The item the view shows (``None`` for an empty hand), with its id."""
    if not isinstance(view, Mapping) or not isinstance(view.get("name"), str):
        return None
    contents = [inner for inner in (item_from_view(part) for part in view.get("contents") or ())
                if inner is not None]
    return Item(uid=int(view.get("id") or 0), name=view["name"],
                status=str(view.get("status") or ""), progress=float(view.get("progress") or 0),
                contents=contents)


def game_from_content(content: Mapping[str, Any]) -> Game:
    """The game as the ``kitchen`` view's content shows it: enough of it for a macro to decide
    a step (chefs, items, fires and orders; not the order generator's future)."""
    layout = load_layout(str(content.get("layout")))
    chefs = [c for c in content.get("chefs") or () if isinstance(c, Mapping)]
    game = Game(layout, [str(c.get("role")) for c in chefs], int(content.get("ticks") or 1),
                seed=0)
    game.tick = int(content.get("tick") or 0)
    game.placed = {}
    for chef, shown in zip(game.chefs, chefs, strict=False):
        chef.pos = (int(shown["pos"][0]), int(shown["pos"][1]))
        chef.facing = str(shown.get("facing") or "down")
        chef.holding = item_from_view(shown.get("holding"))
    for entry in content.get("items") or ():
        item = item_from_view(entry.get("item")) if isinstance(entry, Mapping) else None
        if item is not None:
            game.placed[(int(entry["pos"][0]), int(entry["pos"][1]))] = item
    game.fires = {(int(pos[0]), int(pos[1])): 0 for pos in content.get("fires") or ()}
    game.orders = [Order(id=int(o.get("id", 0)), dish=str(o.get("dish")),
                         remaining=int(o.get("remaining", 0)), total=int(o.get("total", 0)))
                   for o in content.get("orders") or () if isinstance(o, Mapping)]
    return game


def macro_for(action: Action) -> macros.Macro:
    """The macro object the env would run for a macro action (checked by its spec first)."""
    label = format_action(action)
    args = action.args
    if action.name == "PREPARE":
        return macros.Prepare(label, str(args["food"]), bool(args.get("plate", False)))
    if action.name == "ASSEMBLE":
        return macros.Assemble(label, str(args["food"]))
    if action.name == "SERVE":
        return macros.Serve(label, str(args["food"]))
    if action.name == "PASS_ON":
        return macros.PassOn(label, str(args["thing"]), str(args.get("thing_status") or ""))
    if action.name == "PUT_OUT_FIRE":
        return macros.PutOutFire(label)
    if action.name == "CLEAN_A_COUNTER":
        return macros.CleanACounter(label)
    raise ValueError(f"{action.name} is not a macro action")


class KeyPresser:
    """Presses the keys for one macro action, one a tick (see the module doc). :attr:`outcome`
    is ``None`` while the job goes on, then ``"done"`` or the reason it failed."""

    def __init__(self, action: Action, role: str) -> None:
        self.macro = macro_for(action)
        self.label = format_action(action)
        self.role = role
        self.outcome: str | None = None

    def press(self, content: Mapping[str, Any]) -> str | None:
        """The key for this tick (``MOVE(...)`` or ``INTERACT()``), or ``None`` (waiting, or
        the job is over: see :attr:`outcome`)."""
        if self.outcome is not None:
            return None
        game = game_from_content(content)
        chef = game.chef(self.role)
        if chef is None:
            self.outcome = "I have no chef"
            return None
        decision = self.macro.decide(game, chef)
        if decision.done or decision.failure:
            self.outcome = "done" if decision.done else str(decision.failure)
            return None
        if decision.action is None:
            return None  # waiting (for the beef to cook, say)
        if decision.action == INTERACT:
            # what this press will do, so the macro knows its step (a serve) succeeded
            self.macro.observe(game._interact(chef, []))
            return format_action(Action(name="INTERACT", args={}))
        if decision.action in DIRECTIONS:
            return format_action(Action(name="MOVE", args={"direction": decision.action}))
        return None


__all__ = ["KeyPresser", "game_from_content", "item_from_view", "macro_for"]
