"""The two grading modes, as named switches over one implementation of TravelPlanner's checks.

``official`` (the default) gives the verdicts of TravelPlanner's evaluation code
(``evaluation/commonsense_constraint.py`` and ``hard_constraint.py``), quirks included.
``release`` gives the verdicts of the Co-Gym release's adaptation of that code
(``collaborative_gym/envs/travel_planner/evaluation/commonsense_constraint.py``,
``CommonsenseConstraintEvaluator``), which differs from the official code in one place, its
own switch below. ``corrected`` is the official code with its bugs fixed, each behind one switch. An
example of each fix (official says X, corrected says Y) is in ``docs/travel-grader.md`` and in
``tests/envs/travel_planning/test_travel_official.py``.

Fixes (the switch, then what the official code does):

* ``whole_city_names``: on a day without travel, Within Current City iterates over the
  characters of the city name, so a restaurant, an attraction or the transportation passes when
  it shares one letter with the city, and the accommodation when it holds the city's last letter.
  Corrected compares the whole city name.
* ``route_ends_and_destination``: Reasonable City Route checks the origin only when day 1 says
  ``from ... to ...``, and never checks the destination of a 3-day trip (only the state of the
  cities of longer trips). Corrected requires the route to start at the origin, and the cities
  between the ends of a 3-day trip to be the destination.
* ``cuisine_skips_only_origin_meal``: a meal in the origin city ends the cuisine check's reading
  of that day, so the day's later meals are never counted. Corrected skips only that meal.
* ``every_attraction_read``: attractions are read with ``split(';')[:-1]``, so the last one of a
  list written without a final ``;`` is never checked. Corrected reads every non-blank entry.
* ``never_raises``: where the official code raises (a drive without a route in the cost, a
  ``Flight Number`` written otherwise than ``"Flight Number: "``, a ``from`` without ``to``, a day
  without a field it reads unguarded), official mode records the error and fails that check;
  corrected mode gives a verdict (an unpriceable drive costs nothing, a missing field reads as
  ``-``, an unreadable route fails the check it breaks).

The release's departure (switch ``accommodations_in_attraction_table``): its
``is_valid_information_in_sandbox`` looks a day's accommodation up in the *attractions* table
(by ``Name`` and ``City``), so a plan that names a real listing fails Within Sandbox unless an
attraction of that city happens to contain the listing's name. Its other checks, and its
minimum-nights check, read the accommodation table as the official code does.

Kept in every mode, because they are rules rather than slips: names are matched as substrings of
the stored names, case-sensitively; a listing's minimum nights are checked only when the name
matches exactly one listing; flights are checked by number and route, not date; Complete
Information requires three meals and an attraction on every day without travel and holds the
visiting-city count; a day with accommodation counts as a night, the last day too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cogym_lab.envs.travel_planning.accommodation_table import AccommodationTable

__all__ = ["GRADER_MODES", "RULES", "GraderMode", "GradingRules", "get_rules"]

GraderMode = Literal["official", "corrected", "release"]
GRADER_MODES: tuple[GraderMode, ...] = ("official", "corrected", "release")


@dataclass(frozen=True)
class GradingRules:
    """Where a mode departs from the official code (the module docstring explains each)."""

    mode: GraderMode
    whole_city_names: bool
    route_ends_and_destination: bool
    cuisine_skips_only_origin_meal: bool
    every_attraction_read: bool
    never_raises: bool
    accommodations_in_attraction_table: bool = False  # the Co-Gym release's look-up

    @property
    def accommodation_table(self) -> AccommodationTable:
        """The accommodation table the mode's database holds: the corrected one for
        ``corrected``, the official loader's otherwise (the release loads it the same way)."""
        return "corrected" if self.mode == "corrected" else "official"


RULES: dict[str, GradingRules] = {
    "official": GradingRules(mode="official", whole_city_names=False,
                             route_ends_and_destination=False,
                             cuisine_skips_only_origin_meal=False,
                             every_attraction_read=False, never_raises=False),
    "corrected": GradingRules(mode="corrected", whole_city_names=True,
                              route_ends_and_destination=True,
                              cuisine_skips_only_origin_meal=True,
                              every_attraction_read=True, never_raises=True),
    "release": GradingRules(mode="release", whole_city_names=False,
                            route_ends_and_destination=False,
                            cuisine_skips_only_origin_meal=False,
                            every_attraction_read=False, never_raises=False,
                            accommodations_in_attraction_table=True),
}


def get_rules(mode: str | GradingRules = "official") -> GradingRules:
    """The rules of ``mode``; a clear error for an unknown one."""
    if isinstance(mode, GradingRules):
        return mode
    if mode not in RULES:
        raise ValueError(f"Unknown grading mode {mode!r}; use one of {', '.join(RULES)}.")
    return RULES[mode]
