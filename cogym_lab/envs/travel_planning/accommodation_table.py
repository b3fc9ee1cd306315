"""Which accommodation listings exist: the one table both the search tools and the grader read.

``clean_accommodations_2022.csv`` has 5,047 rows; 762 of them leave some field empty (710 have no
house rules, others no price, no minimum nights, no review or no name). Two tables are built from
it, and a :class:`~cogym_lab.envs.travel_planning.database.TravelDatabase` holds exactly one, so
what an agent can find is what the grader accepts:

* ``official``: TravelPlanner's loader reads the CSV with pandas and drops every row with any
  empty field (``dropna()`` over all columns). 4,285 listings. A plan naming one of the 762
  dropped listings fails Within Sandbox, so the search tools must not offer them either.
* ``corrected``: a listing is dropped only when a field the grader needs is empty: the name (it
  cannot be named), the price (it cannot be costed), the minimum nights (the minimum-nights rule
  cannot be checked), the room type, the maximum occupancy or the city. An empty house-rules
  field reads as no rules (nothing forbidden, which is also what the official house-rule check
  makes of it) and an empty review as no review. 5,007 listings: the 4,285 and 722 more.

Names are kept exactly as stored: double spaces, leading or trailing spaces and line breaks
included (TravelPlanner matches names as substrings of the stored ones, so a name copied from a
search result must be the stored one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cogym_lab.envs.travel_planning.records import Accommodation

__all__ = ["ACCOMMODATION_TABLES", "GRADED_FIELDS", "AccommodationTable", "ListingTable",
           "read_accommodations"]

AccommodationTable = Literal["official", "corrected"]
ACCOMMODATION_TABLES: tuple[AccommodationTable, ...] = ("official", "corrected")

#: The CSV columns a listing needs to be referred to, costed and checked.
GRADED_FIELDS = ("NAME", "room type", "price", "minimum nights", "maximum occupancy", "city")


@dataclass(frozen=True)
class ListingTable:
    """The listings of one table, in file order, and how many rows the table left out."""

    name: AccommodationTable
    listings: list[Accommodation]
    rows: int  # rows in the CSV
    dropped: int  # rows not in this table


def _missing(value: Any) -> bool:
    """Whether pandas left the cell empty (NaN, or None once converted)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _listing(row: dict[str, Any]) -> Accommodation:
    review = row.get("review rate number")
    rules = row.get("house_rules")
    return Accommodation(
        name=str(row["NAME"]), room_type=str(row["room type"]), price=float(row["price"]),
        minimum_nights=int(row["minimum nights"]),
        review=None if review is None or _missing(review) else float(review),
        house_rules="" if _missing(rules) else str(rules),
        maximum_occupancy=int(row["maximum occupancy"]), city=str(row["city"]))


def read_accommodations(path: str | Path, table: AccommodationTable = "official") -> ListingTable:
    """The listings of ``table`` (see the module docstring) read from the CSV at ``path``."""
    import pandas as pd  # only here: the rest of the database reads with the csv module

    if table not in ACCOMMODATION_TABLES:
        raise ValueError(f"Unknown accommodation table {table!r}; use one of "
                         f"{', '.join(ACCOMMODATION_TABLES)}.")
    # pandas, as TravelPlanner's loader: what it reads as empty decides what "official" drops
    frame = pd.read_csv(path)
    kept = frame.dropna() if table == "official" else frame.dropna(subset=list(GRADED_FIELDS))
    rows = [{str(key): (None if pd.isna(value) else value) for key, value in record.items()}
            for record in kept.to_dict("records")]
    return ListingTable(name=table, listings=[_listing(row) for row in rows],
                        rows=len(frame), dropped=len(frame) - len(kept))
