"""How TravelPlanner's evaluation reads the text of a submitted day, reproduced exactly.

A submitted day is a JSON object of strings (``current_city``, ``transportation``, ``breakfast``,
``attraction``, ``lunch``, ``dinner``, ``accommodation``). The official checks read those strings
with a few regular expressions; these functions give the same results, quirks included:

* :func:`route_in`: the first ``from A to B`` (lower-case words). A is the shortest text on one
  line before ``to``; B runs to the next comma or the end, so it may keep trailing spaces.
* :func:`before_parenthesis`: what comes before the first ``(`` of the first line, when a ``)``
  follows it anywhere; else the text unchanged. ``"Dallas(Texas)"`` -> ``"Dallas"``.
* :func:`name_and_city`: split at the LAST comma. The name is read from the start of the line
  that holds that comma (so of a name with a line break only the last line is read), stripped;
  the city is the rest, stripped, cut before a parenthesis. No comma, or nothing after the last
  one, gives ``("-", "-")``.
* :func:`flight_number_in`: the text after the first ``"Flight Number: "`` up to the next comma.
* :func:`transport_kind`: ``taxi`` if the lower-cased text says taxi, else ``self-driving``, else
  ``flight`` (the commonsense check's order; the cost looks for self-driving first).
* :func:`attraction_entries`: the pieces of ``"A, X;B, X;"`` between semicolons; the official
  code drops the piece after the last ``;``, so a list without a trailing ``;`` loses its last
  attraction (``every=True`` keeps every non-blank piece instead).
"""

from __future__ import annotations

import re
from typing import Any, TypeGuard

__all__ = ["FLIGHT_LABEL", "attraction_entries", "before_parenthesis", "flight_number_in",
           "is_filled", "name_and_city", "route_in", "transport_kind"]

FLIGHT_LABEL = "Flight Number: "
_ROUTE = re.compile(r"from\s+(.+?)\s+to\s+([^,]+)")


def is_filled(value: Any) -> TypeGuard[str]:
    """Whether a field counts as given: not missing, not empty, not ``-``. A submitted day's
    fields are strings (``read_submission`` checks them), so a given one is a string."""
    return isinstance(value, str) and value not in ("", "-")


def route_in(text: str) -> tuple[str | None, str | None]:
    """``(A, B)`` of the first ``from A to B`` in ``text``, or ``(None, None)``."""
    found = _ROUTE.search(text)
    return (found.group(1), found.group(2)) if found else (None, None)


def before_parenthesis(text: str) -> str:
    """``text`` up to its first ``(`` on the first line when a ``)`` comes after it."""
    first_line = text.split("\n", 1)[0]
    opening = first_line.find("(")
    if opening >= 0 and ")" in text[opening + 1:]:
        return text[:opening]
    return text


def name_and_city(entry: str) -> tuple[str, str]:
    """``"Cozy Home, Great Location, Burbank"`` -> ``("Cozy Home, Great Location", "Burbank")``;
    ``("-", "-")`` when the entry cannot be split."""
    comma = entry.rfind(",")
    if comma < 0 or comma == len(entry) - 1:
        return "-", "-"
    line_start = entry.rfind("\n", 0, comma) + 1  # the name never spans a line break
    return (entry[line_start:comma].strip(),
            before_parenthesis(entry[comma + 1:].strip()).strip())


def flight_number_in(transportation: str) -> str | None:
    """The flight number after ``"Flight Number: "``, or None when that label is absent."""
    _, label, rest = transportation.partition(FLIGHT_LABEL)
    return rest.split(",", 1)[0] if label else None


def transport_kind(transportation: str) -> str | None:
    """``"taxi"``, ``"self-driving"``, ``"flight"`` or None, tested in that order."""
    text = transportation.lower()
    for kind in ("taxi", "self-driving", "flight"):
        if kind in text:
            return kind
    return None


def attraction_entries(value: str, *, every: bool = False) -> list[str]:
    """The attractions of an ``attraction`` field (see the module docstring)."""
    pieces = value.split(";")
    if every:
        return [piece.strip() for piece in pieces if piece.strip()]
    return pieces[:-1]
