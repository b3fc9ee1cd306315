"""TravelPlanner's eight commonsense checks, by their official names.

Each function reads a :class:`~cogym_lab.envs.travel_planning.trip.Trip` and returns a
:class:`~cogym_lab.envs.travel_planning.trip.Verdict` (True or False; these checks always
apply). Like the official code, a check stops at the first failure and reports that one. Where
the official code raises, the check raises
:class:`~cogym_lab.envs.travel_planning.trip.Unreadable`, and the grader decides by mode what
that means. The switches of :mod:`~cogym_lab.envs.travel_planning.grading_rules` say where the
corrected mode departs; the rest is the official behaviour, quirks included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import groupby
from typing import Any

from cogym_lab.envs.travel_planning.field_reading import (
    attraction_entries,
    before_parenthesis,
    flight_number_in,
    is_filled,
    name_and_city,
    route_in,
    transport_kind,
)
from cogym_lab.envs.travel_planning.trip import Trip, Unreadable, Verdict, quote

__all__ = ["COMMONSENSE_CHECKS", "MEALS", "PLACEHOLDER_DAY"]

MEALS = ("breakfast", "lunch", "dinner")
#: What TravelPlanner's planner writes in days it leaves empty; such a day does not count.
PLACEHOLDER_DAY = "You don't need to fill in the information for this or later days."


# -- Reasonable City Route -------------------------------------------------------------------

def _route_cities(trip: Trip) -> tuple[list[str], Verdict | None]:
    """The cities of the route, day by day; a failing verdict if day 1 leaves from elsewhere."""
    cities: list[str] = []
    for index, _day in trip.graded:
        value = trip.field(index, "current_city")
        if "from" in value:
            start, end = trip.route(index, value)
            if index == 0 and start != trip.origin:
                return cities, Verdict(False, f"Day 1 leaves from {start!r}, not from the "
                                              f"origin {trip.origin}.")
            cities += [start, end]
        else:
            cities.append(before_parenthesis(value))
    return cities, None


def _sequence_problem(cities: list[str]) -> str | None:
    """Why the route is not a sequence of stays, each city in one piece, or None."""
    if len(cities) < 3:
        return f"the route {' -> '.join(cities)} has fewer than three stops"
    last = len(cities) - 1
    seen: set[str] = set()
    start = 0
    for city, run in groupby(cities):
        length = len(list(run))
        if city in seen and start not in (0, last):
            return f"the route comes back to {city} after leaving it"
        if length == 1 and 0 < start < last:
            return (f"{city} appears once in the middle of the route (a day does not start "
                    f"where the day before ended)")
        seen.add(city)
        start += length
    return None


def is_reasonable_visiting_city(trip: Trip) -> Verdict:
    """The route starts in the origin, comes back to it, stays in each city in one piece, and
    its cities are sandbox cities (of the destination state on 5- and 7-day trips)."""
    cities, failed = _route_cities(trip)
    if failed is not None:
        return failed
    route = " -> ".join(city for city, _ in groupby(cities))
    if trip.rules.route_ends_and_destination and cities[0] != trip.origin:
        return Verdict(False, f"The route starts in {cities[0]!r}, not in the origin "
                              f"{trip.origin}.")
    if cities[0] != cities[-1]:
        return Verdict(False, f"The route {route} does not come back to {cities[0]}.")
    problem = _sequence_problem(cities)
    if problem:
        return Verdict(False, f"The city sequence is invalid: {problem}.")
    destination = trip.instance.destination
    for position, city in enumerate(cities):
        state = trip.sandbox.state_of(city)
        if state is None:
            return Verdict(False, f"{city!r} is not a city of the sandbox.")
        if position in (0, len(cities) - 1):
            continue
        if trip.instance.days > 3 and state != destination:
            return Verdict(False, f"{city} is in {state}, not in {destination}.")
        if trip.instance.days <= 3 and trip.rules.route_ends_and_destination \
                and city != destination:
            return Verdict(False, f"{city} is not the destination {destination}.")
    note = ("" if trip.rules.route_ends_and_destination or trip.instance.days > 3 else
            " (TravelPlanner does not check the destination of a 3-day trip)")
    return Verdict(True, f"The route {route} is a closed loop of stays{note}.")


# -- Diverse Restaurants, Diverse Attractions ------------------------------------------------

def is_valid_restaurants(trip: Trip) -> Verdict:
    """No restaurant entry (the whole ``name, city`` text) serves two meals."""
    seen: dict[str, str] = {}
    for index, day in trip.graded:
        for meal in MEALS:
            value = day.get(meal)
            if not is_filled(value):
                continue
            if value in seen:
                return Verdict(False, f"Day {index + 1} {meal} {quote(value)} is the same "
                                      f"restaurant as day {seen[value]}.")
            seen[value] = f"{index + 1} {meal}"
    return Verdict(True, f"{len(seen)} meals, no restaurant twice.")


def _attractions(trip: Trip, value: str) -> list[str]:
    return attraction_entries(value, every=trip.rules.every_attraction_read)


def is_valid_attractions(trip: Trip) -> Verdict:
    """No attraction entry is visited twice."""
    seen: dict[str, int] = {}
    for index, day in trip.graded:
        value = day.get("attraction")
        if not is_filled(value):
            continue
        for entry in _attractions(trip, value):
            if entry in seen:
                return Verdict(False, f"Attraction {quote(entry)} on day {index + 1} was "
                                      f"already visited on day {seen[entry]}.")
            seen[entry] = index + 1
    return Verdict(True, f"{len(seen)} attraction visits, none repeated.")


# -- Minimum Nights Stay -----------------------------------------------------------------------

def is_valid_accommodation(trip: Trip) -> Verdict:
    """Each stay (consecutive days naming one listing) lasts at least the listing's minimum
    nights, when the name matches exactly one listing of the city."""
    stays: list[str] = []
    for index, day in trip.graded:
        if "accommodation" not in day:
            return Verdict(False, f"Day {index + 1} has no accommodation field.")
        stays.append(day["accommodation"])
    for value, run in groupby(stays):
        days = len(list(run))
        if value in ("-", ""):
            continue
        listings = trip.sandbox.accommodations(*name_and_city(value))
        if len(listings) == 1 and days < listings[0].minimum_nights:
            return Verdict(False, f"{quote(value)} asks for at least "
                                  f"{listings[0].minimum_nights} nights, but the plan stays "
                                  f"{days}.")
    return Verdict(True, "Every stay lasts at least its listing's minimum nights.")


# -- Non-conflicting Transportation ------------------------------------------------------------

def is_valid_transportation(trip: Trip) -> Verdict:
    """Day 1 has transportation, and self-driving is not mixed with flights or taxis."""
    first = trip.field(0, "transportation")
    if not is_filled(first):
        return Verdict(False, "Day 1 has no transportation.")
    kinds = {transport_kind(first)}
    for _index, day in trip.graded:
        value = day.get("transportation")
        if is_filled(value):
            kinds.add(transport_kind(value))
    if "self-driving" in kinds and kinds & {"flight", "taxi"}:
        other = " and ".join(sorted(k for k in kinds if k in ("flight", "taxi")))
        return Verdict(False, f"Self-driving is mixed with {other}: a car driven out must be "
                              f"driven back.")
    used = ", ".join(sorted(k for k in kinds if k)) or "none named"
    return Verdict(True, f"Transportation used: {used}; no conflict.")


# -- Within Current City -----------------------------------------------------------------------

def _day_cities(trip: Trip, index: int, value: str) -> list[str]:
    """The cities an entry of the day may name: both ends of a travel day; on other days the
    city, or (official) each of its letters."""
    if "from" in value:
        return list(trip.route(index, value))
    city = before_parenthesis(value)
    if trip.rules.whole_city_names:
        return [city] if city else []
    return list(city)  # the official code iterates over the characters of the name


def _names_a_city(entry: str, cities: list[str], stay_city: str | None,
                  by_letters: list[str], where: str) -> bool:
    """Whether ``entry`` contains one of ``cities``; notes an entry that passes only by a
    letter of ``stay_city`` (the official reading of a day without travel)."""
    found = any(city in entry for city in cities)
    if found and stay_city is not None and stay_city not in entry:
        by_letters.append(f"{where} {quote(entry, 40)}")
    return found


def is_valid_information_in_current_city(trip: Trip) -> Verdict:
    """Each day's transportation names the day's cities, and its meals, attractions and
    accommodation name one of them (the accommodation the day's last). Names are tested as
    substrings of the whole entry."""
    by_letters: list[str] = []  # entries passing only because single letters were compared
    for index, day in trip.graded:
        n = index + 1
        current = trip.field(index, "current_city")
        cities = _day_cities(trip, index, current)
        stay_city = None if "from" in current else before_parenthesis(current)
        transportation = day.get("transportation")
        if is_filled(transportation):
            for city in cities:
                if city not in transportation:
                    return Verdict(False, f"Day {n} transportation {quote(transportation)} "
                                          f"does not name {city!r}.")
        entries = _filled_meals(day)
        value = day.get("attraction")
        if is_filled(value):  # every piece, even a blank one, as the official code reads them
            entries += [("attraction", entry) for entry in _attractions(trip, value)]
        for what, entry in entries:
            if not _names_a_city(entry, cities, stay_city, by_letters, f"day {n} {what}"):
                return Verdict(False, f"Day {n} {what} {quote(entry)} is not in "
                                      f"{_shown(cities)}.")
        value = day.get("accommodation")
        if is_filled(value):
            if not cities:
                raise Unreadable(f"day {n} names no current city to stay in")
            if cities[-1] not in value:
                return Verdict(False, f"Day {n} accommodation {quote(value)} is not in "
                                      f"{cities[-1]!r}, where the day ends.")
            if stay_city is not None and stay_city not in value:
                by_letters.append(f"day {n} accommodation {quote(value, 40)}")
    if by_letters:
        return Verdict(True, "Passes, but only because TravelPlanner compares single letters of "
                             "the city on days without travel: " + "; ".join(by_letters[:3])
                             + ".")
    return Verdict(True, "Every entry of each day names one of that day's cities.")


def _shown(cities: list[str]) -> str:
    return " or ".join(repr(c) for c in cities) if cities else "any named city"


# -- Within Sandbox ----------------------------------------------------------------------------

def _transport_in_sandbox(trip: Trip, index: int, value: str) -> Verdict | None:
    """A failing verdict when the day's flight or drive is not in the sandbox."""
    start, end = route_in(value)
    if start is None or end is None:
        start, end = route_in(trip.field(index, "current_city"))
    lowered = value.lower()
    n = index + 1
    if "flight number" in lowered:
        if start is None or end is None:
            raise Unreadable(f"day {n}: the route of the flight {quote(value)} cannot be read")
        start, end = before_parenthesis(start), before_parenthesis(end)
        number = flight_number_in(value)
        if number is None:
            raise Unreadable(f"day {n}: {quote(value)} has no 'Flight Number: ' label")
        if not trip.sandbox.flies(number, start, end):
            return Verdict(False, f"Day {n}: flight {number!r} from {start} to {end} is not in "
                                  f"the sandbox.")
    elif "self-driving" in lowered or "taxi" in lowered:
        mode = "self-driving" if "self-driving" in lowered else "taxi"
        start, end = (start, end) if start is not None and end is not None else ("-", "-")
        if trip.sandbox.drive_cost(start, end, mode) is None:
            return Verdict(False, f"Day {n}: no {mode} route from {start} to {end} in the "
                                  f"sandbox (none on record, or a day or more of driving).")
    return None


def _filled_meals(day: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(meal, entry)`` of the day's given meals, in order."""
    filled = []
    for meal in MEALS:
        entry = day.get(meal)
        if is_filled(entry):
            filled.append((meal, entry))
    return filled


#: A sandbox look-up: the records in a city whose name contains the name written.
_Lookup = Callable[[str, str], list[Any]]


def _named_entries(trip: Trip, day: Mapping[str, Any]) -> list[tuple[str, str, _Lookup]]:
    """``(what, entry, look-up)`` of the day's meals, attractions and accommodation, in the
    official order."""
    entries: list[tuple[str, str, _Lookup]] = [
        (meal, entry, trip.sandbox.restaurants) for meal, entry in _filled_meals(day)]
    value = day.get("attraction")
    if is_filled(value):  # every piece, even a blank one, as the official code reads them
        entries += [("attraction", entry, trip.sandbox.attractions)
                    for entry in _attractions(trip, value)]
    accommodation = day.get("accommodation")
    if is_filled(accommodation):
        # The Co-Gym release's evaluator looks the accommodation up among the attractions.
        lookup = trip.sandbox.attractions if trip.rules.accommodations_in_attraction_table \
            else trip.sandbox.accommodations
        entries.append(("accommodation", accommodation, lookup))
    return entries


def is_valid_information_in_sandbox(trip: Trip) -> Verdict:
    """Every flight (number and route), drive, restaurant, attraction and accommodation is in
    the sandbox: a stored name in the named city CONTAINS the name written."""
    for index, day in trip.graded:
        transportation = trip.field(index, "transportation")
        if is_filled(transportation):
            failed = _transport_in_sandbox(trip, index, transportation)
            if failed is not None:
                return failed
        for what, entry, lookup in _named_entries(trip, day):
            name, city = name_and_city(entry)
            if not lookup(name, city):
                table = "attraction (the Co-Gym release looks accommodations up there)" \
                    if what == "accommodation" and trip.rules.accommodations_in_attraction_table \
                    else _TABLES[what]
                return Verdict(False, f"Day {index + 1} {what} {quote(entry)}: no "
                                      f"{table} in {city!r} has a name containing "
                                      f"{name!r} (case counts).")
    table = trip.sandbox.db.accommodation_table
    return Verdict(True, f"Every flight, drive, restaurant, attraction and accommodation is in "
                         f"the sandbox ({table} accommodation table).")


_TABLES = {"breakfast": "restaurant", "lunch": "restaurant", "dinner": "restaurant",
           "attraction": "attraction", "accommodation": "listing"}


# -- Complete Information ----------------------------------------------------------------------

def _visiting_city_problem(trip: Trip) -> str | None:
    cities: set[str] = set()
    for index, _day in trip.graded:
        value = trip.field(index, "current_city")
        if "from" in value:
            start, end = trip.route(index, value)
            if index == 0 and start != trip.origin:
                return f"day 1 leaves from {start!r}, not from the origin {trip.origin}"
            cities.update((start, end))
        else:
            cities.add(before_parenthesis(value))
    cities.discard(trip.origin)
    wanted = trip.instance.visiting_city_number
    if len(cities) != wanted:
        named = ", ".join(sorted(cities)) or "none"
        return f"the plan visits {len(cities)} cities ({named}), the trip asks for {wanted}"
    return None


_REQUIRED = ("transportation", "breakfast", "lunch", "dinner", "attraction", "accommodation")


def _day_problem(trip: Trip, index: int, day: dict) -> str | None:
    n = index + 1
    for key in _REQUIRED:
        if key not in day:
            return f"day {n} has no {key} field"
    current = trip.field(index, "current_city")
    # the official tests differ in their spaces ("from ", "to ", " to "): kept as they are
    if ("from " in current or "to " in current) and day["transportation"] in ("", "-"):
        return f"day {n} travels but has no transportation"
    if "from " not in current and " to " not in current and day["attraction"] in ("", "-"):
        return f"day {n} stays in {current!r} with no attraction"
    if index != trip.instance.days - 1 and day["accommodation"] in ("", "-"):
        return f"day {n} has no accommodation"
    if "from " not in current and any(day[meal] in ("", "-") for meal in MEALS):
        return f"day {n} stays in {current!r} without all three meals"
    return None


def is_not_absent(trip: Trip) -> Verdict:
    """The plan has the trip's number of days and visiting cities; every day has every field;
    travel days have transportation; days without travel have an attraction and three meals;
    every day but the last has an accommodation; and at least half of 6 fields a day are given
    (every given field of a day object counts, its day number too)."""
    days = sum(1 for index, day in trip.graded
               if day != {} and trip.field(index, "current_city") != PLACEHOLDER_DAY)
    if days != trip.instance.days:
        return Verdict(False, f"The plan has {days} days; the trip has {trip.instance.days}.")
    problem = _visiting_city_problem(trip)
    if problem:
        return Verdict(False, problem[0].upper() + problem[1:] + ".")
    given = 0
    for index, day in trip.graded:
        problem = _day_problem(trip, index, dict(day))
        if problem:
            return Verdict(False, problem[0].upper() + problem[1:] + ".")
        given += sum(1 for value in day.values() if value and value != "-")
    needed = 6 * trip.instance.days
    if given / needed < 0.5:
        return Verdict(False, f"Only {given} of {needed} pieces of information are given.")
    return Verdict(True, f"{days} days, {trip.instance.visiting_city_number} visiting "
                         f"{'city' if trip.instance.visiting_city_number == 1 else 'cities'}, "
                         f"every needed field given ({given} of {needed}).")


#: The checks in the official order.
COMMONSENSE_CHECKS: dict[str, Callable[[Trip], Verdict]] = {
    "is_reasonable_visiting_city": is_reasonable_visiting_city,
    "is_valid_restaurants": is_valid_restaurants,
    "is_valid_attractions": is_valid_attractions,
    "is_valid_accommodation": is_valid_accommodation,
    "is_valid_transportation": is_valid_transportation,
    "is_valid_information_in_current_city": is_valid_information_in_current_city,
    "is_valid_information_in_sandbox": is_valid_information_in_sandbox,
    "is_not_absent": is_not_absent,
}
