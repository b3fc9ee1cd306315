"""Grading a travel plan: TravelPlanner's commonsense checks and hard constraints.

:func:`grade_plan` is deterministic and fast (no LM, a few dictionary look-ups per plan entry).
Every check gives a :class:`Verdict`: ``passed`` True or False, or None when it does not apply,
and a ``reason`` that says concretely what failed (or what was checked).

Commonsense checks (always applicable):

- ``reasonable_city_route``: day 1 starts in the origin and the last day ends there; each day starts
  where the day before ended; every city visited in between is the destination (or a city of the
  destination state), never the origin; each city is one contiguous stay (no coming back to a city
  left earlier); and the number of distinct destination cities is ``visiting_city_number``.
- ``valid_restaurants``: no restaurant (name and city) serves two meals of the trip.
- ``valid_attractions``: no attraction is visited twice.
- ``valid_accommodation``: every accommodation is in the accommodations table, and each stay
  (consecutive nights in one listing) lasts at least the listing's minimum nights. Nights are the
  days before the last: the last day is the day home, so its accommodation, if named, is no night.
- ``valid_transportation``: self-driving is not mixed with flights or taxis on one trip.
- ``information_in_current_city``: each meal, attraction and accommodation of a day is in one of
  the day's cities (the accommodation in the city where the day ends), and the day's flight or
  drive goes between the day's cities. An entry whose city is neither written nor known from the
  database is left to ``information_in_sandbox``.
- ``information_in_sandbox``: every flight (by number, flying on the day's date, on the route the
  Transportation line states, or else the day's route), drive or taxi route, restaurant,
  attraction and accommodation is in the database. "Day n" is the trip's n-th date (a day
  numbered outside the trip takes the date of its position in the plan).
- ``not_absent``: the plan has exactly ``instance.days`` days, every day that changes city has
  transportation, every day but the last has an accommodation, and at least half of the
  meal and attraction slots (breakfast, lunch, dinner, attractions: four a day) are filled.

Hard constraints (``budget`` always applies; the others only when the instance sets them):

- ``budget``: the plan's total cost is at most ``instance.budget``. Flights cost price x people;
  a drive the route cost x ceil(people / 5) cars; a taxi the route cost x ceil(people / 4) cabs;
  each meal its average cost x people; each night its listing's price x ceil(people / maximum
  occupancy) rooms; attractions are free. Entries not in the database add nothing (and are named).
- ``room_type``: every accommodation has the asked room type ("not shared room": any but shared).
- ``house_rule``: no accommodation's house rules say "No <rule>".
  Both look at every accommodation the plan names and the database knows (the last day's too,
  if one is named); a plan with none passes them vacuously (``not_absent`` fails it instead).
- ``cuisine``: each asked cuisine is served by a restaurant the plan uses in a destination city.
- ``transportation``: "no flight" means no flight; "no self-driving" means no self-driving.

Names are matched to the database ignoring case and spacing (and, within the named city, markdown
marks such as ``*``). An entry's city is the one written after its last comma; an entry written
without a city is looked up in the day's cities. The pass rates are passed / applicable, and
``performance`` is their mean. A plan with no day, or only blank days, is not delivered: it fails
every applicable check and scores 0. Days left blank inside a plan are kept (and counted against
``not_absent`` and the route).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogym_lab.envs.travel_planning.plan import DayPlan, ParsedPlan, is_none, parse_plan
from cogym_lab.envs.travel_planning.records import (
    Accommodation,
    Flight,
    Restaurant,
    Route,
    TravelInstance,
)

if TYPE_CHECKING:
    from cogym_lab.envs.travel_planning.database import TravelDatabase
    from cogym_lab.lm import LM

__all__ = ["COMMONSENSE", "HARD", "Grade", "Verdict", "grade_plan", "grade_text"]

COMMONSENSE = ("reasonable_city_route", "valid_restaurants", "valid_attractions",
               "valid_accommodation", "valid_transportation", "information_in_current_city",
               "information_in_sandbox", "not_absent")
HARD = ("budget", "room_type", "house_rule", "cuisine", "transportation")

ROOM_TYPES = {"entire room": "Entire home/apt", "private room": "Private room",
              "shared room": "Shared room"}
HOUSE_RULES = ("smoking", "parties", "children under 10", "visitors", "pets")
PEOPLE_PER_CAR = 5
PEOPLE_PER_TAXI = 4


@dataclass
class Verdict:
    passed: bool | None  # None: the check does not apply
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason}


def _rate(verdicts: dict[str, Verdict]) -> float:
    applicable = [v for v in verdicts.values() if v.passed is not None]
    return sum(1 for v in applicable if v.passed) / len(applicable) if applicable else 0.0


@dataclass
class Grade:
    """Every check's verdict for one plan, and the rates built from them."""

    commonsense: dict[str, Verdict]
    hard: dict[str, Verdict]
    parser: str = "structured"  # which parser produced the days: "structured" or "lm"
    delivered: bool = True  # the plan has at least one day
    total_cost: float | None = None
    problems: list[str] = field(default_factory=list)  # what the parser could not read

    @property
    def commonsense_pass_rate(self) -> float:
        return _rate(self.commonsense)

    @property
    def hard_pass_rate(self) -> float:
        return _rate(self.hard)

    @property
    def performance(self) -> float:
        if not self.delivered:
            return 0.0
        return (self.commonsense_pass_rate + self.hard_pass_rate) / 2

    @property
    def failed(self) -> set[str]:
        """The names of the checks that failed."""
        return {name for name, v in (*self.commonsense.items(), *self.hard.items())
                if v.passed is False}

    def to_dict(self) -> dict[str, Any]:
        return {"performance": self.performance,
                "commonsense_pass_rate": self.commonsense_pass_rate,
                "hard_pass_rate": self.hard_pass_rate,
                "delivered": self.delivered, "parser": self.parser,
                "total_cost": self.total_cost,
                "commonsense": {k: v.to_dict() for k, v in self.commonsense.items()},
                "hard": {k: v.to_dict() for k, v in self.hard.items()},
                "problems": list(self.problems)}


# -- helpers ---------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def _key(text: str | None) -> str:
    """How names and cities are compared: case and spacing do not matter."""
    return _SPACE.sub(" ", text or "").strip().casefold()


def _loose(name: str) -> str:
    """A name compared without markdown-like marks (a few listings start with ``*``)."""
    return _key(re.sub(r"[*_`~]", "", name))


def _money(value: float) -> str:
    return f"${value:,.0f}" if float(value).is_integer() else f"${value:,.2f}"


def _join(items: Sequence[str], limit: int = 4) -> str:
    items = list(items)
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def _cuisines_asked(value: Any) -> list[str]:
    """The cuisines a constraint asks for: a list, or a string like "Chinese, Indian"."""
    if value is None:
        return []
    if isinstance(value, str):
        parts = value.strip().strip("[]").split(",")
    else:
        parts = [str(v) for v in value]
    return [p.strip().strip("'\"").strip() for p in parts if p.strip().strip("'\"").strip()]


@dataclass
class _Entry:
    """A named place of one day, with its database record when there is one."""

    what: str  # "lunch", "attraction", "accommodation" ...
    name: str
    city: str | None  # as written
    record: Any

    @property
    def label(self) -> str:
        return f"{self.name}, {self.city}" if self.city else self.name

    @property
    def known_city(self) -> str | None:
        """The city as written, or else the database's."""
        return self.city or (self.record.city if self.record is not None else None)


@dataclass
class _Transport:
    mode: str | None
    number: str | None
    route: tuple[str, str] | None  # as the line states it, or else the day's route
    stated: bool  # the route came from the Transportation line
    flight: Flight | None = None
    drive: Route | None = None


@dataclass
class _Day:
    plan: DayPlan
    index: int  # position in the plan, 0-based
    date: str | None
    cities: list[str]
    meals: list[_Entry]
    attractions: list[_Entry]
    accommodation: _Entry | None
    transport: _Transport

    @property
    def n(self) -> int:
        return self.plan.day


class _Trip:
    """The plan with every entry looked up once."""

    def __init__(self, days: list[DayPlan], instance: TravelInstance,
                 db: TravelDatabase) -> None:
        self.instance = instance
        self.db = db
        self.origin = instance.origin
        self.destinations = self._destination_cities()
        self.days = [self._day(i, d) for i, d in enumerate(days)]

    def _destination_cities(self) -> set[str]:
        dest = self.instance.destination
        as_state = self.instance.visiting_city_number > 1 or (
            not self.db.is_city(dest) and self.db.is_state(dest))
        if as_state:
            return {_key(c) for c in self.db.cities(dest)}
        return {_key(dest)}

    @property
    def destination_is_state(self) -> bool:
        return self.destinations != {_key(self.instance.destination)}

    # look-ups ----------------------------------------------------------------------------------

    def _lookup(self, kind: str, name: str, city: str | None) -> Any:
        record = getattr(self.db, kind)(name, city)
        if record is None and city:  # a name written without a "*" or "_" the data has
            wanted = _loose(name)
            for candidate in getattr(self.db, kind + "s")(city) or ():
                if _loose(candidate.name) == wanted:
                    return candidate
        return record

    def _flight(self, number: str, date: str | None) -> Flight | None:
        """The flight with that number, on ``date`` if it flies then (a number can fly on
        several dates), else on any date."""
        if date is not None:
            try:
                found = self.db.flight(number, date)
            except TypeError:  # a database whose look-up takes the number only
                found = None
            if found is not None:
                return found
        return self.db.flight(number)

    def _resolve(self, kind: str, what: str, name: str, city: str | None,
                 day_cities: list[str]) -> _Entry:
        if city:
            record = self._lookup(kind, name, city)
        else:
            record = next((r for c in day_cities if (r := self._lookup(kind, name, c))),
                          None) or getattr(self.db, kind)(name)
        return _Entry(what, name, city, record)

    def _day(self, index: int, plan: DayPlan) -> _Day:
        cities = plan.cities
        meals = [self._resolve("restaurant", slot, name, city, cities)
                 for slot, name, city in plan.meals()]
        attractions = [self._resolve("attraction", "attraction", name, city, cities)
                       for name, city in plan.attraction_entries()]
        stay = plan.accommodation_entry()
        accommodation = (self._resolve("accommodation", "accommodation", stay[0], stay[1],
                                       cities[-1:]) if stay else None)
        mode = plan.transport_mode
        route = plan.transport_route
        stated = route is not None
        if route is None and plan.is_travel_day:
            route = (cities[0], cities[1])
        # the date of "Day n" is the trip's n-th date; a day without a usable number takes the
        # date of its position in the plan
        dates = self.instance.dates
        at = plan.day - 1 if 1 <= plan.day <= len(dates) else index
        date = dates[at] if at < len(dates) else None
        transport = _Transport(mode=mode, number=plan.flight_number, route=route, stated=stated)
        if mode == "flight" and transport.number:
            transport.flight = self._flight(transport.number, date)
        elif mode in ("self-driving", "taxi") and route:
            transport.drive = self.db.route(route[0], route[1], mode)
        return _Day(plan=plan, index=index, date=date,
                    cities=cities, meals=meals, attractions=attractions,
                    accommodation=accommodation, transport=transport)

    @property
    def nights(self) -> list[_Day]:
        """The days whose accommodation is a night of the trip: all but the last."""
        return self.days[:-1]

    def accommodations(self) -> list[tuple[_Day, Accommodation]]:
        """Every named accommodation the database knows, with its day."""
        return [(d, d.accommodation.record) for d in self.days
                if d.accommodation is not None and d.accommodation.record is not None]


# -- commonsense -----------------------------------------------------------------------------

def _reasonable_city_route(trip: _Trip) -> Verdict:
    inst = trip.instance
    origin = _key(trip.origin)
    failures: list[str] = []
    sequence: list[tuple[str, int]] = []  # each city once per stay, with the day it starts
    previous: _Day | None = None
    for day in trip.days:
        if not day.cities:
            failures.append(f"day {day.n} names no current city")
            continue
        if previous is not None and _key(day.cities[0]) != _key(previous.cities[-1]):
            failures.append(f"day {day.n} starts in {day.cities[0]}, but day {previous.n} "
                            f"ended in {previous.cities[-1]}")
        for city in day.cities:
            if not sequence or _key(sequence[-1][0]) != _key(city):
                sequence.append((city, day.n))
        previous = day
    with_city = [d for d in trip.days if d.cities]
    if with_city and _key(with_city[0].cities[0]) != origin:
        failures.append(f"day {with_city[0].n} starts in {with_city[0].cities[0]}, not in the "
                        f"origin {trip.origin}")
    if with_city and _key(with_city[-1].cities[-1]) != origin:
        failures.append(f"the last day (day {with_city[-1].n}) ends in "
                        f"{with_city[-1].cities[-1]}, not back in {trip.origin}")
    middle = list(sequence)
    if middle and _key(middle[0][0]) == origin:
        middle = middle[1:]
    if middle and _key(middle[-1][0]) == origin:
        middle = middle[:-1]
    where = (f"a city of {inst.destination}" if trip.destination_is_state
             else inst.destination)
    visited: list[str] = []
    for city, n in middle:
        if _key(city) == origin:
            failures.append(f"the trip is back in the origin {city} on day {n} before it ends")
        elif _key(city) not in trip.destinations:
            failures.append(f"{city} (day {n}) is not {where}")
        elif _key(city) in {_key(c) for c in visited}:
            failures.append(f"the trip comes back to {city} on day {n} after leaving it")
        else:
            visited.append(city)
    if len(visited) != inst.visiting_city_number:
        listed = f" ({', '.join(visited)})" if visited else ""
        failures.append(f"the plan visits {len(visited)} destination "
                        f"{'city' if len(visited) == 1 else 'cities'}{listed}; the trip asks "
                        f"for {inst.visiting_city_number}")
    if failures:
        return Verdict(False, _join(failures) + ".")
    route = " -> ".join(city for city, _ in sequence)
    return Verdict(True, f"The route {route} starts and ends in {trip.origin} and visits "
                         f"{', '.join(visited)}, one stay each.")


def _repeats(entries: list[tuple[_Day, _Entry]], noun: str) -> Verdict:
    first: dict[tuple[str, str], tuple[_Day, _Entry]] = {}
    failures = []
    for day, entry in entries:
        key = (_key(entry.name), _key(entry.known_city))
        if key in first:
            day0, entry0 = first[key]
            failures.append(f"{entry.label} is planned for day {day0.n} {entry0.what} and "
                            f"again for day {day.n} {entry.what}")
        else:
            first[key] = (day, entry)
    if failures:
        return Verdict(False, _join(failures) + ".")
    return Verdict(True, f"{len(entries)} {noun}, none repeated.")


def _valid_restaurants(trip: _Trip) -> Verdict:
    return _repeats([(d, m) for d in trip.days for m in d.meals], "meals")


def _valid_attractions(trip: _Trip) -> Verdict:
    return _repeats([(d, a) for d in trip.days for a in d.attractions], "attraction visits")


def _valid_accommodation(trip: _Trip) -> Verdict:
    failures = []
    for day in trip.days:
        stay = day.accommodation
        if stay is not None and stay.record is None:
            failures.append(f"day {day.n}: {stay.label} is not in the accommodations table")
    runs: list[tuple[Accommodation, list[_Day]]] = []
    previous: Accommodation | None = None
    for day in trip.nights:
        record = day.accommodation.record if day.accommodation else None
        if record is not None and record == previous:
            runs[-1][1].append(day)
        elif record is not None:
            runs.append((record, [day]))
        previous = record
    for record, days in runs:
        nights = len(days)
        if nights < record.minimum_nights:
            span = f"day {days[0].n}" if nights == 1 else f"days {days[0].n}-{days[-1].n}"
            failures.append(f"{record.name}, {record.city} needs at least "
                            f"{record.minimum_nights} nights, but the plan stays {nights} "
                            f"night{'s' if nights != 1 else ''} ({span})")
    if failures:
        return Verdict(False, _join(failures) + ".")
    if not runs:
        return Verdict(True, "No night in a listed accommodation to check.")
    return Verdict(True, f"{len(runs)} stay{'s' if len(runs) != 1 else ''}, each at least its "
                         f"listing's minimum nights.")


def _valid_transportation(trip: _Trip) -> Verdict:
    by_mode: dict[str, list[int]] = {}
    for day in trip.days:
        if day.transport.mode:
            by_mode.setdefault(day.transport.mode, []).append(day.n)
    if "self-driving" in by_mode:
        others = [f"{mode} on day {', '.join(map(str, days))}"
                  for mode, days in by_mode.items() if mode != "self-driving"]
        if others:
            driven = ", ".join(map(str, by_mode["self-driving"]))
            return Verdict(False, f"Self-driving (day {driven}) is mixed with "
                                  f"{' and '.join(others)}: a car driven out must be driven "
                                  f"back.")
    modes = ", ".join(sorted(by_mode)) or "none"
    return Verdict(True, f"Modes used: {modes}; no conflict.")


def _information_in_current_city(trip: _Trip) -> Verdict:
    failures = []
    for day in trip.days:
        here = {_key(c) for c in day.cities}
        shown = " / ".join(day.cities) or "no city"
        for entry in (*day.meals, *day.attractions):
            city = entry.known_city
            if city and _key(city) not in here:
                failures.append(f"day {day.n} {entry.what} {entry.name} is in {city}, not in "
                                f"{shown}")
        stay = day.accommodation
        if stay is not None and stay.known_city and day.cities \
                and _key(stay.known_city) != _key(day.cities[-1]):
            failures.append(f"day {day.n} accommodation {stay.name} is in {stay.known_city}, but "
                            f"the day ends in {day.cities[-1]}")
        t = day.transport
        ends = ((t.flight.origin, t.flight.destination) if t.flight is not None
                else t.route if t.stated else None)
        if ends is not None and t.mode:
            outside = [c for c in ends if _key(c) not in here]
            if outside:
                failures.append(f"day {day.n} {t.mode} goes from {ends[0]} to {ends[1]}, but "
                                f"the day's cities are {shown}")
    if failures:
        return Verdict(False, _join(failures) + ".")
    return Verdict(True, "Every place and trip of each day is in that day's cities.")


def _information_in_sandbox(trip: _Trip) -> Verdict:
    failures = []
    for day in trip.days:
        t = day.transport
        if t.mode == "flight":
            if not t.number:
                failures.append(f"day {day.n} names a flight but no flight number")
            elif t.flight is None:
                failures.append(f"flight {t.number} (day {day.n}) is not in the database")
            else:
                f = t.flight
                if day.date and f.date != day.date:
                    failures.append(f"flight {f.number} flies on {f.date}, but day {day.n} is "
                                    f"{day.date}")
                if t.route and (_key(f.origin), _key(f.destination)) != \
                        (_key(t.route[0]), _key(t.route[1])):
                    failures.append(f"flight {f.number} flies from {f.origin} to "
                                    f"{f.destination}, not from {t.route[0]} to {t.route[1]}")
        elif t.mode in ("self-driving", "taxi"):
            if t.route is None:
                failures.append(f"day {day.n}: the {t.mode} line names no cities to go between")
            elif t.drive is None:
                failures.append(f"no {t.mode} route from {t.route[0]} to {t.route[1]} "
                                f"(day {day.n}) in the database")
        for entry in (*day.meals, *day.attractions,
                      *([day.accommodation] if day.accommodation else [])):
            if entry.record is None:
                table = {"attraction": "attractions", "accommodation": "accommodations"}.get(
                    entry.what, "restaurants")
                failures.append(f"day {day.n} {entry.what} {entry.label} is not in the "
                                f"{table} table")
    if failures:
        return Verdict(False, _join(failures) + ".")
    return Verdict(True, "Every flight, route, restaurant, attraction and accommodation is in "
                         "the database.")


def _not_absent(trip: _Trip) -> Verdict:
    failures = []
    expected = trip.instance.days
    if len(trip.days) != expected:
        failures.append(f"the plan has {len(trip.days)} day{'s' if len(trip.days) != 1 else ''}"
                        f", the trip is {expected}")
    for day in trip.days:
        if day.plan.is_travel_day and is_none(day.plan.transportation):
            failures.append(f"day {day.n} goes from {day.cities[0]} to {day.cities[1]} with no "
                            f"transportation")
    for day in trip.nights:
        if day.accommodation is None:
            failures.append(f"day {day.n} has no accommodation")
    slots = 4 * len(trip.days)
    filled = sum(len(d.meals) + (1 if d.attractions else 0) for d in trip.days)
    if slots and filled * 2 < slots:
        failures.append(f"only {filled} of {slots} meal and attraction slots are filled")
    if failures:
        return Verdict(False, _join(failures) + ".")
    return Verdict(True, f"{len(trip.days)} days, transportation on every travel day, a place "
                         f"to stay every night, {filled} of {slots} meal and attraction slots "
                         f"filled.")


# -- hard constraints ------------------------------------------------------------------------

def _cost(trip: _Trip) -> tuple[float, dict[str, float], list[str]]:
    """Total cost, cost by part, and what could not be priced."""
    people = max(trip.instance.people, 1)
    parts = {"transport": 0.0, "meals": 0.0, "accommodation": 0.0}
    unpriced: list[str] = []
    for day in trip.days:
        t = day.transport
        if t.mode == "flight":
            if t.flight is not None:
                parts["transport"] += t.flight.price * people
            else:
                unpriced.append(f"flight {t.number or '(no number)'} (day {day.n})")
        elif t.mode in ("self-driving", "taxi"):
            if t.drive is not None:
                per = PEOPLE_PER_CAR if t.mode == "self-driving" else PEOPLE_PER_TAXI
                parts["transport"] += t.drive.cost * math.ceil(people / per)
            else:
                unpriced.append(f"{t.mode} (day {day.n})")
        for meal in day.meals:
            if meal.record is not None:
                parts["meals"] += meal.record.average_cost * people
            else:
                unpriced.append(f"{meal.label} (day {day.n} {meal.what})")
    for day in trip.nights:
        stay = day.accommodation
        if stay is None:
            continue
        if stay.record is not None:
            rooms = math.ceil(people / max(stay.record.maximum_occupancy, 1))
            parts["accommodation"] += stay.record.price * rooms
        else:
            unpriced.append(f"{stay.label} (day {day.n} accommodation)")
    return sum(parts.values()), parts, unpriced


def _budget(trip: _Trip) -> tuple[Verdict, float]:
    total, parts, unpriced = _cost(trip)
    budget = trip.instance.budget
    detail = ", ".join(f"{name} {_money(value)}" for name, value in parts.items())
    note = (f" Not in the database, so not counted: {_join(unpriced)}." if unpriced else "")
    if total > budget:
        return Verdict(False, f"Total cost {_money(total)} ({detail}) for "
                              f"{trip.instance.people} people is over the budget "
                              f"{_money(budget)} by {_money(total - budget)}.{note}"), total
    return Verdict(True, f"Total cost {_money(total)} ({detail}) for {trip.instance.people} "
                         f"people is within the budget {_money(budget)}.{note}"), total


def _constraint(trip: _Trip, name: str) -> Any:
    value = (trip.instance.local_constraint or {}).get(name)
    if isinstance(value, str) and value.strip().lower() in ("", "none", "null", "-"):
        return None
    return value


def _room_type(trip: _Trip) -> Verdict:
    asked = _constraint(trip, "room type")
    if asked is None:
        return Verdict(None, "No room type was asked for.")
    asked = _key(str(asked))
    negated = asked.startswith("not ")
    wanted = ROOM_TYPES.get(asked[4:] if negated else asked)
    if wanted is None:
        return Verdict(None, f"Unknown room type constraint {asked!r}.")
    stays = trip.accommodations()
    bad = [f"{rec.name}, {rec.city} (day {day.n}) is {rec.room_type}" for day, rec in stays
           if (rec.room_type == wanted) == negated]
    want = f"not {wanted}" if negated else wanted
    if bad:
        return Verdict(False, f"Asked for {want}: {_join(bad)}.")
    if not stays:
        return Verdict(True, f"No accommodation from the database to hold to {want}.")
    return Verdict(True, f"Every accommodation is {want}.")


def _house_rule(trip: _Trip) -> Verdict:
    asked = _constraint(trip, "house rule")
    if asked is None:
        return Verdict(None, "No house rule was asked for.")
    rule = _key(str(asked))
    forbidden = f"no {rule}"
    stays = trip.accommodations()
    bad = [f"{rec.name}, {rec.city} (day {day.n}) says {rec.house_rules!r}"
           for day, rec in stays if forbidden in _key(rec.house_rules)]
    if bad:
        return Verdict(False, f"The trip needs {rule} allowed: {_join(bad)}.")
    return Verdict(True, f"Every accommodation allows {rule}." if stays
                   else f"No accommodation from the database to check for {rule}.")


def _cuisine(trip: _Trip) -> Verdict:
    asked = _cuisines_asked(_constraint(trip, "cuisine"))
    if not asked:
        return Verdict(None, "No cuisine was asked for.")
    served: dict[str, list[str]] = {}
    for day in trip.days:
        for meal in day.meals:
            rec: Restaurant | None = meal.record
            if rec is None or _key(rec.city) not in trip.destinations:
                continue
            for cuisine in rec.cuisines:
                served.setdefault(_key(cuisine), []).append(rec.name)
    missing = [c for c in asked if _key(c) not in served]
    if missing:
        have = sorted({c for c in served}) or ["none"]
        return Verdict(False, f"No restaurant in {trip.instance.destination} serves "
                              f"{', '.join(missing)} (the plan's restaurants there serve "
                              f"{', '.join(have)}).")
    found = "; ".join(f"{c} at {served[_key(c)][0]}" for c in asked)
    return Verdict(True, f"Every asked cuisine is served: {found}.")


def _transportation(trip: _Trip) -> Verdict:
    asked = _constraint(trip, "transportation")
    if asked is None:
        return Verdict(None, "No transportation constraint was asked for.")
    rule = _key(str(asked)).replace("self driving", "self-driving")
    if rule in ("no flight", "no flights"):
        banned = "flight"
    elif rule in ("no self-driving", "no self-drive", "no driving"):
        banned = "self-driving"
    else:
        return Verdict(None, f"Unknown transportation constraint {asked!r}.")
    days = [day.n for day in trip.days if day.transport.mode == banned]
    if days:
        return Verdict(False, f"The trip asks for {rule}, but the plan uses {banned} on day "
                              f"{', '.join(map(str, days))}.")
    return Verdict(True, f"No {banned} in the plan, as asked ({rule}).")


# -- entry points ----------------------------------------------------------------------------

def _undelivered(instance: TravelInstance, parser: str, problems: list[str]) -> Grade:
    reason = "No plan was delivered."
    hard = {"budget": Verdict(False, reason)}
    for key, constraint in (("room_type", "room type"), ("house_rule", "house rule"),
                            ("cuisine", "cuisine"), ("transportation", "transportation")):
        value = (instance.local_constraint or {}).get(constraint)
        applicable = bool(_cuisines_asked(value)) if key == "cuisine" else value is not None
        hard[key] = (Verdict(False, reason) if applicable
                     else Verdict(None, f"No {constraint} constraint was asked for."))
    return Grade(commonsense={name: Verdict(False, reason) for name in COMMONSENSE}, hard=hard,
                 parser=parser, delivered=False, problems=problems)


def grade_plan(text_or_days: str | ParsedPlan | Sequence[DayPlan], instance: TravelInstance,
               db: TravelDatabase, *, parsed_with: str = "structured") -> Grade:
    """Grade a plan (its text, a parse of it, or its days) for ``instance``."""
    problems: list[str] = []
    if isinstance(text_or_days, str) or text_or_days is None:
        parsed = parse_plan(text_or_days or "")
        days, problems = parsed.days, parsed.problems
    elif isinstance(text_or_days, ParsedPlan):
        days, problems = text_or_days.days, list(text_or_days.problems)
    else:
        days = list(text_or_days)
    if all(d.is_empty() for d in days):  # no day at all, or only days left blank ("-")
        return _undelivered(instance, parsed_with, problems)
    trip = _Trip(days, instance, db)
    commonsense = {
        "reasonable_city_route": _reasonable_city_route(trip),
        "valid_restaurants": _valid_restaurants(trip),
        "valid_attractions": _valid_attractions(trip),
        "valid_accommodation": _valid_accommodation(trip),
        "valid_transportation": _valid_transportation(trip),
        "information_in_current_city": _information_in_current_city(trip),
        "information_in_sandbox": _information_in_sandbox(trip),
        "not_absent": _not_absent(trip),
    }
    budget, total = _budget(trip)
    hard = {"budget": budget, "room_type": _room_type(trip), "house_rule": _house_rule(trip),
            "cuisine": _cuisine(trip), "transportation": _transportation(trip)}
    return Grade(commonsense=commonsense, hard=hard, parser=parsed_with, delivered=True,
                 total_cost=total, problems=problems)


async def grade_text(text: str, instance: TravelInstance, db: TravelDatabase,
                     lm: LM | None = None) -> Grade:
    """Grade a plan's text: parsed by :func:`parse_plan`, or, when no day of it can be read and
    an LM is given, rewritten into the day-by-day form by the LM first. ``LMError`` propagates."""
    parsed = parse_plan(text)
    parser = "structured"
    if not parsed.days and lm is not None and (text or "").strip():
        from cogym_lab.envs.travel_planning.lm_parser import parse_with_lm

        parsed = await parse_with_lm(text, lm, days=instance.days)
        parser = "lm"
    return grade_plan(parsed, instance, db, parsed_with=parser)
