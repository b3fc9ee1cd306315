"""The travel plan as people and agents write it in the shared editor.

A plan is one block per day. Each block starts with a ``Day N`` header and has one line per
field, ``Key: value``::

    Day 1:
    Current City: from Salt Lake City to Burbank
    Transportation: Flight Number: F3846241, from Salt Lake City to Burbank, Departure Time: 08:08, Arrival Time: 09:03
    Breakfast: -
    Attraction: Gordon R Howard Museum, Burbank; Starlight Bowl, Burbank
    Lunch: Mellow Mushroom, Burbank
    Dinner: Hard Rock Cafe, Burbank
    Accommodation: Cozy Home, Great Location, Burbank

    Day 2:
    Current City: Burbank
    Transportation: -
    ...

    Day 3:
    Current City: from Burbank to Salt Lake City
    Transportation: Self-driving, from Burbank to Salt Lake City, Duration: 9 hours 55 mins, Distance: 1,112 km, Cost: 55
    ...

Fields:

- ``Current City``: ``from A to B`` on a day that travels from city A to city B, otherwise the one
  city the day is spent in.
- ``Transportation``: a flight (``Flight Number: F..., from A to B, ...``), a drive
  (``Self-driving, from A to B, ...``) or a taxi (``Taxi, from A to B, ...``); ``-`` for none.
- ``Breakfast``, ``Lunch``, ``Dinner``, ``Accommodation``: ``<name>, <city>``. The name may itself
  contain commas: the city is what follows the LAST comma.
- ``Attraction``: ``<name>, <city>`` entries separated by ``;``.

``-`` (or an empty value, ``none``, ``n/a``) means nothing is planned for that field.

Parsing is deterministic and tolerant: markdown headers and bold (``## Day 1``, ``**Day 1:**``,
``**Lunch:**``), bullets (``- Lunch: ...``, ``* ...``, ``1. ...``), any letter case of the keys,
extra spaces around values and around the comma before a city, ``Attractions`` for
``Attraction``, ``Accommodations``, a trailing ``;``, blank lines, code fences and any text before
the first day are all accepted. Spaces INSIDE a restaurant, attraction or listing name are kept
as written (some stored names have double spaces, and the grader compares names as stored);
city names and Transportation lines have their runs of spaces collapsed. :func:`parse_plan`
never raises: what it cannot read is listed in :attr:`ParsedPlan.problems`. :func:`format_plan`
writes days back in the canonical form above, and ``parse_plan(format_plan(days)).days == days``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "NONE",
    "DayPlan",
    "ParsedPlan",
    "TransportMode",
    "cities_of",
    "flight_number",
    "format_plan",
    "is_none",
    "is_structured",
    "parse_plan",
    "split_name_city",
    "transport_mode",
    "transport_route",
]

NONE = "-"
TransportMode = Literal["flight", "self-driving", "taxi"]

# Canonical field names, in the order a day is written, and the spellings read as each.
FIELDS = ("current_city", "transportation", "breakfast", "attractions", "lunch", "dinner",
          "accommodation")
LABELS = {"current_city": "Current City", "transportation": "Transportation",
          "breakfast": "Breakfast", "attractions": "Attraction", "lunch": "Lunch",
          "dinner": "Dinner", "accommodation": "Accommodation"}
_ALIASES = {
    "current city": "current_city", "current cities": "current_city", "city": "current_city",
    "transportation": "transportation", "transport": "transportation",
    "breakfast": "breakfast", "lunch": "lunch", "dinner": "dinner",
    "attraction": "attractions", "attractions": "attractions",
    "accommodation": "accommodation", "accommodations": "accommodation",
}
_EMPTY_WORDS = {"", "-", "--", "—", "–", "none", "n/a", "na", "null", "nothing"}

_DECORATION = "#*_>`•·\t "  # markdown left around a header or a key
_BULLET = re.compile(r"^\s*(?:[-*+•·]|\d+[.)])\s+")
_DAY_HEADER = re.compile(r"^day\s*(\d+)\b\s*[:.)\-–—]?\s*(.*)$", re.IGNORECASE)
_KEY_LINE = re.compile(
    r"^(" + "|".join(sorted((re.escape(k) for k in _ALIASES), key=len, reverse=True))
    + r")\s*:\s*(.*)$", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_FROM_TO = re.compile(r"\bfrom\s+(.+?)\s+to\s+(.+?)\s*(?:,|;|\(|$)", re.IGNORECASE)
_ARROW = re.compile(r"^\s*(.+?)\s*(?:->|→|=>)\s*(.+?)\s*$")
_FLIGHT_LABELLED = re.compile(r"flight\s*(?:number|no\.?|#)?\s*[:#]?\s*([A-Z]\d{3,})\b",
                              re.IGNORECASE)
_FLIGHT_BARE = re.compile(r"\b(F\d{4,})\b", re.IGNORECASE)


def _clean(value: str) -> str:
    """:func:`_trim`, with one space between words."""
    return _trim(_SPACES.sub(" ", value))


def _trim(value: str) -> str:
    """No space or trailing ``;`` left around, and no markdown bold or code marks around the
    whole value (``**Tpot, Burbank**``); spaces inside are kept. A single ``*`` stays: some
    listing names start with one."""
    value = value.strip().rstrip(";").strip()
    for mark in ("**", "__", "`"):
        if len(value) > 2 * len(mark) and value.startswith(mark) and value.endswith(mark):
            value = value[len(mark):-len(mark)].strip()
        elif value.count(mark) == 1 and mark != "`" and (value.startswith(mark)
                                                         or value.endswith(mark)):
            # "**Tpot, Burbank" / "Tpot, Burbank**"
            value = (value[len(mark):] if value.startswith(mark) else value[:-len(mark)]).strip()
    return value


def _entry(value: str) -> str:
    """A ``<name>, <city>`` entry: the name as written (ends trimmed), one ``", "`` before the
    city, the city's spaces collapsed."""
    value = _trim(value)
    name, comma, city = value.rpartition(",")
    if comma and name.strip() and city.strip():
        return f"{name.strip()}, {' '.join(city.split())}"
    return value


def is_none(value: str | None) -> bool:
    """Whether a field's value means "nothing planned"."""
    return value is None or _clean(value).lower() in _EMPTY_WORDS


def split_name_city(entry: str) -> tuple[str, str | None]:
    """``"Cozy Home, Great Location, Burbank"`` -> ``("Cozy Home, Great Location", "Burbank")``:
    the city is what follows the last comma; ``(entry, None)`` when there is no comma."""
    entry = _trim(entry)
    name, comma, city = entry.rpartition(",")
    if not comma or not name.strip() or not city.strip():
        return entry.strip(","), None
    return name.strip(), " ".join(city.split())


def cities_of(current_city: str) -> list[str]:
    """``"from A to B"`` -> ``[A, B]``; ``"A"`` -> ``[A]``; ``"-"`` -> ``[]``."""
    if is_none(current_city):
        return []
    text = _clean(current_city)
    match = re.fullmatch(r"from\s+(.+?)\s+to\s+(.+?)[.;]?", text, re.IGNORECASE)
    if match is None:
        match = _ARROW.match(text)
    if match:
        return [_clean(match.group(1)), _clean(match.group(2))]
    return [text.rstrip(".")]


def flight_number(transportation: str) -> str | None:
    """The flight number named on a Transportation line, upper-cased, if any."""
    if is_none(transportation):
        return None
    match = _FLIGHT_LABELLED.search(transportation) or _FLIGHT_BARE.search(transportation)
    return match.group(1).upper() if match else None


def transport_mode(transportation: str) -> TransportMode | None:
    """``"flight"``, ``"self-driving"``, ``"taxi"``, or None when none is named."""
    if is_none(transportation):
        return None
    text = transportation.lower()
    if flight_number(transportation) or re.search(r"\bflight\b|\bfly\b|\bplane\b", text):
        return "flight"
    if re.search(r"self[\s-]*driv", text):
        return "self-driving"
    if re.search(r"\btaxi|\bcab\b", text):
        return "taxi"
    if re.search(r"\bdriv(?:e|ing)\b|\bcar\b", text):
        return "self-driving"
    return None


def transport_route(transportation: str) -> tuple[str, str] | None:
    """The ``from A to B`` a Transportation line states, if it states one."""
    if is_none(transportation):
        return None
    match = _FROM_TO.search(_clean(transportation))
    return (_clean(match.group(1)), _clean(match.group(2))) if match else None


@dataclass
class DayPlan:
    """One day of a plan. Text fields hold ``"-"`` when nothing is planned."""

    day: int
    current_city: str = NONE
    transportation: str = NONE
    breakfast: str = NONE
    attractions: list[str] = field(default_factory=list)
    lunch: str = NONE
    dinner: str = NONE
    accommodation: str = NONE

    @property
    def cities(self) -> list[str]:
        """The day's cities: ``[A, B]`` on a travel day, ``[A]`` otherwise."""
        return cities_of(self.current_city)

    @property
    def is_travel_day(self) -> bool:
        cities = self.cities
        return len(cities) == 2 and cities[0].casefold() != cities[1].casefold()

    @property
    def start_city(self) -> str | None:
        return self.cities[0] if self.cities else None

    @property
    def end_city(self) -> str | None:
        """Where the day ends, and so where its accommodation should be."""
        return self.cities[-1] if self.cities else None

    @property
    def flight_number(self) -> str | None:
        return flight_number(self.transportation)

    @property
    def transport_mode(self) -> TransportMode | None:
        return transport_mode(self.transportation)

    @property
    def transport_route(self) -> tuple[str, str] | None:
        return transport_route(self.transportation)

    def meals(self) -> list[tuple[str, str, str | None]]:
        """``(slot, name, city)`` for each meal planned this day."""
        return [(slot, *split_name_city(value))
                for slot, value in (("breakfast", self.breakfast), ("lunch", self.lunch),
                                    ("dinner", self.dinner)) if not is_none(value)]

    def attraction_entries(self) -> list[tuple[str, str | None]]:
        return [split_name_city(a) for a in self.attractions if not is_none(a)]

    def accommodation_entry(self) -> tuple[str, str | None] | None:
        return None if is_none(self.accommodation) else split_name_city(self.accommodation)

    def is_empty(self) -> bool:
        return (all(is_none(getattr(self, name)) for name in FIELDS if name != "attractions")
                and not self.attractions)


@dataclass
class ParsedPlan:
    """The days read from a text, and what could not be read."""

    days: list[DayPlan] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.days)


def _strip_decoration(line: str) -> str:
    """A line without bullets, markdown header marks and bold around it."""
    line = line.strip()
    previous = None
    while previous != line:
        previous = line
        line = _BULLET.sub("", line)
        line = line.lstrip(_DECORATION).strip()
    # bold or italics around the key only: "**Lunch:** X" / "**Lunch**: X"
    line = re.sub(r"^([A-Za-z ]{3,20}?)\s*[*_]+\s*:", r"\1:", line)
    line = re.sub(r"^([A-Za-z ]{3,20}?:)[*_]+", r"\1", line)
    return line


_NAME_FIELDS = {"breakfast", "lunch", "dinner", "accommodation"}


def _day_plan(number: int, fields: dict[str, str | list[str]]) -> DayPlan:
    """Day ``number`` from the fields read for it (as :func:`_normalise` left them)."""

    def text(name: str) -> str:
        value = fields.get(name, NONE)
        assert isinstance(value, str)  # only attractions is a list
        return value

    attractions = fields.get("attractions", [])
    assert isinstance(attractions, list)
    return DayPlan(day=number, current_city=text("current_city"),
                   transportation=text("transportation"), breakfast=text("breakfast"),
                   attractions=attractions, lunch=text("lunch"), dinner=text("dinner"),
                   accommodation=text("accommodation"))


def _normalise(name: str, value: str) -> str | list[str]:
    if name == "attractions":
        return [_entry(part) for part in value.split(";") if not is_none(part)]
    if is_none(value):
        return NONE
    return _entry(value) if name in _NAME_FIELDS else _clean(value)


def parse_plan(text: str | None) -> ParsedPlan:
    """Read the days of a plan written in the form this module describes. Never raises."""
    parsed = ParsedPlan()
    if not text or not isinstance(text, str):
        return parsed
    blocks: list[tuple[int, int, dict[str, str | list[str]], list[str]]] = []
    current: tuple[int, int, dict[str, str | list[str]], list[str]] | None = None
    for line_number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_decoration(raw)
        if not line or set(line) <= set("-=*_`~|:"):
            continue  # blank, a rule, a code fence
        header = _DAY_HEADER.match(line)
        if header:
            current = (int(header.group(1)), line_number, {}, [])
            blocks.append(current)
            line = _strip_decoration(header.group(2))
            if not _KEY_LINE.match(line):
                continue  # "Day 1", "Day 1 (March 12):", "Day 1 - arrival": a title
        if current is None:
            continue  # text before the first day
        key = _KEY_LINE.match(line)
        if key is None:
            current[3].append(line)
            continue
        name = _ALIASES[_SPACES.sub(" ", key.group(1).lower())]
        if name in current[2]:
            if name == "attractions":  # a second Attraction line adds to the first
                current[2][name] = [*current[2][name], *_normalise(name, key.group(2))]
                continue
            parsed.problems.append(f"Day {current[0]}: {LABELS[name]} is given twice "
                                   f"(line {line_number}); the first one is used.")
            continue
        current[2][name] = _normalise(name, key.group(2))

    seen: set[int] = set()
    for number, line_number, fields, stray in blocks:
        if not fields:
            parsed.problems.append(f"Day {number} (line {line_number}) has none of the fields "
                                   f"Current City, Transportation, Breakfast, Attraction, "
                                   f"Lunch, Dinner, Accommodation.")
            continue
        for extra in stray:
            parsed.problems.append(f"Day {number}: could not read the line {extra[:80]!r}.")
        missing = [LABELS[name] for name in FIELDS if name not in fields]
        if missing:
            parsed.problems.append(f"Day {number}: no {', '.join(missing)} line.")
        if number in seen:
            parsed.problems.append(f"Day {number} appears more than once.")
        seen.add(number)
        parsed.days.append(_day_plan(number, fields))
    expected = list(range(1, len(parsed.days) + 1))
    if parsed.days and [d.day for d in parsed.days] != expected and len(seen) == len(parsed.days):
        parsed.problems.append(f"The days are numbered {[d.day for d in parsed.days]}, "
                               f"not {expected}.")
    return parsed


def format_plan(days: list[DayPlan]) -> str:
    """The days in the canonical form; :func:`parse_plan` reads it back to equal days."""
    blocks = []
    for day in days:
        attractions = "; ".join(_entry(a) for a in day.attractions if not is_none(a)) or NONE
        lines = [f"Day {day.day}:"]
        for name in FIELDS:
            value = attractions if name == "attractions" else getattr(day, name)
            if not is_none(value) and name != "attractions":
                value = _normalise(name, value)
            lines.append(f"{LABELS[name]}: {NONE if is_none(value) else value}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def is_structured(text: str | None) -> bool:
    """Whether the text has at least one day :func:`parse_plan` can read."""
    return bool(parse_plan(text).days)
