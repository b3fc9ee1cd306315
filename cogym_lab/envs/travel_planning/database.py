"""The TravelPlanner sandbox database, loaded into memory for look-ups.

Sources (all under ``<data dir>/travel_planning/``, see :mod:`cogym_lab.datasets`, or the same
paths in the bundled sample, :data:`~cogym_lab.envs.travel_planning.data_files.SAMPLE`):

* ``database/accommodations/clean_accommodations_2022.csv``, ``database/restaurants/
  clean_restaurant_2022.csv``, ``database/attractions/attractions.csv``: one record a row.
* ``database/googleDistanceMatrix/distance.csv``: driving duration and distance between cities.
* ``database/background/citySet_with_states.txt`` (``city<TAB>state``), ``citySet.txt``,
  ``stateSet.txt``: the cities and states of the sandbox.
* flights: the public release has no flights table, so it is rebuilt from every flight record
  in the ``reference_information`` of ``validation_with_hidden_profile.csv`` (fixed-width text
  dumps of tables, parsed by the header's column positions) and of
  ``database/train_ref_info.jsonl``, deduplicated by (flight number, date).

Names are stored exactly as the files have them (double, leading and trailing spaces and line
breaks kept): the search tools show them so, and the grader matches plans against them as
TravelPlanner does. A database holds ONE accommodation table (``official`` or ``corrected``, see
:mod:`~cogym_lab.envs.travel_planning.accommodation_table`); the tools and the grader given the
same database therefore agree on which listings exist.

Two kinds of look-up:

* tolerant ones for the tools and people (``accommodation(name, city)``, ``restaurants(city)``,
  ``route(...)``): case and runs of whitespace do not matter;
* exact ones for the grader (``accommodations_at(city)``, ``flights_numbered(number)``,
  ``route_row(...)``, ``state_map``): strings compared as stored, records in file order, as
  TravelPlanner's evaluation compares them.

:attr:`TravelDatabase.stats` counts what loading left out and other oddities.
"""

from __future__ import annotations

import ast
import copy
import csv
import json
import re
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cogym_lab import datasets
from cogym_lab.envs.travel_planning.accommodation_table import (
    AccommodationTable,
    read_accommodations,
)
from cogym_lab.envs.travel_planning.data_files import DATA_FILES, SAMPLE
from cogym_lab.envs.travel_planning.records import (
    Accommodation,
    Attraction,
    Flight,
    Restaurant,
    Route,
    TravelMode,
)

__all__ = [
    "FLIGHT_COLUMNS", "RouteRow", "TravelDatabase", "normalize", "normalize_mode",
    "parse_fixed_width", "parse_km", "travel_dir",
]

VALIDATION_CSV = "validation_with_hidden_profile.csv"
FLIGHT_COLUMNS = ("Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime",
                  "FlightDate", "OriginCityName", "DestCityName", "Distance")
COST_PER_KM: dict[str, float] = {"self-driving": 0.05, "taxi": 1.0}

_FLIGHT_NUMBER = re.compile(r"^F\d+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{1,2}:\d{2}$")
_DAYS = re.compile(r"\bdays?\b", re.IGNORECASE)
_FLIGHT_DESCRIPTION = re.compile(r"^Flight from (.+) to (.+) on (\d{4}-\d{2}-\d{2})$")

#: Records by normalized city, by normalized name, and by city exactly as stored.
_Index = tuple[dict[str, list[Any]], dict[str, list[Any]], dict[str, list[Any]]]

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def normalize(text: Any) -> str:
    """The look-up key of a name: whitespace collapsed, case folded. A literal ``\\n`` (as
    table dumps print a line break inside a name) counts as whitespace."""
    return " ".join(str(text).replace("\\n", " ").split()).casefold()


def _clean(text: Any) -> str:
    return " ".join(str(text).split())


def normalize_mode(mode: str) -> TravelMode | None:
    """``"Self-driving"``, ``"self driving"`` -> ``"self-driving"``; ``"Taxi"`` -> ``"taxi"``;
    None for anything else."""
    key = normalize(mode).replace(" ", "-").replace("_", "-")
    if key in ("self-driving", "selfdriving", "driving", "self-drive"):
        return "self-driving"
    if key == "taxi":
        return "taxi"
    return None


def parse_km(text: str) -> float | None:
    """``"1,144 km"`` -> 1144.0, ``"98.6 km"`` -> 98.6, ``"800 m"`` -> 0.8; None if empty."""
    match = re.match(r"^\s*([\d,]*\.?\d+)\s*(km|m)?\s*$", text or "")
    if not match:
        return None
    value = float(match.group(1).replace(",", ""))
    return value / 1000 if match.group(2) == "m" else value


def parse_fixed_width(text: str, columns: Sequence[str]) -> list[dict[str, str]]:
    """Rows of a right-aligned fixed-width table dump (``DataFrame.to_string(index=False)``).

    Each column ends where its header name ends, so the header line gives the cut points
    even when cells (city names) contain spaces. ``columns`` are the expected header names,
    in order; a ValueError is raised when the header lacks one."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0]
    ends: list[int] = []
    position = 0
    for name in columns:
        found = header.find(name, position)
        if found < 0:
            raise ValueError(f"column {name!r} not found in header {header.strip()!r}")
        position = found + len(name)
        ends.append(position)
    rows = []
    for line in lines[1:]:
        cells, start = [], 0
        for number, end in enumerate(ends):
            stop = len(line) if number == len(ends) - 1 else end
            cells.append(line[start:stop].strip())
            start = end
        rows.append(dict(zip(columns, cells, strict=True)))
    return rows


def travel_dir(data_dir: str | Path | None = None) -> Path:
    """The folder the task reads: the ``travel_planning`` folder of the data directory, after
    checking every file the task needs is there (:class:`cogym_lab.datasets.DataMissing`
    otherwise), or the bundled sample when nobody chose a data directory and the default one
    lacks the files (see :func:`cogym_lab.datasets.task_folder`). ``data_dir`` may also be
    such a folder itself (a database's ``source``)."""
    root = datasets.data_dir(data_dir)
    if datasets.is_sample(root):
        return root
    if root.name == "travel_planning" and (root / VALIDATION_CSV).is_file():
        return datasets.require(DATA_FILES, root.parent)
    return datasets.task_folder(DATA_FILES, SAMPLE, data_dir)


def _int(text: Any, default: int) -> int:
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return default


def _float(text: Any, default: float | None) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return default


def _read_csv(path: Path) -> Iterator[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def _read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\r\n") for line in handle if line.strip()]


@dataclass(frozen=True)
class RouteRow:
    """One row of distance.csv as stored: ``None`` where the cell is empty."""

    duration: str | None  # "10 hours 55 mins", "1 day 2 hours"
    distance_km: float | None


class TravelDatabase:
    """In-memory tables of the sandbox, with tolerant look-ups for the tools and exact ones for
    the grader. ``accommodation_table`` names the one accommodation table it holds. Build with
    :meth:`load`."""

    _cache: ClassVar[dict[tuple[Path, str], TravelDatabase]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, *, flights: Iterable[Flight] = (),
                 accommodations: Iterable[Accommodation] = (),
                 restaurants: Iterable[Restaurant] = (), attractions: Iterable[Attraction] = (),
                 city_states: Iterable[tuple[str, str | None]] = (), states: Iterable[str] = (),
                 routes: Iterable[tuple[str, str, str, float | None]] = (),
                 source: Path | None = None, stats: dict[str, int] | None = None,
                 accommodation_table: str = "official") -> None:
        self.source = source
        self.stats: dict[str, int] = dict(stats or {})
        self.accommodation_table = accommodation_table
        self._reference_flights: list[list[Flight]] = []

        self._flights: dict[tuple[str, str, str], list[Flight]] = defaultdict(list)
        self._flight_dates: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._flight_by_number: dict[str, list[Flight]] = defaultdict(list)
        self._flights_exact: dict[str, list[Flight]] = defaultdict(list)  # in file order
        seen: dict[tuple[str, str], Flight] = {}
        for flight in flights:
            flight_key = (flight.number.upper(), flight.date)
            if flight_key in seen:
                self.stats["flight_duplicates"] = self.stats.get("flight_duplicates", 0) + 1
                if seen[flight_key] != flight:
                    self.stats["flight_conflicts"] = self.stats.get("flight_conflicts", 0) + 1
                continue
            seen[flight_key] = flight
            route = (normalize(flight.origin), normalize(flight.destination))
            self._flights[(*route, flight.date)].append(flight)
            self._flight_dates[route].add(flight.date)
            self._flight_by_number[flight.number.upper()].append(flight)
            self._flights_exact[flight.number].append(flight)
        for group in self._flights.values():
            group.sort(key=lambda f: (f.departure.zfill(5), f.number))
        for group in self._flight_by_number.values():
            group.sort(key=lambda f: f.date)
        self.flight_count = len(seen)

        self._accommodations = self._index(accommodations)
        self._restaurants = self._index(restaurants)
        self._attractions = self._index(attractions)

        #: city -> state exactly as citySet_with_states.txt pairs them (a later line wins)
        self.state_map: dict[str, str] = {city: state for city, state in city_states if state}
        self._city_state: dict[str, str | None] = {}
        self._city_names: dict[str, str] = {}
        self._state_cities: dict[str, list[str]] = defaultdict(list)
        self._state_names: dict[str, str] = {}
        for city, state in city_states:
            key = normalize(city)
            if not key:
                continue
            if state and self._city_state.get(key) is None:
                self._city_state[key] = _clean(state)
            else:
                self._city_state.setdefault(key, None)
            self._city_names.setdefault(key, _clean(city))
            if state and _clean(city) not in self._state_cities[normalize(state)]:
                self._state_cities[normalize(state)].append(_clean(city))
                self._state_names.setdefault(normalize(state), _clean(state))
        for state in states:
            if normalize(state) and normalize(state) != "none":
                self._state_names.setdefault(normalize(state), _clean(state))

        self._routes: dict[tuple[str, str], tuple[str, str, str, float | None]] = {}
        self._route_rows: dict[tuple[str, str], RouteRow] = {}
        for origin, destination, duration, km in routes:
            self._route_rows.setdefault((origin, destination),
                                        RouteRow(duration.strip() or None, km))
            route_key = (normalize(origin), normalize(destination))
            known = self._routes.get(route_key)
            if known is None or (known[3] is None and km is not None):
                self._routes[route_key] = (_clean(origin), _clean(destination), duration.strip(),
                                           km)

        self._places: dict[str, str] = dict(self._city_names)
        for table in (self._accommodations, self._restaurants, self._attractions):
            for key, records in table[0].items():
                self._places.setdefault(key, _clean(records[0].city))
        for flight in seen.values():
            self._places.setdefault(normalize(flight.origin), flight.origin)
            self._places.setdefault(normalize(flight.destination), flight.destination)
        for origin, destination, _duration, _km in self._routes.values():
            self._places.setdefault(normalize(origin), origin)
            self._places.setdefault(normalize(destination), destination)

    @staticmethod
    def _index(records: Iterable[Any]) -> _Index:
        """Records by normalized city, by normalized name, and by city exactly as stored; each
        list in file order."""
        by_city: dict[str, list[Any]] = defaultdict(list)
        by_name: dict[str, list[Any]] = defaultdict(list)
        by_exact_city: dict[str, list[Any]] = defaultdict(list)
        for record in records:
            by_city[normalize(record.city)].append(record)
            by_name[normalize(record.name)].append(record)
            by_exact_city[record.city].append(record)
        return dict(by_city), dict(by_name), dict(by_exact_city)

    def with_accommodations(self, listings: Iterable[Accommodation], table: str,
                            dropped: int) -> TravelDatabase:
        """A copy holding ``listings`` as its accommodation table (the other tables shared)."""
        other = copy.copy(self)
        other.accommodation_table = table
        other._accommodations = self._index(listings)
        other._places = dict(self._places)
        for key, records in other._accommodations[0].items():
            other._places.setdefault(key, _clean(records[0].city))
        other.stats = {**self.stats, "accommodations_dropped": dropped}
        return other

    # --- loading -------------------------------------------------------------------------

    def for_table(self, table: AccommodationTable) -> TravelDatabase:
        """This database, or its sibling of the same data directory holding ``table``."""
        if table == self.accommodation_table:
            return self
        if self.source is None:
            raise ValueError(f"This database holds the {self.accommodation_table!r} "
                             f"accommodation table and was not loaded from a data directory; "
                             f"build it with the {table!r} table.")
        return TravelDatabase.load(self.source, accommodations=table)

    @classmethod
    def load(cls, data_dir: str | Path | None = None,
             accommodations: AccommodationTable = "official") -> TravelDatabase:
        """The database of the data directory (see :func:`cogym_lab.datasets.data_dir`), or of
        the bundled sample (see :func:`travel_dir`), with the ``accommodations`` table, loaded
        once per resolved folder and table and cached. Raises
        :class:`cogym_lab.datasets.DataMissing` when files are missing."""
        folder = travel_dir(data_dir).resolve()
        with cls._cache_lock:
            database = cls._cache.get((folder, accommodations))
            if database is None:
                listings = read_accommodations(
                    folder / "database" / "accommodations" / "clean_accommodations_2022.csv",
                    accommodations)
                base = next((db for (path, _), db in cls._cache.items() if path == folder),
                            None) or cls._read(folder)
                database = base.with_accommodations(listings.listings, accommodations,
                                                    listings.dropped)
                cls._cache[(folder, accommodations)] = database
            return database

    @classmethod
    def clear_cache(cls) -> None:
        with cls._cache_lock:
            cls._cache.clear()

    @classmethod
    def _read(cls, folder: Path) -> TravelDatabase:
        base = folder / "database"
        stats: dict[str, int] = defaultdict(int)

        restaurants = []
        for row in _read_csv(base / "restaurants" / "clean_restaurant_2022.csv"):
            name = row.get("Name", "")
            if not name.strip():
                stats["restaurants_skipped"] += 1
                continue
            cuisines = tuple(c for c in (_clean(c) for c in row.get("Cuisines", "").split(","))
                             if c)
            restaurants.append(Restaurant(
                name=name, city=row.get("City", ""), cuisines=cuisines,
                average_cost=_float(row.get("Average Cost"), 0.0) or 0.0,
                rating=_float(row.get("Aggregate Rating"), 0.0) or 0.0))

        attractions = []
        for row in _read_csv(base / "attractions" / "attractions.csv"):
            name = row.get("Name", "")
            if not name.strip():
                stats["attractions_skipped"] += 1
                continue
            attractions.append(Attraction(
                name=name, city=row.get("City", ""),
                address=_clean(row.get("Address", "")), phone=_clean(row.get("Phone", "")),
                website=(row.get("Website") or "").strip(),
                latitude=_float(row.get("Latitude"), None),
                longitude=_float(row.get("Longitude"), None)))

        background = base / "background"
        city_states: list[tuple[str, str | None]] = []
        for line in _read_lines(background / "citySet_with_states.txt"):
            city, _tab, state = line.partition("\t")
            city_states.append((city, state or None))
        city_states += [(city, None) for city in _read_lines(background / "citySet.txt")]
        states = _read_lines(background / "stateSet.txt")

        routes = []
        for row in _read_csv(base / "googleDistanceMatrix" / "distance.csv"):
            routes.append((row.get("origin", ""), row.get("destination", ""),
                           row.get("duration", "") or "", parse_km(row.get("distance", ""))))

        by_instance = cls._validation_flights(folder / VALIDATION_CSV, stats)
        flights = [flight for row in by_instance for flight in row]
        flights += list(cls._train_flights(base / "train_ref_info.jsonl", stats))

        database = cls(flights=flights, restaurants=restaurants,
                   attractions=attractions, city_states=city_states, states=states,
                   routes=routes, source=folder, stats=dict(stats))
        database._reference_flights = by_instance
        return database

    @staticmethod
    def _flight_from_cells(cells: dict[str, Any], stats: dict[str, int]) -> Flight | None:
        number = str(cells.get("Flight Number", "")).strip()
        date = str(cells.get("FlightDate", "")).strip()
        departure = str(cells.get("DepTime", "")).strip()
        arrival = str(cells.get("ArrTime", "")).strip()
        price = _float(cells.get("Price"), None)
        if (not _FLIGHT_NUMBER.match(number) or not _DATE.match(date) or price is None
                or not _TIME.match(departure) or not _TIME.match(arrival)):
            stats["flight_rows_unreadable"] += 1
            return None
        return Flight(number=number, price=int(price), departure=departure, arrival=arrival,
                      elapsed=_clean(cells.get("ActualElapsedTime", "")), date=date,
                      origin=_clean(cells.get("OriginCityName", "")),
                      destination=_clean(cells.get("DestCityName", "")),
                      distance=_float(cells.get("Distance"), 0.0) or 0.0)

    @classmethod
    def _validation_flights(cls, path: Path, stats: dict[str, int]) -> list[list[Flight]]:
        """The flights of each validation row's reference information, row by row."""
        return [list(cls._row_flights(row, stats)) for row in _read_csv(path)]

    @classmethod
    def _row_flights(cls, row: dict[str, str], stats: dict[str, int]) -> Iterator[Flight]:
        for entry in ast.literal_eval(row["reference_information"]):
            description = _clean(entry.get("Description", ""))
            match = _FLIGHT_DESCRIPTION.match(description)
            if not match:
                continue
            content = str(entry.get("Content", ""))
            if not content.lstrip().startswith("Flight Number"):
                stats["flight_searches_empty"] += 1  # "There is no flight from ..."
                continue
            for cells in parse_fixed_width(content, FLIGHT_COLUMNS):
                flight = cls._flight_from_cells(cells, stats)
                if flight is None:
                    continue
                if (normalize(flight.origin), normalize(flight.destination),
                        flight.date) != (normalize(match.group(1)),
                                         normalize(match.group(2)), match.group(3)):
                    stats["flight_rows_off_description"] += 1
                stats["flight_rows_validation"] += 1
                yield flight

    @classmethod
    def _train_flights(cls, path: Path, stats: dict[str, int]) -> Iterator[Flight]:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                for key, value in json.loads(line).items():
                    if not key.startswith("Flight from ") or not isinstance(value, list):
                        continue
                    for cells in value:
                        flight = cls._flight_from_cells(cells, stats)
                        if flight is not None:
                            stats["flight_rows_train"] += 1
                            yield flight

    # --- flights -------------------------------------------------------------------------

    def flights(self, origin: str, destination: str, date: str) -> list[Flight]:
        """Flights from ``origin`` to ``destination`` on ``date`` (YYYY-MM-DD), by departure."""
        return list(self._flights.get((normalize(origin), normalize(destination),
                                       str(date).strip()), ()))

    def flight(self, number: str, date: str | None = None) -> Flight | None:
        """The flight with this number (on ``date`` when given; else its earliest date)."""
        found = self._flight_by_number.get(str(number).strip().upper(), [])
        if date is not None:
            found = [f for f in found if f.date == str(date).strip()]
        return found[0] if found else None

    def flight_dates(self, origin: str, destination: str) -> list[str]:
        """The dates on which the table has flights from ``origin`` to ``destination``."""
        return sorted(self._flight_dates.get((normalize(origin), normalize(destination)), ()))

    # --- accommodations, restaurants, attractions -----------------------------------------

    @staticmethod
    def _named(table: _Index, name: str, city: str | None) -> Any | None:
        for record in table[1].get(normalize(name), ()):
            if city is None or normalize(record.city) == normalize(city):
                return record
        return None

    def accommodations(self, city: str) -> list[Accommodation]:
        return list(self._accommodations[0].get(normalize(city), ()))

    def accommodation(self, name: str, city: str | None = None) -> Accommodation | None:
        """The first accommodation of that name (in ``city`` when given)."""
        return self._named(self._accommodations, name, city)

    def restaurants(self, city: str) -> list[Restaurant]:
        return list(self._restaurants[0].get(normalize(city), ()))

    def restaurant(self, name: str, city: str | None = None) -> Restaurant | None:
        """The first restaurant of that name (in ``city`` when given)."""
        return self._named(self._restaurants, name, city)

    def attractions(self, city: str) -> list[Attraction]:
        return list(self._attractions[0].get(normalize(city), ()))

    def attraction(self, name: str, city: str | None = None) -> Attraction | None:
        """The first attraction of that name (in ``city`` when given)."""
        return self._named(self._attractions, name, city)

    # --- exact look-ups, for the grader ---------------------------------------------------

    def accommodations_at(self, city: str) -> list[Accommodation]:
        """The listings whose city is exactly ``city``, in file order."""
        return self._accommodations[2].get(city, [])

    def restaurants_at(self, city: str) -> list[Restaurant]:
        """The restaurants whose city is exactly ``city``, in file order."""
        return self._restaurants[2].get(city, [])

    def attractions_at(self, city: str) -> list[Attraction]:
        """The attractions whose city is exactly ``city``, in file order."""
        return self._attractions[2].get(city, [])

    def flights_numbered(self, number: str) -> list[Flight]:
        """The flights whose number is exactly ``number`` (case counts), in table order."""
        return self._flights_exact.get(number, [])

    def reference_flights(self, instance: int) -> list[Flight]:
        """The flights of validation instance ``instance``'s reference information, in order:
        the table TravelPlanner's evaluation was served for that query in the oracle."""
        return list(self._reference_flights[instance])

    def route_row(self, origin: str, destination: str) -> RouteRow | None:
        """The first row of distance.csv from exactly ``origin`` to exactly ``destination``."""
        return self._route_rows.get((origin, destination))

    # --- cities and states ---------------------------------------------------------------

    def cities(self, state: str) -> list[str]:
        """The sandbox cities of ``state``, in the order of ``citySet_with_states.txt``."""
        return list(self._state_cities.get(normalize(state), ()))

    def state_of(self, city: str) -> str | None:
        return self._city_state.get(normalize(city))

    def is_city(self, name: str) -> bool:
        """Whether ``name`` is a city of the sandbox (``citySet*.txt``)."""
        return normalize(name) in self._city_state

    def is_state(self, name: str) -> bool:
        return normalize(name) in self._state_names

    def city_name(self, name: str) -> str | None:
        """The spelling the data uses for a city or place name, if any table knows it."""
        return self._places.get(normalize(name))

    def all_cities(self) -> list[str]:
        """The sandbox cities (``citySet*.txt``)."""
        return sorted(self._city_names.values())

    def all_places(self) -> list[str]:
        """Every city name any table mentions (the sandbox cities and a few more)."""
        return sorted(self._places.values())

    def all_states(self) -> list[str]:
        return sorted(self._state_names.values())

    # --- driving -------------------------------------------------------------------------

    def route(self, origin: str, destination: str, mode: str, *,
              long_drives: bool = False) -> Route | None:
        """The drive from ``origin`` to ``destination``; None when distance.csv has no row for
        the pair or the row has no distance.

        Drives of a day or more (duration like ``"1 day 2 hours"``) are also None unless
        ``long_drives``: TravelPlanner's own tool reports them as "No valid information" and
        its evaluation gives them no cost, and the reference information agrees.

        ``cost`` is per vehicle: ``int(km * 0.05)`` self-driving, ``int(km * 1)`` by taxi.
        Raises ValueError for a mode other than ``self-driving`` or ``taxi``."""
        canonical = normalize_mode(mode)
        if canonical is None:
            raise ValueError(f"mode must be 'self-driving' or 'taxi', not {mode!r}")
        row = self._routes.get((normalize(origin), normalize(destination)))
        if row is None:
            return None
        origin_name, destination_name, duration, km = row
        if km is None:
            return None
        if not long_drives and _DAYS.search(duration):
            return None
        return Route(origin=origin_name, destination=destination_name, mode=canonical,
                     duration=duration, distance_km=km,
                     cost=int(km * COST_PER_KM[canonical]))

    def has_route_row(self, origin: str, destination: str) -> bool:
        """Whether distance.csv has a row for the pair (possibly without a distance)."""
        return (normalize(origin), normalize(destination)) in self._routes
