"""A small built-in task: two teammates build a shared packing checklist.

It exists so that a whole session can run on a fresh machine with no LM and no data: it has a
shared component (the checklist), a private one (each member's idea search), a grader, and a
hidden preference for the simulated user side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core import ActionError, CoEnv, Component, RenderType, action
from cogym_lab.core.env import ScoreReport
from cogym_lab.core.hidden_facts import HiddenFacts
from cogym_lab.core.protocol import DEFAULT_PROTOCOL

IDEAS = {
    "camping": ["tent", "sleeping bag", "headlamp", "stove", "water filter", "rain jacket",
                "first aid kit", "map"],
    "beach": ["sunscreen", "towel", "umbrella", "swimsuit", "water bottle", "hat"],
    "city": ["walking shoes", "charger", "umbrella", "metro card", "day bag"],
}


@dataclass
class Item:
    id: int
    text: str
    added_by: str
    done: bool = False


@dataclass
class TodoEnv(CoEnv):
    """Build a packing checklist for a trip with at least ``min_items`` entries."""

    trip: str = "camping"
    min_items: int = 6
    must_have: list[str] = field(default_factory=lambda: ["rain jacket", "headlamp"])
    roles: tuple[str, ...] | None = None  # CoEnv keeps roles as a tuple

    name = "todo"
    typical_minutes = 3.0
    default_team = "example"  # the rule-based team: todo runs without an LM
    plan_step_guidance = "Add, check or remove checklist items for the step, then complete it."

    def __post_init__(self) -> None:
        super().__init__(roles=self.roles)
        if self.trip not in IDEAS:
            raise ValueError(f"Unknown trip {self.trip!r}; choose one of {', '.join(IDEAS)}.")

    @property
    def task_description(self) -> str:
        return (f"Together, write a packing checklist for a weekend {self.trip} trip with at "
                f"least {self.min_items} items that the whole team agrees on.")

    def hidden_information(self) -> str:
        """What only the human side knows: the items it insists on."""
        return "You will not go without: " + ", ".join(self.must_have) + "."

    def hidden_facts(self) -> HiddenFacts:
        """The items the person insists on."""
        return HiddenFacts(required=tuple(self.must_have))

    @classmethod
    def instances(cls, protocol: str = DEFAULT_PROTOCOL) -> list[dict[str, Any]]:
        return [
            {"trip": "camping", "min_items": 6, "must_have": ["rain jacket", "headlamp"]},
            {"trip": "beach", "min_items": 5, "must_have": ["sunscreen", "hat"]},
            {"trip": "city", "min_items": 4, "must_have": ["charger"]},
        ]

    def env_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"trip": self.trip, "min_items": self.min_items,
                                "must_have": list(self.must_have)}
        if self.roles is not None:  # replay must admit the same roles, no others
            args["roles"] = list(self.roles)
        return args

    def _reset(self, seed: int | None) -> None:
        self.items: list[Item] = []
        self.next_id = 1
        self.search_results: dict[str, list[str]] = {}

    def public_components(self) -> list[Component]:
        items = [{"id": i.id, "text": i.text, "done": i.done, "added_by": i.added_by}
                 for i in self.items]
        return [Component(name="checklist", title="Packing checklist",
                          render_type=RenderType.CHECKLIST, content=items)]

    def private_components(self, role: str) -> list[Component]:
        return [Component(name="ideas", title="Idea search", render_type=RenderType.SEARCH_RESULTS,
                          content=self.search_results.get(role, []))]

    def outcome(self) -> list[str]:
        return [item.text for item in self.items]

    def evaluate(self) -> dict[str, float]:
        listed = {item.text.lower() for item in self.items}
        must = [m for m in self.must_have if m.lower() in listed]
        coverage = len(must) / len(self.must_have) if self.must_have else 1.0
        size = min(len(self.items), self.min_items) / self.min_items
        return {"must_have_coverage": coverage, "size": size, "performance": (coverage + size) / 2}

    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        """Which must-have items made the list, how long it is against the brief, and how many
        items are ticked off, from the checklist as it ended."""
        listed = {item.text.lower() for item in self.items}
        kept = [m for m in self.must_have if m.lower() in listed]
        missing = [m for m in self.must_have if m.lower() not in listed]
        done = sum(item.done for item in self.items)
        count = len(self.items)
        length = (f"The list has {count} item{'s' if count != 1 else ''}; the brief asks for at "
                  f"least {self.min_items}.")
        explained = {
            "performance": ("How well the checklist does the brief: the mean of the two scores "
                            "below", [length, f"{done} of {count} items are ticked off as packed."
                                      if count else "No item is ticked off: the list is empty."]),
            "must_have_coverage": (
                "Share of the items the person insisted on that made the list",
                ([f"On the list: {', '.join(kept)}."] if kept else [])
                + ([f"Missing: {', '.join(missing)}."] if missing else [])),
            "size": (f"How close the list came to the {self.min_items} items asked for",
                     [length]),
        }
        return [ScoreReport(name=name, value=scores[name], label=label, reasons=reasons)
                for name, (label, reasons) in explained.items() if name in scores]

    def _item(self, item_id: int) -> Item:
        for item in self.items:
            if item.id == item_id:
                return item
        ids = ", ".join(str(i.id) for i in self.items) or "none yet"
        raise ActionError(f"No item {item_id}; item ids are: {ids}.")

    @action("Add an item to the shared checklist.", text="The item, e.g. \"tent\"")
    def add_item(self, role: str, text: str) -> None:
        text = text.strip()
        if not text:
            raise ActionError("ADD_ITEM needs a non-empty text.")
        if text.lower() in (item.text.lower() for item in self.items):
            raise ActionError(f"{text!r} is already on the list.")
        self.items.append(Item(id=self.next_id, text=text, added_by=role))
        self.next_id += 1

    @action("Tick an item off as packed.", item_id="The item's id")
    def check_item(self, role: str, item_id: int) -> None:
        self._item(item_id).done = True

    @action("Remove an item from the shared checklist.", item_id="The item's id")
    def remove_item(self, role: str, item_id: int) -> None:
        self.items.remove(self._item(item_id))

    @action("Look up packing ideas for a kind of trip (camping, beach, city). Only you see them.",
            private=True, trip="The kind of trip")
    def search_ideas(self, role: str, trip: str) -> None:
        key = trip.strip().lower()
        if key not in IDEAS:
            raise ActionError(f"No ideas for {trip!r}; try one of: {', '.join(IDEAS)}.")
        self.search_results[role] = list(IDEAS[key])
