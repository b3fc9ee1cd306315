"""Travel Planning (Co-Gym §4.2): write a day-by-day travel plan together in a shared editor,
with private search tools over the TravelPlanner sandbox database.

The agent is told only the high-level request (where from, where to, how long, when). The
instance's constraints (group size, budget, room type, house rules, cuisines, transport) are the
human side's hidden information; the grader checks the plan against all of them.

Scoring follows the session's protocol (:mod:`cogym_lab.core.protocol`): under ``cogym`` the
plan is graded in the grader's ``release`` mode (the Co-Gym release's own evaluator: the
official verdicts and table, except that it looks accommodations up among the attractions),
under ``cogym_lab`` in its ``corrected`` mode; ``official`` (TravelPlanner's own verdicts) is
``cogym-lab grade``'s default. The search tools and the grader read the same accommodation
table, so the listings an agent can find are the ones the corrected grader accepts. ``performance`` is Co-Gym's task performance; the scores also hold each applicable
check's verdict (0/1, by its official name) and TravelPlanner's pass-rate inputs
(``commonsense_pass``, ``hard_evaluated``, ``hard_pass``, ``final_pass``), which
:func:`~cogym_lab.envs.travel_planning.pass_rates.pass_rates` aggregates over sessions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cogym_lab.core import ActionError, Component, RenderType, action
from cogym_lab.core.env import ScoreReport, SessionScores
from cogym_lab.core.hidden_facts import HiddenFacts, HiddenQuantity
from cogym_lab.core.plans import below
from cogym_lab.core.protocol import DEFAULT_PROTOCOL
from cogym_lab.datasets import DataItem, DataSample
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.travel_planning.data_files import DATA_FILES, SAMPLE
from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.grader import (
    Grade,
    explain_grade,
    grade_plan,
    grade_text,
    undelivered_grade,
)
from cogym_lab.envs.travel_planning.grading_rules import GraderMode, get_rules
from cogym_lab.envs.travel_planning.instances import load_instances
from cogym_lab.envs.travel_planning.pass_rates import PlanVerdicts, pass_rates
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

#: The grading mode of each scoring protocol.
PROTOCOL_MODES: dict[str, GraderMode] = {"cogym": "release", "cogym_lab": "corrected"}
HIDDEN_MIN_WORDS = 8  # a hidden preference's minimum length in words, unless it names ...
_AMOUNT = re.compile(r"\$\s?\d")  # ... an amount of money, which no honest text would guess


@dataclass
class TravelPlanningEnv(DatasetEnv):
    """One TravelPlanner validation instance (``instance`` = 0..101)."""

    grade_command = "cogym_lab.envs.travel_planning.grade_command:grade"

    provider: SearchProvider | None = field(default=None, repr=False)
    parser_lm: LM | None = field(default=None, repr=False)  # reads free-text plans for grading
    _grade: Grade | None = field(default=None, init=False, repr=False)  # the last one given

    name = "travel_planning"
    typical_minutes = 20.0
    plan_step_guidance = (
        "Search for what the step needs (flights, places to stay, restaurants, attractions, "
        "distances), then fill in the days it covers in the plan.")
    data_files: ClassVar[tuple[DataItem, ...]] = DATA_FILES
    data_sample: ClassVar[DataSample | None] = SAMPLE

    @classmethod
    def load_dataset(cls, data_dir: str | None,
                     protocol: str = DEFAULT_PROTOCOL) -> list[Any]:
        return load_instances(data_dir)

    def __post_init__(self) -> None:
        super().__post_init__()
        # one database for the tools and the grader: its accommodation table is the mode's
        table = get_rules(self.grading_mode).accommodation_table
        self.db = TravelDatabase.load(self.data_dir, accommodations=table)
        self.search = self.provider or DatabaseProvider(self.db)

    @classmethod
    def summarise_scores(cls, sessions: Sequence[SessionScores]) -> dict[str, float]:
        """TravelPlanner's micro and macro pass rates and final pass rate over ``sessions``,
        as its ``eval.py`` reports them; a session that delivered no graded plan counts as
        failing every check that applies to its instance."""
        plans = []
        for env_args, delivered, scores in sessions:
            if delivered and "commonsense_pass" in scores:
                plans.append(PlanVerdicts.from_scores(scores))
            else:
                task = load_instances(env_args.get("data_dir"))[int(env_args["instance"])]
                plans.append(undelivered_grade(task).verdicts())
        if not plans:
            return {}
        rates = pass_rates(plans).to_dict()
        rates.pop("cogym_performance")  # the report's own performance column says it
        return {name: float(value) for name, value in rates.items() if name != "plans"}

    @property
    def grading_mode(self) -> GraderMode:
        """The grader's mode under this env's protocol."""
        return PROTOCOL_MODES[self.protocol]

    @property
    def task_description(self) -> str:
        t = self.task
        return (f"Help me plan a {t.days}-day trip from {t.origin} to {t.destination}, from "
                f"{t.dates[0]} to {t.dates[-1]}. Write the plan in the shared editor, one "
                f"block per day.\n\n{PLAN_TEMPLATE}")

    def hidden_information(self) -> str:
        return "\n".join(f"- {preference}" for preference in self.task.preferences)

    def hidden_facts(self) -> HiddenFacts:
        """The query's budget, party size and number of cities to visit, which its hidden
        preferences state in words."""
        t = self.task
        return HiddenFacts(quantities=(
            HiddenQuantity("budget", t.budget, ("budget",), money=True),
            HiddenQuantity("people", t.people, ("people", "persons", "travelers", "travellers",
                                                "adults", "guests")),
            HiddenQuantity("cities", t.visiting_city_number, ("city", "cities"))))

    def hidden_strings(self) -> list[str]:
        """The hidden preference sentences that an honest text would not contain: those naming
        an amount of money ("Budget of $7,600 for the entire trip") or of at least
        :data:`HIDDEN_MIN_WORDS` words. Short ones ("Travel with two people", "Visit 3 cities")
        are left out: an agent asking its user would write them too. None that the task
        description (which the agent is given) contains."""
        visible = " ".join(self.task_description.split()).casefold()
        kept = [p for p in self.task.preferences
                if _AMOUNT.search(p) or len(p.split()) >= HIDDEN_MIN_WORDS]
        return list(dict.fromkeys(p for p in kept if " ".join(p.split()).casefold()
                                  not in visible))

    def _reset(self, seed: int | None) -> None:
        self.plan_text = ""
        self._grade = None
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
        return grade_plan(self.plan_text, self.task, self.db, mode=self.grading_mode)

    def evaluate(self) -> dict[str, float]:
        self._grade = self.grade()
        return self._grade.scores()

    async def aevaluate(self) -> dict[str, float]:
        """Like ``evaluate``, but a plan written as free text is first rewritten into the
        day-by-day form by an LM (``parser_lm``, else the one the environment configures)."""
        lm = self.parser_lm
        if lm is None and self.plan_text.strip() and not parse_plan(self.plan_text).days:
            lm = configured_lm("the plan parser")
        grade = await grade_text(self.plan_text, self.task, self.db, lm, mode=self.grading_mode)
        self._grade = grade
        return {**grade.scores(), "parsed_by_lm": float(grade.parser == "lm")}

    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        """The pass rates and the final pass with every check's verdict and reason, from the
        grade just given (graded again only when there is none yet)."""
        return explain_grade(self._grade or self.grade(), scores)

    # -- actions -------------------------------------------------------------------------------

    def put_plan_output(self, role: str, text: str) -> None:
        """A finished interactive plan's output goes below the text: nothing is erased."""
        self.plan_text = below(self.plan_text, text)

    @action("Replace the whole shared plan with new text (keep the day-by-day form).",
            replaces="plan", text="The full plan")
    def editor_update(self, role: str, text: str) -> None:
        self.plan_text = text
        problems = parse_plan(text).problems if text.strip() else []
        if problems:  # saved all the same: people draft freely; the note helps fix the form
            self.results[role] = SearchResult(
                title="Plan check", columns=["problem"], rows=[{"problem": p} for p in problems],
                note="The plan was saved, but these parts do not follow the day-by-day form.")

    @action("Search flights on one date. Only you see the results.",
            private=True, searches="search",
            origin="City to fly from", destination="City to fly to", date="YYYY-MM-DD")
    def flight_search(self, role: str, origin: str, destination: str, date: str) -> None:
        self.results[role] = self.search.flight_search(origin, destination, date)

    @action("List places to stay in a city. Only you see the results.",
            private=True, searches="search",
            city="The city")
    def accommodation_search(self, role: str, city: str) -> None:
        self.results[role] = self.search.accommodation_search(city)

    @action("List restaurants in a city. Only you see the results.",
            private=True, searches="search",
            city="The city")
    def restaurant_search(self, role: str, city: str) -> None:
        self.results[role] = self.search.restaurant_search(city)

    @action("List attractions in a city. Only you see the results.",
            private=True, searches="search",
            city="The city")
    def attraction_search(self, role: str, city: str) -> None:
        self.results[role] = self.search.attraction_search(city)

    @action("List the cities of a US state. Only you see the results.",
            private=True, searches="search",
            state="The state, e.g. Texas")
    def city_search(self, role: str, state: str) -> None:
        self.results[role] = self.search.city_search(state)

    @action("Driving time, distance and cost between two cities, by self-driving or taxi. "
            "Only you see the results.",
            private=True, searches="search",
            origin="City to leave from", destination="City to go to",
            mode='"self-driving" or "taxi"')
    def distance_matrix(self, role: str, origin: str, destination: str, mode: str) -> None:
        if mode.strip().lower() not in ("self-driving", "taxi"):
            raise ActionError(f'mode must be "self-driving" or "taxi", not {mode!r}.')
        self.results[role] = self.search.distance_matrix(origin, destination, mode.strip().lower())

