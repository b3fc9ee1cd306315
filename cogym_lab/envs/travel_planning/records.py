"""The records of the TravelPlanner sandbox database, as the tools, the grader and the env see
them. Loading them is ``database.py``'s job; these types are the contract between the parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

TravelMode = Literal["self-driving", "taxi"]


@dataclass(frozen=True)
class Flight:
    number: str  # e.g. "F3846241"
    price: int  # per person, USD
    departure: str  # "08:08"
    arrival: str  # "09:03"
    elapsed: str  # "1 hours 55 minutes"
    date: str  # "2022-03-12"
    origin: str
    destination: str
    distance: float  # miles, as the source gives it


@dataclass(frozen=True)
class Accommodation:
    """A listing, its name exactly as the CSV stores it (double spaces and line breaks kept)."""

    name: str
    room_type: str  # "Entire home/apt" | "Private room" | "Shared room"
    price: float  # per night for the whole listing
    minimum_nights: int
    review: float | None  # None: the CSV leaves it empty
    house_rules: str  # e.g. "No smoking & No parties"; "" when the CSV leaves it empty
    maximum_occupancy: int
    city: str


@dataclass(frozen=True)
class Restaurant:
    """A restaurant, its name exactly as the CSV stores it."""

    name: str
    city: str
    cuisines: tuple[str, ...]
    average_cost: float  # per person
    rating: float


@dataclass(frozen=True)
class Attraction:
    name: str
    city: str
    address: str = ""
    phone: str = ""
    website: str = ""
    latitude: float | None = None
    longitude: float | None = None


@dataclass(frozen=True)
class Route:
    """A drive between two cities. ``cost`` is for one vehicle: self-driving costs 5 cents a km,
    a taxi 1 dollar a km (TravelPlanner's cost model)."""

    origin: str
    destination: str
    mode: TravelMode
    duration: str  # "10 hours 55 mins"
    distance_km: float
    cost: int


@dataclass(frozen=True)
class TravelInstance:
    """One TravelPlanner query. ``preferences`` are hidden: only the simulated user sees them."""

    index: int
    query: str
    level: str  # "medium" | "hard"
    origin: str
    destination: str  # a city, or a state when visiting_city_number > 1
    days: int
    visiting_city_number: int
    dates: tuple[str, ...]
    people: int
    budget: int
    local_constraint: dict[str, str | None] = field(default_factory=dict)
    # keys: "house rule", "cuisine", "room type", "transportation"
    preferences: tuple[str, ...] = ()
