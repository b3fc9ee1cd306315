"""A scripted agent and user for Travel Planning sessions, served by the loopback LM server.

The agent searches flights, places to stay and restaurants, then writes a plan built from real
database records for the instance; the user gives one piece of feedback and then finishes.
"""

from __future__ import annotations

from typing import Any

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action
from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.records import TravelInstance
from cogym_lab.testing import Reply
from tests.support.lm_scripts import chat_lines, classify, system_text, user_choice


def simple_plan(task: TravelInstance, db: TravelDatabase) -> str:
    """A one-city plan from the database: fly (or drive) there and back, eat and sleep there."""
    city, home = task.destination, task.origin
    restaurants = [r.name for r in db.restaurants(city)]
    attractions = [a.name for a in db.attractions(city)]
    stays = sorted(db.accommodations(city), key=lambda a: a.minimum_nights)
    stay = f"{stays[0].name}, {city}" if stays else "-"

    def transport(origin: str, destination: str, date: str) -> str:
        flights = db.flights(origin, destination, date)
        if flights:
            f = flights[0]
            return (f"Flight Number: {f.number}, from {origin} to {destination}, "
                    f"Departure Time: {f.departure}, Arrival Time: {f.arrival}")
        return f"Self-driving, from {origin} to {destination}"

    blocks = []
    for day in range(1, task.days + 1):
        first, last = day == 1, day == task.days
        meals = restaurants[(day - 1) * 3:(day - 1) * 3 + 3] + ["-", "-", "-"]
        blocks.append("\n".join([
            f"Day {day}:",
            f"Current City: from {home} to {city}" if first else
            f"Current City: from {city} to {home}" if last else f"Current City: {city}",
            "Transportation: " + (transport(home, city, task.dates[0]) if first else
                                  transport(city, home, task.dates[-1]) if last else "-"),
            f"Breakfast: {meals[0]}, {city}" if meals[0] != "-" else "Breakfast: -",
            f"Attraction: {attractions[day - 1]}, {city}" if day <= len(attractions)
            else "Attraction: -",
            f"Lunch: {meals[1]}, {city}" if meals[1] != "-" else "Lunch: -",
            f"Dinner: {meals[2]}, {city}" if meals[2] != "-" else "Dinner: -",
            f"Accommodation: {stay}" if not last else "Accommodation: -",
        ]))
    return "\n\n".join(blocks)


class TravelRolePlay:
    """Responder for a ``collaborative`` team (models ``agent-lm`` and ``user-lm``)."""

    def __init__(self, task: TravelInstance, db: TravelDatabase) -> None:
        self.task, self.db = task, db
        self.plan = simple_plan(task, db)

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        text = system_text(body)
        history = text.split("# Your recent actions", 1)[-1].split("# What just happened")[0]
        if kind == "scratchpad":
            return "Action: DO_NOTHING()"
        if kind == "act":
            t = self.task
            for needed, step in (
                    ("FLIGHT_SEARCH", f'FLIGHT_SEARCH(origin="{t.origin}", '
                                      f'destination="{t.destination}", date="{t.dates[0]}")'),
                    ("ACCOMMODATION_SEARCH", f'ACCOMMODATION_SEARCH(city="{t.destination}")'),
                    ("RESTAURANT_SEARCH", f'RESTAURANT_SEARCH(city="{t.destination}")'),
                    ("EDITOR_UPDATE", format_action(Action(name="EDITOR_UPDATE",
                                                           args={"text": self.plan})))):
                if needed not in history:
                    return f"Thought: next, {needed.lower()}.\nAction: {step}"
            if not any(line.startswith("[you]") for line in chat_lines(body)):
                return 'Action: SEND_TEAMMATE_MESSAGE(message="A first full plan is in the editor.")'
            return "Action: WAIT_TEAMMATE_CONTINUE()"
        if kind == "user-decide":
            workspace = text.split("# What the shared workspace shows now", 1)[-1]
            has_plan = "Day 1:" in workspace.split("# The chat so far", 1)[0]
            spoke = any(line.startswith("[you]") for line in chat_lines(body))
            return user_choice(body, "nothing" if not has_plan else "feedback" if not spoke
                               else "finish")
        if kind == "user-feedback":
            return "Message: Looks good so far; we are a group, so keep the rooms roomy."
        return Reply(status=500, error=f"no scripted reply for {kind}")
