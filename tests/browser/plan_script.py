"""The plan-aware agent's LM for the travel-planning plan flow in a real JupyterLab.

The responder answers by what each prompt asks (the prompts are
``cogym_lab/agents/prompts/plan_*.md``):

* the proposal prompt: two plans for the trip, each with three agent steps (flights, places to
  stay, day 1 into the travel plan) and a person step ("Say which days matter most");
* a step prompt: one real travel action for the step (a flight search with the instance's
  origin, destination and first date, a search of places to stay at the destination, or day 1
  written into the shared travel plan), then ``COMPLETE_STEP`` with items;
* the plan-output prompt: a short day-by-day text;
* the scratchpad prompt keeps the scratchpad as it is; every other prompt waits.

It records which steps it was asked to carry out, so the test can tell the reruns apart.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action

__all__ = ["PERSON_STEP", "TravelPlanAgent", "Trip"]

PERSON_STEP = "Say which days matter most"
FLIGHTS = "Search flights"
STAYS = "Search places to stay"
DAY_ONE = "Write day 1 into the plan"
OUTPUT_MARK = "Plan output"


@dataclass(frozen=True)
class Trip:
    """What the responder needs of the task instance (``make_env(...).task``)."""

    origin: str
    destination: str
    dates: tuple[str, ...]

    @classmethod
    def of(cls, task: Any) -> Trip:
        return cls(origin=task.origin, destination=task.destination, dates=tuple(task.dates))


class TravelPlanAgent:
    """The responder for the agent's LM (``ScriptedLM.use``)."""

    def __init__(self, trip: Trip) -> None:
        self.trip = trip
        self.outputs = 0
        self.step_calls: list[tuple[str, str, int]] = []  # (step id, description, actions so far)
        self._lock = threading.Lock()

    # -- what it proposes and writes ---------------------------------------------------------

    def plans(self) -> list[dict[str, Any]]:
        trip = self.trip
        flights = f"{FLIGHTS} from {trip.origin} to {trip.destination} on {trip.dates[0]}"
        stays = f"{STAYS} in {trip.destination}"
        return [
            {"title": "Stays first, then flights", "steps": [
                {"description": stays, "assignee": "agent"},
                {"description": flights, "assignee": "agent"},
                {"description": PERSON_STEP, "assignee": "person"},
                {"description": DAY_ONE, "assignee": "agent"}]},
            {"title": "Your priorities, then flights and day 1", "steps": [
                {"description": stays, "assignee": "agent"},
                {"description": PERSON_STEP, "assignee": "person"},
                {"description": flights, "assignee": "agent"},
                {"description": DAY_ONE, "assignee": "agent"}]},
        ]

    def day_one(self) -> str:
        trip = self.trip
        return (f"Day 1, {trip.dates[0]}: fly from {trip.origin} to {trip.destination}; "
                f"check in; dinner near the stay.")

    def output(self, number: int) -> str:
        trip = self.trip
        days = [f"Day {i + 1} ({date}): " for i, date in enumerate(trip.dates)]
        return (f"{OUTPUT_MARK} #{number}. {days[0]}fly {trip.origin} to {trip.destination} "
                f"and settle in. {days[1]}the main sights. {days[-1]}fly home.")

    # -- the responder ---------------------------------------------------------------------------

    def __call__(self, body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        if "propose how the team could go about the task" in asked:
            return ("Thought: two orders of work.\n"
                    f"Plans: {json.dumps(self.plans(), ensure_ascii=False)}")
        if "Every step of the plan is done" in asked:
            with self._lock:
                self.outputs += 1
                number = self.outputs
            return f"Thought: three days, briefly.\nOutput: {self.output(number)}"
        if "You are carrying out step" in asked:
            return self._step(asked)
        if "update your scratchpad" in asked:
            return "Thought: nothing to note.\nAction: DO_NOTHING()"
        return ("Thought: the plan drives the work.\nDecision: 3\n"
                "Action: WAIT_TEAMMATE_CONTINUE()")

    def _step(self, asked: str) -> str:
        found = re.search(r'You are carrying out step (\S+) of the team\'s plan: "(.*?)"\.\n',
                          asked, re.S)
        assert found, asked[:300]
        step, description = found.group(1), found.group(2)
        taken = re.search(r"Actions taken on this step so far: (\d+)\.", asked)
        done = int(taken.group(1)) if taken else 99  # "complete it now"
        with self._lock:
            self.step_calls.append((step, description, done))
        trip = self.trip
        if done == 0:
            if description.startswith(FLIGHTS):
                action = Action(name="FLIGHT_SEARCH", args={
                    "origin": trip.origin, "destination": trip.destination,
                    "date": trip.dates[0]})
            elif description.startswith(STAYS):
                action = Action(name="ACCOMMODATION_SEARCH", args={"city": trip.destination})
            else:
                action = Action(name="EDITOR_UPDATE", args={"text": self.day_one()})
            return f"Thought: one search first.\nAction: {format_action(action)}"
        if description.startswith(FLIGHTS):
            text = f"Two morning flights from {trip.origin} on {trip.dates[0]}."
            items = [{"id": "morning-flight", "title": f"Morning flight to {trip.destination}"},
                     {"id": "noon-flight", "title": f"Noon flight to {trip.destination}"}]
        elif description.startswith(STAYS):
            text = f"Entire homes in {trip.destination} for seven."
            items = [{"id": "home", "title": f"An entire home in {trip.destination}"}]
        else:
            text = "Day 1 is in the travel plan."
            items = [{"id": "day-1", "title": "Day 1: arrive and settle in"},
                     {"id": "dinner", "title": "Day 1: dinner near the stay"}]
        action = Action(name="COMPLETE_STEP", args={"step": step, "text": text, "items": items})
        return f"Thought: the step is done.\nAction: {format_action(action)}"
