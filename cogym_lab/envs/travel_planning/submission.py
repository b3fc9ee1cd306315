"""TravelPlanner's submission format: a plan as a list of day objects, what the grader reads.

One object a day::

    {"days": 1, "current_city": "from Salt Lake City to Burbank",
     "transportation": "Flight Number: F3846241, from Salt Lake City to Burbank, ...",
     "breakfast": "-", "attraction": "Gordon R Howard Museum, Burbank;Starlight Bowl, Burbank;",
     "lunch": "Tpot, Burbank", "dinner": "-", "accommodation": "Cozy Home, Burbank"}

:func:`read_submission` checks a plan that arrives as JSON (a list of objects whose fields are
strings). :func:`to_submission` turns the days read from the shared editor
(:func:`~cogym_lab.envs.travel_planning.plan.parse_plan`) into this form, the way TravelPlanner's
own post-processing turns a written plan into it:

* ``current_city`` is written ``from A to B`` on a day with two cities, else the one city;
* attractions are joined with ``;`` and end with ``;``;
* a Transportation line that names a flight number without the ``Flight Number: `` label, a
  self-driving without the word ``Self-driving`` spelled so, or a taxi without the word taxi
  (``cab``) gets that label put in front, so the official checks read it as the plan means it;
  anything else is kept as written;
* names are kept as written (the parser only trims their ends).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogym_lab.envs.travel_planning.field_reading import FLIGHT_LABEL
from cogym_lab.envs.travel_planning.plan import NONE, DayPlan, is_none
from cogym_lab.errors import CogymError

__all__ = ["SUBMISSION_FIELDS", "SubmissionError", "read_submission", "to_submission"]

SUBMISSION_FIELDS = ("current_city", "transportation", "breakfast", "attraction", "lunch",
                     "dinner", "accommodation")
_JSON_TYPES = {dict: "an object", list: "a list", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


class SubmissionError(CogymError, ValueError):
    """A plan that is not in the submission format."""


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def read_submission(plan: Any) -> list[dict[str, Any]]:
    """``plan`` checked: a list of day objects whose fields (those present) are strings. A
    missing field is left missing (the checks treat it as TravelPlanner does)."""
    if not isinstance(plan, list):
        raise SubmissionError(f"the plan must be a list of day objects, not {_kind(plan)}")
    days = []
    for number, day in enumerate(plan, start=1):
        if not isinstance(day, dict):
            raise SubmissionError(f"day {number} must be an object, not {_kind(day)}")
        for key in SUBMISSION_FIELDS:
            if key in day and not isinstance(day[key], str):
                raise SubmissionError(f"day {number}: {key!r} must be a string, not "
                                      f"{_kind(day[key])}")
        days.append(dict(day))
    return days


def _transportation(day: DayPlan) -> str:
    text = day.transportation
    if is_none(text):
        return NONE
    mode, number = day.transport_mode, day.flight_number
    if mode == "flight" and number and FLIGHT_LABEL not in text:
        return f"{FLIGHT_LABEL}{number}, {text}"
    if mode == "self-driving" and "Self-driving" not in text:  # the hard check is case-sensitive
        return f"Self-driving, {text}"
    if mode == "taxi" and "taxi" not in text.lower():
        return f"Taxi, {text}"
    return text


def _current_city(day: DayPlan) -> str:
    cities = day.cities
    if len(cities) == 2:
        return f"from {cities[0]} to {cities[1]}"
    return cities[0] if cities else NONE


def to_submission(days: Sequence[DayPlan]) -> list[dict[str, Any]]:
    """The days in the submission format (see the module docstring)."""
    submitted = []
    for day in days:
        attractions = [a for a in day.attractions if not is_none(a)]
        submitted.append({
            "days": day.day, "current_city": _current_city(day),
            "transportation": _transportation(day),
            "breakfast": NONE if is_none(day.breakfast) else day.breakfast,
            "attraction": "".join(f"{a};" for a in attractions) or NONE,
            "lunch": NONE if is_none(day.lunch) else day.lunch,
            "dinner": NONE if is_none(day.dinner) else day.dinner,
            "accommodation": NONE if is_none(day.accommodation) else day.accommodation})
    return submitted
