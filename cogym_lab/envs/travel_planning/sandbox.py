"""The database as TravelPlanner's evaluation queries it.

Every record look-up of the official checks is a pandas filter: the city equal to the one
written, and the stored name CONTAINING the one written (``str.contains`` on the escaped name:
a case-sensitive substring test). The first row in file order is the one whose price, room type,
rules or cuisines are read. :class:`Sandbox` answers the same questions over a
:class:`~cogym_lab.envs.travel_planning.database.TravelDatabase`, caching each answer.

Flights: TravelPlanner's flights table is not public. By default the sandbox checks flights
against the database's flight table, the one the search tools serve (every flight of the
reference information of the validation and training queries). A caller may pass another
table, e.g. the flights of one query's reference information, which is how the oracle
verdicts in ``shared/oracles/travelplanner`` were produced.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.field_reading import before_parenthesis
from cogym_lab.envs.travel_planning.records import Accommodation, Attraction, Flight, Restaurant

__all__ = ["COST_PER_KM", "Sandbox"]

#: Dollars per km: TravelPlanner's cost of a drive, per vehicle.
COST_PER_KM = {"self-driving": 0.05, "taxi": 1.0}


class Sandbox:
    """Record look-ups with the official matching rules (see the module docstring)."""

    def __init__(self, db: TravelDatabase, flights: Iterable[Flight] | None = None) -> None:
        self.db = db
        self._found: dict[tuple[str, str, str], list[Any]] = {}
        self._flights: dict[str, list[Flight]] | None = None
        if flights is not None:  # a table of its own, in its order
            self._flights = defaultdict(list)
            for flight in flights:
                self._flights[flight.number].append(flight)

    def _numbered(self, number: str) -> list[Flight]:
        if self._flights is None:
            return self.db.flights_numbered(number)
        return self._flights.get(number, [])

    def _matching(self, kind: str, records_at: Callable[[str], list[Any]], name: str,
                  city: str) -> list[Any]:
        key = (kind, name, city)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = [r for r in records_at(city) if name in r.name]
        return found

    def restaurants(self, name: str, city: str) -> list[Restaurant]:
        """Restaurants in exactly ``city`` whose name contains ``name``, in file order."""
        return self._matching("restaurant", self.db.restaurants_at, name, city)

    def attractions(self, name: str, city: str) -> list[Attraction]:
        """Attractions in exactly ``city`` whose name contains ``name``, in file order."""
        return self._matching("attraction", self.db.attractions_at, name, city)

    def accommodations(self, name: str, city: str) -> list[Accommodation]:
        """Listings of the database's table in exactly ``city`` whose name contains ``name``."""
        return self._matching("accommodation", self.db.accommodations_at, name, city)

    def first_flight(self, number: str) -> Flight | None:
        """The first flight numbered exactly ``number`` (the cost reads its price)."""
        flights = self._numbered(number)
        return flights[0] if flights else None

    def flies(self, number: str, origin: str, destination: str) -> bool:
        """Whether flight ``number`` flies from exactly ``origin`` to exactly ``destination``
        (on any date)."""
        return any(f.origin == origin and f.destination == destination
                   for f in self._numbered(number))

    def drive_cost(self, origin: str, destination: str, mode: str) -> int | None:
        """The cost of one vehicle from ``origin`` to ``destination`` (``self-driving`` or
        ``taxi``): None when distance.csv has no row for the pair, the row lacks a duration or a
        distance, or the drive takes a day or more."""
        row = self.db.route_row(before_parenthesis(origin), before_parenthesis(destination))
        if row is None or row.duration is None or row.distance_km is None:
            return None
        if "day" in row.duration:
            return None
        return int(row.distance_km * COST_PER_KM[mode])

    def state_of(self, city: str) -> str | None:
        """The state ``citySet_with_states.txt`` gives ``city`` (exact), or None."""
        return self.db.state_map.get(city)
