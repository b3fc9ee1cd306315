"""The travel-planning search tools, behind a provider interface.

The env calls a :class:`SearchProvider`; :class:`DatabaseProvider` answers from the sandbox
database (:class:`~cogym_lab.envs.travel_planning.database.TravelDatabase`), and a live provider
(web search, places and flight APIs) can take its place. Every answer is a
:class:`SearchResult`: a small table with only the useful columns, and, when the table is
empty, a ``note`` that says why (unknown city, no flight that day, unknown state, bad mode, no
route), with close spellings or other dates where there are some.

Names are shown exactly as the database stores them (double spaces, leading and trailing spaces
and line breaks kept): the grader matches a plan's names against the stored ones, so a name
copied from a result is accepted. :class:`DatabaseProvider` shows the listings of its database's
one accommodation table, the table the grader of the same database reads (under the official
table, the 762 listings TravelPlanner's loader drops are never offered).
"""

from __future__ import annotations

import abc
import difflib
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cogym_lab.envs.travel_planning.database import TravelDatabase, normalize, normalize_mode
from cogym_lab.errors import CogymError

__all__ = [
    "DatabaseProvider", "LiveProviderUnavailable", "LiveSearchProvider", "SearchProvider",
    "SearchResult",
]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class SearchResult:
    """One tool answer: a titled table; ``note`` explains an empty one (or adds a caveat)."""

    title: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""

    def to_component_content(self) -> dict[str, Any]:
        """A JSON-able dict: ``{"title", "columns", "rows", "note"}``."""
        return {"title": self.title, "columns": list(self.columns),
                "rows": [{column: row.get(column) for column in self.columns}
                         for row in self.rows],
                "note": self.note}

    def to_text(self) -> str:
        """The result as plain text: title, ``|``-separated rows, then the note."""
        lines = [self.title]
        if self.rows:
            lines.append(" | ".join(self.columns))
            lines += [" | ".join("" if row.get(c) is None else str(row.get(c))
                                 for c in self.columns) for row in self.rows]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


@runtime_checkable
class SearchProvider(Protocol):
    """What the travel-planning env asks of a search back end. Each method returns a
    :class:`SearchResult` and never raises for a query that finds nothing (it says why in
    ``note``)."""

    def flight_search(self, origin: str, destination: str, date: str) -> SearchResult: ...

    def accommodation_search(self, city: str) -> SearchResult: ...

    def restaurant_search(self, city: str) -> SearchResult: ...

    def attraction_search(self, city: str) -> SearchResult: ...

    def city_search(self, state: str) -> SearchResult: ...

    def distance_matrix(self, origin: str, destination: str, mode: str) -> SearchResult: ...


FLIGHT_COLUMNS = ["Flight Number", "Price", "DepTime", "ArrTime", "Duration"]
ACCOMMODATION_COLUMNS = ["Name", "Room Type", "Price", "Min Nights", "Max Occupancy",
                         "House Rules", "Rating"]
RESTAURANT_COLUMNS = ["Name", "Cuisines", "Average Cost", "Rating"]
ATTRACTION_COLUMNS = ["Name", "Address"]
CITY_COLUMNS = ["City"]
DISTANCE_COLUMNS = ["Mode", "Duration", "Distance", "Cost"]


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


class DatabaseProvider:
    """Search answers from the TravelPlanner sandbox database."""

    def __init__(self, db: TravelDatabase) -> None:
        self.db = db
        self._places = {normalize(p): p for p in db.all_places()}

    # -- helpers ---------------------------------------------------------------------------

    def _display(self, city: str) -> str:
        return self.db.city_name(city) or " ".join(str(city).split())

    def _suggest(self, name: str, choices: dict[str, str]) -> str:
        matches = difflib.get_close_matches(normalize(name), list(choices), n=3, cutoff=0.75)
        if not matches:
            return ""
        return " Did you mean " + " or ".join(repr(choices[m]) for m in matches) + "?"

    def _unknown_city(self, city: str) -> str | None:
        """The reason ``city`` gives nothing, when it is not a place the data knows."""
        if not str(city).strip():
            return "No city given."
        if normalize(city) in self._places:
            return None
        if self.db.is_state(city):
            return (f"{city!r} is a state, not a city: use city_search({city!r}) to list its "
                    "cities, then search one of them.")
        return f"Unknown city {city!r}: it is not in the database." + self._suggest(
            city, self._places)

    def _city_table(self, kind: str, city: str, records: list[Any], columns: list[str],
                    row: Any) -> SearchResult:
        title = f"{kind.capitalize()} in {self._display(city)}"
        if records:
            return SearchResult(title, list(columns), [row(r) for r in records])
        reason = self._unknown_city(city) or (
            f"The database lists no {kind} in {self._display(city)}.")
        return SearchResult(title, list(columns), [], reason)

    # -- the tools -------------------------------------------------------------------------

    def flight_search(self, origin: str, destination: str, date: str) -> SearchResult:
        date = str(date).strip()
        title = (f"Flights from {self._display(origin)} to {self._display(destination)} "
                 f"on {date}")
        columns = list(FLIGHT_COLUMNS)
        flights = self.db.flights(origin, destination, date)
        if flights:
            return SearchResult(title, columns, [
                {"Flight Number": f.number, "Price": f.price, "DepTime": f.departure,
                 "ArrTime": f.arrival, "Duration": f.elapsed} for f in flights])
        reasons = [r for r in (self._unknown_city(origin), self._unknown_city(destination)) if r]
        if reasons:
            return SearchResult(title, columns, [], " ".join(reasons))
        if normalize(origin) == normalize(destination):
            return SearchResult(title, columns, [], "The origin and the destination are the "
                                                    "same city.")
        if not _DATE.match(date):
            return SearchResult(title, columns, [],
                                f"{date!r} is not a date in the form YYYY-MM-DD.")
        note = (f"There is no flight from {self._display(origin)} to "
                f"{self._display(destination)} on {date}.")
        dates = self.db.flight_dates(origin, destination)
        if dates:
            note += " Flights on this route are listed on: " + ", ".join(dates) + "."
        else:
            note += " The database has no flight on this route on any date; consider driving."
        return SearchResult(title, columns, [], note)

    def accommodation_search(self, city: str) -> SearchResult:
        return self._city_table("accommodations", city, self.db.accommodations(city),
                                ACCOMMODATION_COLUMNS, lambda a: {
                                    "Name": a.name, "Room Type": a.room_type,
                                    "Price": _number(a.price), "Min Nights": a.minimum_nights,
                                    "Max Occupancy": a.maximum_occupancy,
                                    "House Rules": a.house_rules or "-",
                                    "Rating": a.review})

    def restaurant_search(self, city: str) -> SearchResult:
        return self._city_table("restaurants", city, self.db.restaurants(city),
                                RESTAURANT_COLUMNS, lambda r: {
                                    "Name": r.name, "Cuisines": ", ".join(r.cuisines),
                                    "Average Cost": _number(r.average_cost),
                                    "Rating": r.rating})

    def attraction_search(self, city: str) -> SearchResult:
        return self._city_table("attractions", city, self.db.attractions(city),
                                ATTRACTION_COLUMNS,
                                lambda a: {"Name": a.name, "Address": a.address})

    def city_search(self, state: str) -> SearchResult:
        cities = self.db.cities(state)
        title = f"Cities in {' '.join(str(state).split())}"
        if cities:
            return SearchResult(title, list(CITY_COLUMNS), [{"City": c} for c in cities])
        if self.db.is_city(state):
            in_state = self.db.state_of(state)
            note = f"{state!r} is a city, not a state" + (
                f"; it is in {in_state}." if in_state else ".")
        elif self.db.is_state(state):
            note = f"The database lists no cities in {state!r}."
        else:
            states = {normalize(s): s for s in self.db.all_states()}
            note = f"Unknown state {state!r}." + self._suggest(state, states)
        return SearchResult(title, list(CITY_COLUMNS), [], note)

    def distance_matrix(self, origin: str, destination: str, mode: str) -> SearchResult:
        canonical = normalize_mode(mode)
        label = canonical or " ".join(str(mode).split())
        title = (f"{label.capitalize()} from {self._display(origin)} to "
                 f"{self._display(destination)}")
        columns = list(DISTANCE_COLUMNS)
        if canonical is None:
            return SearchResult(title, columns, [],
                                f"Mode must be 'self-driving' or 'taxi', not {mode!r}.")
        route = self.db.route(origin, destination, canonical)
        if route is not None:
            return SearchResult(title, columns, [{
                "Mode": route.mode, "Duration": route.duration,
                "Distance": f"{_number(route.distance_km):,} km", "Cost": route.cost}],
                "Cost is per vehicle.")
        reasons = [r for r in (self._unknown_city(origin), self._unknown_city(destination)) if r]
        if reasons:
            return SearchResult(title, columns, [], " ".join(reasons))
        long = self.db.route(origin, destination, canonical, long_drives=True)
        if long is not None:
            note = (f"No valid {canonical} information from {self._display(origin)} to "
                    f"{self._display(destination)}: the drive takes {long.duration} "
                    f"({_number(long.distance_km):,} km), and drives of a day or more are not "
                    "offered.")
        elif self.db.has_route_row(origin, destination):
            note = (f"No valid {canonical} information from {self._display(origin)} to "
                    f"{self._display(destination)}: the route has no distance on record.")
        else:
            note = (f"No {canonical} route from {self._display(origin)} to "
                    f"{self._display(destination)} is on record.")
        return SearchResult(title, columns, [], note)


class LiveProviderUnavailable(CogymError, RuntimeError):
    """A live search provider cannot run: no API key, or its service is unreachable."""


class LiveSearchProvider(abc.ABC):
    """Base for a provider that searches live services instead of the sandbox database.

    Nothing here talks to a real API; this class only fixes the contract and the start-up
    checks. To write a live provider:

    1. Subclass it, set ``api_key_env`` to the environment variable holding your key (the
       default is ``COGYM_PLACES_API_KEY``) and ``probe_url`` to a cheap address of your
       service (its status or root page) so the constructor can fail fast when it is
       unreachable.
    2. Implement the six :class:`SearchProvider` methods. Each must return a
       :class:`SearchResult` with the same columns as :class:`DatabaseProvider` (the env,
       the agents' prompts and the UI rely on them: flights ``Flight Number, Price, DepTime,
       ArrTime, Duration``; accommodations ``Name, Room Type, Price, Min Nights, Max Occupancy,
       House Rules, Rating``; restaurants ``Name, Cuisines, Average Cost, Rating``; attractions
       ``Name, Address``; cities ``City``; distance ``Mode, Duration, Distance, Cost``), and
       put the reason in ``note`` when nothing is found, rather than raising.
    3. Use ``self.api_key``; keep requests short (a timeout) and turn service errors into a
       ``note``.
    4. Pass an instance to the env: ``TravelPlanningEnv(instance=0, provider=MyProvider())``.
       The grader still checks plans against the sandbox database, so live results are for
       real-condition sessions, not for scored benchmark runs.

    The constructor raises :class:`LiveProviderUnavailable` with a clear message when the key
    is not set or the service cannot be reached.
    """

    api_key_env: str = "COGYM_PLACES_API_KEY"
    probe_url: str | None = None
    probe_timeout: float = 3.0

    def __init__(self, api_key: str | None = None) -> None:
        key = api_key if api_key is not None else os.environ.get(self.api_key_env, "")
        if not key.strip():
            raise LiveProviderUnavailable(
                f"{type(self).__name__} needs an API key: set the {self.api_key_env} "
                "environment variable (or pass api_key=...). Without one, use the sandbox "
                "database (DatabaseProvider), which needs no network.")
        self.api_key = key.strip()
        self.check_reachable()

    def check_reachable(self) -> None:
        """Raise :class:`LiveProviderUnavailable` when ``probe_url`` cannot be reached."""
        if not self.probe_url:
            return
        try:
            with urllib.request.urlopen(self.probe_url, timeout=self.probe_timeout):
                pass
        except urllib.error.HTTPError:
            return  # the service answered; an HTTP status is not a network failure
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", None) or error
            raise LiveProviderUnavailable(
                f"{type(self).__name__} cannot reach {self.probe_url} ({reason}). Check the "
                "network, or use the sandbox database (DatabaseProvider).") from None

    # The six searches, as in SearchProvider: a live provider implements every one.

    @abc.abstractmethod
    def flight_search(self, origin: str, destination: str, date: str) -> SearchResult: ...

    @abc.abstractmethod
    def accommodation_search(self, city: str) -> SearchResult: ...

    @abc.abstractmethod
    def restaurant_search(self, city: str) -> SearchResult: ...

    @abc.abstractmethod
    def attraction_search(self, city: str) -> SearchResult: ...

    @abc.abstractmethod
    def city_search(self, state: str) -> SearchResult: ...

    @abc.abstractmethod
    def distance_matrix(self, origin: str, destination: str, mode: str) -> SearchResult: ...
