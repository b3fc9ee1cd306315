"""What every check reads: the submitted days, the instance, the sandbox and the mode's rules.

A plan reaches the checks in TravelPlanner's submission form (a list of day objects, see
:mod:`~cogym_lab.envs.travel_planning.submission`). As in the official code, only the first
``instance.days`` days are graded, and day ``n`` in a reason is the n-th object of the list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cogym_lab.envs.travel_planning.field_reading import before_parenthesis, route_in
from cogym_lab.envs.travel_planning.grading_rules import GradingRules
from cogym_lab.envs.travel_planning.records import TravelInstance
from cogym_lab.envs.travel_planning.sandbox import Sandbox
from cogym_lab.errors import CogymError

__all__ = ["Trip", "Unreadable", "Verdict"]


class Unreadable(CogymError):
    """A plan the official code cannot read at this point: it raises an error there."""


@dataclass
class Verdict:
    """One check's answer: ``passed`` True or False, or None when the check does not apply,
    and a ``reason`` that says concretely what was found."""

    passed: bool | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason}


def quote(text: str, limit: int = 80) -> str:
    """``text`` in quotes for a reason, shortened past ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


@dataclass
class Trip:
    """One submitted plan for one instance, graded under ``rules``."""

    days: Sequence[Mapping[str, Any]]
    instance: TravelInstance
    sandbox: Sandbox
    rules: GradingRules

    @property
    def graded(self) -> list[tuple[int, Mapping[str, Any]]]:
        """``(position, day)`` of the days the checks read: the first ``instance.days``."""
        return list(enumerate(self.days[:self.instance.days]))

    @property
    def origin(self) -> str:
        return self.instance.origin

    def field(self, index: int, key: str) -> Any:
        """A field the official code reads without checking it is there: a missing one raises
        there (official mode) or reads as ``-`` (corrected mode)."""
        day = self.days[index]
        if key in day:
            return day[key]
        if self.rules.never_raises:
            return "-"
        raise Unreadable(f"day {index + 1} has no {key!r} field")

    def route(self, index: int, text: str) -> tuple[str, str]:
        """The two cities of the ``from A to B`` in ``text`` (the day's current city or
        transportation), cut before a parenthesis; :class:`Unreadable` when there is none."""
        start, end = route_in(text)
        if start is None or end is None:
            raise Unreadable(f"day {index + 1}: {quote(text)} says 'from' but not "
                             f"'from <city> to <city>'")
        return before_parenthesis(start), before_parenthesis(end)

    def constraint(self, key: str) -> str | None:
        """The instance's local constraint ``key`` ("house rule", "room type", ...), if set."""
        return (self.instance.local_constraint or {}).get(key)

    @property
    def cuisines(self) -> list[str]:
        """The cuisines asked for, in the order the instance lists them."""
        asked = self.constraint("cuisine")
        return [c.strip() for c in asked.split(",") if c.strip()] if asked else []
