"""TravelPlanner's five hard constraints, by their official names, and its cost of a plan.

``valid_cost`` always applies; the other four give None (not applicable) when the instance does
not set their constraint. Each reads the first listing or restaurant the sandbox matches (see
:mod:`~cogym_lab.envs.travel_planning.sandbox`); entries the sandbox does not know add nothing
and break no rule. Where the official code raises, the function raises
:class:`~cogym_lab.envs.travel_planning.trip.Unreadable`.

The cost (:func:`total_cost`), day by day over the graded days: a flight's price (the first row
with its number, whatever its route) times the people; a drive's cost per vehicle times
``ceil(people / 5)`` cars or ``ceil(people / 4)`` taxis; each meal's average cost times the
people; each day that names an accommodation (the last day too) one night at its price times
``ceil(people / maximum occupancy)`` rooms. Attractions are free.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from cogym_lab.envs.travel_planning.commonsense import MEALS
from cogym_lab.envs.travel_planning.field_reading import (
    flight_number_in,
    is_filled,
    name_and_city,
    route_in,
)
from cogym_lab.envs.travel_planning.records import Accommodation
from cogym_lab.envs.travel_planning.trip import Trip, Unreadable, Verdict, quote

__all__ = ["HARD_CONSTRAINTS", "PlanCost", "total_cost"]

PEOPLE_PER_CAR = 5
PEOPLE_PER_TAXI = 4
#: The house rule asked for, and the notice in a listing's rules that forbids it.
HOUSE_RULE_NOTICES = {"smoking": "No smoking", "parties": "No parties",
                      "children under 10": "No children under 10", "visitors": "No visitors",
                      "pets": "No pets"}
#: The room type asked for, and whether a listing's type satisfies it.
ROOM_TYPE_RULES: dict[str, Callable[[str], bool]] = {
    "not shared room": lambda kind: kind != "Shared room",
    "shared room": lambda kind: kind == "Shared room",
    "private room": lambda kind: kind == "Private room",
    "entire room": lambda kind: kind == "Entire home/apt",
}


def _stays(trip: Trip) -> Iterator[tuple[int, str, Accommodation]]:
    """``(day, entry, first matching listing)`` of each day naming a listing the sandbox has,
    day by day (a check may stop early, as the official one does)."""
    for index, _day in trip.graded:
        value = trip.field(index, "accommodation")
        if is_filled(value):
            listings = trip.sandbox.accommodations(*name_and_city(value))
            if listings:
                yield index + 1, value, listings[0]


def valid_cuisine(trip: Trip) -> Verdict:
    """Every asked cuisine is served by a restaurant the plan eats at outside the origin."""
    asked = trip.cuisines
    if not asked:
        return Verdict(None, "No cuisine was asked for.")
    served: dict[str, str] = {}
    skipped: list[str] = []
    for index, day in trip.graded:
        for position, meal in enumerate(MEALS):
            value = trip.field(index, meal)
            if not is_filled(value):
                continue
            name, city = name_and_city(value)
            if city == trip.origin:
                if trip.rules.cuisine_skips_only_origin_meal:
                    continue
                later = [m for m in MEALS[position + 1:] if is_filled(day.get(m))]
                skipped += [f"day {index + 1} {m}" for m in later]
                break  # the official code moves on to the next day
            restaurants = trip.sandbox.restaurants(name, city)
            if restaurants:
                for cuisine in asked:
                    if any(cuisine in kind for kind in restaurants[0].cuisines):
                        served.setdefault(cuisine, restaurants[0].name)
    note = (f" Not read, after a meal in the origin: {', '.join(skipped)}." if skipped else "")
    missing = [cuisine for cuisine in asked if cuisine not in served]
    if len(served) != len(asked):
        return Verdict(False, f"No restaurant of the plan outside {trip.origin} serves "
                              f"{', '.join(missing)}.{note}")
    found = "; ".join(f"{cuisine} at {served[cuisine]}" for cuisine in asked)
    return Verdict(True, f"Every asked cuisine is served: {found}.{note}")


def valid_room_rule(trip: Trip) -> Verdict:
    """No accommodation's house rules forbid what the trip needs."""
    rule = trip.constraint("house rule")
    if rule is None:
        return Verdict(None, "No house rule was asked for.")
    notice = HOUSE_RULE_NOTICES.get(rule)
    for day, entry, listing in _stays(trip):
        if notice is not None and notice in listing.house_rules:
            return Verdict(False, f"The trip needs {rule} allowed, but day {day} "
                                  f"{quote(entry)} says {listing.house_rules!r}.")
    if notice is None:
        return Verdict(True, f"TravelPlanner knows no house rule {rule!r}: nothing to check.")
    return Verdict(True, f"No accommodation of the plan forbids {rule}.")


def valid_transportation(trip: Trip) -> Verdict:
    """"no flight": no Transportation line says ``Flight``; "no self-driving": none says
    ``Self-driving`` (both case-sensitive)."""
    rule = trip.constraint("transportation")
    if rule is None:
        return Verdict(None, "No transportation constraint was asked for.")
    banned = {"no flight": "Flight", "no self-driving": "Self-driving"}.get(rule)
    for index, _day in trip.graded:
        value = trip.field(index, "transportation")
        if is_filled(value) and banned is not None and banned in value:
            return Verdict(False, f"The trip asks for {rule}, but day {index + 1} has "
                                  f"{quote(value)}.")
    return Verdict(True, f"The plan keeps to {rule}.")


def valid_room_type(trip: Trip) -> Verdict:
    """Every accommodation is of the room type asked for."""
    asked = trip.constraint("room type")
    if asked is None:
        return Verdict(None, "No room type was asked for.")
    accepts = ROOM_TYPE_RULES.get(asked)
    for day, entry, listing in _stays(trip):
        if accepts is not None and not accepts(listing.room_type):
            return Verdict(False, f"The trip asks for {asked}, but day {day} {quote(entry)} is "
                                  f"{listing.room_type!r}.")
    return Verdict(True, f"Every accommodation of the plan is {asked}.")


@dataclass
class PlanCost:
    """What the plan costs, by part, and what could not be priced."""

    parts: dict[str, float] = field(default_factory=lambda: {
        "transportation": 0.0, "meals": 0.0, "accommodation": 0.0})
    unpriced: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(self.parts.values())


def _transport_cost(trip: Trip, index: int, value: str, cost: PlanCost) -> None:
    people = trip.instance.people
    start, end = route_in(value)
    if start is None or end is None:
        start, end = route_in(trip.field(index, "current_city"))
    if start is None or end is None:
        cost.unpriced.append(f"day {index + 1} transportation (no route)")
        return
    lowered = value.lower()
    if "flight number" in lowered:
        number = flight_number_in(value)
        if number is None:
            if trip.rules.never_raises:
                cost.unpriced.append(f"day {index + 1} flight (no number)")
                return
            raise Unreadable(f"day {index + 1}: {quote(value)} has no 'Flight Number: ' label")
        flight = trip.sandbox.first_flight(number)
        if flight is None:
            cost.unpriced.append(f"flight {number!r} (day {index + 1})")
        else:
            cost.parts["transportation"] += flight.price * people
    elif "self-driving" in lowered or "taxi" in lowered:
        mode = "self-driving" if "self-driving" in lowered else "taxi"
        per_vehicle = trip.sandbox.drive_cost(start, end, mode)
        if per_vehicle is None:
            if not trip.rules.never_raises:
                raise Unreadable(f"day {index + 1}: no {mode} route from {start} to {end}, and "
                                 f"the official cost multiplies its missing cost")
            cost.unpriced.append(f"day {index + 1} {mode} (no route)")
            return
        seats = PEOPLE_PER_CAR if mode == "self-driving" else PEOPLE_PER_TAXI
        cost.parts["transportation"] += per_vehicle * math.ceil(people / seats)


def total_cost(trip: Trip) -> PlanCost:
    """The plan's cost as TravelPlanner computes it (see the module docstring)."""
    cost = PlanCost()
    people = trip.instance.people
    for index, _day in trip.graded:
        value = trip.field(index, "transportation")
        if is_filled(value):
            _transport_cost(trip, index, value, cost)
        for meal in MEALS:
            value = trip.field(index, meal)
            if is_filled(value):
                restaurants = trip.sandbox.restaurants(*name_and_city(value))
                if restaurants:
                    cost.parts["meals"] += restaurants[0].average_cost * people
                else:
                    cost.unpriced.append(f"{quote(value, 40)} (day {index + 1} {meal})")
        value = trip.field(index, "accommodation")
        if is_filled(value):
            listings = trip.sandbox.accommodations(*name_and_city(value))
            if listings:
                rooms = math.ceil(people / listings[0].maximum_occupancy)
                cost.parts["accommodation"] += listings[0].price * rooms
            else:
                cost.unpriced.append(f"{quote(value, 40)} (day {index + 1} accommodation)")
    return cost


def _money(value: float) -> str:
    return f"${value:,.0f}" if float(value).is_integer() else f"${value:,.2f}"


def valid_cost(trip: Trip) -> Verdict:
    """The plan's total cost is at most the budget."""
    cost = total_cost(trip)
    budget = trip.instance.budget
    parts = ", ".join(f"{name} {_money(value)}" for name, value in cost.parts.items())
    shown = cost.unpriced[:4] + ([f"{len(cost.unpriced) - 4} more"]
                                 if len(cost.unpriced) > 4 else [])
    note = f" Not priced: {'; '.join(shown)}." if cost.unpriced else ""
    within = cost.total <= budget
    return Verdict(within, f"Total cost {_money(cost.total)} ({parts}) for "
                           f"{trip.instance.people} people is {'within' if within else 'over'} "
                           f"the budget {_money(budget)}.{note}")


#: The constraints in the official order.
HARD_CONSTRAINTS: dict[str, Callable[[Trip], Verdict]] = {
    "valid_cuisine": valid_cuisine,
    "valid_room_rule": valid_room_rule,
    "valid_transportation": valid_transportation,
    "valid_room_type": valid_room_type,
    "valid_cost": valid_cost,
}
