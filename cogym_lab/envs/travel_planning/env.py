"""Travel Planning (Co-Gym §4.2): write a day-by-day travel plan together in a shared editor,
with private search tools over the TravelPlanner sandbox database.

The agent is told only the high-level request (where from, where to, how long, when). The
instance's constraints (group size, budget, room type, house rules, cuisines, transport) are the
human side's hidden information; the grader checks the plan against all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core import ActionError, Component, RenderType, action
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.grader import Grade, grade_plan, grade_text
from cogym_lab.envs.travel_planning.instances import load_instances
from cogym_lab.envs.travel_planning.plan import parse_plan
from cogym_lab.envs.travel_planning.tools import DatabaseProvider, SearchProvider, SearchResult
from cogym_lab.lm import LM, configured_lm

PLAN_TEMPLATE = """\
Write one block per day in this form ("-" for none):

Day 1:
Current City: from <origin> to <city>
Transportation: Flight Number: <number>, from <origin> to <city>, Departure Time: <hh:mm>, Arrival Time: <hh:mm>
Breakfast: -
Attraction: <name>, <city>; <name>, <city>
Lunch: <restaurant>, <city>
Dinner: <restaurant>, <city>
Accommodation: <listing>, <city>
"""


@dataclass
class TravelPlanningEnv(DatasetEnv):
    """One TravelPlanner validation instance (``instance`` = 0..101)."""

    provider: SearchProvider | None = field(default=None, repr=False)
    parser_lm: LM | None = field(default=None, repr=False)  # reads free-text plans for grading

    name = "travel_planning"

    @classmethod
    def load_dataset(cls, data_dir: str | None) -> list[Any]:
        return load_instances(data_dir)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.db = TravelDatabase.load(self.data_dir)
        self.search = self.provider or DatabaseProvider(self.db)

    @property
    def task_description(self) -> str:
        t = self.task
        return (f"Help me plan a {t.days}-day trip from {t.origin} to {t.destination}, from "
                f"{t.dates[0]} to {t.dates[-1]}. Write the plan in the shared editor, one "
                f"block per day.\n\n{PLAN_TEMPLATE}")

    def hidden_information(self) -> str:
        return "\n".join(f"- {preference}" for preference in self.task.preferences)

    def _reset(self, seed: int | None) -> None:
        self.plan_text = ""
        self.results: dict[str, SearchResult] = {}

    def public_components(self) -> list[Component]:
        return [Component(name="plan", title="Travel plan (shared editor)",
                          render_type=RenderType.EDITOR, content=self.plan_text)]

    def private_components(self, role: str) -> list[Component]:
        result = self.results.get(role)
        return [Component(name="search", title=result.title if result else "Search results",
                          render_type=RenderType.TABLE,
                          content=result.to_component_content() if result else {})]

    def outcome(self) -> str | None:
        return self.plan_text.strip() or None

    def grade(self) -> Grade:
        """Every check's verdict and reason, for the UI and for analysis."""
        return grade_plan(self.plan_text, self.task, self.db)

    def evaluate(self) -> dict[str, float]:
        return _scores(self.grade())

    async def aevaluate(self) -> dict[str, float]:
        """Like ``evaluate``, but a plan written as free text is first rewritten into the
        day-by-day form by an LM (``parser_lm``, else the one the environment configures)."""
        lm = self.parser_lm
        if lm is None and self.plan_text.strip() and not parse_plan(self.plan_text).days:
            lm = configured_lm("the plan parser")
        grade = await grade_text(self.plan_text, self.task, self.db, lm)
        return {**_scores(grade), "parsed_by_lm": float(grade.parser == "lm")}

    # -- actions -------------------------------------------------------------------------------

    @action("Replace the whole shared plan with new text (keep the day-by-day form).",
            replaces="plan", text="The full plan")
    def editor_update(self, role: str, text: str) -> None:
        self.plan_text = text
        problems = parse_plan(text).problems if text.strip() else []
        if problems:  # saved all the same: people draft freely; the note helps fix the form
            self.results[role] = SearchResult(
                title="Plan check", columns=["problem"], rows=[{"problem": p} for p in problems],
                note="The plan was saved, but these parts do not follow the day-by-day form.")

    @action("Search flights on one date. Only you see the results.", private=True,
            origin="City to fly from", destination="City to fly to", date="YYYY-MM-DD")
    def flight_search(self, role: str, origin: str, destination: str, date: str) -> None:
        self.results[role] = self.search.flight_search(origin, destination, date)

    @action("List places to stay in a city. Only you see the results.", private=True,
            city="The city")
    def accommodation_search(self, role: str, city: str) -> None:
        self.results[role] = self.search.accommodation_search(city)

    @action("List restaurants in a city. Only you see the results.", private=True,
            city="The city")
    def restaurant_search(self, role: str, city: str) -> None:
        self.results[role] = self.search.restaurant_search(city)

    @action("List attractions in a city. Only you see the results.", private=True,
            city="The city")
    def attraction_search(self, role: str, city: str) -> None:
        self.results[role] = self.search.attraction_search(city)

    @action("List the cities of a US state. Only you see the results.", private=True,
            state="The state, e.g. Texas")
    def city_search(self, role: str, state: str) -> None:
        self.results[role] = self.search.city_search(state)

    @action("Driving time, distance and cost between two cities, by self-driving or taxi. "
            "Only you see the results.", private=True,
            origin="City to leave from", destination="City to go to",
            mode='"self-driving" or "taxi"')
    def distance_matrix(self, role: str, origin: str, destination: str, mode: str) -> None:
        if mode.strip().lower() not in ("self-driving", "taxi"):
            raise ActionError(f'mode must be "self-driving" or "taxi", not {mode!r}.')
        self.results[role] = self.search.distance_matrix(origin, destination, mode.strip().lower())


def _scores(grade: Grade) -> dict[str, float]:
    return {"performance": grade.performance,
            "commonsense_pass_rate": grade.commonsense_pass_rate,
            "hard_pass_rate": grade.hard_pass_rate}
