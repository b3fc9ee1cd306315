"""Grading a file of travel plans, one JSON object a line (``cogym-lab grade travel_planning``).

An input line::

    {"instance": 0, "plan": [{"days": 1, "current_city": "from A to B", ...}, ...], "pid": 7}

``instance`` is the 0-based row of ``validation_with_hidden_profile.csv``; ``"query"`` (the
query's text; spaces and case do not matter) may name the instance instead. ``plan`` is in
TravelPlanner's submission format (:mod:`~cogym_lab.envs.travel_planning.submission`). Every
other field is passed through to the output line, which adds ``instance``, ``mode``,
``delivered``, ``commonsense`` and ``hard`` (official name -> true, false or null),
``total_cost`` and ``errors`` (checks at which TravelPlanner's code raises).

A line that cannot be graded gets ``{"line": N, "error": "..."}`` instead (with the fields it
passes through, when it is a JSON object): invalid UTF-8 or JSON, ``NaN``, a lone surrogate, an
unknown instance or query, a plan that is not a list of day objects with string fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.grader import Grade, grade_submission
from cogym_lab.envs.travel_planning.grading_rules import get_rules
from cogym_lab.envs.travel_planning.instances import load_instances
from cogym_lab.envs.travel_planning.records import TravelInstance
from cogym_lab.envs.travel_planning.submission import SubmissionError, read_submission
from cogym_lab.errors import CogymError

__all__ = ["FLIGHT_TABLES", "GradedLine", "LineError", "PlansFileGrader"]

FLIGHT_TABLES = ("database", "reference")
_OWN_FIELDS = ("instance", "query", "plan")


class LineError(CogymError, ValueError):
    """Why one input line cannot be graded."""


@dataclass
class GradedLine:
    """The output record of one input line, and its grade (None for an error line)."""

    record: dict[str, Any]
    grade: Grade | None


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _no_constant(name: str) -> Any:
    raise LineError(f"{name} is not a JSON number")


def _check_text(value: Any) -> None:
    """A LineError when a string inside ``value`` holds a lone surrogate (it has no UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise LineError("the line holds a lone surrogate (an unpaired \\ud800-\\udfff "
                            "escape), which no text can contain") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)
    elif isinstance(value, list):
        for item in value:
            _check_text(item)


def _read_object(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LineError(f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    if not text.strip():
        raise LineError("empty line")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise LineError(f"invalid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise LineError(f"expected a JSON object, got {type(value).__name__}")
    try:
        _check_text(value)
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply") from None
    return value


class PlansFileGrader:
    """Grades the lines of a plans file in one mode (``official`` or ``corrected``), checking
    flights against the database's table or each query's ``reference`` flights."""

    def __init__(self, data_dir: str | Path | None = None, mode: str = "official",
                 flights: str = "database") -> None:
        self.rules = get_rules(mode)
        if flights not in FLIGHT_TABLES:
            raise ValueError(f"Unknown flight table {flights!r}; use one of "
                             f"{', '.join(FLIGHT_TABLES)}.")
        self.flights = flights
        self.instances = load_instances(data_dir)
        self.db = TravelDatabase.load(data_dir, accommodations=self.rules.accommodation_table)
        self._by_query: dict[str, list[int]] = {}
        for instance in self.instances:
            self._by_query.setdefault(_squash(instance.query), []).append(instance.index)

    def _instance(self, line: dict[str, Any]) -> TravelInstance:
        number = line.get("instance")
        if "instance" in line:
            if isinstance(number, bool) or not isinstance(number, int):
                raise LineError(f"'instance' must be a whole number, not {number!r}")
            if not 0 <= number < len(self.instances):
                raise LineError(f"unknown instance {number}: there are instances 0 to "
                                f"{len(self.instances) - 1}")
        if "query" in line:
            query = line["query"]
            if not isinstance(query, str):
                raise LineError("'query' must be the text of a query")
            found = self._by_query.get(_squash(query), [])
            if not found:
                raise LineError(f"no instance has the query {query[:80]!r}")
            if len(found) > 1:
                raise LineError(f"the query matches instances {found}; give 'instance'")
            if "instance" in line and number != found[0]:
                raise LineError(f"'instance' {number} and 'query' (instance {found[0]}) "
                                f"disagree")
            return self.instances[found[0]]
        if number is None:  # no 'instance' (one given was checked above)
            raise LineError("the line names no 'instance' (or 'query')")
        return self.instances[number]

    def grade_line(self, number: int, raw: bytes) -> GradedLine:
        """The output record of input line ``number`` (counted from 1)."""
        passed: dict[str, Any] = {}
        try:
            line = _read_object(raw)
            passed = {k: v for k, v in line.items() if k not in _OWN_FIELDS}
            instance = self._instance(line)
            if "plan" not in line:
                raise LineError("the line has no 'plan'")
            days = read_submission(line["plan"])
        except (LineError, SubmissionError) as error:
            kept = {k: v for k, v in passed.items() if k not in ("line", "error")}
            return GradedLine({"line": number, "error": str(error), **kept}, None)
        flights = (self.db.reference_flights(instance.index) if self.flights == "reference"
                   else None)
        grade = grade_submission(days, instance, self.db, mode=self.rules, flights=flights)
        record = {**passed, "instance": instance.index, "mode": grade.mode,
                  "delivered": grade.delivered,
                  "commonsense": {k: v.passed for k, v in grade.commonsense.items()},
                  "hard": {k: v.passed for k, v in grade.hard.items()},
                  "total_cost": grade.total_cost, "errors": dict(grade.errors)}
        return GradedLine(record, grade)
