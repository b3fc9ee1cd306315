"""The things in the kitchen: ingredients, plates and the dishes made on them, the extinguisher.

An :class:`Item` is one physical thing with a unique id, so that a test can follow it from the
dispenser that made it to the window, the bin or the plate it ended in. A plate is one item
whose ``contents`` are the ingredients on it; its name is the dish those contents make
(``BeefBurger``), or ``Plate`` while they make none (empty, or one ingredient).

Each item also remembers which role did each *key event* of the paper's contribution rate on it
(cook the beef, prepare the lettuce, use an ingredient on a plate, take the plate); the serve
adds the last one. The rules for when each is credited live where the events happen, in
``game.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BEEF = "Beef"
LETTUCE = "Lettuce"
BREAD = "Bread"
PLATE = "Plate"
EXTINGUISHER = "FireExtinguisher"
FIRE = "Fire"

FRESH = "Fresh"
IN_PROGRESS = "In-progress"
WELL_COOKED = "Well-cooked"
OVERCOOKED = "Overcooked"
UNCHOPPED = "Unchopped"
CHOPPED = "Chopped"
#: How the paper's object counts name a plate with nothing on it.
EMPTY = "Empty"

#: The ingredients a dish needs, by dish. A plate whose contents are one of these *is* that dish.
RECIPES: dict[str, frozenset[str]] = {
    "BeefBurger": frozenset({BREAD, BEEF}),
    "LettuceBurger": frozenset({BREAD, LETTUCE}),
    "BeefLettuceBurger": frozenset({BREAD, BEEF, LETTUCE}),
    "BeefLettuce": frozenset({BEEF, LETTUCE}),
}
#: The dishes a customer orders, with what serving one earns (paper, Table 4).
BURGER_REWARDS: dict[str, int] = {"LettuceBurger": 15, "BeefBurger": 20, "BeefLettuceBurger": 25}
#: What serving anything no open order asks for costs, and what an order left to expire costs.
WRONG_SERVE_PENALTY = -10
MISSED_ORDER_PENALTY = -10

#: The state an ingredient must be in before it may go on a plate.
READY_STATUS: dict[str, str] = {BEEF: WELL_COOKED, LETTUCE: CHOPPED, BREAD: ""}
#: The order ingredients are listed in on a plate, so that a plate reads the same every time.
INGREDIENT_ORDER = (BREAD, BEEF, LETTUCE)

# Key events of the contribution rate (paper Appendix E, Table 5), as items record them.
COOK_BEEF = "cook_beef"
PREPARE_LETTUCE = "prepare_lettuce"
USE_BEEF = "use_beef"
USE_LETTUCE = "use_lettuce"
USE_BREAD = "use_bread"
USE_PLATE = "use_plate"
SERVE = "serve"
#: The "use" event credited when an ingredient joins a plate.
USE_EVENT = {BEEF: USE_BEEF, LETTUCE: USE_LETTUCE, BREAD: USE_BREAD}


def dish_of(contents: frozenset[str]) -> str | None:
    """The dish a plate holding these ingredients is, or ``None``."""
    for dish, recipe in RECIPES.items():
        if recipe == contents:
            return dish
    return None


def can_share_plate(names: frozenset[str]) -> bool:
    """Whether these ingredients may lie on one plate: each at most once, and all of them part
    of some dish (every pair of the three ingredients is)."""
    return names <= RECIPES["BeefLettuceBurger"]


@dataclass
class Item:
    """One thing in the kitchen. ``ticks`` counts cooking ticks for beef and chops for lettuce;
    ``progress`` is what the view shows of it (see :meth:`to_view`)."""

    uid: int
    name: str
    status: str = ""
    ticks: int = 0
    progress: float = 0.0
    contents: list[Item] = field(default_factory=list)
    credits: dict[str, str] = field(default_factory=dict)  # key event -> role

    @property
    def is_plate(self) -> bool:
        return self.name == PLATE or self.name in RECIPES

    @property
    def ingredient_names(self) -> frozenset[str]:
        return frozenset(item.name for item in self.contents)

    @property
    def is_ready_ingredient(self) -> bool:
        """An ingredient in the state a plate takes it in."""
        return READY_STATUS.get(self.name) == self.status

    def accepts(self, ingredient: Item) -> bool:
        """Whether this plate can take ``ingredient`` on top of what it holds."""
        return (self.is_plate and ingredient.is_ready_ingredient
                and ingredient.name not in self.ingredient_names
                and can_share_plate(self.ingredient_names | {ingredient.name}))

    def accepts_all(self, other: Item) -> bool:
        """Whether this plate can take everything on the plate ``other``."""
        names = other.ingredient_names
        return (self.is_plate and other.is_plate and bool(names)
                and not names & self.ingredient_names
                and can_share_plate(self.ingredient_names | names))

    def add(self, ingredient: Item) -> None:
        """Put ``ingredient`` on this plate (checked with :meth:`accepts` first)."""
        self.contents.append(ingredient)
        self.contents.sort(key=lambda item: INGREDIENT_ORDER.index(item.name))
        self.name = dish_of(self.ingredient_names) or PLATE

    def take_all(self) -> list[Item]:
        """Empty this plate, returning what was on it."""
        taken, self.contents = self.contents, []
        self.name = PLATE
        return taken

    def walk(self) -> list[Item]:
        """This item and everything on it."""
        return [self, *(inner for item in self.contents for inner in item.walk())]

    def to_view(self) -> dict[str, Any]:
        """The item as the view's plain JSON: name, status, progress and, for a plate, contents.

        ``progress`` is how far the item is through its current stage, 0 to 1: beef through
        cooking (In-progress), then towards overcooking (Well-cooked), then towards catching
        fire (Overcooked); lettuce through chopping; the extinguisher through putting out the
        fire it last sprayed. ``id`` is the thing's own number, the same while it lasts (what a
        player watching the kitchen sees: which beef is which), so a member can follow one.
        """
        view: dict[str, Any] = {"id": self.uid, "name": self.name, "status": self.status,
                                "progress": round(self.progress, 3)}
        if self.is_plate:
            view["contents"] = [item.to_view() for item in self.contents]
        return view
